r"""M-steps, the Q increase and the Louis observed information of Monte Carlo EM.

Every quantity is a self-normalised weighted mean over the E-step's sample
(:class:`~dpinfer.samplers.mcem._estep.WeightedSample`), computed in one streaming
pass (Gong 2022, eqs. 4.3 and 4.5-4.7).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.optimize

from ._boundary import in_closed_support
from ._estep import _Accumulator

__all__ = ["Louis", "exponential_mstep", "general_mstep", "louis", "q_increase"]


def exponential_mstep(sample, likelihood) -> np.ndarray:
    r"""Closed-form M-step: ``theta = argmax Q`` given the weighted mean of ``b(s)`` (4.3)."""
    family, space = likelihood.exponential_family, likelihood.space
    means = sample.means(lambda s: {"b": family.mean_statistic(s)})
    mean_b = np.asarray(means.first["b"], dtype=float)
    theta = family.maximize(mean_b)
    try:
        return space.check(theta, name="the exponential-family maximiser's result")
    except ValueError as err:
        flat = _flat_or_none(space, theta)
        if flat is not None and in_closed_support(space, flat):
            return flat  # on a finite bound: the caller reports a boundary MLE
        raise ValueError(
            f"{err}; it was computed from E[b(s)] = {mean_b.tolist()} (Gong 2022, eq. 4.3)"
        ) from None


def _flat_or_none(space, theta):
    try:
        return space.flatten(theta)
    except (KeyError, TypeError, ValueError):
        return None


class _Objective:
    """``-Q-hat(phi)`` with its gradient and Hessian on the unconstrained scale (4.5).

    One pass over the sample per new ``phi``; the three values are memoised.
    """

    def __init__(self, sample, likelihood):
        self.sample, self.likelihood, self.space = sample, likelihood, likelihood.space
        self._phi, self._values = None, None
        self.passes = 0

    def _evaluate(self, phi):
        if self._phi is not None and np.array_equal(phi, self._phi):
            return self._values
        theta, d1, d2 = self.space.to_natural(phi)
        lik = self.likelihood

        def terms(s):
            lp, g, h = lik.derivatives(s, theta, order=2)
            return {"lp": lp, "g": g, "h": h}

        means = self.sample.means(terms)
        self.passes += 1
        q, g, h = float(means.first["lp"]), means.first["g"], means.first["h"]
        grad_phi = g * d1
        hess_phi = h * np.outer(d1, d1) + np.diag(g * d2)
        if not np.isfinite(q):
            q, grad_phi, hess_phi = -np.inf, np.zeros_like(phi), np.eye(len(phi))
        self._phi, self._values = np.array(phi, copy=True), (-q, -grad_phi, -hess_phi)
        return self._values

    def fun(self, phi):
        value = self._evaluate(phi)[0]
        return value if np.isfinite(value) else 1e300

    def jac(self, phi):
        return self._evaluate(phi)[1]

    def hess(self, phi):
        return self._evaluate(phi)[2]


def general_mstep(sample, likelihood, theta0: np.ndarray, *, gtol: float = 1e-10) -> np.ndarray:
    r"""Numerical M-step: maximise ``Q-hat(theta) = sum_i w~_i log pi(s_i | theta)`` (4.5).

    Trust-region Newton (``scipy.optimize.minimize(method="trust-exact")``) on
    the unconstrained scale, with the exact gradient and Hessian from the
    likelihood, started at the current parameter.
    """
    space = likelihood.space
    objective = _Objective(sample, likelihood)
    phi0 = space.to_unconstrained(theta0)
    result = scipy.optimize.minimize(
        objective.fun,
        phi0,
        jac=objective.jac,
        hess=objective.hess,
        method="trust-exact",
        options={"gtol": gtol, "maxiter": 200},
    )
    theta = space.to_natural(result.x)[0]
    if not in_closed_support(space, theta):  # a finite bound is reported as a boundary MLE
        raise ValueError(
            f"the numerical M-step left the parameter support: {space.unflatten(theta)}"
        )
    return theta


def q_increase(sample, likelihood, theta_old, theta_new) -> tuple[float, float, float]:
    r"""``Q-hat(theta_new) - Q-hat(theta_old)`` on the sample, its Monte Carlo s.e., the ESS.

    The standard error is the delta-method one of a self-normalised
    importance-sampling mean, ``sqrt(sum_i w~_i^2 (d_i - dQ)^2)`` with
    ``d_i = log pi(s_i | theta_new) - log pi(s_i | theta_old)`` (Caffo, Jank
    and Jones 2005, Section 3).
    """
    lik = likelihood

    def diff(s):
        d = lik.derivatives(s, theta_new, order=0)[0] - lik.derivatives(s, theta_old, order=0)[0]
        return {"d": d, "d2": d * d}

    means = sample.means(diff, squared=("d", "d2"))
    dq = float(means.first["d"])
    m2 = means.second
    var = float(m2["d2"] - 2 * dq * m2["d"] + dq * dq * m2["one"])
    return dq, float(np.sqrt(max(var, 0.0))), means.ess


class Louis(NamedTuple):
    """Observed score and information at one parameter (Gong 2022, eqs. 4.6-4.7).

    Attributes
    ----------
    score : ndarray (p,)
        ``E(lambda(s) | s_dp, theta)``, the observed score (4.6).
    information : ndarray (p, p)
        The Louis observed information (4.7).
    complete_information : ndarray (p, p)
        ``E(-grad lambda(s) | s_dp, theta)``, the expected complete-data
        information; ``information = complete - missing``.
    score_covariance : ndarray (p, p)
        Monte Carlo covariance of the score estimate,
        ``sum_i w~_i^2 (lambda_i - score)(lambda_i - score)'``.
    ess : float
        Effective sample size of the pass.
    """

    score: np.ndarray
    information: np.ndarray
    complete_information: np.ndarray
    score_covariance: np.ndarray
    ess: float


def louis(sample, likelihood, theta) -> Louis:
    r"""Observed score (4.6) and Louis observed information (4.7) at ``theta``, in one pass.

    .. math::

        I_{obs} = E_w[-\nabla^2 \log\pi(s|\theta)]
                  - \big(E_w[\lambda\lambda^\top] - E_w[\lambda] E_w[\lambda]^\top\big)
    """
    lik = likelihood

    def terms(s):
        _, g, h = lik.derivatives(s, theta, order=2)
        return {"g": g, "gg": g[:, :, None] * g[:, None, :], "h": h}

    means = sample.means(terms, squared=("g", "gg"))
    score = np.asarray(means.first["g"], dtype=float)
    complete = -np.asarray(means.first["h"], dtype=float)
    missing = means.first["gg"] - np.outer(score, score)
    info = _symmetric(complete - missing)
    m2 = means.second
    cov = m2["gg"] - np.outer(m2["g"], score) - np.outer(score, m2["g"])
    cov = _symmetric(cov + m2["one"] * np.outer(score, score))
    return Louis(score, info, _symmetric(complete), cov, means.ess)


def _symmetric(a) -> np.ndarray:
    a = np.asarray(a, dtype=float)
    return (a + a.T) / 2


def newton_update(sample, likelihood, theta, theta_em) -> tuple[np.ndarray, bool]:
    r"""Louis-Newton acceleration: the better of the EM update and a Newton step.

    The Newton step ``theta + I_obs^-1 score`` uses the observed score (4.6)
    and Louis information (4.7) on the E-step's sample (Gong 2022, end of
    Section 4: "accelerating ... Newton-type implementations of the M-step";
    Louis 1982, Section 4). It is taken when the information is positive
    definite and its estimated log-likelihood ratio against the EM update,
    ``log sum_i w~_i pi(s_i | theta') / pi(s_i | theta)`` (the importance
    estimate of ``pi(s_dp | theta') / pi(s_dp | theta)``), is larger. Both
    updates share the fixed point ``score = 0``.

    Returns
    -------
    theta_next, used_newton
    """
    space = likelihood.space
    est = louis(sample, likelihood, theta)
    try:
        chol = np.linalg.cholesky(est.information)
    except np.linalg.LinAlgError:
        return theta_em, False
    direction = np.linalg.solve(chol.T, np.linalg.solve(chol, est.score))
    candidate = None
    for k in range(20):  # shorten the step until it stays in the support
        trial = theta + 0.5**k * direction
        if space.contains(trial):
            candidate = trial
            break
    if candidate is None:
        return theta_em, False

    log_ratio = log_likelihood_ratios(sample, likelihood, theta, [candidate, theta_em])
    if np.isfinite(log_ratio[0]) and log_ratio[0] > log_ratio[1]:
        return candidate, True
    return theta_em, False


def log_likelihood_ratios(sample, likelihood, theta, others) -> np.ndarray:
    r"""Estimate ``log pi(s_dp | theta') - log pi(s_dp | theta)`` by importance, in one pass.

    With the E-step's sample at ``theta``,
    ``pi(s_dp | theta') / pi(s_dp | theta) = E(pi(s | theta') / pi(s | theta) | s_dp, theta)``
    is estimated by ``sum_i w~_i exp(log pi(s_i | theta') - log pi(s_i | theta))``.
    """
    den, nums = _Accumulator(), [_Accumulator() for _ in others]
    for chunk in sample.chunks():
        base = likelihood.derivatives(chunk.s, theta, order=0)[0]
        den.add(chunk.log_w, {})
        for acc, other in zip(nums, others, strict=True):
            diff = likelihood.derivatives(chunk.s, other, order=0)[0] - base
            acc.add(chunk.log_w + np.where(np.isnan(diff), -np.inf, diff), {})
    log_den = den.result()[0]
    return np.array([acc.result()[0] - log_den for acc in nums])
