"""The dense peer of ``benchmarks/tables.py`` computes the marginal likelihood dpinfer does.

Deterministic (a fixed table and fixed points): the check cannot fail by chance. Its planted
companion clips the peer's window at 0, as the peer once did, which counts the term of the
count 0 several times for a cell released near 0, and must fail the same check.
"""

from __future__ import annotations

import importlib.util
import math
import os
from pathlib import Path
from unittest import mock

import numpy as np
import pytest

TABLES = Path(__file__).resolve().parents[2] / "benchmarks" / "tables.py"
CELLS = 120


@pytest.fixture(scope="module")
def tables():
    spec = importlib.util.spec_from_file_location("benchmark_tables", TABLES)
    module = importlib.util.module_from_spec(spec)
    with mock.patch.dict(os.environ):  # the script's BLAS settings are for its own process
        spec.loader.exec_module(module)
    assert np.sum(module.table(CELLS, 0.5, seed=3)[2] < 8) >= 3
    return module


def test_dense_peer_agrees_with_dpinfer(tables):
    assert tables.check_dense(CELLS) < 1e-6  # check_dense raises beyond its tolerance


def _clipped_peer(lam, mechanism, released):
    """The peer's old window: counts clipped at 0, so the count 0 recurs."""
    import pymc as pm
    import pytensor.tensor as pt

    w = math.ceil(8 * float(np.max(mechanism.sigma)))
    s = np.maximum(released[None, :] + np.arange(-w, w + 1)[:, None], 0)
    noise = mechanism.logpdf(0, (released[None, :] - s).reshape(-1, 1)).reshape(s.shape)
    return pt.logsumexp(pm.logp(pm.Poisson.dist(mu=lam[None, :]), s) + noise, axis=0)


def test_companion_clipped_window_fails_the_check(tables, monkeypatch):
    monkeypatch.setattr(tables, "dense_loglik", _clipped_peer)
    with pytest.raises(AssertionError, match="the dense peer and dpinfer's marginal differ"):
        tables.check_dense(CELLS)
