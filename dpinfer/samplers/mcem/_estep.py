r"""The Monte Carlo E-step: a weighted sample of the confidential statistic (Algorithm 3).

At the current parameter ``theta_t`` the statistics ``s_i ~ pi(s | theta_t)``
are simulated in chunks and weighted by ``omega_i = eta(s_dp | s_i)`` in log
space (Gong 2022, Algorithm 3). Everything the M-step, the Q increase and the
Louis information need is a weighted mean over the sample, so a
:class:`WeightedSample` offers one operation, :meth:`WeightedSample.means`:
stream the chunks once and return self-normalised weighted means.

Chunks are generated from one :class:`~numpy.random.SeedSequence` by index
(:mod:`dpinfer.parallel`), so a sample is a recipe that can be regenerated
exactly, under any executor. Small samples are kept in memory; integer
statistics are compressed to their distinct values with summed weights and
summed squared weights (exact for every weighted mean and for the ESS);
larger samples are regenerated on each pass, so memory stays bounded by a
few chunks whatever ``N`` is.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from ... import parallel

__all__ = ["MIN_ESS", "Means", "WeightedSample"]

#: Samples with at most this many stored numbers (after compression) stay in memory.
CACHE_NUMBERS = 4_000_000

#: The floor of the E-step's effective sample size ``1 / sum w~^2`` (Gong 2022, eq. 4.4).
#: Below it a few simulations carry the weighted means, and the delta-method Monte Carlo
#: errors computed from the same weights (of the Q increase, of the score, hence of the
#: estimate) are themselves unreliable: with an ESS of 1 they are exactly zero whatever the
#: real error. An E-step below the floor never ends a run, a Monte Carlo standard error is
#: never reported from one, and a fit whose last E-step or information pass is below it is
#: reported as not converged. (Far from the MLE a low ESS is normal: EM then follows the
#: simulations nearest the release, which still moves it toward the MLE.)
MIN_ESS = 100.0


class Chunk(NamedTuple):
    """Rows of a weighted sample: statistics, log summed weights, log summed squared weights."""

    s: np.ndarray
    log_w: np.ndarray
    log_w2: np.ndarray


class Means(NamedTuple):
    """Weighted means of one pass.

    ``first[k]`` is ``sum_i w~_i f_k(s_i)`` and ``second[k]`` is
    ``sum_i w~_i^2 g_k(s_i)``, with ``w~`` the self-normalised weights; ``ess``
    is the Kish effective sample size ``1 / sum w~^2`` (Gong 2022, eq. 4.4).
    """

    first: dict
    second: dict
    ess: float
    log_mean_weight: float


class WeightedSample:
    """``N`` weighted draws of the statistic at one parameter value.

    Parameters
    ----------
    draw : callable
        ``draw(index, size, rng) -> Chunk`` simulates and weights one chunk.
    sizes : list of int
        Chunk sizes.
    root : numpy.random.SeedSequence
        Root seed; chunk ``i`` uses the generator derived from it by index.
    executor : concurrent.futures.Executor, optional
        Runs the chunks.
    """

    def __init__(self, draw: Callable, sizes: list[int], root, *, executor=None):
        self._draw, self.sizes, self._root, self._executor = draw, list(sizes), root, executor
        self._cache: list[Chunk] | None = None
        self._cacheable = True

    @property
    def n(self) -> int:
        """Number of simulated statistics."""
        return sum(self.sizes)

    def extend(self, extra: int, batch_size: int) -> WeightedSample:
        """Append ``extra`` fresh draws (new chunk indices of the same root)."""
        full, rest = divmod(int(extra), batch_size)
        sizes = [batch_size] * full + ([rest] if rest else [])
        new = WeightedSample(self._draw, self.sizes + sizes, self._root, executor=self._executor)
        if self._cache is not None:
            first = len(self.sizes)
            tail = list(self._stream(first, len(new.sizes), new.sizes))
            new._cache = self._cache + tail
            if _numbers(new._cache) > CACHE_NUMBERS:
                new._cache, new._cacheable = None, False
        else:
            new._cacheable = False
        return new

    def chunks(self):
        """Iterate over the chunks (from memory, or regenerated)."""
        if self._cache is not None:
            yield from self._cache
            return
        building: list | None = [] if self._cacheable else None
        for chunk in self._stream(0, len(self.sizes), self.sizes):
            if building is not None:
                building.append(chunk)
                if _numbers(building) > CACHE_NUMBERS:
                    building, self._cacheable = None, False
            yield chunk
        if building is not None:
            self._cache = building

    def means(self, terms: Callable | None = None, *, squared: tuple = ()) -> Means:
        """One pass: weighted means of ``terms(s)``, and weighted-squared means of some.

        ``terms`` maps a chunk's statistics to a dict of arrays with leading
        dimension the chunk's row count. ``Means.first[k]`` is
        ``sum_i w~_i f_k(s_i)``; for ``k`` in ``squared`` (and for ``"one"``,
        ``f = 1``), ``Means.second[k]`` is ``sum_i w~_i^2 f_k(s_i)``.
        """
        acc1, acc2 = _Accumulator(), _Accumulator()
        for chunk in self.chunks():
            values = terms(chunk.s) if terms is not None else {}
            acc1.add(chunk.log_w, values)
            acc2.add(chunk.log_w2, {k: values[k] for k in squared})
        log_total, sums1 = acc1.result()
        log_total2, sums2 = acc2.result()
        if not np.isfinite(log_total):
            raise ValueError(
                "every importance weight eta(s_dp | s_i) is zero: the release is impossible "
                "under the simulated statistics at the current parameter"
            )
        scale2 = np.exp(log_total2 - 2 * log_total)
        second = {k: v * scale2 for k, v in sums2.items()}
        second["one"] = float(scale2)
        return Means(
            first=sums1,
            second=second,
            ess=float(1.0 / scale2),
            log_mean_weight=float(log_total - np.log(self.n)),
        )

    def _stream(self, start: int, stop: int, sizes: list[int]):
        draw = self._draw

        def task(index, rng):
            return draw(index, sizes[index], rng)

        yield from parallel.iter_chunks(
            task, self._root, executor=self._executor, start=start, stop=stop
        )


class _Accumulator:
    """Streaming ``sum_i w_i f(s_i) / sum_i w_i`` with log-space weights."""

    def __init__(self):
        self.log_max = -np.inf
        self.total = 0.0
        self.sums: dict = {}

    def add(self, log_w: np.ndarray, values: dict) -> None:
        if len(log_w) == 0:
            return
        m = float(np.max(log_w))
        if not np.isfinite(m):
            return
        if m > self.log_max:
            rescale = np.exp(self.log_max - m) if np.isfinite(self.log_max) else 0.0
            self.total *= rescale
            self.sums = {k: v * rescale for k, v in self.sums.items()}
            self.log_max = m
        w = np.exp(log_w - self.log_max)
        self.total += float(np.sum(w))
        for key, value in values.items():
            value = np.asarray(value, dtype=float)
            contrib = np.tensordot(w, value, axes=(0, 0))
            self.sums[key] = self.sums.get(key, 0.0) + contrib

    def result(self) -> tuple[float, dict]:
        if self.total == 0.0:
            return -np.inf, {}
        log_total = self.log_max + np.log(self.total)
        return float(log_total), {k: v / self.total for k, v in self.sums.items()}


def make_draw(model, mechanism, released, space, theta, *, compress: bool) -> Callable:
    """Return the chunk function of Algorithm 3: simulate at ``theta``, weight by eta."""
    event_shape = mechanism.event_shape

    def draw(index, size, rng) -> Chunk:
        params = space.batch(theta, size)
        s = model.simulate_checked(params, rng, event_shape=event_shape)
        log_w = np.asarray(mechanism.logpdf(released, s), dtype=float)
        if compress and s.dtype.kind in "iub":
            return _compress(s, log_w)
        return Chunk(s, log_w, 2 * log_w)

    return draw


def _compress(s: np.ndarray, log_w: np.ndarray) -> Chunk:
    """Merge equal integer statistics: log of summed weights and of summed squared weights.

    Weights below ``e^-700`` of the chunk's largest underflow to zero, which
    changes no weighted mean in double precision.
    """
    n = len(s)
    m = float(np.max(log_w)) if n else -np.inf
    if not np.isfinite(m):
        return Chunk(s, log_w, 2 * log_w)
    if s.ndim == 1 and int(s.max()) - int(s.min()) < 4 * n:
        lo = int(s.min())
        index = s.astype(np.int64) - lo
        present = np.bincount(index) > 0
        values = (np.flatnonzero(present) + lo).astype(s.dtype)
        index = np.cumsum(present)[index] - 1
    else:
        values, index = np.unique(s.reshape(n, -1), axis=0, return_inverse=True)
        values = values.reshape(len(values), *s.shape[1:])
        index = index.reshape(-1)
    w = np.exp(log_w - m)
    k = len(values)
    sw = np.bincount(index, weights=w, minlength=k)
    sw2 = np.bincount(index, weights=w * w, minlength=k)
    with np.errstate(divide="ignore"):
        return Chunk(values, np.log(sw) + m, np.log(sw2) + 2 * m)


def _numbers(chunks: list[Chunk]) -> int:
    return sum(c.s.size + 2 * len(c.log_w) for c in chunks)
