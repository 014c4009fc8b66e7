"""The guard against ABCDP settings computed from the confidential observations.

**The rule.** Every setting of an ABCDP run that depends on the confidential
observations (a kernel bandwidth, a clip bound, distance weights, summary
statistics, the threshold ``epsilon_abc``, ``c``) must itself be released by
a differentially private mechanism, and its budget passed as ``charged=`` so
that it is composed into the reported guarantee. Settings computed from
simulated (public) data only cost nothing.

**What the guard recognises.** :func:`leaked_settings` refuses a setting that

- carries its provenance (a :class:`~dpinfer.distances.DataDerived`, as
  :func:`~dpinfer.distances.median_heuristic` returns) and was computed from at
  least one confidential record (records compared at float32 precision, so a
  float32 copy of the data is the same data);
- is a plain number (``float(h)``, ``h * 1.0``, ``np.float32(h)``, a one-element
  array) equal, to a relative ``1e-6``, to one of the latest 256 data-derived
  values made in this process from a confidential record;
- equals, to ``1e-6``, the median heuristic of the observations themselves
  (however it was computed, e.g. from a float32 copy of the data), unless the
  value is explained by a data-derived value from public data only.

**What it cannot catch.** A transformed value (``2 * h``, ``h ** 2``, a
rounded ``h``), any other statistic of the data (a standard deviation, a
quantile, a range used as clip bound), a value computed in another process or
session, or more than 256 data-derived values ago, settings hidden inside a
custom distance that are not listed by its ``settings()`` (a summary
function, a feature map), proposals or pseudo-data built from the
observations, and choices made by looking at the data (the model, ``c``,
which run to publish). These remain the data owner's responsibility under
the rule above.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .. import _validate
from ._derived import DataDerived, recent_data_derived, record_rows
from .kernels import heuristic_points, median_distance

__all__ = ["RTOL", "leaked_settings"]

RTOL = 1e-6  # near-copies: float32 rounding (6e-8) and a few float operations


def leaked_settings(settings: dict, observed: ArrayLike) -> list[str]:
    """Names of the settings that come from ``observed`` (see the module notes).

    Parameters
    ----------
    settings : dict
        Name to value (a number, a one-element array, a :class:`DataDerived`).
    observed : array_like
        The confidential observations.

    Returns
    -------
    list of str
        The names refused, in the order given.

    Examples
    --------
    >>> import numpy as np
    >>> from dpinfer.distances import median_heuristic
    >>> rng = np.random.default_rng(0)
    >>> y, z = rng.normal(size=(50, 1)), rng.normal(size=(50, 1))
    >>> h = median_heuristic(y)
    >>> leaked_settings({"a": h, "b": float(h), "c": np.float32(h)}, y)
    ['a', 'b', 'c']
    >>> leaked_settings({"bandwidth": float(median_heuristic(z)), "clip": 5.0}, y)
    []
    """
    observed = _validate.confidential_numbers("observed", observed)
    rows = record_rows(observed)
    recent = recent_data_derived()
    own = _own_heuristic(observed)
    leaked = []
    for name, value in settings.items():
        if isinstance(value, DataDerived):
            if not value.rows.isdisjoint(rows):
                leaked.append(name)
            continue
        if any(_from_observed(x, rows, recent, own) for x in _numbers(value)):
            leaked.append(name)
    return leaked


def _from_observed(x: float, rows, recent, own: float | None) -> bool:
    origins = [r for value, r in recent if _close(x, value)]
    if origins:
        return any(not r.isdisjoint(rows) for r in origins)
    return own is not None and _close(x, own)


def _own_heuristic(observed: np.ndarray) -> float | None:
    """Return ``median_heuristic(observed)`` as a plain float (None if undefined)."""
    try:
        return median_distance(heuristic_points(observed))
    except ValueError:  # fewer than two distinct points
        return None


def _numbers(value) -> list[float]:
    try:
        arr = np.asarray(value, dtype=float).ravel()
    except (TypeError, ValueError):
        return []
    return [float(x) for x in arr if np.isfinite(x)]


def _close(x: float, y: float) -> bool:
    return abs(x - y) <= RTOL * max(abs(x), abs(y))
