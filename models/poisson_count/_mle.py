"""Maximum likelihood of the Poisson mean from the release (Gong 2022, Section 4, Appendix E).

Monte Carlo EM with the Louis information, the exact MLE of the closed-form
likelihood, and the naive MLE that takes the release as the count.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import scipy.stats as st

import dpinfer as dp

from ._likelihood import EPSILON, RELEASED, _simulate_count, log_likelihood, mechanism


def likelihood() -> dp.Likelihood:
    """Return the Poisson log-likelihood from PyMC, with score and Hessian by autodiff.

    Declares the exponential family: sufficient statistic ``b(s) = s`` and
    the M-step ``theta = E(s | s_dp, theta_t)`` (Gong 2022, eqs. 4.2-4.3).

    Examples
    --------
    >>> import numpy as np
    >>> lik = likelihood()
    >>> float(lik.hessian(np.array([37.4]), {"theta": np.array([37.4])})[0, 0, 0])
    -0.026737967914438502
    """
    import pymc as pm

    return dp.Likelihood.from_pymc(
        lambda p: pm.Poisson.dist(mu=p["theta"]),
        params=["theta"],
        support={"theta": "positive"},
        exponential_family=dp.ExponentialFamily(statistic=_identity, maximize=_poisson_mle),
    )


def mle(
    *,
    epsilon: float = EPSILON,
    released: float = RELEASED,
    start: float = 1.0,
    schedule="staged",
    rng=None,
    progressbar: bool = False,
    **kwargs,
) -> dp.MCEMResult:
    """Maximum likelihood estimate of ``theta`` from the release, by Monte Carlo EM.

    Parameters
    ----------
    epsilon, released : float
        The privacy budget and the release (Gong: 0.2 and 37.4).
    start : float, default 1.0
        Starting value (Gong's ``theta^(1) = 1``).
    schedule : {"staged", "auto"} or schedule, default "staged"
        Gong's Appendix E stages, or the ascent-based schedule.
    rng, progressbar, **kwargs
        Passed to :func:`dpinfer.mcem`.

    Returns
    -------
    dpinfer.MCEMResult
        Gong reports ``theta = 37.237`` and observed information ``1.582e-2``
        (naive: 37.4 and ``2.674e-2``).

    Examples
    --------
    >>> fit = mle(schedule="auto", rng=1)
    >>> round(fit.estimate["theta"]), round(float(fit.observed_information[0, 0]), 3)
    (37, 0.016)
    """
    model_ = dp.Model(
        prior={"theta": st.gamma(25.0)}, simulate=_simulate_count, likelihood=_shared_likelihood()
    )
    return dp.mcem(
        model_,
        mechanism(epsilon=epsilon),
        released,
        start={"theta": start},
        schedule=schedule,
        rng=rng,
        progressbar=progressbar,
        **kwargs,
    )


def naive_mle(*, released: float = RELEASED) -> dict:
    """Return the naive MLE, which treats the release as the count: ``theta = s_dp``.

    Returns
    -------
    dict
        ``estimate``, ``information`` (``s_dp / theta^2 = 1 / s_dp``) and
        ``standard_error``.

    Examples
    --------
    >>> naive_mle()["information"]  # Gong: 2.674e-2
    0.026737967914438502
    """
    released = float(released)
    if not (released > 0 and math.isfinite(released)):
        return {"estimate": math.nan, "information": math.nan, "standard_error": math.nan}
    return {
        "estimate": released,
        "information": 1.0 / released,
        "standard_error": math.sqrt(released),
    }


def exact_mle(*, epsilon: float = EPSILON, released: float = RELEASED) -> dict:
    """Return the MLE and observed information of the exact log-likelihood (no Monte Carlo).

    Maximises :func:`log_likelihood` (Appendix E's closed form, exact far in the
    tails too; ``tests/models`` check it against the sum over the count) with
    scipy, and differentiates it twice numerically: the reference for
    :func:`mle`. A release near or below 0 can put the maximum at the boundary
    ``theta = 0``: the estimate is then 0, without information or standard error.

    Examples
    --------
    >>> ref = exact_mle()
    >>> round(ref["estimate"], 3), round(ref["information"], 5)  # Gong: 37.237, 1.582e-2
    (37.237, 0.01582)
    """
    from scipy.optimize import minimize_scalar

    def loglik(theta):
        return float(log_likelihood(np.array([theta]), released=released, epsilon=epsilon)[0])

    res = minimize_scalar(
        lambda x: -loglik(x),
        bounds=(1e-6, 3 * max(released, 1.0) + 60.0 / epsilon),
        method="bounded",
        options={"xatol": 1e-10},
    )
    theta = float(res.x)
    if theta < 1e-5:
        # the likelihood rises toward theta = 0 (a release near or below 0): the MLE is the
        # boundary, without a standard error (as MCEM reports it)
        return {"estimate": 0.0, "information": math.nan, "standard_error": math.nan}
    h = 1e-3 * theta
    info = -(loglik(theta + h) - 2 * loglik(theta) + loglik(theta - h)) / h**2
    se = info**-0.5 if info > 0 and math.isfinite(info) else math.nan
    return {"estimate": theta, "information": info, "standard_error": se}


@functools.cache
def _shared_likelihood() -> dp.Likelihood:
    # one instance, so its compiled PyTensor functions are reused across fits
    return likelihood()


def _identity(s):
    return s


def _poisson_mle(mean):
    return {"theta": float(mean[0])}
