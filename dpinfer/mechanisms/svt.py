"""The sparse vector technique, as ABCDP runs it (below-threshold queries)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .. import _validate, accounting
from .._rng import RNGLike, as_generator
from ._numerics import float_spacing
from .base import RESOLUTION_FRACTION, Privacy

__all__ = ["SVTResult", "SparseVector"]

_BLOCK = 65_536


@dataclass(frozen=True)
class SVTResult:
    """What a sparse vector run publishes: indicators, never noisy values.

    Attributes
    ----------
    indicators : numpy.ndarray of bool
        One entry per query answered, in order; True where the noisy query
        fell below the noisy threshold.
    n_queries : int
        Number of queries answered (the run stops after ``c`` positives).
    n_positives : int
        Number of True indicators.
    halted : bool
        Whether the run stopped at ``c`` positives before the stream ended.
    privacy : Privacy
        The budget spent (the full Theorem 1 budget, whatever the stream length).
    """

    indicators: np.ndarray
    n_queries: int
    n_positives: int
    halted: bool
    privacy: Privacy


class SparseVector:
    r"""Sparse vector technique over a stream of query values.

    Answers, for each query ``q_t`` in order, whether ``q_t + nu_t <= T + rho``
    with threshold noise ``rho ~ Lap(b)`` and query noise ``nu_t ~ Lap(2b)``,
    and halts after ``c`` positives. With ``resample=True`` the threshold
    noise is redrawn after every positive.

    Parameters
    ----------
    threshold : float
        The public threshold ``T`` (ABCDP's ``epsilon_abc``).
    scale : float
        ``b``: the threshold noise scale; queries get ``2b``.
    c : int
        Number of positives after which the run halts.
    sensitivity : float
        Bound on how much any query can change between neighbouring datasets.
    resample : bool, default False
        Redraw the threshold noise after each positive.

    Notes
    -----
    Park, Vinaroz & Jitkrittum (2021), Theorem 1:

    .. math:: \varepsilon = \frac{(c+1)\Delta}{b} \ \text{(resample=False)}, \qquad
              \varepsilon = \frac{2c\Delta}{b} \ \text{(resample=True)}.

    Without resampling this is Lyu, Su & Li (2017), Algorithm 1, with
    :math:`\varepsilon_1 = \Delta/b` spent on the threshold and
    :math:`\varepsilon_2 = c\Delta/b` on the queries (their query noise
    :math:`2c\Delta/\varepsilon_2 = 2b`). With resampling it is ``c``
    compositions of the one-positive SVT, each :math:`2\Delta/b`-DP.
    The noise is drawn from this object's own generator, never shared with
    simulation randomness, and :meth:`run` returns indicators only. A threshold
    so large that float64 rounding near it exceeds :math:`b/100` is refused:
    the comparisons there would round the noise away.

    Examples
    --------
    >>> import dpinfer as dp
    >>> svt = dp.SparseVector.from_privacy(epsilon=1.0, threshold=0.2, c=2, sensitivity=0.01)
    >>> svt.scale
    0.03
    >>> res = svt.run([0.9, 0.1, 0.15, 0.05], rng=3)
    >>> res.n_positives <= 2
    True
    """

    def __init__(
        self, threshold: float, *, scale: float, c: int, sensitivity: float, resample: bool = False
    ) -> None:
        self.threshold = _validate.finite("threshold", threshold)
        self.scale = _validate.positive_finite("scale", scale)
        self.c = _validate.positive_int("c", c)
        self.sensitivity = _validate.positive_finite("sensitivity", sensitivity)
        self.resample = _validate.flag("resample", resample)
        spacing = float(float_spacing(self.threshold))
        if spacing > RESOLUTION_FRACTION * self.scale:
            raise ValueError(
                f"threshold={threshold!r} is so large next to scale={scale!r} that float64 "
                f"rounding near it (spacing {spacing:.3g}) exceeds 1/100 of the threshold "
                "noise: the noisy comparisons would round the noise away and the run would not "
                "carry its privacy guarantee. Shift the queries and the threshold towards 0, or "
                "use a larger scale."
            )

    @classmethod
    def from_privacy(
        cls,
        *,
        epsilon: float,
        threshold: float,
        c: int,
        sensitivity: float,
        resample: bool = False,
    ) -> SparseVector:
        """Set ``b`` from Theorem 1 so the run is ``epsilon``-DP."""
        b = accounting.svt_scale(epsilon, sensitivity, c, resample=resample)
        try:
            return cls(threshold, scale=b, c=c, sensitivity=sensitivity, resample=resample)
        except ValueError as err:
            raise ValueError(
                f"epsilon={epsilon!r}, c={c!r} and sensitivity={sensitivity!r} need scale={b!r}, "
                f"which is refused: {err}"
            ) from None

    @property
    def privacy(self) -> Privacy:
        """The pure-DP guarantee of Theorem 1 for the declared sensitivity."""
        return Privacy(
            epsilon=accounting.svt_epsilon(
                self.scale, self.sensitivity, self.c, resample=self.resample
            ),
            neighbouring=f"every query changes by at most {self.sensitivity:g}",
        )

    # The three noise and stopping rules, kept apart so that tests can plant bugs.
    @property
    def threshold_scale(self) -> float:
        """The scale of the Laplace noise on the threshold."""
        return self._threshold_scale()

    @property
    def query_scale(self) -> float:
        """The scale of the Laplace noise on each query."""
        return self._query_scale()

    @property
    def halts(self) -> bool:
        """Whether the run stops after ``c`` positives (as the privacy guarantee needs)."""
        return self._halts()

    def _threshold_scale(self) -> float:
        return self.scale

    def _query_scale(self) -> float:
        return 2 * self.scale

    def _halts(self) -> bool:
        return True

    def run(self, queries: ArrayLike, *, rng: RNGLike = None) -> SVTResult:
        """Answer the queries in order until ``c`` positives.

        Parameters
        ----------
        queries : array_like
            One-dimensional, finite query values (clip unbounded distances
            before the run).
        rng : None, int, SeedSequence or Generator, optional
            Source of the privacy noise; None draws OS entropy.

        Returns
        -------
        SVTResult
        """
        # the queries are confidential: messages give shapes, counts and positions only
        q = _validate.numeric_array("queries", queries, confidential=True).astype(float)
        if q.ndim != 1:
            raise ValueError(f"queries must be one-dimensional, got shape {q.shape}")
        finite = np.isfinite(q)
        if not np.all(finite):
            raise ValueError(
                _validate.bad_entries("queries", ~finite, "be finite")
                + "; clip distances (non-finite ones to the clip bound) before the sparse "
                "vector technique"
            )
        rng = as_generator(rng)
        answers, stop = self._answer(q, rng)
        indicators = np.asarray(answers[:stop], dtype=bool)
        n_pos = int(indicators.sum())
        return SVTResult(
            indicators=indicators,
            n_queries=int(stop),
            n_positives=n_pos,
            halted=bool(self._halts() and n_pos >= self.c),
            privacy=self.privacy,
        )

    def _answer(self, q: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, int]:
        answers = np.zeros(q.size, dtype=bool)
        noisy_threshold = self.threshold + rng.laplace(0.0, self._threshold_scale())
        pos, count = 0, 0
        while pos < q.size:
            block = q[pos : pos + _BLOCK]
            hits = np.flatnonzero(
                block + rng.laplace(0.0, self._query_scale(), size=block.size) <= noisy_threshold
            )
            if self.resample:
                hits = hits[:1]
            if self._halts():
                hits = hits[: self.c - count]
            answers[pos + hits] = True
            count += hits.size
            if self._halts() and count >= self.c:
                return answers, pos + int(hits[-1]) + 1
            if self.resample and hits.size:
                noisy_threshold = self.threshold + rng.laplace(0.0, self._threshold_scale())
                pos += int(hits[0]) + 1
            else:
                pos += block.size
        return answers, q.size
