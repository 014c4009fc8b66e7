"""Maximum likelihood (Gong 2022, Section 4): Monte Carlo EM with Louis information, naive.

The exact maximum, by numerical integration, is :func:`~dpinfer.models.lalonde.exact_mle`.
"""

from __future__ import annotations

import functools
import math

import numpy as np

import dpinfer as dp

from ._data import N_CONTROL, N_TREATED, PARAMETERS, mechanism, prior, simulate_statistics
from ._exact import _fit

#: Gong's Appendix E stages, with the last one at 10^6 (EM here is accelerated).
MLE_SCHEDULE = dp.StagedSchedule(stages=((10**3, 1e-3), (10**5, 1e-4), (10**6, 1e-5)))
#: :func:`run` stops a stage of its MCEM fit after this many iterations (the fit is then
#: flagged as not converged), so that a release far from the data cannot stall it.
MLE_MAX_ITERATIONS = 100


def likelihood() -> dp.Likelihood:
    r"""Return the likelihood of the four statistics, from PyMC with autodiff derivatives.

    The statistics are independent given the parameters:
    :math:`\bar y_g \sim N(\cdot, \sigma_g^2 / n_g)` and
    :math:`s_g^2 \sim Gamma((n_g - 1)/2, \text{rate } (n_g - 1) / (2 \sigma_g^2))`.
    The family is exponential with sufficient statistic
    :math:`b(s) = (\bar y_t, \bar y_t^2, \bar y_c, \bar y_c^2, s_t^2, s_c^2)`, and
    the M-step given :math:`E b` is in closed form: :math:`\mu + \tau = E \bar y_t`,
    :math:`\mu = E \bar y_c` and
    :math:`\sigma_g^2 = (n_g \mathrm{Var}(\bar y_g) + (n_g - 1) E s_g^2) / n_g`.

    Examples
    --------
    >>> lik = likelihood()
    >>> lik.space.labels
    ('tau', 'mu', 'sigma_t', 'sigma_c')
    """
    import pymc as pm

    nt, nc = N_TREATED, N_CONTROL

    def factory(p):
        return [
            pm.Normal.dist(p["mu"] + p["tau"], p["sigma_t"] / math.sqrt(nt)),
            pm.Normal.dist(p["mu"], p["sigma_c"] / math.sqrt(nc)),
            pm.Gamma.dist(alpha=(nt - 1) / 2, beta=(nt - 1) / (2 * p["sigma_t"] ** 2)),
            pm.Gamma.dist(alpha=(nc - 1) / 2, beta=(nc - 1) / (2 * p["sigma_c"] ** 2)),
        ]

    return dp.Likelihood.from_pymc(
        factory,
        params=PARAMETERS,
        support={"sigma_t": "positive", "sigma_c": "positive"},
        exponential_family=dp.ExponentialFamily(
            statistic=_sufficient_statistic, maximize=_complete_data_mle
        ),
    )


def mle(
    released,
    *,
    start: dict | None = None,
    schedule=MLE_SCHEDULE,
    accelerate: bool = True,
    rng=None,
    progressbar: bool = False,
    **kwargs,
) -> dp.MCEMResult:
    """Maximum likelihood estimate of ``(tau, mu, sigma_t, sigma_c)`` by Monte Carlo EM.

    Parameters
    ----------
    released : array_like
        The release, shape ``(4,)``.
    start : dict, optional
        Starting value; default the naive estimate (:func:`naive_mle`), with
        released variances below 1 raised to 1.
    schedule : schedule, default :data:`MLE_SCHEDULE`
        Sample sizes ``10^3, 10^5, 10^6`` with tolerances ``10^-3, 10^-4, 10^-5``.
    accelerate : bool, default True
        Louis-Newton steps (see :func:`dpinfer.mcem`): the noise on the means
        swamps them (fraction of missing information about 0.93), so plain EM
        creeps.
    rng, progressbar, **kwargs
        Passed to :func:`dpinfer.mcem`.

    Returns
    -------
    dpinfer.MCEMResult

    Examples
    --------
    >>> fit = mle([6.9, 4.1, 55.0, 33.0], rng=1)  # doctest: +SKIP
    >>> round(fit.estimate["tau"], 1), round(fit.standard_error["tau"], 1)  # doctest: +SKIP
    (2.8, 1.9)
    """
    released = np.asarray(released, dtype=float)
    if start is None:
        floored = released.copy()
        floored[2:] = np.maximum(floored[2:], 1.0)
        start = _complete_data_mle(_sufficient_statistic(floored[np.newaxis])[0])
    model_ = dp.Model(prior=prior(), simulate=simulate_statistics, likelihood=_shared_likelihood())
    return dp.mcem(
        model_,
        mechanism(),
        released,
        start=start,
        schedule=schedule,
        accelerate=accelerate,
        rng=rng,
        progressbar=progressbar,
        **kwargs,
    )


def naive_mle(released) -> dict:
    """Return the naive MLE, which takes the release for the confidential statistics.

    Returns
    -------
    dict
        ``estimate`` (dict; NaN where a released variance is not positive),
        ``information`` (4 x 4, ``-d^2 log pi(s_dp | theta)``) and
        ``standard_error`` (dict).

    Examples
    --------
    >>> naive = naive_mle([6.9, 4.1, 55.0, 33.0])
    >>> round(naive["estimate"]["tau"], 3), round(naive["standard_error"]["tau"], 3)
    (2.8, 0.65)
    """
    released = np.asarray(released, dtype=float)
    nan = {k: math.nan for k in PARAMETERS}
    if released.shape != (4,) or not np.all(np.isfinite(released)) or np.any(released[2:] <= 0):
        return {"estimate": nan, "information": np.full((4, 4), np.nan), "standard_error": nan}
    est = _complete_data_mle(_sufficient_statistic(released[np.newaxis])[0])
    theta = np.array([est[k] for k in PARAMETERS])
    info = -_shared_likelihood().derivatives(released[np.newaxis], theta, order=2)[2][0]
    return _fit({k: float(v) for k, v in est.items()}, info)


@functools.cache
def _shared_likelihood() -> dp.Likelihood:
    # one instance, so its compiled PyTensor functions are reused across fits
    return likelihood()


def _sufficient_statistic(s):
    s = np.asarray(s, dtype=float)
    return np.column_stack([s[:, 0], s[:, 0] ** 2, s[:, 1], s[:, 1] ** 2, s[:, 2], s[:, 3]])


def _complete_data_mle(mean):
    var_t, var_c = mean[1] - mean[0] ** 2, mean[3] - mean[2] ** 2
    nt, nc = N_TREATED, N_CONTROL
    return {
        "tau": float(mean[0] - mean[2]),
        "mu": float(mean[2]),
        "sigma_t": float(np.sqrt((nt * var_t + (nt - 1) * mean[4]) / nt)),
        "sigma_c": float(np.sqrt((nc * var_c + (nc - 1) * mean[5]) / nc)),
    }
