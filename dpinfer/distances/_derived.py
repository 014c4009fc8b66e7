"""Settings that remember the data they were computed from (the provenance of ABCDP settings)."""

from __future__ import annotations

import hashlib
from collections import deque

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from .. import _validate

__all__ = ["DataDerived", "fingerprint_rows", "recent_data_derived", "record_rows"]

# The latest data-derived values of this process and the rows they came from, so that
# plain-float copies of them (``float(h)``, ``h * 1.0``, ``np.float32(h)``) are still
# recognised (see ``dpinfer.distances.provenance``).
_RECENT: deque[tuple[float, frozenset[bytes]]] = deque(maxlen=256)


def fingerprint_rows(data: ArrayLike, *, dtype: DTypeLike = float) -> frozenset[bytes]:
    """Hashes of the rows of ``data`` (first axis), to recognise confidential data later.

    With ``dtype=np.float32`` rows are hashed at single precision, so that a
    float32 copy of the data counts as the same records (the provenance of
    :class:`DataDerived` settings uses this).
    """
    with np.errstate(over="ignore"):
        arr = np.ascontiguousarray(np.asarray(data, dtype=float).astype(dtype))
    rows = arr.reshape(arr.shape[0], -1) if arr.ndim else arr.reshape(1, 1)
    return frozenset(hashlib.blake2b(r.tobytes(), digest_size=16).digest() for r in rows)


def record_rows(data: ArrayLike) -> frozenset[bytes]:
    """Hash the records of ``data`` as provenance compares them: rows at float32 precision."""
    return fingerprint_rows(data, dtype=np.float32)


class DataDerived(float):
    """A float setting (such as a bandwidth) that remembers which data it came from.

    ABCDP refuses a distance whose settings were computed from the
    confidential observations, unless the caller charges them to the budget.
    """

    rows: frozenset[bytes]

    def __new__(cls, value: float, *, data):  # noqa: D102
        obj = super().__new__(cls, _validate.positive_finite("value", value))
        obj.rows = record_rows(_validate.confidential_data("data", data))
        _RECENT.append((float(obj), obj.rows))
        return obj

    def derived_from(self, observed: ArrayLike) -> bool:
        """Whether any row of ``observed`` was among the data this setting came from.

        A setting computed from even one confidential record depends on it.
        Equal rows count as the same record, so discrete data may be refused
        conservatively when a simulated point coincides with an observation.
        """
        return not self.rows.isdisjoint(
            record_rows(_validate.confidential_numbers("observed", observed))
        )


def recent_data_derived() -> list[tuple[float, frozenset[bytes]]]:
    """Return the data-derived values made in this process (latest 256) and their rows."""
    return list(_RECENT)
