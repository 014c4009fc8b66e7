"""Shared pieces of the ABCDP tests: a distance with controlled values, SVT recorders, bugs."""

from __future__ import annotations

import importlib
from dataclasses import dataclass

import numpy as np
import scipy.stats as st

import dpinfer as dp
from dpinfer.mechanisms.svt import SparseVector

# the module (``dpinfer.samplers.abcdp`` the attribute is the function of the same name)
abcdp_module = importlib.import_module("dpinfer.samplers.abcdp")


class MeanDistance(dp.distances.Distance):
    """``rho(Y, z_t) = |mean(Y) - z_t|`` for observations in [0, 1]: sensitivity ``1 / N``.

    Each pseudo-dataset is one public number ``z_t``, so the tests choose every
    distance, and whether it moves up or down between neighbouring datasets:
    with ``mean(Y) = 0`` and ``mean(Y') = 1/N``, a ``z_t >= 1/N`` moves down by
    exactly ``1/N`` and a ``z_t <= 0`` moves up by exactly ``1/N``.
    """

    def __call__(self, observed, pseudo):
        y = np.asarray(observed, dtype=float)
        if np.any((y < 0) | (y > 1)):
            raise ValueError("MeanDistance needs observations in [0, 1]")
        return np.abs(y.mean() - np.asarray(pseudo, dtype=float).reshape(len(pseudo)))

    def sensitivity(self, n_observations):
        return 1.0 / n_observations


def location_model(n: int) -> dp.Model:
    """``mu ~ N(0, 2)``; a pseudo-dataset is ``n`` draws of ``N(mu, 1)``, shape ``(n, 1)``."""
    return dp.Model(
        {"mu": st.norm(0, 2)},
        simulate=lambda p, r: p["mu"][:, None, None] + r.normal(size=(len(p["mu"]), n, 1)),
    )


def neighbours(n: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """``Y = 0`` (n rows) and ``Y'`` with one record replaced by 1: means 0 and 1/n."""
    a = np.zeros((n, 1))
    b = a.copy()
    b[0] = 1.0
    return a, b


# --- recording the sparse vector run that dpinfer.abcdp builds -----------------------------


class Recording(SparseVector):
    """A SparseVector that remembers itself and its query stream for every run."""

    runs: list = []

    def run(self, queries, *, rng=None):
        Recording.runs.append((self, np.array(queries, dtype=float)))
        return super().run(queries, rng=rng)


class NoThresholdNoise(Recording):
    """Planted bug: the threshold is compared without noise."""

    def _threshold_scale(self):
        return 0.0


class QueryNoiseNotScaledByC(Recording):
    """Planted bug: query noise Lap(2b / c), as if the c positives cost one."""

    def _query_scale(self):
        return 2 * self.scale / self.c


class NoHalting(Recording):
    """Planted bug: keeps answering after c positives."""

    def _halts(self):
        return False


@dataclass
class Captured:
    """The SVT instance ABCDP built for one dataset and the distances it answered."""

    svt: SparseVector
    queries: np.ndarray
    output: object  # the InferenceData of that call


def capture(monkeypatch, cls, observed, distance, **kwargs) -> Captured:
    """Run ``dpinfer.abcdp`` once with ``SparseVector`` replaced by ``cls``; keep the run."""
    monkeypatch.setattr(abcdp_module, "SparseVector", cls)
    Recording.runs.clear()
    out = dp.abcdp(observed, distance, progressbar=False, **kwargs)
    assert len(Recording.runs) == 1
    svt, queries = Recording.runs[0]
    assert type(svt) is cls
    return Captured(svt, queries, out)


def pattern_code(result) -> int:
    """Everything an SVT run publishes (its indicators, hence their number), as one integer."""
    bits = np.flatnonzero(result.indicators)
    return int((result.n_queries << 32) + np.sum(1 << bits.astype(np.int64)))


def replay(captured: Captured, summary=pattern_code):
    """An audit sampler: ``n`` fresh runs of the captured SVT on the captured distances."""
    svt, queries = captured.svt, captured.queries

    def sample(n, rng):
        # the base class's run (not the recorder's), with the instance's own hooks
        runs = (SparseVector.run(svt, queries, rng=rng) for _ in range(n))
        return np.array([summary(r) for r in runs], dtype=np.int64)

    return sample
