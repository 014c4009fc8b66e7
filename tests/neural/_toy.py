r"""A two-parameter Gaussian model released through a Laplace mechanism, solved by quadrature.

:math:`\theta = (a, b) \sim N(0, I_2)`, confidential statistic
:math:`s \mid \theta \sim N(A\theta, \tau^2 I_2)` with a mixing matrix :math:`A`,
release :math:`s_{dp} = s + \mathrm{Lap}(\beta)` per coordinate. The likelihood of
the release is a product of normal-Laplace convolutions,

.. math:: g(x) = \frac{e^{\tau^2/2\beta^2}}{2\beta}\big[e^{-x/\beta}\Phi(x/\tau - \tau/\beta)
          + e^{x/\beta}\Phi(-x/\tau - \tau/\beta)\big],

and the posterior is computed on an 801 x 801 grid over ``[-5, 5]^2``.
"""

from __future__ import annotations

import numpy as np
import scipy.stats as st
from samplers._oracles import log_normal_laplace  # the same convolution, one formula

import dpinfer as dp
from dpinfer.neural import SplineFlow, Training

A = np.array([[1.0, 0.6], [-0.4, 1.0]])
TAU = 0.5
SCALE = 0.5
RELEASED = np.array([1.6, -0.9])
NAMES = ("a", "b")
QUANTILES = (0.05, 0.5, 0.95)
GRID = np.linspace(-5.0, 5.0, 801)


def simulate(params, rng):
    theta = np.column_stack([params["a"], params["b"]])
    return theta @ A.T + TAU * rng.standard_normal(theta.shape)


def model() -> dp.Model:
    return dp.Model(prior={"a": st.norm(0, 1), "b": st.norm(0, 1)}, simulate=simulate)


def mechanism() -> dp.Laplace:
    return dp.Laplace(SCALE, event_shape=(2,))


def tiny_settings(**overrides) -> dict:
    """SPPE/SPLE options for plumbing tests: one round of 100 simulations, a small flow."""
    settings = dict(rounds=1, simulations=100, noise_copies=2, draws=40, progressbar=False)
    settings["flow"] = SplineFlow(transforms=1, hidden_features=8, residual_blocks=1, bins=4)
    settings["training"] = Training(max_epochs=2, batch_size=50)
    return settings | overrides


def grid_log_posterior(released=RELEASED, *, with_prior=True) -> np.ndarray:
    ga, gb = np.meshgrid(GRID, GRID, indexing="ij")
    mean = np.stack([ga, gb], axis=-1) @ A.T
    lp = sum(log_normal_laplace(released[j] - mean[..., j], TAU, SCALE) for j in (0, 1))
    if with_prior:
        lp = lp + st.norm.logpdf(ga) + st.norm.logpdf(gb)
    return lp


def summaries(log_density: np.ndarray) -> dict:
    """Mean, sd and quantiles of each margin of a gridded log density."""
    w = np.exp(log_density - log_density.max())
    w /= w.sum()
    out = {}
    for name, margin in zip(NAMES, (w.sum(axis=1), w.sum(axis=0)), strict=True):
        mean = float(margin @ GRID)
        sd = float(np.sqrt(margin @ (GRID - mean) ** 2))
        cdf = np.cumsum(margin)
        # linear interpolation of the CDF between grid nodes (spacing 0.0125)
        quant = [float(np.interp(q, cdf, GRID)) for q in QUANTILES]
        out[name] = {"mean": mean, "sd": sd, "quantiles": quant}
    return out


def draws_summaries(idata) -> dict:
    out = {}
    for name in NAMES:
        x = np.asarray(idata.posterior[name], dtype=float).ravel()
        out[name] = {
            "mean": float(x.mean()),
            "sd": float(x.std()),
            "quantiles": [float(v) for v in np.quantile(x, QUANTILES)],
        }
    return out


def assert_close(got: dict, exact: dict, *, mean_tol: float, sd_tol: float, q_tol: float):
    """Means and quantiles within ``tol`` exact sds; sds within a relative ``sd_tol``."""
    for name in NAMES:
        g, e = got[name], exact[name]
        assert abs(g["mean"] - e["mean"]) < mean_tol * e["sd"], (name, "mean", g, e)
        assert abs(g["sd"] / e["sd"] - 1) < sd_tol, (name, "sd", g, e)
        for gq, eq in zip(g["quantiles"], e["quantiles"], strict=True):
            assert abs(gq - eq) < q_tol * e["sd"], (name, "quantile", g, e)
