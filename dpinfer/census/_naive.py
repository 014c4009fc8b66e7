"""The naive analysis: each noisy value taken as the count, clipped at zero."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ._release import CensusRelease

__all__ = ["naive"]


def naive(release: CensusRelease) -> pd.DataFrame:
    """Rows ``geocode, query, cell, estimate, sd, lower, upper`` of the naive analysis.

    What users of the noisy measurement files do today: a measured cell's noisy
    value, clipped at zero, is its estimate; an invariant cell is its exact value.
    Units and queries measured several ways keep the first. ``sd``, ``lower`` and
    ``upper`` are NaN (the naive analysis states no uncertainty).
    """
    frames = []
    geocodes = release.units.geocodes
    for name, meas in release.measurements.items():
        unit, cell = np.nonzero(np.isfinite(meas.variance))
        value = np.maximum(meas.values[unit, cell], 0).astype(float)
        frames.append(_frame(geocodes[meas.units[unit]], name, cell, value))
    for name, inv in release.invariants.items():
        unit, cell = np.indices(inv.values.shape).reshape(2, -1)
        frames.append(_frame(geocodes[inv.units[unit]], name, cell, inv.values[unit, cell]))
    # an invariant cell replaces the noisy value of the same cell
    table = pd.concat(frames[::-1], ignore_index=True)
    return table.drop_duplicates(["geocode", "query", "cell"]).reset_index(drop=True)


def _frame(geocode, query, cell, value) -> pd.DataFrame:
    nan = np.full(len(cell), np.nan)
    return pd.DataFrame(
        {
            "geocode": geocode,
            "query": query,
            "cell": cell,
            "estimate": np.asarray(value, dtype=float),
            "sd": nan,
            "lower": nan,
            "upper": nan,
        }
    )
