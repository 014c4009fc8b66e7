"""The exact log-likelihood of a release by one-dimensional integrals, and its maximum.

Each released coordinate is a statistic plus independent Laplace noise, so its
density is a one-dimensional convolution: in closed form for a normal statistic
(:func:`_normal_laplace`), by adaptive quadrature for a scaled chi-square one
(:func:`_gamma_laplace`). :mod:`.survey` uses both too.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.stats as st

from ._data import N_CONTROL, N_TREATED, PARAMETERS, SCALES


def exact_log_likelihood(theta, released) -> float:
    r"""Log-likelihood of the release, ``log pi(s_dp | theta)``, by one-dimensional integrals.

    The release's coordinates are independent given ``theta``; each density is
    the convolution of a statistic's density with its Laplace noise: in
    closed form for the means (normal * Laplace), by adaptive quadrature for
    the variances (gamma * Laplace). The reference for :func:`mle`.

    Parameters
    ----------
    theta : dict or array_like
        ``tau, mu, sigma_t, sigma_c``.
    released : array_like
        The release, shape ``(4,)``.

    Examples
    --------
    >>> round(exact_log_likelihood([2.0, 4.0, 7.0, 5.0], [6.9, 4.1, 55.0, 33.0]), 4)
    -11.0963
    """
    tau, mu, sig_t, sig_c = (
        [float(theta[k]) for k in PARAMETERS] if isinstance(theta, dict) else map(float, theta)
    )
    x = np.asarray(released, dtype=float)
    return (
        _normal_laplace(x[0] - mu - tau, sig_t**2 / N_TREATED, SCALES[0])
        + _normal_laplace(x[1] - mu, sig_c**2 / N_CONTROL, SCALES[1])
        + _gamma_laplace(x[2], sig_t, N_TREATED, SCALES[2])
        + _gamma_laplace(x[3], sig_c, N_CONTROL, SCALES[3])
    )


def exact_mle(released) -> dict:
    """Return the MLE and observed information of :func:`exact_log_likelihood`.

    The density of each released mean is symmetric and unimodal about its
    expectation, so ``mu + tau`` and ``mu`` equal the released means; each
    ``sigma_g`` then maximises a one-dimensional function (scipy). The
    information is the negative Hessian by central differences.

    Returns
    -------
    dict
        ``estimate`` (dict), ``information`` (4 x 4), ``standard_error`` (dict).
    """
    from scipy.optimize import minimize_scalar

    x = np.asarray(released, dtype=float)
    sig = []
    for mean_scale, j, n in ((SCALES[0], 2, N_TREATED), (SCALES[1], 3, N_CONTROL)):
        res = minimize_scalar(
            lambda s, j=j, n=n, b=mean_scale: (
                -(_normal_laplace(0.0, s**2 / n, b) + _gamma_laplace(x[j], s, n, SCALES[j]))
            ),
            bounds=(1e-3, 200.0),
            method="bounded",
            options={"xatol": 1e-10},
        )
        sig.append(float(res.x))
    theta = np.array([x[0] - x[1], x[1], *sig])
    step = 1e-3 * np.maximum(1.0, np.abs(theta))
    info = np.zeros((4, 4))
    eye = np.eye(4)
    for i in range(4):
        for k in range(i, 4):
            di, dk = eye[i] * step[i], eye[k] * step[k]
            val = (
                exact_log_likelihood(theta + di + dk, x)
                - exact_log_likelihood(theta + di - dk, x)
                - exact_log_likelihood(theta - di + dk, x)
                + exact_log_likelihood(theta - di - dk, x)
            ) / (4 * step[i] * step[k])
            info[i, k] = info[k, i] = -val
    return _fit(dict(zip(PARAMETERS, theta.tolist(), strict=True)), info)


def _fit(estimate: dict, info: np.ndarray) -> dict:
    """Return the fit: ``estimate``, ``information`` and its ``standard_error``."""
    se = np.sqrt(np.diag(np.linalg.inv(info)))
    return {
        "estimate": estimate,
        "information": info,
        "standard_error": dict(zip(PARAMETERS, se.tolist(), strict=True)),
    }


def _normal_laplace(d: float, var: float, b: float) -> float:
    """``log`` density at ``d`` of ``N(0, var) + Laplace(b)``."""
    from scipy.special import log_ndtr

    sd = math.sqrt(var)
    a = var / (2 * b * b) - d / b + log_ndtr(d / sd - sd / b)
    c = var / (2 * b * b) + d / b + log_ndtr(-d / sd - sd / b)
    return float(np.logaddexp(a, c) - math.log(2 * b))


def _gamma_laplace(x: float, sigma: float, n: int, b: float) -> float:
    """``log`` density at ``x`` of ``sigma^2 chi2_{n-1} / (n-1) + Laplace(b)``."""
    from scipy.integrate import quad

    dist = st.gamma((n - 1) / 2, scale=2 * sigma**2 / (n - 1))
    lo, hi = dist.ppf(1e-15), dist.isf(1e-15)
    if x > hi:  # the Laplace tail carries the mass beyond the gamma's bulk
        hi = x + 40 * b
    grid = np.append(np.linspace(lo, hi, 2001), x if lo < x < hi else lo)
    shift = float(np.max(dist.logpdf(grid) - np.abs(x - grid) / b))
    points = [p for p in (x, dist.mean()) if lo < p < hi]
    value = quad(
        lambda s: math.exp(dist.logpdf(s) - abs(x - s) / b - shift),
        lo,
        hi,
        points=points,
        limit=200,
        epsabs=0.0,
        epsrel=1e-12,
    )[0]
    return float(math.log(value) + shift - math.log(2 * b))
