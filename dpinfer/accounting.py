"""Privacy accounting: composition, calibration and conversions.

Every function here is a closed form (or the root of one) computed from
parameters; nothing is inferred from samples.

References
----------
.. [1] Balle, B. and Wang, Y.-X. (2018). Improving the Gaussian mechanism for
   differential privacy: analytical calibration and optimal denoising. ICML.
.. [2] Dwork, C. and Roth, A. (2014). The algorithmic foundations of
   differential privacy. Theorem A.1 (classical Gaussian calibration).
.. [3] Bun, M. and Steinke, T. (2016). Concentrated differential privacy.
.. [4] Canonne, C., Kamath, G. and Steinke, T. (2020). The discrete Gaussian
   for differential privacy. NeurIPS.
.. [5] Mironov, I. (2017). Renyi differential privacy. CSF.
.. [6] Lyu, M., Su, D. and Li, N. (2017). Understanding the sparse vector
   technique for differential privacy. PVLDB.
.. [7] Park, M., Vinaroz, M. and Jitkrittum, W. (2021). ABCDP: approximate
   Bayesian computation with differential privacy. Entropy 23(8), Theorem 1.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.optimize as so
import scipy.special as sc
from numpy.typing import ArrayLike

from . import _validate
from .mechanisms._numerics import fsum_or_inf
from .mechanisms._params import FLOAT_SCALE_MAX as _SIGMA_MAX
from .mechanisms._params import FLOAT_SCALE_MIN as _SIGMA_MIN
from .mechanisms._params import bracket
from .mechanisms.base import Privacy

__all__ = [
    "abcdp_gaussian_epsilon",
    "abcdp_gaussian_sigma",
    "binomial_release_epsilon",
    "compose",
    "discrete_gaussian_delta",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_sigma_analytic",
    "gaussian_sigma_classical",
    "laplace_epsilon",
    "rdp_to_approx",
    "soft_abcdp_epsilon",
    "soft_abcdp_rdp",
    "soft_abcdp_sigma",
    "svt_epsilon",
    "svt_scale",
    "zcdp_gaussian",
    "zcdp_to_approx",
]


def compose(*guarantees: Privacy) -> Privacy:
    """Sequential composition: epsilons, deltas and zCDP rhos add up.

    Parameters
    ----------
    *guarantees : Privacy
        Guarantees of mechanisms run on the same data.

    Returns
    -------
    Privacy
        When every input states an epsilon: the basic composition bound
        (Dwork & Roth 2014, Theorem 3.16), with ``rho`` the sum of the rhos
        when every input has one (Bun & Steinke 2016, Lemma 2.3). When some
        input is stated in zCDP only (``epsilon=None``): the zCDP guarantee
        with the rhos added, a pure ``epsilon``-DP input counting as
        ``epsilon**2 / 2``-zCDP (Bun & Steinke 2016, Proposition 1.4); an
        approximate-DP input without a rho is then refused (it implies no
        zCDP guarantee): convert the zCDP inputs with ``to_approx(delta)``
        first and compose those. An epsilon or rho sum beyond the float64
        range is ``inf`` (no guarantee).

    Raises
    ------
    ValueError
        When the deltas add up to 1 or more: basic composition then guarantees
        nothing (every mechanism is (epsilon, 1)-DP), so no Privacy is returned.

    Examples
    --------
    >>> compose(Privacy(0.5), Privacy(0.25, 1e-6)).epsilon
    0.75
    >>> print(compose(Privacy(rho=0.015), Privacy(rho=0.015), Privacy(0.1)))
    0.035-zCDP
    >>> compose(Privacy(1e308), Privacy(1e308)).epsilon
    inf
    """
    if not guarantees:
        raise ValueError("compose needs at least one Privacy, got none")
    for g in guarantees:
        if not isinstance(g, Privacy):
            raise TypeError(f"compose takes Privacy objects, got {type(g).__name__}: {g!r}")
    if any(g.epsilon is None for g in guarantees):
        return _compose_zcdp(guarantees)
    delta = math.fsum(g.delta for g in guarantees)
    if not delta < 1:
        raise ValueError(
            f"compose: the deltas of the {len(guarantees)} guarantees add up to {delta:.6g}, "
            "at least 1, so basic composition guarantees nothing (every mechanism is "
            "(epsilon, 1)-DP); compose fewer guarantees, or ones with smaller deltas (an "
            "advanced composition or zCDP/Renyi accounting may give a useful bound)"
        )
    rhos = [g.rho for g in guarantees]
    return Privacy(
        epsilon=fsum_or_inf(g.epsilon for g in guarantees),
        delta=delta,
        rho=fsum_or_inf(rhos) if all(r is not None for r in rhos) else None,
    )


def _compose_zcdp(guarantees) -> Privacy:
    rhos = []
    for g in guarantees:
        if g.rho is None and g.delta > 0:
            raise ValueError(
                f"compose cannot add {g} to a guarantee stated in zCDP only: approximate DP "
                "without a rho implies no zCDP guarantee; convert the zCDP ones with "
                "to_approx(delta) and compose those"
            )
        rhos.append(g.to_zcdp().rho)
    return Privacy(rho=fsum_or_inf(rhos))


def laplace_epsilon(scale: float, sensitivity: float) -> float:
    """Epsilon of the Laplace mechanism: ``sensitivity / scale`` (l1 sensitivity)."""
    return _validate.positive_finite("sensitivity", sensitivity) / _validate.positive_finite(
        "scale", scale
    )


# --- Gaussian --------------------------------------------------------------------------


def gaussian_sigma_classical(epsilon: float, delta: float, sensitivity: float) -> float:
    """Classical calibration ``sigma = sensitivity * sqrt(2 log(1.25/delta)) / epsilon``.

    Valid only for ``epsilon < 1`` (Dwork & Roth 2014, Theorem A.1); larger
    epsilons are refused rather than silently mis-calibrated.
    """
    eps = _validate.positive_finite("epsilon", epsilon)
    dlt = _validate.probability_open("delta", delta)
    sens = _validate.positive_finite("sensitivity", sensitivity)
    if not eps < 1:
        raise ValueError(
            f"epsilon must be < 1 for the classical Gaussian calibration, got {epsilon!r}; "
            "use calibration='analytic'"
        )
    return sens * math.sqrt(2.0 * math.log(1.25 / dlt)) / eps


def gaussian_delta(epsilon: float, sigma: float, sensitivity: float) -> float:
    """Exact delta(epsilon) of the Gaussian mechanism (Balle & Wang 2018, Theorem 8).

    ``delta = Phi(D/(2 sigma) - eps sigma/D) - e^eps Phi(-D/(2 sigma) - eps sigma/D)``
    with ``D`` the l2 sensitivity; evaluated in log space.
    """
    eps = _validate.non_negative("epsilon", epsilon)
    sig = _validate.positive_finite("sigma", sigma)
    sens = _validate.positive_finite("sensitivity", sensitivity)
    a = sens / (2 * sig) - eps * sig / sens
    b = -sens / (2 * sig) - eps * sig / sens
    log_first, log_second = sc.log_ndtr(a), eps + sc.log_ndtr(b)
    if log_second >= log_first:
        return 0.0
    return float(np.exp(log_first) * -np.expm1(log_second - log_first))


def gaussian_sigma_analytic(epsilon: float, delta: float, sensitivity: float) -> float:
    """Smallest sigma with ``gaussian_delta(epsilon, sigma) <= delta`` (Balle & Wang 2018).

    Solved by root finding on the exact delta(epsilon) curve, which decreases in sigma.
    """
    eps = _validate.positive_finite("epsilon", epsilon)
    dlt = _validate.probability_open("delta", delta)
    sens = _validate.positive_finite("sensitivity", sensitivity)

    def gap(log_sigma):
        return math.log(max(gaussian_delta(eps, math.exp(log_sigma), sens), 1e-320)) - math.log(
            dlt
        )

    # the search stays within the normal float64 sigmas the Gaussian mechanism takes
    start = math.log(sens)
    lo, hi = bracket(
        gap, start - 10.0, start + 10.0, math.log(_SIGMA_MIN), math.log(_SIGMA_MAX), 10.0
    )
    if gap(hi) > 0 or gap(lo) < 0:
        side = "above" if gap(hi) > 0 else "below"
        raise ValueError(
            f"epsilon={epsilon!r} with delta={delta!r} at sensitivity={sensitivity!r} needs a "
            f"Gaussian sigma {side} the float64 range the mechanism supports "
            f"[{_SIGMA_MIN:.6g}, {_SIGMA_MAX:.6g}]"
        )
    # nudge the root outward so that rounding never lands on the unsafe side
    return math.exp(so.brentq(gap, lo, hi, xtol=1e-14, rtol=1e-15)) * (1 + 1e-12)


def gaussian_epsilon(delta: float, sigma: float, sensitivity: float) -> float:
    """Smallest epsilon with ``gaussian_delta(epsilon, sigma) <= delta``."""
    dlt = _validate.probability_open("delta", delta)
    sig = _validate.positive_finite("sigma", sigma)
    sens = _validate.positive_finite("sensitivity", sensitivity)
    if gaussian_delta(0.0, sig, sens) <= dlt:
        return 0.0
    # the zCDP conversion bounds epsilon from above; inf when rho leaves the float range
    cap = zcdp_to_approx(zcdp_gaussian(sig, sens), dlt)
    if not math.isfinite(cap):
        return math.inf
    hi = 1.0
    while hi < cap and gaussian_delta(hi, sig, sens) > dlt:
        hi *= 2.0
    hi = min(hi, cap)
    if gaussian_delta(hi, sig, sens) > dlt:  # rounding at the bound itself
        return hi
    return so.brentq(lambda e: gaussian_delta(e, sig, sens) - dlt, 0.0, hi, xtol=1e-14)


def zcdp_gaussian(sigma: float, sensitivity: float) -> float:
    """Return the zCDP parameter of a Gaussian: ``rho = D^2 / (2 sigma^2)``.

    ``inf`` where rho exceeds the float64 range (a sigma tiny next to ``D``).
    Where a square would under- or overflow, ``(D / sigma)^2 / 2`` is used instead.
    """
    sig = _validate.positive_finite("sigma", sigma)
    sens = _validate.positive_finite("sensitivity", sensitivity)
    square, top = sig * sig, sens * sens
    if _SIGMA_MIN <= square < math.inf and top < math.inf:
        return top / (2 * square)
    ratio = sens / sig
    return 0.5 * ratio * ratio


def zcdp_to_approx(rho: float, delta: float) -> float:
    """Epsilon of a rho-zCDP mechanism at ``delta``: ``rho + 2 sqrt(rho log(1/delta))``.

    Bun & Steinke (2016), Proposition 1.3; ``inf`` for ``rho = inf`` or beyond the
    float64 range.
    """
    r = _validate.positive_or_inf("rho", rho)
    dlt = _validate.probability_open("delta", delta)
    return r + 2 * math.sqrt(r * math.log(1 / dlt))


def discrete_gaussian_delta(epsilon: float, sigma: float, sensitivity: int = 1) -> float:
    """Exact delta(epsilon) of the discrete Gaussian mechanism.

    Canonne, Kamath & Steinke (2020), Theorem 7: with ``Y ~ N_Z(0, sigma^2)``
    and integer sensitivity ``D``,
    ``delta = P[Y > eps sigma^2/D - D/2] - e^eps P[Y > eps sigma^2/D + D/2]``,
    evaluated as ``P[a < Y <= b] - (e^eps - 1) P[Y > b]`` (``a``, ``b`` the two
    thresholds), which does not cancel when epsilon is small.
    """
    from .mechanisms import _discrete_gaussian as dg

    eps = _validate.non_negative("epsilon", epsilon)
    sig = dg.check_sigma(_validate.positive_finite("sigma", sigma))
    sens = _validate.integer_sensitivity(sensitivity)
    return dg.exact_delta(eps, sig, sens)


# --- Renyi DP --------------------------------------------------------------------------


def rdp_to_approx(orders: ArrayLike, rdp_epsilons: ArrayLike, delta: float) -> float:
    """Convert Renyi-DP curves to (epsilon, delta)-DP.

    ``eps = min_alpha rdp(alpha) + log(1/delta) / (alpha - 1)`` (Mironov 2017,
    Proposition 3).

    Parameters
    ----------
    orders : array_like
        Renyi orders ``alpha > 1``.
    rdp_epsilons : array_like
        ``rdp(alpha)`` at each order (already composed).
    delta : float
        Target delta in (0, 1).

    Returns
    -------
    float
        The smallest epsilon over the given orders.
    """
    alphas = _validate.finite_array("orders", orders).ravel()
    rdp = _validate.numeric_array("rdp_epsilons", rdp_epsilons).astype(float).ravel()
    dlt = _validate.probability_open("delta", delta)
    if alphas.size == 0 or alphas.shape != rdp.shape:
        raise ValueError(
            f"orders and rdp_epsilons must be non-empty and of equal length, got "
            f"{alphas.size} and {rdp.size}"
        )
    if not np.all(alphas > 1):
        raise ValueError(f"orders must all exceed 1, got {alphas}")
    if np.any(np.isnan(rdp)) or np.any(rdp < 0):
        raise ValueError(f"rdp_epsilons must be non-negative, got {rdp}")
    return float(np.min(rdp + math.log(1 / dlt) / (alphas - 1)))


# --- Sparse vector technique -----------------------------------------------------------


def svt_epsilon(scale: float, sensitivity: float, c: int, *, resample: bool) -> float:
    """Epsilon of ABCDP's sparse vector run (Park et al. 2021, Theorem 1).

    Threshold noise ``Lap(b)``, query noise ``Lap(2b)``; halting after ``c``
    positives gives ``(c + 1) D / b`` when the threshold is drawn once and
    ``2 c D / b`` when it is redrawn after each positive.
    """
    b = _validate.positive_finite("scale", scale)
    sens = _validate.positive_finite("sensitivity", sensitivity)
    c = _validate.positive_int("c", c)
    return (2 * c if _validate.flag("resample", resample) else c + 1) * sens / b


def svt_scale(epsilon: float, sensitivity: float, c: int, *, resample: bool) -> float:
    """Noise scale ``b`` giving ``epsilon`` in :func:`svt_epsilon` (Theorem 1 inverted)."""
    eps = _validate.positive_finite("epsilon", epsilon)
    sens = _validate.positive_finite("sensitivity", sensitivity)
    c = _validate.positive_int("c", c)
    return (2 * c if _validate.flag("resample", resample) else c + 1) * sens / eps


# --- Binomial release ------------------------------------------------------------------


def binomial_release_epsilon(n: int, m: float, length: int) -> float:
    """Epsilon of Xiong et al.'s binomial release: ``n L / m`` (Proposition 4)."""
    return (
        _validate.positive_int("n", n)
        * _validate.positive_int("length", length)
        / _validate.positive_finite("m", m)
    )


# --- ABCDP, arXiv version (Park & Jitkrittum, ABCDP meets DP), Theorems 3.1-3.3 ------


def abcdp_gaussian_epsilon(
    sigma: float, *, sensitivity: float, distance_bound: float, epsilon_abc: float
) -> float:
    """Per-step epsilon ``h(sigma)`` of rejection ABCDP with Gaussian noise (Theorem 3.1).

    ``h(sigma) = min(1, D / sqrt(2 pi sigma^2)) / Phi(min(eps_abc - B, -eps_abc) / sigma)``
    with ``D`` the distance's sensitivity and ``B`` its upper bound; ``inf`` where it
    exceeds the float range (a tiny sigma against a large bound).
    """
    log_h = _abcdp_gaussian_log_h(
        _validate.positive_finite("sigma", sigma),
        _validate.positive_finite("sensitivity", sensitivity),
        _validate.positive_finite("distance_bound", distance_bound),
        _validate.non_negative("epsilon_abc", epsilon_abc),
    )
    with np.errstate(over="ignore"):
        return float(np.exp(log_h))


def _abcdp_gaussian_log_h(sigma, sensitivity, bound, epsilon_abc) -> float:
    log_num = math.log(min(1.0, sensitivity / math.sqrt(2 * math.pi * sigma**2)))
    return log_num - float(sc.log_ndtr(min(epsilon_abc - bound, -epsilon_abc) / sigma))


def abcdp_gaussian_sigma(
    epsilon: float, *, sensitivity: float, distance_bound: float, epsilon_abc: float
) -> float:
    """Return ``h^{-1}(epsilon)`` by root finding; ``h`` decreases strictly in sigma."""
    eps = _validate.positive_finite("epsilon", epsilon)
    sens = _validate.positive_finite("sensitivity", sensitivity)
    bound = _validate.positive_finite("distance_bound", distance_bound)
    eps_abc = _validate.non_negative("epsilon_abc", epsilon_abc)

    def gap(log_sigma):
        return _abcdp_gaussian_log_h(math.exp(log_sigma), sens, bound, eps_abc) - math.log(eps)

    lo, hi = -5.0, 5.0
    while gap(lo) < 0:
        lo -= 5.0
    while gap(hi) > 0:
        hi += 5.0
    return math.exp(so.brentq(gap, lo, hi, xtol=1e-13))


def soft_abcdp_rdp(
    alpha: ArrayLike, sigma: float, *, sensitivity: float, epsilon_abc: float, steps: int
) -> np.ndarray:
    """RDP of ``steps`` soft-ABCDP weights (Theorems 3.2-3.3).

    ``rdp(alpha) = alpha D^2 T / (2 sigma^2 eps_abc^2)``.
    """
    sig = _validate.positive_finite("sigma", sigma)
    sens = _validate.positive_finite("sensitivity", sensitivity)
    eps_abc = _validate.positive_finite("epsilon_abc", epsilon_abc)
    t = _validate.positive_int("steps", steps)
    orders = _validate.non_empty("alpha", _validate.finite_array("alpha", alpha))
    if not np.all(orders >= 1):
        raise ValueError(f"alpha (Renyi orders) must all be at least 1, got {alpha!r}")
    return orders * sens**2 * t / (2 * sig**2 * eps_abc**2)


def soft_abcdp_epsilon(
    sigma: float, delta: float, *, sensitivity: float, epsilon_abc: float, steps: int
) -> float:
    """(epsilon, delta)-DP of soft ABCDP, optimising the Renyi order in closed form.

    With ``rdp(alpha) = alpha K``, ``min_alpha alpha K + log(1/delta)/(alpha - 1)``
    is ``K + 2 sqrt(K log(1/delta))`` at ``alpha = 1 + sqrt(log(1/delta) / K)``.
    """
    k = float(
        soft_abcdp_rdp(1.0, sigma, sensitivity=sensitivity, epsilon_abc=epsilon_abc, steps=steps)
    )
    log_inv_delta = math.log(1 / _validate.probability_open("delta", delta))
    return k + 2 * math.sqrt(k * log_inv_delta)


def soft_abcdp_sigma(
    epsilon: float, delta: float, *, sensitivity: float, epsilon_abc: float, steps: int
) -> float:
    """Noise ``sigma_soft`` giving ``(epsilon, delta)``: inverts :func:`soft_abcdp_epsilon`."""
    eps = _validate.positive_finite("epsilon", epsilon)
    log_inv_delta = math.log(1 / _validate.probability_open("delta", delta))
    root_k = math.sqrt(log_inv_delta + eps) - math.sqrt(log_inv_delta)
    unit = float(
        soft_abcdp_rdp(1.0, 1.0, sensitivity=sensitivity, epsilon_abc=epsilon_abc, steps=steps)
    )
    return math.sqrt(unit) / root_k
