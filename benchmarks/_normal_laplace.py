r"""A held-out two-parameter problem with a Laplace release and its exact posterior on a grid.

Not a benchmark itself: ``neural_vs_sbi.py`` imports it.

``n = 40`` records :math:`x_i \sim N(\mu, \sigma^2)`; the confidential statistic is their
mean and sample variance (``ddof = 1``), released with Laplace noise of scales 0.15 and
0.25 (a noise sd of 0.21 and 0.35, about the sampling sds of the two statistics at
:math:`\sigma = 1.3`: the noise matters). Parameters :math:`\theta = (\mu, \log\sigma)`
with priors :math:`N(0, 1)` and :math:`N(0, 0.5^2)`. The simulator draws the two
sufficient statistics from their exact joint law, :math:`\bar x \sim N(\mu, \sigma^2 / n)`
and :math:`S^2 \sim \sigma^2 \chi^2_{n-1} / (n - 1)`, independent.

The likelihood of the release factorises: the mean's is the normal-Laplace convolution
in closed form, the variance's the gamma-Laplace convolution, computed by the trapezoid
rule on a fine grid of variances (once per value of :math:`\sigma`). The posterior is
evaluated on a 401 x 401 grid that covers the prior's +-5 sd box at first and is then
refitted to the posterior's +-8 sd box; exact draws are grid cells drawn by their mass,
jittered uniformly within the cell.
"""

from __future__ import annotations

import numpy as np
import scipy.stats as st
from scipy.special import log_ndtr

import dpinfer as dp

N_RECORDS = 40
SCALES = np.array([0.15, 0.25])
PRIOR_SD = {"mu": 1.0, "log_sigma": 0.5}
NAMES = ("mu", "log_sigma")
# one release of theta = (0.4, log 1.3), drawn once (numpy seed 20): mean, variance
RELEASED = np.array([0.3330, 2.1108])
GRID_POINTS = 401


def simulate(params, rng):
    """Mean and sample variance of ``N_RECORDS`` normal records, from their exact laws."""
    mu = np.asarray(params["mu"], dtype=float)
    sigma = np.exp(np.asarray(params["log_sigma"], dtype=float))
    mean = mu + sigma / np.sqrt(N_RECORDS) * rng.standard_normal(mu.shape)
    var = sigma**2 * rng.chisquare(N_RECORDS - 1, size=mu.shape) / (N_RECORDS - 1)
    return np.stack([mean, var], axis=-1)


def model() -> dp.Model:
    return dp.Model(
        prior={k: st.norm(0.0, sd) for k, sd in PRIOR_SD.items()},
        simulate=simulate,
    )


def mechanism() -> dp.Laplace:
    return dp.Laplace(SCALES)


def _log_normal_laplace(x, tau, b):
    """Log density of N(0, tau^2) + Laplace(b) at ``x`` (broadcast)."""
    return (
        -np.log(2 * b)
        + tau**2 / (2 * b**2)
        + np.logaddexp(
            -x / b + log_ndtr(x / tau - tau / b),
            x / b + log_ndtr(-x / tau - tau / b),
        )
    )


def _log_gamma_laplace(released_var: float, sigma: np.ndarray, b: float) -> np.ndarray:
    """Log density of sigma^2 chi2_{n-1} / (n-1) + Laplace(b) at ``released_var``, per sigma."""
    k = (N_RECORDS - 1) / 2
    out = np.empty(len(sigma))
    for i, s in enumerate(sigma):
        scale = 2 * s**2 / (N_RECORDS - 1)
        lo, hi = st.gamma.ppf([1e-12, 1 - 1e-12], k, scale=scale)
        v = np.linspace(lo, hi, 4001)
        # the Laplace kernel's kink at released_var: refine the grid around it
        v = np.union1d(v, released_var + b * np.linspace(-1, 1, 401))
        v = v[(v >= lo) & (v <= hi)]
        f = np.exp(st.gamma.logpdf(v, k, scale=scale) - np.abs(released_var - v) / b) / (2 * b)
        out[i] = np.log(np.trapezoid(f, v))
    return out


def _log_posterior(released, mu, log_sigma):
    sigma = np.exp(log_sigma)
    lp_mean = _log_normal_laplace(
        released[0] - mu[:, None], sigma[None, :] / np.sqrt(N_RECORDS), SCALES[0]
    )
    lp_var = _log_gamma_laplace(float(released[1]), sigma, SCALES[1])
    prior = st.norm.logpdf(mu, 0, PRIOR_SD["mu"])[:, None] + st.norm.logpdf(
        log_sigma, 0, PRIOR_SD["log_sigma"]
    )
    return lp_mean + lp_var[None, :] + prior


def _moments(lp, mu, log_sigma):
    w = np.exp(lp - lp.max())
    w /= w.sum()
    out = {}
    for name, axis, grid in (("mu", 1, mu), ("log_sigma", 0, log_sigma)):
        margin = w.sum(axis=axis)
        mean = float(margin @ grid)
        out[name] = (mean, float(np.sqrt(margin @ (grid - mean) ** 2)))
    return w, out


class ExactPosterior:
    """The grid posterior of a release: marginal means and sds, and exact draws.

    Parameters
    ----------
    released : array_like
        The release (mean, variance).
    """

    def __init__(self, released=RELEASED):
        released = np.asarray(released, dtype=float)
        mu = np.linspace(-5, 5, GRID_POINTS) * PRIOR_SD["mu"]
        log_sigma = np.linspace(-5, 5, GRID_POINTS) * PRIOR_SD["log_sigma"]
        _, first = _moments(_log_posterior(released, mu, log_sigma), mu, log_sigma)
        mu = np.linspace(-8, 8, GRID_POINTS) * first["mu"][1] + first["mu"][0]
        log_sigma = np.linspace(-8, 8, GRID_POINTS) * first["log_sigma"][1] + first["log_sigma"][0]
        self.weights, moments = _moments(_log_posterior(released, mu, log_sigma), mu, log_sigma)
        self.grids = (mu, log_sigma)
        self.mean = np.array([moments[k][0] for k in NAMES])
        self.sd = np.array([moments[k][1] for k in NAMES])

    def sample(self, n: int, rng) -> np.ndarray:
        """``n`` exact draws (up to the grid's resolution), shape ``(n, 2)``."""
        rng = np.random.default_rng(rng)
        flat = rng.choice(self.weights.size, size=n, p=self.weights.ravel())
        i, j = np.unravel_index(flat, self.weights.shape)
        mu, log_sigma = self.grids
        h = np.array([mu[1] - mu[0], log_sigma[1] - log_sigma[0]])
        cells = np.column_stack([mu[i], log_sigma[j]])
        return cells + h * (rng.random((n, 2)) - 0.5)

    def errors(self, draws: np.ndarray) -> dict:
        """Errors of the draws' means (in exact sds) and sds (relative), per parameter."""
        return {
            "mean": (draws.mean(0) - self.mean) / self.sd,
            "sd": draws.std(0) / self.sd - 1,
        }
