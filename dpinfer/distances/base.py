"""The distance interface of ABCDP."""

from __future__ import annotations

import abc

import numpy as np
from numpy.typing import ArrayLike

from ._derived import DataDerived, fingerprint_rows, recent_data_derived, record_rows
from .provenance import leaked_settings

__all__ = ["DataDerived", "Distance", "fingerprint_rows", "recent_data_derived", "record_rows"]


class Distance(abc.ABC):
    """A distance between the confidential data and each of a batch of pseudo-datasets.

    Subclasses implement :meth:`__call__` and :meth:`sensitivity`, and list
    their data-derived settings in :meth:`settings`.
    """

    @abc.abstractmethod
    def __call__(self, observed: ArrayLike, pseudo: ArrayLike) -> np.ndarray:
        """Distances ``rho(observed, pseudo[t])`` for every ``t``, shape ``(T,)``."""

    @abc.abstractmethod
    def sensitivity(self, n_observations: int) -> float:
        """Bound on ``|rho(Y, Z) - rho(Y', Z)|`` for neighbouring ``Y, Y'`` of that size."""

    def settings(self) -> dict[str, float]:
        """Named settings of the distance (bandwidths, clip bounds, ...)."""
        return {}

    def confidential_settings(self, observed: ArrayLike) -> list[str]:
        """Names of settings computed from ``observed`` (the confidential data), or copies.

        See :func:`dpinfer.distances.provenance.leaked_settings` for what is
        recognised and what cannot be.
        """
        return leaked_settings(self.settings(), observed)
