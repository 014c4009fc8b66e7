"""The distance interface of ABCDP and the provenance of data-derived settings."""

from __future__ import annotations

import abc
import hashlib

import numpy as np

__all__ = ["DataDerived", "Distance", "fingerprint_rows"]


def fingerprint_rows(data) -> frozenset[bytes]:
    """Hashes of the rows of ``data`` (first axis), to recognise confidential data later."""
    arr = np.ascontiguousarray(np.asarray(data, dtype=float))
    rows = arr.reshape(arr.shape[0], -1) if arr.ndim else arr.reshape(1, 1)
    return frozenset(hashlib.blake2b(r.tobytes(), digest_size=16).digest() for r in rows)


class DataDerived(float):
    """A float setting (such as a bandwidth) that remembers which data it came from.

    ABCDP refuses a distance whose settings were computed from the
    confidential observations, unless the caller charges them to the budget.
    """

    rows: frozenset[bytes]

    def __new__(cls, value: float, *, data):  # noqa: D102
        obj = super().__new__(cls, value)
        obj.rows = fingerprint_rows(data)
        return obj

    def derived_from(self, observed) -> bool:
        """Whether any row of ``observed`` was among the data this setting came from.

        A setting computed from even one confidential record depends on it.
        Equal rows count as the same record, so discrete data may be refused
        conservatively when a simulated point coincides with an observation.
        """
        return not self.rows.isdisjoint(fingerprint_rows(observed))


class Distance(abc.ABC):
    """A distance between the confidential data and each of a batch of pseudo-datasets.

    Subclasses implement :meth:`__call__` and :meth:`sensitivity`, and list
    their data-derived settings in :meth:`settings`.
    """

    @abc.abstractmethod
    def __call__(self, observed, pseudo) -> np.ndarray:
        """Distances ``rho(observed, pseudo[t])`` for every ``t``, shape ``(T,)``."""

    @abc.abstractmethod
    def sensitivity(self, n_observations: int) -> float:
        """Bound on ``|rho(Y, Z) - rho(Y', Z)|`` for neighbouring ``Y, Y'`` of that size."""

    def settings(self) -> dict[str, float]:
        """Named settings of the distance (bandwidths, clip bounds, ...)."""
        return {}

    def confidential_settings(self, observed) -> list[str]:
        """Names of settings computed from ``observed`` (the confidential data)."""
        return [
            name
            for name, value in self.settings().items()
            if isinstance(value, DataDerived) and value.derived_from(observed)
        ]
