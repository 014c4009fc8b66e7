r"""Monte Carlo EM at the boundary of the parameter space, and the naive MLE that fails.

When the observed-data likelihood keeps rising toward a finite end of a
parameter's support (a Poisson rate whose release lies far below zero), EM's
iterates run into that end: the MLE is the bound itself, the score there is
not zero, and neither the Louis information nor a Wald interval mean what they
do at an interior maximum (Self and Liang 1987).

A component is declared at its bound when the M-step itself returned the
bound, or when EM stopped closer to the bound than :data:`RESOLUTION`
standard errors with the score pointing to it. Near a bound the score's
importance estimate rests on rare draws and its Monte Carlo error is itself
unreliable, so only its sign is used; an interior MLE that close to a bound is
indistinguishable from it (the two differ by a hundredth of a standard error,
and its Wald interval would cross the bound), so reporting it on the bound
loses nothing.

References
----------
.. [1] Self, S. G. and Liang, K.-Y. (1987). Asymptotic properties of maximum
   likelihood estimators and likelihood ratio tests under nonstandard
   conditions. JASA 82(398), 605-610.
"""

from __future__ import annotations

import numpy as np

__all__ = ["RESOLUTION", "at_bound", "boundary_message", "restricted_covariance"]

#: An estimate closer to a bound than this many standard errors, with the score pointing
#: to the bound, is reported on the bound.
RESOLUTION = 0.01


def on_closed_bound(space, theta: np.ndarray) -> np.ndarray:
    """Mask of components equal to a finite end of their support."""
    theta = np.asarray(theta, dtype=float)
    lower, upper = space.lower, space.upper
    return (np.isfinite(lower) & (theta == lower)) | (np.isfinite(upper) & (theta == upper))


def in_closed_support(space, theta: np.ndarray) -> bool:
    """Whether a flat vector lies in the closed support (ends included)."""
    theta = np.asarray(theta, dtype=float)
    return bool(
        np.all(np.isfinite(theta)) and np.all((theta >= space.lower) & (theta <= space.upper))
    )


def nearest_bound(space, theta: np.ndarray) -> np.ndarray:
    """Return the finite end of each component's support nearest ``theta`` (NaN if none)."""
    lower, upper = space.lower, space.upper
    to_lower = np.where(np.isfinite(lower), theta - lower, np.inf)
    to_upper = np.where(np.isfinite(upper), upper - theta, np.inf)
    bound = np.where(to_lower <= to_upper, lower, upper)
    return np.where(np.isfinite(bound), bound, np.nan)


def at_bound(space, theta, score, information) -> np.ndarray:
    """Mask of components whose MLE is the nearest bound, judged at an interior ``theta``.

    The score points to the bound and the distance to it is below
    :data:`RESOLUTION` conditional standard errors ``I_kk^{-1/2}`` (infinite
    when ``I_kk`` is not positive, as at a boundary maximum).
    """
    bound = nearest_bound(space, theta)
    diag = np.diag(np.asarray(information, dtype=float))
    with np.errstate(divide="ignore", invalid="ignore"):
        se = np.where(diag > 0, 1 / np.sqrt(diag), np.inf)
        towards = np.sign(bound - theta) * np.asarray(score, dtype=float) > 0
        close = np.abs(theta - bound) < RESOLUTION * se
    return np.isfinite(bound) & towards & close


def restricted_covariance(information: np.ndarray, fixed: np.ndarray) -> np.ndarray:
    """Inverse of the information of the free components; NaN rows/columns for ``fixed``.

    With some components at their bound, the others' asymptotic covariance is
    that of the MLE with the bounded ones held fixed: the inverse of the
    information's free block.
    """
    p = len(fixed)
    cov = np.full((p, p), np.nan)
    free = ~np.asarray(fixed, dtype=bool)
    block = np.asarray(information, dtype=float)[np.ix_(free, free)]
    if free.any() and np.all(np.isfinite(block)):
        try:
            cov[np.ix_(free, free)] = np.linalg.inv(block)
        except np.linalg.LinAlgError:
            pass
    return cov


def boundary_message(labels, bound, theta_seen, score) -> str:
    """Warning text: which parameters sit on which bound, and what that means."""
    parts = [
        f"{label} = {b:g} (the likelihood rises toward it: score {s:.3g} at {t:.3g})"
        for label, b, t, s in zip(labels, bound, theta_seen, score, strict=True)
    ]
    return (
        "the maximum likelihood estimate lies on the boundary of the parameter space: "
        + "; ".join(parts)
        + ". A boundary MLE is not a zero of the score and its sampling distribution is not "
        "normal (Self and Liang 1987): no standard error or Wald interval is reported for it. "
        "Read it as 'the release is best explained by the smallest (or largest) admissible "
        "value'; for an interval, use the likelihood-ratio statistic with its one-sided "
        "(chi-bar-squared) reference or a Bayesian posterior (dpinfer.smc_abc)."
    )


def naive_failure(likelihood, released: np.ndarray, theta: np.ndarray) -> str | None:
    """Why the naive MLE at ``theta`` does not exist, or None when it does."""
    s = np.asarray(released, dtype=float)[np.newaxis]
    with np.errstate(all="ignore"):
        log_p = float(likelihood.derivatives(s, theta, order=0)[0][0])
    if np.isfinite(log_p):
        return None
    return (
        f"log pi(s_dp | theta) = {log_p} at the release: the confidential model gives the "
        "released value no probability (a non-integer count, a value outside the support), "
        "so no parameter makes it likely and the naive MLE does not exist"
    )
