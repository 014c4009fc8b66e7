r"""Exact output law of the sparse vector technique on neighbouring query streams.

A run of :class:`~dpinfer.SparseVector` publishes a sequence of indicators.
Given the threshold noise :math:`\rho` the answers are independent, so the
probability of an output sequence is one integral over :math:`\rho` per
threshold draw, computed here by composite Gauss-Legendre quadrature split
at every kink of the Laplace densities (exact up to quadrature error, about
1e-13 relative). Taking the largest log-ratio over every output sequence gives
the mechanism's privacy loss on those streams, including outputs of
probability 1e-10 that no sampling audit would ever see.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import logsumexp

from .. import _validate
from ..mechanisms.svt import SparseVector
from ._svt_runs import best_runs, runs_log_probability

__all__ = ["SVTPrivacyLoss", "svt_output_probabilities", "svt_privacy_loss"]

_NODES = 12  # Gauss-Legendre nodes per subinterval (subintervals one noise scale wide)
_MARGIN = 50  # the quadrature runs this many noise scales beyond the outermost kink
_MAX_OUTPUTS = 200_000  # output sequences enumerated when the threshold is drawn once
_CHUNK = 256  # output sequences per block of the quadrature


@dataclass(frozen=True)
class SVTPrivacyLoss:
    r"""The largest privacy loss of a sparse vector run over its output sequences.

    Attributes
    ----------
    epsilon : float
        :math:`\max_o |\log P(o \mid q) - \log P(o \mid q')|` over every output
        sequence ``o`` (and, unless a neighbour was given, every neighbour ``q'``).
    output : tuple of bool
        An output sequence attaining it.
    direction : str
        ``"a>b"`` when that output is likelier on ``queries``, ``"b>a"`` otherwise.
    queries, neighbour : numpy.ndarray
        The stream and the neighbour attaining the loss.
    log_p, log_q : float
        The log-probabilities of ``output`` on ``queries`` and on ``neighbour``.
    total_probability : float
        Sum of the output probabilities on ``queries``: 1 up to quadrature error.
    n_outputs : int
        Number of possible output sequences.
    """

    epsilon: float
    output: tuple[bool, ...]
    direction: str
    queries: np.ndarray
    neighbour: np.ndarray
    log_p: float
    log_q: float
    total_probability: float
    n_outputs: int

    def refutes(self, epsilon: float) -> bool:
        """Whether this loss exceeds a claimed pure-DP ``epsilon`` (beyond quadrature error)."""
        return self.epsilon > epsilon * (1 + 1e-9) + 1e-12

    def __str__(self) -> str:
        shown = "".join("1" if a else "0" for a in self.output)
        return (
            f"epsilon = {self.epsilon:.6g} at output {shown} [{self.direction}] "
            f"(log-probabilities {self.log_p:.6g} vs {self.log_q:.6g}; "
            f"{self.n_outputs} outputs, total probability {self.total_probability:.15g})"
        )


def svt_output_probabilities(
    svt: SparseVector, queries: ArrayLike
) -> dict[tuple[bool, ...], float]:
    """Probability of every output sequence of ``svt.run(queries)``.

    Parameters
    ----------
    svt : SparseVector
        Threshold noise, query noise, halting and resampling are read from it.
    queries : array_like
        The stream, one-dimensional.

    Returns
    -------
    dict
        Output sequence (tuple of bool, as ``SVTResult.indicators``) to probability.

    Examples
    --------
    >>> import dpinfer as dp
    >>> svt = dp.SparseVector(0.0, scale=1.0, c=1, sensitivity=1.0)
    >>> law = svt_output_probabilities(svt, [0.0, 0.0])
    >>> sorted(law) == [(False, False), (False, True), (True,)]
    True
    >>> round(sum(law.values()), 12)
    1.0
    """
    _check_svt(svt)
    q = _stream("queries", queries)
    law = _Law(svt, [q])
    outputs = _enumerate_outputs(q.size, svt.c, svt.halts)
    log_p: list[float] | np.ndarray
    if svt.resample:
        pos, tail = law.segments(q, q)
        log_p = [
            runs_log_probability(pos, tail, list(np.flatnonzero(o == 1)), _halted(o, svt))
            for o in outputs
        ]
    else:
        log_p = law.log_probabilities(outputs, q, q)
    return {_as_tuple(o): float(np.exp(lp)) for o, lp in zip(outputs, log_p, strict=True)}


def _halted(output: np.ndarray, svt: SparseVector) -> bool:
    return svt.halts and int(np.count_nonzero(output == 1)) == svt.c


def svt_privacy_loss(
    svt: SparseVector, queries: ArrayLike, *, neighbour: ArrayLike | None = None
) -> SVTPrivacyLoss:
    r"""Exact privacy loss of a sparse vector run on a stream and its worst neighbour.

    Parameters
    ----------
    svt : SparseVector
        The mechanism; its noise scales, ``c``, halting and ``resample`` are used.
    queries : array_like
        A one-dimensional stream of query values.
    neighbour : array_like, optional
        A neighbouring stream. By default every stream within
        ``svt.sensitivity`` of ``queries`` in each query is considered.

    Returns
    -------
    SVTPrivacyLoss

    Notes
    -----
    Given the threshold noise, answer ``i`` is positive with probability
    :math:`F(T + \rho - q_i)`, :math:`F` the CDF of the query noise, which
    decreases in :math:`q_i`; so the probability of an output sequence is
    monotone in every query, and over the neighbours
    :math:`|q'_i - q_i| \le \Delta` its ratio is largest at a corner: the
    positives' queries moved up by :math:`\Delta` and the negatives' down
    (or the reverse for the other direction). The worst neighbour is thus
    exact for every output separately.

    With ``resample=False`` every output sequence is enumerated (at most
    200,000: small ``c`` and stream lengths) and integrated over the one
    threshold draw. With ``resample=True`` an output's probability is a
    product of one integral per threshold draw, so the largest log-ratio is
    found by dynamic programming over the positives, for long streams too.

    The result is the exact loss *on these streams*: a lower bound on the
    mechanism's epsilon, which refutes a smaller claim. Long streams of
    queries at the threshold bring it close to Theorem 1 of Park et al. (2021).

    References
    ----------
    .. [1] Lyu, Su and Li (2017). Understanding the sparse vector technique
       for differential privacy. PVLDB.

    Examples
    --------
    >>> import dpinfer as dp
    >>> svt = dp.SparseVector.from_privacy(epsilon=1.0, threshold=0.0, c=1, sensitivity=1.0)
    >>> loss = svt_privacy_loss(svt, [0.0, 0.0, 0.0])
    >>> loss.refutes(svt.privacy.epsilon), loss.output
    (False, (False, False, True))
    """
    _check_svt(svt)
    q = _stream("queries", queries)
    if neighbour is None:
        sens = svt.sensitivity
        corners = [(q + sens, q - sens), (q - sens, q + sens)]
    else:
        b = _stream("neighbour", neighbour)
        if b.shape != q.shape:
            raise ValueError(
                f"neighbour must have the shape of queries {q.shape}, got shape {b.shape}"
            )
        far = np.abs(b - q) > svt.sensitivity * (1 + 1e-12)
        if np.any(far):
            raise ValueError(
                _validate.bad_entries(
                    "neighbour", far, f"lie within the sensitivity {svt.sensitivity:g} of queries"
                )
            )
        corners = [(b, b), (b, b)]
    law = _Law(svt, [q, *corners[0], *corners[1]])
    worst = _resampled_worst if svt.resample else _once_worst
    value, direction, out, log_p, log_q, (up, down), total = worst(svt, law, q, corners)
    return SVTPrivacyLoss(
        epsilon=float(value),
        output=_as_tuple(out),
        direction=direction,
        queries=q,
        neighbour=np.where(out == 1, up, down),
        log_p=float(log_p),
        log_q=float(log_q),
        total_probability=float(total),
        n_outputs=_count_outputs(q.size, svt.c, svt.halts),
    )


# --- the quadrature over the threshold noise ------------------------------------------------


class _Law:
    """Laplace threshold noise on quadrature nodes, and the answers' log-probabilities."""

    def __init__(self, svt: SparseVector, streams: list[np.ndarray]):
        self.b_threshold = float(svt.threshold_scale)
        self.b_query = float(svt.query_scale)
        if not (self.b_threshold > 0 and self.b_query > 0):
            raise ValueError(
                "the exact law needs Laplace noise on the threshold and the queries, got "
                f"scales {self.b_threshold!r} and {self.b_query!r}"
            )
        self.threshold = svt.threshold
        kinks = np.concatenate([[0.0], *(s - self.threshold for s in streams)])
        self.rho, log_w = _gauss_legendre(kinks, self.b_threshold, self.b_query)
        self.base = log_w - math.log(2 * self.b_threshold) - np.abs(self.rho) / self.b_threshold

    def log_answers(self, q: np.ndarray, positive: bool) -> np.ndarray:
        """``log P(answer | rho)`` for every query (rows) and node (columns)."""
        x = (self.threshold - q)[:, None] + self.rho[None, :]
        if not positive:
            x = -x  # P(negative | rho) = F(-x) for the symmetric Laplace
        near = np.log1p(-0.5 * np.exp(-np.abs(x) / self.b_query))
        return np.where(x < 0, math.log(0.5) + x / self.b_query, near)

    def log_probabilities(self, outputs, q_true, q_false) -> np.ndarray:
        """Log-probabilities of output sequences, threshold drawn once (chunked)."""
        rows_true, rows_false = self.log_answers(q_true, True), self.log_answers(q_false, False)
        out = np.empty(len(outputs))
        for start in range(0, len(outputs), _CHUNK):
            block = outputs[start : start + _CHUNK]
            positive, negative = (block == 1).astype(float), (block == 0).astype(float)
            terms = positive @ rows_true + negative @ rows_false + self.base
            out[start : start + _CHUNK] = logsumexp(terms, axis=1)
        return out

    def segments(self, q_true, q_false) -> tuple[np.ndarray, np.ndarray]:
        """Log-probabilities of the runs of one threshold draw.

        ``pos[i, j]``: negatives at ``i..j-1`` then a positive at ``j``;
        ``tail[i]``: negatives from ``i`` to the end (``tail[m] = 0``).
        """
        rows_true, rows_false = self.log_answers(q_true, True), self.log_answers(q_false, False)
        m = rows_true.shape[0]
        cum = np.vstack([np.zeros_like(self.rho), np.cumsum(rows_false, axis=0)])
        pos = np.full((m, m), -np.inf)
        tail = np.zeros(m + 1)
        for i in range(m):
            pos[i, i:] = logsumexp(cum[i:m] - cum[i] + rows_true[i:] + self.base, axis=1)
            tail[i] = logsumexp(cum[m] - cum[i] + self.base)
        return pos, tail


def _gauss_legendre(kinks: np.ndarray, b_threshold: float, b_query: float):
    """Nodes and log-weights on subintervals at most one noise scale wide, split at kinks."""
    width, reach = min(b_threshold, b_query), _MARGIN * max(b_threshold, b_query)
    points = np.unique(np.concatenate([kinks, [kinks.min() - reach, kinks.max() + reach]]))
    counts = np.maximum(1, np.ceil(np.diff(points) / width).astype(int))
    edges = np.concatenate(
        [np.linspace(a, b, k, endpoint=False) for a, b, k in zip(points[:-1], points[1:], counts)]
        + [points[-1:]]
    )
    x, w = np.polynomial.legendre.leggauss(_NODES)
    mid, half = (edges[:-1] + edges[1:]) / 2, np.diff(edges) / 2
    return (mid[:, None] + half[:, None] * x).ravel(), np.log(half[:, None] * w).ravel()


# --- threshold drawn once: enumerate the outputs ----------------------------------------------


def _once_worst(svt, law, q, corners):
    """(loss, direction, output, log_p, log_q, neighbour corner, total) over all outputs."""
    outputs = _enumerate_outputs(q.size, svt.c, svt.halts)
    log_p = law.log_probabilities(outputs, q, q)
    candidates = []
    for direction, corner in zip(("a>b", "b>a"), corners, strict=True):
        # a>b: the neighbour's positives moved up and negatives down, so it answers less alike
        log_q = law.log_probabilities(outputs, *corner)
        ratio = log_p - log_q if direction == "a>b" else log_q - log_p
        i = int(np.argmax(ratio))
        candidates.append((ratio[i], direction, outputs[i], log_p[i], log_q[i], corner))
    # the first of the largest, as max() keeps it
    return (*max(candidates, key=lambda c: c[0]), np.exp(logsumexp(log_p)))


def _enumerate_outputs(m: int, c: int, halts: bool) -> np.ndarray:
    """Every output sequence as rows of 1 (positive), 0 (negative), -1 (not answered)."""
    count = _count_outputs(m, c, halts)
    if count > _MAX_OUTPUTS:
        raise ValueError(
            f"a stream of {m} queries with c={c} has {count} output sequences, more than "
            f"{_MAX_OUTPUTS} can be enumerated; use a shorter stream (or resample=True)"
        )
    rows = []

    def grow(prefix, positives):
        if len(prefix) == m or (halts and positives == c):
            rows.append(prefix + [-1] * (m - len(prefix)))
            return
        grow([*prefix, 0], positives)
        grow([*prefix, 1], positives + 1)

    grow([], 0)
    return np.array(rows, dtype=np.int8).reshape(len(rows), m)


def _count_outputs(m: int, c: int, halts: bool) -> int:
    if not halts or c > m:
        return 2**m
    unhalted = sum(math.comb(m, k) for k in range(c))
    return unhalted + sum(math.comb(j - 1, c - 1) for j in range(c, m + 1))


def _as_tuple(row: np.ndarray) -> tuple[bool, ...]:
    return tuple(bool(a) for a in row[row >= 0])


# --- threshold redrawn after each positive: dynamic programming over the runs ----------------


def _resampled_worst(svt, law, q, corners):
    """As :func:`_once_worst`, by dynamic programming over the runs of each threshold draw."""
    halts, m = svt.halts, q.size
    pos_a, tail_a = law.segments(q, q)
    candidates = []
    for direction, corner in zip(("a>b", "b>a"), corners, strict=True):
        pos_b, tail_b = law.segments(*corner)
        sign = 1.0 if direction == "a>b" else -1.0
        with np.errstate(invalid="ignore"):  # -inf - -inf below the diagonal, never used
            ratio = np.where(np.isfinite(pos_a), sign * (pos_a - pos_b), -np.inf)
        value, positives, halted = best_runs(ratio, sign * (tail_a - tail_b), svt.c, halts)
        candidates.append((value, direction, positives, halted, corner, pos_b, tail_b))
    best = max(candidates, key=lambda c: c[0])  # the first of the largest
    value, direction, positives, halted, corner, pos_b, tail_b = best
    out = np.full(m, -1, dtype=np.int8)
    out[: positives[-1] + 1 if halted else m] = 0
    out[positives] = 1
    log_p = runs_log_probability(pos_a, tail_a, positives, halted)
    log_q = runs_log_probability(pos_b, tail_b, positives, halted)
    total, _, _ = best_runs(pos_a, tail_a, svt.c, halts, reduce=logsumexp)
    return value, direction, out, log_p, log_q, corner, np.exp(total)


@functools.singledispatch
def _check_svt(svt) -> None:
    raise TypeError(f"svt must be a SparseVector, got {type(svt).__name__}")


@_check_svt.register
def _(svt: SparseVector) -> None:
    """Accept a SparseVector (or a subclass): what the audit reads."""


def _stream(name: str, values) -> np.ndarray:
    # query streams are confidential: messages give shapes, counts and positions only
    q = _validate.finite_array(name, values, confidential=True)
    if q.ndim != 1 or q.size == 0:
        raise ValueError(f"{name} must be a non-empty one-dimensional stream, got shape {q.shape}")
    return q
