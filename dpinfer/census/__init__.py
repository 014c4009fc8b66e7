"""Census-shaped releases: noisy marginal queries over a geographic tree, with invariants."""

from ._folder import read_release, release_tables, write_release
from ._queries import Axes, Query
from ._release import CensusRelease, Invariants, Measurements
from ._units import Units

__all__ = [
    "Axes",
    "CensusRelease",
    "Invariants",
    "Measurements",
    "Query",
    "Units",
    "read_release",
    "release_tables",
    "write_release",
]
