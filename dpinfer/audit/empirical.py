"""Empirical auditing of differential privacy claims.

A privacy claim is a statement about every output event ``E`` of a mechanism
run on neighbouring inputs ``a`` and ``b``:
``P_a(E) <= exp(epsilon) P_b(E) + delta``. An audit turns samples of the
mechanism into a statistical *lower* bound on the epsilon that the samples
force, so that a claim below that bound is refuted at a stated confidence.
The claims themselves are computed in closed form elsewhere (``accounting``);
the audit is the independent empirical check beside them.

:func:`audit_epsilon` chooses an event on one sample and bounds its
probabilities on a fresh one, with Clopper-Pearson intervals.
:func:`hockey_stick_delta` is the exact counterpart for mechanisms whose
output distributions can be tabulated.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.stats as st
from numpy.typing import ArrayLike

from .. import _validate
from .._rng import RNGLike, as_seed_sequence, chunk_generator

__all__ = ["AuditResult", "audit_epsilon", "clopper_pearson", "hockey_stick_delta"]

Sampler = Callable[[int, np.random.Generator], np.ndarray]

_MAX_PREFIXES = 400


@dataclass(frozen=True)
class AuditResult:
    """The outcome of :func:`audit_epsilon`.

    Attributes
    ----------
    epsilon_lower : float
        A ``(1 - alpha)``-confidence lower bound on the true epsilon of the
        mechanism at the audited ``delta`` (0 when the test sample refutes
        nothing).
    event : str
        Description of the output event chosen on the selection sample.
    direction : str
        ``"a>b"`` when the event is more likely on input ``a``, else ``"b>a"``.
    p_hat, q_hat : float
        Frequencies of the event in the test sample, under the favoured input
        and under the other one.
    n_test : int
        Test sample size per input.
    alpha : float
        Confidence level: ``P(epsilon_lower > true epsilon) <= alpha``.
    delta : float
        The delta at which epsilon was audited.
    """

    epsilon_lower: float
    event: str
    direction: str
    p_hat: float
    q_hat: float
    n_test: int
    alpha: float
    delta: float = 0.0

    def refutes(self, epsilon: float) -> bool:
        """Whether the audit refutes an ``(epsilon, delta)`` claim (``epsilon_lower > epsilon``).

        Parameters
        ----------
        epsilon : float
            The claimed epsilon.

        Returns
        -------
        bool
        """
        return self.epsilon_lower > epsilon

    def __str__(self) -> str:
        return (
            f"epsilon >= {self.epsilon_lower:.4f} at delta={self.delta:g} "
            f"(confidence {1 - self.alpha:g}; event {self.event} [{self.direction}], "
            f"frequencies {self.p_hat:.4g} vs {self.q_hat:.4g} over {self.n_test} draws)"
        )


def clopper_pearson(k: ArrayLike, n: ArrayLike, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """One-sided Clopper-Pearson bounds on a binomial proportion.

    Parameters
    ----------
    k : array_like
        Event counts (non-integer counts are accepted, for predictions).
    n : int or array_like
        Numbers of trials.
    alpha : float
        Error probability of *each* one-sided bound.

    Returns
    -------
    lower, upper : numpy.ndarray
        ``P(lower > p) <= alpha`` and ``P(upper < p) <= alpha``.

    Notes
    -----
    ``lower = B^{-1}(alpha; k, n - k + 1)`` (0 when ``k = 0``) and
    ``upper = B^{-1}(1 - alpha; k + 1, n - k)`` (1 when ``k = n``), with
    :math:`B^{-1}` the beta quantile function (Clopper & Pearson 1934).

    Examples
    --------
    >>> lo, hi = clopper_pearson(0, 1000, 0.025)
    >>> float(lo), round(float(hi), 5)
    (0.0, 0.00368)
    """
    k = _validate.finite_array("k", k)
    n = _validate.finite_array("n", n)
    alpha = _validate.probability_open("alpha", alpha)
    if not np.all((n >= 1) & (n == np.round(n))):
        raise ValueError(f"n must hold positive integers (numbers of trials), got {n}")
    if not np.all((k >= 0) & (k <= n)):
        raise ValueError(f"k must lie between 0 and n, got k={k} with n={n}")
    with np.errstate(invalid="ignore", divide="ignore"):
        lower = np.where(k > 0, st.beta.ppf(alpha, np.maximum(k, 1e-300), n - k + 1), 0.0)
        upper = np.where(k < n, st.beta.isf(alpha, k + 1, np.maximum(n - k, 1e-300)), 1.0)
    return lower, upper


def audit_epsilon(
    sample_a: Sampler,
    sample_b: Sampler,
    *,
    n_select: int = 50_000,
    n_test: int = 100_000,
    delta: float = 0.0,
    alpha: float = 1e-3,
    n_thresholds: int = 200,
    rng: RNGLike = None,
) -> AuditResult:
    r"""Lower-bound the epsilon of a mechanism from its outputs on neighbouring inputs.

    Parameters
    ----------
    sample_a, sample_b : callable
        ``sample_a(n, rng)`` returns a one-dimensional array of ``n``
        independent outcomes of the mechanism run on input ``a`` (``b``),
        drawing its noise from the Generator ``rng``. Outcomes are scalars:
        floats for continuous outputs, integers for discrete ones (map vector
        or pattern outputs to an integer code first).
    n_select : int, default 50_000
        Draws per input used to choose the event.
    n_test : int, default 100_000
        Fresh draws per input used to bound the chosen event's probabilities.
    delta : float, default 0
        The delta of the claim being audited.
    alpha : float, default 1e-3
        The audit errs (reports more than the true epsilon) with probability
        at most ``alpha``.
    n_thresholds : int, default 200
        Number of thresholds for half-line events on float outcomes.
    rng : None, int, SeedSequence or Generator, optional
        Source of randomness; the selection and test phases use independent
        streams spawned from it.

    Returns
    -------
    AuditResult

    Notes
    -----
    *Candidate events.* For float outcomes: the half-lines
    :math:`\{x \ge t\}` and :math:`\{x \le t\}` with ``t`` at quantiles of the
    pooled selection sample (spaced geometrically towards both tails, where
    the privacy loss of additive mechanisms is largest). For integer outcomes:
    the half-lines at every observed value, and the level sets of the
    estimated likelihood ratio, i.e. prefixes of the observed values sorted by
    :math:`(n_a(x) + 1/2) / (n_b(x) + 1/2)`, in both directions.

    *Selection.* Each candidate event and direction is scored by the bound it
    would give on a test sample of size ``n_test`` with the selection
    frequencies; the best is kept.

    *Test.* On fresh samples, with :math:`\hat p` the frequency of the event
    under the favoured input and :math:`\hat q` under the other,
    :math:`p_{lo}` is the one-sided Clopper-Pearson lower bound of level
    :math:`\alpha/2` and :math:`q_{hi}` the upper one, and

    .. math:: \hat\varepsilon = \log\frac{p_{lo} - \delta}{q_{hi}}

    (0 when :math:`p_{lo} \le \delta`). An :math:`(\varepsilon, \delta)`-DP
    mechanism has :math:`p - \delta \le e^\varepsilon q` for every event fixed
    in advance; the event is fixed before the test sample is drawn, so by the
    union bound :math:`P(\hat\varepsilon > \varepsilon) \le \alpha` (Ding et
    al. 2018 choose events the same way; Jagielski et al. 2020 use the same
    Clopper-Pearson bound).

    The bound is only as good as the inputs: the caller chooses neighbours
    ``a`` and ``b`` that expose the mechanism's worst case.

    References
    ----------
    .. [1] Ding, Wang, Wang, Zhang and Kifer (2018). Detecting violations of
       differential privacy. CCS.
    .. [2] Jagielski, Ullman and Oprea (2020). Auditing differentially
       private machine learning: how private is private SGD? NeurIPS.
    .. [3] Clopper and Pearson (1934). The use of confidence or fiducial
       limits illustrated in the case of the binomial. Biometrika.

    Examples
    --------
    >>> import dpinfer as dp
    >>> mech = dp.Laplace.from_privacy(epsilon=1.0, sensitivity=1.0)
    >>> res = audit_epsilon(
    ...     lambda n, rng: mech.release(np.zeros(n), rng=rng),
    ...     lambda n, rng: mech.release(np.ones(n), rng=rng),
    ...     rng=0,
    ... )
    >>> 0.8 < res.epsilon_lower <= 1.0
    True
    """
    n_select = _validate.size("n_select", n_select)
    n_test = _validate.size("n_test", n_test)
    n_thresholds = _validate.size("n_thresholds", n_thresholds)
    dlt = _validate.non_negative("delta", delta)
    if not dlt < 1:
        raise ValueError(f"delta must lie in [0, 1), got {delta!r}")
    alpha = _validate.probability_open("alpha", alpha)
    for name, fn in (("sample_a", sample_a), ("sample_b", sample_b)):
        if not callable(fn):
            raise TypeError(f"{name} must be callable as {name}(n, rng), got {fn!r}")

    root = as_seed_sequence(rng)
    xa = _draw("sample_a", sample_a, n_select, chunk_generator(root, 0))
    xb = _draw("sample_b", sample_b, n_select, chunk_generator(root, 1))
    discrete = xa.dtype.kind in "iub" and xb.dtype.kind in "iub"
    events = _integer_events(xa, xb) if discrete else _threshold_events(xa, xb, n_thresholds)

    # Score every (event, direction) by the bound it would give at the test size.
    scale = n_test / n_select
    candidates = []
    for event, count_a, count_b in events:
        for direction, fav, other in (("a>b", count_a, count_b), ("b>a", count_b, count_a)):
            score = _bound(fav * scale, other * scale, n_test, dlt, alpha)
            i = int(np.argmax(score))
            candidates.append((score[i], event, i, direction))
    _, event, index, direction = max(candidates, key=lambda c: c[0])  # the first of the largest

    ya = _draw("sample_a", sample_a, n_test, chunk_generator(root, 2))
    yb = _draw("sample_b", sample_b, n_test, chunk_generator(root, 3))
    in_a = int(np.count_nonzero(event.contains(ya, index)))
    in_b = int(np.count_nonzero(event.contains(yb, index)))
    fav, other = (in_a, in_b) if direction == "a>b" else (in_b, in_a)
    eps = float(_bound(np.array([fav]), np.array([other]), n_test, dlt, alpha)[0])
    return AuditResult(
        epsilon_lower=max(0.0, eps),
        event=event.describe(index),
        direction=direction,
        p_hat=fav / n_test,
        q_hat=other / n_test,
        n_test=n_test,
        alpha=alpha,
        delta=dlt,
    )


def hockey_stick_delta(log_p: ArrayLike, log_q: ArrayLike, epsilon: float) -> float:
    r"""Exact ``delta(epsilon) = sum_x max(0, p(x) - e^epsilon q(x))`` of two tabulated pmfs.

    Parameters
    ----------
    log_p, log_q : array_like
        Log-probabilities of the two output distributions on a common support
        (``-inf`` allowed), e.g. a mechanism's log-pmf on neighbouring inputs.
    epsilon : float
        Non-negative epsilon.

    Returns
    -------
    float
        The smallest delta for which ``P(E) <= e^epsilon Q(E) + delta`` holds
        for every event ``E`` in that direction; take the maximum over both
        orders of the arguments for the symmetric guarantee.

    Examples
    --------
    >>> hockey_stick_delta(np.log([0.5, 0.5]), np.log([0.25, 0.75]), 0.0)
    0.25
    """
    lp, lq = _log_pmf("log_p", log_p), _log_pmf("log_q", log_q)
    if lp.shape != lq.shape:
        raise ValueError(
            f"log_p and log_q must have the same shape, got {lp.shape} and {lq.shape}"
        )
    eps = _validate.non_negative("epsilon", epsilon)
    keep = lp > lq + eps
    with np.errstate(invalid="ignore"):
        terms = np.exp(lp[keep]) * -np.expm1(lq[keep] + eps - lp[keep])
    return math.fsum(terms.tolist())


def _log_pmf(name: str, value) -> np.ndarray:
    """Log-probabilities: numbers <= 0 (``-inf`` allowed; NaN refused), rounding aside."""
    arr = _validate.numeric_array(name, value).astype(float)
    if arr.size == 0 or not np.all(arr <= 1e-9):
        raise ValueError(
            f"{name} must be a non-empty array of log-probabilities (<= 0, -inf allowed), "
            f"got {value!r:.100}"
        )
    return arr


# --- candidate events ------------------------------------------------------------------


class _HalfLines:
    """``{x >= t_i}`` (first half of the index range) and ``{x <= t_i}`` (second half)."""

    def __init__(self, thresholds: np.ndarray):
        self.t = thresholds

    def contains(self, x: np.ndarray, i: int) -> np.ndarray:
        k = self.t.size
        return x >= self.t[i] if i < k else x <= self.t[i - k]

    def describe(self, i: int) -> str:
        k = self.t.size
        return f"x >= {self.t[i]:.6g}" if i < k else f"x <= {self.t[i - k]:.6g}"

    def counts(self, x: np.ndarray) -> np.ndarray:
        xs = np.sort(x)
        ge = xs.size - np.searchsorted(xs, self.t, side="left")
        le = np.searchsorted(xs, self.t, side="right")
        return np.concatenate([ge, le]).astype(float)


class _ValueSets:
    """Prefixes of an ordering of integer outcome values."""

    def __init__(self, values: np.ndarray, lengths: np.ndarray, label: str):
        self.values, self.lengths, self.label = values, lengths, label

    def members(self, i: int) -> np.ndarray:
        return self.values[: self.lengths[i]]

    def contains(self, x: np.ndarray, i: int) -> np.ndarray:
        return np.isin(x, self.members(i))

    def describe(self, i: int) -> str:
        vals = np.sort(self.members(i))
        shown = ", ".join(str(v) for v in vals[:8]) + (", ..." if vals.size > 8 else "")
        return f"x in {{{shown}}} ({vals.size} values, {self.label})"


def _threshold_events(xa: np.ndarray, xb: np.ndarray, n_thresholds: int):
    pooled = np.concatenate([xa, xb])
    tail = np.geomspace(min(0.5, 5.0 / pooled.size), 0.5, max(2, n_thresholds // 2))
    levels = np.unique(np.concatenate([tail, 1 - tail]))
    thresholds = np.unique(np.quantile(pooled, levels))
    events = _HalfLines(thresholds)
    return [(events, events.counts(xa), events.counts(xb))]


def _integer_events(xa: np.ndarray, xb: np.ndarray):
    values, inverse = np.unique(np.concatenate([xa, xb]), return_inverse=True)
    ca = np.bincount(inverse[: xa.size], minlength=values.size).astype(float)
    cb = np.bincount(inverse[xa.size :], minlength=values.size).astype(float)
    lengths = _prefix_lengths(values.size)
    out = []
    ratio = (ca + 0.5) / (cb + 0.5)
    for label, order in (
        ("ratio a/b high", np.argsort(-ratio, kind="stable")),
        ("ratio a/b low", np.argsort(ratio, kind="stable")),
        ("lowest values", np.arange(values.size)),
        ("highest values", np.arange(values.size)[::-1]),
    ):
        sets = _ValueSets(values[order], lengths, label)
        out.append((sets, np.cumsum(ca[order])[lengths - 1], np.cumsum(cb[order])[lengths - 1]))
    return out


def _prefix_lengths(size: int) -> np.ndarray:
    if size <= _MAX_PREFIXES:
        return np.arange(1, size + 1)
    grid = np.concatenate(
        [np.geomspace(1, size, _MAX_PREFIXES // 2), np.linspace(1, size, _MAX_PREFIXES // 2)]
    )
    return np.unique(np.round(grid).astype(np.int64))


def _bound(fav, other, n: int, delta: float, alpha: float) -> np.ndarray:
    """``log((p_lo - delta) / q_hi)`` with Clopper-Pearson bounds of level ``alpha / 2`` each."""
    p_lo, _ = clopper_pearson(fav, n, alpha / 2)
    _, q_hi = clopper_pearson(other, n, alpha / 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(p_lo > delta, np.log((p_lo - delta) / q_hi), -np.inf)


def _draw(name: str, fn: Sampler, n: int, rng: np.random.Generator) -> np.ndarray:
    x = np.asarray(fn(n, rng))
    if x.shape != (n,):
        raise ValueError(
            f"{name}(n, rng) must return a 1-D array of n={n} outcomes, got shape {x.shape}"
        )
    if x.dtype.kind == "f" and not np.all(np.isfinite(x)):
        raise ValueError(f"{name} returned non-finite outcomes")
    if x.dtype.kind not in "iubf":
        raise TypeError(f"{name} must return numeric outcomes, got dtype {x.dtype}")
    return x
