r"""A survey release: the mean and variance of clamped incomes, each with Laplace noise.

Not a published example: the two-parameter model of issues 19 and 20, on which
Monte Carlo EM's ascent-based schedule once took minutes and the Wald interval
of ``sigma`` missed the likelihood's skew. ``n = 500`` incomes (in $1k) are
clamped to ``[0, 200]``; the curator releases their mean and sample variance,
each with its own Laplace noise at ``epsilon = 0.5`` (``epsilon = 1`` in all).
Replacing one income moves the mean by at most ``200 / n`` and the sample
variance by at most ``200^2 / n``, the sensitivities that set the scales.

The analyst models ``ybar ~ N(mu, sigma^2 / n)`` and
``s2 ~ sigma^2 chi2_{n-1} / (n - 1)``, independent (the clamping is ignored,
as the issue's model did). The likelihood of the release factorises into two
one-dimensional convolutions, the Lalonde example's (:func:`exact_log_likelihood`
of :mod:`dpinfer.models.lalonde`, one group): the exact reference for Monte
Carlo EM, its Wald and its profile intervals.

Examples
--------
>>> from dpinfer.models.lalonde import survey
>>> round(survey.exact_log_likelihood(47.7, 26.5), 4)
-7.3293
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq, minimize_scalar
from scipy.stats import chi2

import dpinfer as dp

from ._exact import _gamma_laplace, _normal_laplace

__all__ = [
    "EPSILON",
    "N",
    "RELEASED",
    "UPPER",
    "exact_log_likelihood",
    "exact_mle",
    "exact_profile_interval",
    "likelihood",
    "mechanism",
    "model",
]

#: Number of incomes.
N = 500
#: Incomes are clamped to [0, UPPER] ($1k).
UPPER = 200.0
#: Privacy-loss budget of each of the two releases.
EPSILON = 0.5
#: A release (mean, variance), drawn once: 500 Gamma(2.5, scale 20) incomes clamped to
#: [0, 200] (mean 47.6, variance 781.1) plus the noise, seed 1.
RELEASED = (47.7, 708.9)


def mechanism() -> dp.Laplace:
    """Return the Laplace mechanism of (mean, variance), scales 200 / (n eps) and 200^2 / (n eps).

    Examples
    --------
    >>> mechanism().scale
    array([  0.8, 160. ])
    """
    scales = np.array([UPPER / N, UPPER**2 / N]) / EPSILON
    return dp.Laplace(scales, sensitivity=scales * EPSILON)


def likelihood() -> dp.Likelihood:
    """Return the likelihood of ``(ybar, s2)`` from PyMC (no closed-form M-step declared)."""
    import pymc as pm

    half = (N - 1) / 2

    def factory(p):
        return [
            pm.Normal.dist(mu=p["mu"], sigma=p["sigma"] / math.sqrt(N)),
            pm.Gamma.dist(alpha=half, beta=half / p["sigma"] ** 2),
        ]

    return dp.Likelihood.from_pymc(factory, params=["mu", "sigma"], support={"sigma": "positive"})


def model(lik: dp.Likelihood | None = None) -> dp.Model:
    """Return the model: simulator of ``(ybar, s2)`` and its likelihood (no prior)."""
    return dp.Model(simulate=_simulate, likelihood=likelihood() if lik is None else lik)


def exact_log_likelihood(mu: float, sigma: float, released=RELEASED) -> float:
    """Return ``log pi(s_dp | mu, sigma)`` by one-dimensional convolutions."""
    b = mechanism().scale
    x = np.asarray(released, dtype=float)
    return _normal_laplace(x[0] - mu, sigma**2 / N, b[0]) + _gamma_laplace(x[1], sigma, N, b[1])


def _profile_mu(mu: float, released) -> float:
    """Return ``max_sigma log pi(s_dp | mu, sigma)``."""
    res = minimize_scalar(
        lambda s: -exact_log_likelihood(mu, s, released),
        bounds=(1.0, 150.0),
        method="bounded",
        options={"xatol": 1e-6},  # the maximum's value is off by O(xatol^2): far below 1e-9
    )
    return -float(res.fun)


def _profile_sigma(sigma: float, released) -> float:
    # the released mean's density is symmetric and unimodal about mu: mu_hat = ybar_dp
    return exact_log_likelihood(float(released[0]), sigma, released)


def exact_mle(released=RELEASED) -> dict:
    """Return the MLE ``{"mu", "sigma"}`` of the exact likelihood."""
    res = minimize_scalar(
        lambda s: -_profile_sigma(s, released),
        bounds=(1.0, 150.0),
        method="bounded",
        options={"xatol": 1e-10},
    )
    return {"mu": float(released[0]), "sigma": float(res.x)}


def exact_profile_interval(level: float = 0.95, released=RELEASED) -> dict:
    """Return the exact profile-likelihood intervals ``{name: (lower, upper)}``."""
    mle = exact_mle(released)
    q = float(chi2.ppf(level, 1))
    out = {}
    for name, profile, width in (("mu", _profile_mu, 10.0), ("sigma", _profile_sigma, 20.0)):
        top = profile(mle[name], released)

        def excess(v, profile=profile, top=top):
            return 2 * (top - profile(v, released)) - q

        ends = []
        for side in (-1, 1):
            far = mle[name] + side * width
            while excess(far) < 0:
                far = mle[name] + 2 * (far - mle[name])
            ends.append(brentq(excess, *sorted((mle[name], far)), xtol=1e-8))
        out[name] = tuple(ends)
    return out


def _simulate(params, rng):
    half = (N - 1) / 2
    ybar = rng.normal(params["mu"], params["sigma"] / math.sqrt(N))
    s2 = rng.gamma(half, params["sigma"] ** 2 / half)
    return np.stack([ybar, s2], axis=-1)
