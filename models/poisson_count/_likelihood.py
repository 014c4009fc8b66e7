"""The likelihood of a Laplace release of a Poisson count, and its evidence, by exact sums.

Appendix E's incomplete gamma formula, the sum over the count, and the evidence
with ``theta`` integrated out analytically (Gong 2022, Section 5.1).
"""

from __future__ import annotations

import functools
import math

import numpy as np
import scipy.special as sc
import scipy.stats as st

import dpinfer as dp
from dpinfer import validate

#: The release of Gong's Section 5.1.
RELEASED = 37.4
#: The privacy-loss budget of the Laplace release (scale ``1 / EPSILON``).
EPSILON = 0.2
#: The prior shapes of Gong's Table 1 and Figures 1 and 3 (rate 1).
ALPHAS = (2, 5, 25, 50, 75)

REFERENCE = (
    "Gong, R. (2022). Exact inference with approximate computation for differentially "
    "private data via perturbations. Journal of Privacy and Confidentiality 12(2), "
    "Section 5.1 and Appendix E."
)

# Relative truncation error allowed in the sums over the count (the evidence's, and the
# likelihood's through dpinfer.to_pymc, which bounds it per cell).
_SUM_TOL = 1e-15


def model(*, alpha: float = 25.0, beta: float = 1.0) -> dp.Model:
    """Return the Bayesian model of the confidential count.

    Parameters
    ----------
    alpha, beta : float
        Shape and rate of the Gamma prior on ``theta`` (Gong: ``beta = 1``).

    Returns
    -------
    dpinfer.Model
        Prior ``{"theta": Gamma(alpha, rate=beta)}``; simulator ``Poisson(theta)``.

    Examples
    --------
    >>> import numpy as np
    >>> m = model(alpha=25)
    >>> m.simulate(m.prior.sample(3, np.random.default_rng(0)), np.random.default_rng(1)).shape
    (3,)
    """
    alpha, beta = _check_prior(alpha, beta)
    return dp.Model(
        prior={"theta": st.gamma(alpha, scale=1.0 / beta)},
        simulate=_simulate_count,
        loglik=_count_loglik,
    )


def mechanism(*, epsilon: float = EPSILON) -> dp.Laplace:
    """Return the epsilon-DP Laplace mechanism of a count: scale ``1/epsilon``, sensitivity 1.

    Examples
    --------
    >>> mechanism().scale
    array(5.)
    """
    return dp.Laplace.from_privacy(epsilon=epsilon, sensitivity=1.0)


def log_likelihood(
    theta,
    *,
    released: float = RELEASED,
    epsilon: float = EPSILON,
    method: str = "incomplete_gamma",
) -> np.ndarray:
    r"""Log-likelihood of the release, ``log pi(s_dp | theta)``, normalised in ``s_dp``.

    Parameters
    ----------
    theta : array_like
        Poisson means (positive).
    released, epsilon : float
        The release and the privacy-loss budget of its Laplace mechanism.
    method : {"incomplete_gamma", "sum"}
        Appendix E's closed form, or the sum over the count by the library's
        marginalisation of table cells (:func:`dpinfer.to_pymc`, one cell per
        ``theta``; truncated where the neglected terms are provably below
        ``1e-15`` of the total).

    Returns
    -------
    numpy.ndarray
        Same shape as ``theta``.

    Notes
    -----
    With :math:`k = \lfloor s_{dp} \rfloor` (Gong 2022, Appendix E, extended
    to integer and negative releases),

    .. math::

        \pi(s_{dp} \mid \theta) = \frac{\epsilon}{2} \Big[
            e^{\theta (e^{\epsilon} - 1) - \epsilon s_{dp}} F_{\theta e^{\epsilon}}(k)
          + e^{\theta (e^{-\epsilon} - 1) + \epsilon s_{dp}}
            \big(1 - F_{\theta e^{-\epsilon}}(k)\big) \Big],

    where :math:`F_\lambda` is the Poisson(λ) CDF, i.e. the regularised upper
    incomplete gamma function :math:`\Gamma(k+1, \lambda) / \Gamma(k+1)`, and
    :math:`1 - F_\lambda(k) = \gamma(k+1, \lambda) / \Gamma(k+1)`. For a
    non-integer release :math:`k + 1 = \lceil s_{dp} \rceil`, Gong's form.

    Examples
    --------
    >>> a = log_likelihood([20.0, 37.0], method="incomplete_gamma")
    >>> b = log_likelihood([20.0, 37.0], method="sum")
    >>> bool(np.allclose(a, b, rtol=1e-12))
    True
    """
    theta = _check_theta(theta)
    x = validate.finite("released", released)
    eps = validate.positive_finite("epsilon", epsilon)
    if validate.choice("method", method, ("incomplete_gamma", "sum")) == "sum":
        return _loglik_sum(theta, x, eps)
    return _loglik_closed_form(theta, x, eps)


def log_evidence(
    *,
    alpha: float = 25.0,
    beta: float = 1.0,
    epsilon: float = EPSILON,
    released: float = RELEASED,
) -> float:
    r"""Log of the evidence ``pi(s_dp)``, by an exact sum over the count.

    Notes
    -----
    Under the prior ``Gamma(alpha, beta)`` the count is negative binomial,
    :math:`\Pr(s) = \binom{s + \alpha - 1}{s} p^{\alpha} (1 - p)^{s}` with
    :math:`p = \beta / (1 + \beta)`, so

    .. math:: \pi(s_{dp}) = \sum_{s \ge 0} \Pr(s)\, \frac{\epsilon}{2}
              e^{-\epsilon |s_{dp} - s|}.

    The sum stops at the first ``U >= s_dp`` where the bound
    :math:`\frac{\epsilon}{2} e^{-\epsilon (U + 1 - s_{dp})} \Pr(s > U)` on
    the remainder is below ``1e-15`` of the partial sum. No quadrature over
    ``theta`` is involved, so this is an independent check of the acceptance
    rate of rejection ABC, ``pi(s_dp) / (epsilon / 2)`` (Gong 2022, Appendix B).
    """
    alpha, beta = _check_prior(alpha, beta)
    x = validate.finite("released", released)
    eps = validate.positive_finite("epsilon", epsilon)
    return _log_evidence(alpha, beta, eps, x)


def evidence(**setting: float) -> float:
    """Return the evidence ``pi(s_dp)``; keyword arguments as :func:`log_evidence`.

    Examples
    --------
    >>> acceptance = evidence(alpha=25) / (EPSILON / 2)  # rejection ABC's acceptance rate
    >>> 0.1 < acceptance < 0.2
    True
    """
    return math.exp(log_evidence(**setting))


# --- internals ---------------------------------------------------------------------


#: Above this mean the count is drawn from its normal approximation, capped at 2**62
#: (NumPy's Poisson sampler refuses means above about 1e19; the approximation's total
#: variation error is below 1e-6, and such counts are never near a release of the example).
_POISSON_NORMAL_ABOVE = 1e12


def _simulate_count(params, rng):
    theta = np.asarray(params["theta"], dtype=float)
    huge = theta > _POISSON_NORMAL_ABOVE
    if not np.any(huge):
        return rng.poisson(theta)
    # a sampler's random walk may propose such means in a vague prior's tail
    counts = rng.poisson(np.where(huge, 0.0, theta))
    big = np.minimum(theta[huge], 2.0**62)
    normal = np.round(big + np.sqrt(big) * rng.standard_normal(big.shape))
    counts[huge] = np.minimum(normal, 2.0**62).astype(np.int64)
    return counts


def _count_loglik(s, params):
    return st.poisson.logpmf(s, params["theta"])


def _log_laplace(x, s, eps):
    return math.log(eps / 2.0) - eps * np.abs(x - s)


def _loglik_closed_form(theta, x, eps):
    k = math.floor(x)
    up, down = theta * math.exp(eps), theta * math.exp(-eps)
    with np.errstate(divide="ignore"):
        if k < 0:
            below = np.full(theta.shape, -np.inf)
            above_tail = np.zeros(theta.shape)
        else:
            below = _log_poisson_cdf(k, up)  # F_{theta e^eps}(k)
            above_tail = _log_poisson_sf(k, down)  # 1 - F_{theta e^-eps}(k)
    first = (up - theta) - eps * x + below
    second = (down - theta) + eps * x + above_tail
    return math.log(eps / 2.0) + np.logaddexp(first, second)


# Below this log probability the regularised incomplete gamma functions lose relative
# precision and then underflow to 0; the Poisson tail is summed term by term instead.
_LOG_TAIL_DIRECT = -600.0


def _log_poisson_cdf(k: int, lam) -> np.ndarray:
    """``log P(N <= k)`` for ``N ~ Poisson(lam)``, exact far in the lower tail too."""
    lam = np.asarray(lam, dtype=float)
    with np.errstate(divide="ignore"):
        out = np.atleast_1d(np.log(sc.gammaincc(k + 1, lam)))
    far = ~(out > _LOG_TAIL_DIRECT)
    if np.any(far):
        out[far] = _log_tail_sum(np.arange(k, -1, -1), np.atleast_1d(lam)[far])
    return out.reshape(lam.shape)


def _log_poisson_sf(k: int, lam) -> np.ndarray:
    """``log P(N > k)`` for ``N ~ Poisson(lam)``, exact far in the upper tail too."""
    lam = np.asarray(lam, dtype=float)
    with np.errstate(divide="ignore"):
        out = np.atleast_1d(np.log(sc.gammainc(k + 1, lam)))
    flat = np.atleast_1d(lam)
    far = ~(out > _LOG_TAIL_DIRECT) & (flat > 0)
    if np.any(far):
        ratio = float(np.max(flat[far])) / (k + 2)  # bounds every later term ratio
        size = _terms_needed(ratio)
        out[far] = _log_tail_sum(np.arange(k + 1, k + 1 + size), flat[far], ratio=ratio)
    return out.reshape(lam.shape)


def _log_tail_sum(counts: np.ndarray, lam: np.ndarray, *, ratio: float | None = None):
    """``log sum_s Poisson(s | lam)`` over a tail, from its largest term outward.

    The terms decrease geometrically away from the mean (ratio at most ``k / lam``
    in the lower tail, ``lam / (k + 2)`` in the upper one), and only a tail below
    ``exp(-600)`` comes here, so the mean is far and the ratio below 1: the terms
    kept leave a remainder below ``exp(-40)`` of the sum.
    """
    if ratio is None:  # lower tail: counts k, k-1, ..., 0
        ratio = float(counts[0]) / float(np.min(lam))
        counts = counts[: _terms_needed(ratio)]
    return sc.logsumexp(st.poisson.logpmf(counts[None, :], lam[:, None]), axis=1)


def _terms_needed(ratio: float) -> int:
    if not ratio < 1:  # a tail below exp(-600) is never this close to the mean
        raise RuntimeError(f"Poisson tail series with term ratio {ratio!r} >= 1")
    if ratio <= 0:
        return 1
    return int(math.ceil(40.0 / -math.log(ratio))) + 1


def _loglik_sum(theta, x, eps):
    flat = theta.ravel()
    return _compiled_sum(x, eps, flat.size)(flat).reshape(theta.shape)


@functools.lru_cache(maxsize=16)
def _compiled_sum(x: float, eps: float, cells: int):
    """Compile the tables' summation (:func:`dpinfer.to_pymc`) once per release and size."""
    import pymc as pm
    import pytensor
    import pytensor.tensor as pt

    theta = pt.dvector("theta")
    with pm.Model() as pymc_model:
        dp.to_pymc(
            "release",
            pm.Poisson.dist(mu=theta),
            observed=[(mechanism(epsilon=eps), np.full(cells, x))],
            tol=_SUM_TOL,
        )
    return pytensor.function([theta], pymc_model.logp(sum=False)[0])


@functools.lru_cache(maxsize=64)
def _log_evidence(alpha, beta, eps, x):
    nb = st.nbinom(alpha, beta / (1.0 + beta))
    upper = max(math.ceil(x), 0) + 256
    while True:
        s = np.arange(upper + 1)
        total = float(sc.logsumexp(nb.logpmf(s) + _log_laplace(x, s, eps)))
        tail = _log_laplace(x, upper + 1.0, eps) + float(nb.logsf(upper))
        if tail - total <= math.log(_SUM_TOL):
            return total
        upper *= 2


def _check_prior(alpha, beta) -> tuple[float, float]:
    return validate.positive_finite("alpha", alpha), validate.positive_finite("beta", beta)


def _check_theta(theta) -> np.ndarray:
    arr = np.asarray(theta, dtype=float)
    if not np.all(arr > 0):
        raise ValueError("theta must be positive (Poisson means)")
    return arr
