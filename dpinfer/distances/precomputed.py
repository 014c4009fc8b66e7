"""Distances computed once and looked up by index, so several ABCDP runs can share them."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .. import _validate
from .base import Distance, fingerprint_rows

__all__ = ["PrecomputedDistances"]


class PrecomputedDistances(Distance):
    """Distances from one confidential dataset to indexed public pseudo-datasets.

    Lets several ABCDP runs share one expensive set of distances: the
    pseudo-data passed to :func:`dpinfer.abcdp` are the integer indices
    ``0..T-1`` of the pseudo-datasets. The sensitivity and settings are those
    of the distance that computed the values, and the observed data must be
    the data they were computed from.

    Parameters
    ----------
    base : Distance
        The distance that computed ``values``.
    observed : array_like
        The confidential data the values were computed from.
    values : array_like
        ``(T,)`` distances.

    Examples
    --------
    >>> import numpy as np
    >>> from dpinfer.distances import ClippedL2, PrecomputedDistances
    >>> y = np.zeros((3, 1))
    >>> dist = PrecomputedDistances(ClippedL2(1.0), y, [0.2, 0.7, 1.0])
    >>> dist(y, [2, 0]), dist.sensitivity(3)
    (array([1. , 0.2]), 1.0)
    """

    def __init__(self, base: Distance, observed: ArrayLike, values: ArrayLike) -> None:
        self.base = _validate.instance("base", base, Distance, "a dpinfer Distance")
        # distances to the confidential data are confidential too
        self.values = _validate.confidential_data("values", values)
        if self.values.ndim != 1:
            raise ValueError(
                f"values must be a 1-d array of distances, got shape {self.values.shape}"
            )
        if np.any(self.values < 0):
            raise ValueError(_validate.bad_entries("values", self.values < 0, "be >= 0"))
        self._rows = fingerprint_rows(_validate.confidential_data("observed", observed))

    def sensitivity(self, n_observations: int) -> float:
        """Return the sensitivity of the base distance."""
        return self.base.sensitivity(n_observations)

    def settings(self) -> dict[str, float]:
        """Return the settings of the base distance."""
        return self.base.settings()

    def __call__(self, observed: ArrayLike, pseudo: ArrayLike) -> np.ndarray:
        """Look up the distances of the pseudo-datasets with indices ``pseudo``."""
        if fingerprint_rows(_validate.confidential_numbers("observed", observed)) != self._rows:
            raise ValueError("observed is not the data these distances were computed from")
        return self.values[np.asarray(pseudo, dtype=np.int64).ravel()]

    def __repr__(self) -> str:
        return f"PrecomputedDistances({self.base!r}, T={self.values.size})"
