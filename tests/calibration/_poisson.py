r"""A Poisson count with a Gamma prior, released with Laplace noise: the SBC test problem.

:math:`\theta \sim \mathrm{Gamma}(4, \text{rate } 0.4)`, :math:`s \mid \theta \sim
\mathrm{Poisson}(\theta)`, :math:`s_{dp} = s + \mathrm{Lap}(4)` (epsilon 0.25 for a
count). The posterior is a mixture over the unknown count,

.. math:: \pi(\theta \mid s_{dp}) = \sum_s w_s\, \mathrm{Gamma}(\theta; 4 + s, 1.4),
          \qquad w_s \propto \mathrm{NB}(s; 4, 0.4/1.4)\, e^{-|s_{dp} - s| / 4},

from which :func:`exact` draws directly (the count truncated where its weight is below
1e-16). :func:`naive` ignores the noise (reads ``s_dp`` as the count) and
:func:`shrunk` narrows the exact draws to 60% of their spread: the planted bugs.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.stats as st

import dpinfer as dp

SHAPE, RATE, SCALE = 4.0, 0.4, 4.0
COUNTS = np.arange(400)


def model() -> dp.Model:
    return dp.Model(
        prior={"theta": st.gamma(SHAPE, scale=1 / RATE)},
        simulate=lambda p, rng: rng.poisson(p["theta"]),
    )


def record_model() -> dp.RecordModel:
    """The same model as one Poisson record, with the conjugate update, for DA-MCMC."""
    return dp.RecordModel(
        prior={"theta": st.gamma(SHAPE, scale=1 / RATE)},
        simulate=lambda p, n, rng: rng.poisson(p["theta"][:, None], size=(len(p["theta"]), n)),
        statistic=lambda x: x.astype(float),
        update=lambda x, rng: {"theta": rng.gamma(SHAPE + x.sum(1), 1 / (RATE + x.shape[1]))},
    )


def mechanism() -> dp.Laplace:
    return dp.Laplace.from_privacy(epsilon=1 / SCALE, sensitivity=1.0)


def posterior(theta: np.ndarray, chains: int = 4):
    """An InferenceData of the draws ``(n, *shape)`` in ``chains`` chains, built directly.

    A tenth of the cost of :func:`dpinfer.results.to_inference_data` (no diagnostics):
    what a user's own sampler might return, without ``attrs['ess']``. ArviZ and xarray are
    imported here, not with the module: the sampler registry's records use the model in
    executor workers, which need neither.
    """
    import xarray as xr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # ArviZ's notice of its 1.0 refactor
        import arviz as az

    by_chain = theta.reshape(chains, -1, *theta.shape[1:])
    dims = ("chain", "draw", *(f"theta_dim_{i}" for i in range(theta.ndim - 1)))
    return az.InferenceData(posterior=xr.Dataset({"theta": (dims, by_chain)}))


def exact(released, rng, draws: int = 200):
    """Independent draws from the exact posterior."""
    log_w = st.nbinom.logpmf(COUNTS, SHAPE, RATE / (RATE + 1)) - np.abs(released - COUNTS) / SCALE
    w = np.exp(log_w - log_w.max())
    s = rng.choice(COUNTS, size=draws, p=w / w.sum())
    return posterior(rng.gamma(SHAPE + s, 1 / (RATE + 1)))


def naive(released, rng, draws: int = 200):
    """The conjugate posterior that reads the release as the count (ignores the noise)."""
    return posterior(rng.gamma(SHAPE + max(float(released), 0.0), 1 / (RATE + 1), draws))


def shrunk(released, rng, draws: int = 200):
    """Exact draws pulled towards their mean to 60% of their spread."""
    theta = np.asarray(exact(released, rng, draws).posterior["theta"]).ravel()
    return posterior(theta.mean() + 0.6 * (theta - theta.mean()))
