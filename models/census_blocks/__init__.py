"""Census blocks: naive, least-squares and exact posterior estimates of a census-shaped release.

``dpinfer run census-blocks`` analyses a release of noisy marginal queries over a
geographic tree (state > counties > tracts > block groups > blocks) with the state
total published exactly: a synthetic state drawn from a fixed seed (synthetic
counts, PL94-like variances per level and query, discrete Gaussian noise), or a
user's release folder in the layout of :func:`dpinfer.census.read_release`
(``--release-dir``). It writes ``summary.csv`` with one row per unit, query, cell
and method (``naive``, ``gls``, ``posterior``).

Examples
--------
>>> from dpinfer.models import census_blocks
>>> census_blocks.EXAMPLE.name
'census-blocks'
"""

from __future__ import annotations

from ._run import EXAMPLE, METHODS, run, synthetic

__all__ = ["EXAMPLE", "METHODS", "run", "synthetic"]
