"""Census-shaped releases: noisy marginal queries over a geographic tree, with invariants.

A release (:class:`CensusRelease`) holds, for every geographic unit (geocodes
nested by prefix), noisy integer counts of marginal queries of a detailed
histogram, each cell with its discrete Gaussian variance, and invariants
(query cells published exactly). Read it from a folder (:func:`read_release`)
or from the Census Bureau's noisy measurement file layout (:func:`read_nmf`;
:func:`write_nmf` writes a release in it), or make a synthetic one
(:func:`synthetic_state`, :func:`synthetic_release`).
Three analyses: :func:`naive` (noisy values clipped at zero), :func:`gls`
(constrained least squares by linear-time tree passes) and
:func:`sample_posterior` (the exact posterior of the integer, non-negative
counts by a compiled lattice MCMC); :func:`stream_posterior` runs the same
chains on a release folder with one county in memory at a time
(:class:`StreamedRelease`).
"""

from ._dense import dense_gls
from ._folder import read_release, release_tables, write_release
from ._gls import gls
from ._naive import naive
from ._nmf import NMF_LEVELS, read_nmf
from ._nmf_writer import write_nmf
from ._posterior import CensusPosterior, sample_posterior
from ._queries import Axes, Query
from ._release import CensusRelease, Invariants, Measurements
from ._result import GLSResult
from ._streamed import StreamedRelease
from ._streaming import StreamedPosterior, stream_posterior
from ._synthetic import (
    PL94_AXES,
    Truth,
    pl94_production_variances,
    pl94_variances,
    synthetic_release,
    synthetic_state,
)
from ._units import Units

__all__ = [
    "NMF_LEVELS",
    "PL94_AXES",
    "Axes",
    "CensusPosterior",
    "CensusRelease",
    "GLSResult",
    "Invariants",
    "Measurements",
    "Query",
    "StreamedPosterior",
    "StreamedRelease",
    "Truth",
    "Units",
    "dense_gls",
    "gls",
    "naive",
    "pl94_production_variances",
    "pl94_variances",
    "read_nmf",
    "read_release",
    "release_tables",
    "sample_posterior",
    "stream_posterior",
    "synthetic_release",
    "synthetic_state",
    "write_nmf",
    "write_release",
]
