"""Closed-form oracles for the sampler tests.

Conjugate normal model: theta ~ N(0, 1), s | theta ~ N(theta, 1). Through a
Gaussian mechanism of standard deviation sigma the release is
s_dp | theta ~ N(theta, 1 + sigma^2), so the posterior is normal and the
evidence is N(s_dp; 0, 2 + sigma^2).

Through a Laplace mechanism of scale b the release is normal + Laplace, whose
density (the normal-Laplace convolution) is also closed form; the posterior
of theta is then one-dimensional and integrated on a fine grid.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.stats as st
from scipy.special import log_ndtr

import dpinfer as dp


def normal_model(dim: int | None = None) -> dp.Model:
    """theta ~ N(0, I), s | theta ~ N(theta, I); scalar when ``dim`` is None."""
    if dim is None:
        prior = {"theta": st.norm(0.0, 1.0)}
    else:
        prior = {"theta": st.multivariate_normal(np.zeros(dim), np.eye(dim))}
    return dp.Model(
        prior=prior, simulate=lambda p, rng: p["theta"] + rng.standard_normal(p["theta"].shape)
    )


def gaussian_posterior(s_dp: float, sigma: float):
    """Exact posterior of theta given a Gaussian(sigma) release of the normal model."""
    v = 1.0 + sigma**2  # variance of s_dp given theta
    precision = 1.0 + 1.0 / v
    return st.norm(loc=s_dp / v / precision, scale=math.sqrt(1.0 / precision))


def gaussian_log_evidence(s_dp: float, sigma: float) -> float:
    """log pi(s_dp) = log N(s_dp; 0, 2 + sigma^2)."""
    return float(st.norm(0.0, math.sqrt(2.0 + sigma**2)).logpdf(s_dp))


def log_normal_laplace(z, tau: float, b: float):
    """Log density at ``z`` of N(0, tau^2) + Laplace(0, b) (convolution in closed form).

    f(z) = exp(tau^2 / (2 b^2)) / (2 b)
           * [exp(-z/b) Phi(z/tau - tau/b) + exp(z/b) Phi(-z/tau - tau/b)]
    """
    z = np.asarray(z, dtype=float)
    const = tau**2 / (2 * b**2) - math.log(2 * b)
    return const + np.logaddexp(
        -z / b + log_ndtr(z / tau - tau / b), z / b + log_ndtr(-z / tau - tau / b)
    )


class LaplacePosterior:
    """Posterior of one coordinate theta_j given a Laplace(b_j) release of the normal model.

    pi(theta | s_dp) ∝ N(theta; 0, 1) f(s_dp - theta; tau=1, b), tabulated on a grid.
    """

    def __init__(self, s_dp: float, b: float, *, lo: float = -9.0, hi: float = 9.0):
        self.grid = np.linspace(lo, hi, 36_001)
        log_dens = st.norm.logpdf(self.grid) + log_normal_laplace(s_dp - self.grid, 1.0, b)
        dens = np.exp(log_dens - log_dens.max())
        cdf = np.concatenate([[0.0], np.cumsum((dens[1:] + dens[:-1]) / 2)])
        self._cdf = cdf / cdf[-1]
        step = self.grid[1] - self.grid[0]
        weights = dens / (dens.sum() * step)
        self.mean = float(np.sum(self.grid * weights) * step)
        self.var = float(np.sum((self.grid - self.mean) ** 2 * weights) * step)

    def cdf(self, x):
        return np.interp(x, self.grid, self._cdf)


def laplace_log_evidence(s_dp, scales) -> float:
    """log pi(s_dp) for independent coordinates: s_dp_j ~ N(0, 2) + Laplace(b_j)."""
    return float(
        sum(log_normal_laplace(x, math.sqrt(2.0), b) for x, b in zip(s_dp, scales, strict=True))
    )


def weighted_moments(values: np.ndarray, weights: np.ndarray):
    """Self-normalised mean and variance with their delta-method standard errors."""
    mean = float(np.sum(weights * values))
    dev2 = (values - mean) ** 2
    var = float(np.sum(weights * dev2))
    se_mean = float(np.sqrt(np.sum(weights**2 * dev2)))
    se_var = float(np.sqrt(np.sum(weights**2 * (dev2 - var) ** 2)))
    return mean, se_mean, var, se_var
