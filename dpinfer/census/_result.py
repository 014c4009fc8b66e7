"""The result of constrained least squares: estimates, sds, tables and joint draws."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.stats

from .._rng import RNGLike, as_generator
from .._validate import size
from ._release import CensusRelease

__all__ = ["GLSResult"]

#: Two-sided level of the intervals in tables.
LEVEL = 0.90


@dataclass(frozen=True, eq=False)
class GLSResult:
    """Constrained least-squares estimates of every unit's detailed counts.

    Attributes
    ----------
    release : CensusRelease
    detailed : numpy.ndarray
        ``(units, cells)``: the estimate of every unit's detailed counts.
    method : str
        ``"tree"`` (the ANOVA passes), ``"matrix"`` (the passes with a ``d x d``
        matrix per unit) or ``"dense"`` (the KKT system).
    """

    release: CensusRelease
    detailed: np.ndarray
    method: str
    _query_sd: dict
    _sampler: Callable[[int, np.random.Generator], np.ndarray] | None = None

    def estimate(self, query: str) -> np.ndarray:
        """``(units, cells)``: the estimate of ``query``'s cells at every unit."""
        return self.release.query(query).project(self.detailed)

    def sd(self, query: str) -> np.ndarray:
        """``(units, cells)``: the posterior standard deviation of ``query``'s cells."""
        q = self.release.query(query)
        if q.name not in self._query_sd:
            raise ValueError(
                f"query {query!r} has no sd here; computed for {list(self._query_sd)}"
            )
        return self._query_sd[q.name]

    def draws(self, n: int, *, rng: RNGLike = None) -> np.ndarray:
        """``(n, units, cells)``: joint Gaussian draws of every unit's detailed counts.

        Each draw adds up across the tree and meets every invariant exactly (up to
        rounding); the counts are real numbers and may be negative.
        """
        if self._sampler is None:
            raise ValueError(
                "draws are available from the tree passes only (method 'tree' or 'matrix'), "
                f"not from method={self.method!r}"
            )
        return self._sampler(size("n", n), as_generator(rng))

    def table(self, queries: Sequence[str] | None = None) -> pd.DataFrame:
        """Rows ``geocode, query, cell, estimate, sd, lower, upper`` (central 90% intervals)."""
        import pandas as pd

        z = scipy.stats.norm.ppf(0.5 + LEVEL / 2)
        frames = []
        for q in queries or self._query_sd:
            est, sd = self.estimate(q), self.sd(q)
            unit, cell = np.indices(est.shape).reshape(2, -1)
            frames.append(
                pd.DataFrame(
                    {
                        "geocode": self.release.units.geocodes[unit],
                        "query": self.release.query(q).name,
                        "cell": cell,
                        "estimate": est.ravel(),
                        "sd": sd.ravel(),
                        "lower": (est - z * sd).ravel(),
                        "upper": (est + z * sd).ravel(),
                    }
                )
            )
        return pd.concat(frames, ignore_index=True)
