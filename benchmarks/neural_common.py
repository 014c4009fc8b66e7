"""Helpers of the neural benchmarks: a cache of expensive references and the MMD they use.

Not a benchmark itself: ``neural_sir.py`` and ``neural_linear_regression.py`` import it.

* :func:`neural_options` are the SPPE/SPLE settings of a run: the paper's
  (``settings="paper"``) or, with ``--light``, the paper's training with lighter flows
  (4 transforms of 32 units, 8 bins, 4 noise copies) for a machine where the paper's
  flows take too long (on two shared cores, one SPPE round after the first took over
  ten minutes with the paper's flow). ``neural_vs_sbi.py`` measures the library's
  cheaper defaults.

* :func:`cached` stores a reference run (arrays and numbers) under ``benchmarks/.cache/``
  (a folder that ignores itself in git), keyed by its settings, so a rerun does not pay
  for it twice.
* :class:`ReferenceMMD` is the accuracy measure against a reference sample. The kernel is
  fixed from the reference alone: coordinates divided by the reference's standard
  deviations, Gaussian kernel ``exp(-|x - y|^2 / h^2)`` with ``h^2`` the median squared
  distance between reference points. ``dpinfer.compare.mmd`` instead takes the median over
  the pooled sample, so a candidate far from the reference widens its own kernel and
  shrinks its own MMD; a kernel fixed by the reference is one metric for every candidate.
  :meth:`ReferenceMMD.mmd` is the square root of the biased (V-statistic) MMD^2, which is
  the distance between the candidate's empirical distribution and the reference's: ``n``
  exact draws sit at about ``sqrt(c / n + c / m)`` from ``m`` reference draws (``c`` about
  0.5 here), so a handful of exact draws does not pass for a posterior.
  :meth:`ReferenceMMD.paper_mmd2` is the measure of Xiong et al.'s code (sbibm's
  ``metrics.mmd``): the unbiased MMD^2 with ``exp(-|x - y|^2 / (2 sigma^2))`` on the raw
  coordinates, ``sigma`` the median distance between reference points. Its threshold 0.1
  is on the *squared* distance and is much looser: for two normal samples of equal spread
  in two dimensions it lets the means differ by about 0.9 posterior sd, where ``mmd < 0.1``
  allows about 0.3.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np

from dpinfer.neural import SplineFlow, Training

CACHE = Path(__file__).resolve().parent / ".cache"
POINTS = 2000


def neural_options(*, light: bool, threads: int) -> dict:
    """Keyword arguments of ``sppe``/``sple``: the paper's settings, or lighter flows."""
    options = {"settings": "paper", "training": Training(threads=threads)}
    if light:
        options |= {
            "flow": SplineFlow(transforms=4, hidden_features=32, bins=8),
            "noise_copies": 4,
        }
    return options


def describe(options: dict) -> str:
    """One line naming the flow and noise copies of ``options``."""
    flow = options.get("flow", SplineFlow())
    copies = options.get("noise_copies", 8)
    return (
        f"spline flow of {flow.transforms} transforms, {flow.residual_blocks} residual blocks of "
        f"{flow.hidden_features} units, {flow.bins} bins; {copies} RQMC noise copies"
    )


def cached(name: str, settings: dict, compute: Callable[[], dict], *, use: bool = True) -> dict:
    """Return ``compute()`` (a dict of arrays and numbers), stored once per ``settings``.

    Parameters
    ----------
    name : str
        What is cached (part of the file name).
    settings : dict
        Everything the result depends on (JSON-serialisable); a change of any
        of them computes afresh.
    compute : callable
        Produces the result.
    use : bool, default True
        False ignores (and overwrites) a stored result.
    """
    key = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:12]
    path = CACHE / f"{name}-{key}.npz"
    if use and path.exists():
        with np.load(path) as stored:
            out = {k: stored[k] for k in stored.files}
        return {k: (v.item() if v.ndim == 0 else v) for k, v in out.items()} | {"cached": True}
    out = compute()
    CACHE.mkdir(exist_ok=True)
    (CACHE / ".gitignore").write_text("*\n")
    np.savez(path, **{k: np.asarray(v) for k, v in out.items()})
    return {**out, "cached": False}


def _subsample(x: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    return x[rng.choice(len(x), size=n, replace=False)] if len(x) > n else x


def _sq_dists(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.maximum((a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2 * a @ b.T, 0.0)


class ReferenceMMD:
    """MMDs of candidate samples against one reference sample, with kernels fixed by it.

    Parameters
    ----------
    reference : numpy.ndarray
        Reference draws, shape ``(m, d)``; at most ``POINTS`` are used.
    seed : int
        Seeds the subsampling.
    """

    def __init__(self, reference: np.ndarray, seed: int = 0):
        self.rng = np.random.default_rng(seed)
        self.reference = _subsample(np.asarray(reference, float), POINTS, self.rng)
        self.scale = self.reference.std(axis=0)
        z = self.reference / self.scale
        sq = _sq_dists(z, z)
        self.h2 = float(np.median(sq[np.triu_indices(len(z), 1)]))
        raw = _sq_dists(self.reference, self.reference)
        self.sigma2 = float(np.median(np.sqrt(raw[np.triu_indices(len(raw), 1)]))) ** 2

    def _sample(self, x) -> np.ndarray:
        return _subsample(np.asarray(x, float).reshape(len(x), -1), POINTS, self.rng)

    def mmd(self, x) -> float:
        """Biased MMD (square root of the V-statistic) with the standardised kernel."""
        x, y = self._sample(x) / self.scale, self.reference / self.scale
        kxx = np.exp(-_sq_dists(x, x) / self.h2).mean()
        kyy = np.exp(-_sq_dists(y, y) / self.h2).mean()
        kxy = np.exp(-_sq_dists(x, y) / self.h2).mean()
        return float(np.sqrt(max(kxx + kyy - 2 * kxy, 0.0)))

    def paper_mmd2(self, x) -> float:
        """Unbiased MMD^2 on raw coordinates, sigma = median reference distance (sbibm's)."""
        x, y = self._sample(x), self.reference
        n, m = len(x), len(y)
        kxx = np.exp(-_sq_dists(x, x) / (2 * self.sigma2))
        kyy = np.exp(-_sq_dists(y, y) / (2 * self.sigma2))
        kxy = np.exp(-_sq_dists(x, y) / (2 * self.sigma2))
        within_x = (kxx.sum() - n) / (n * (n - 1))
        within_y = (kyy.sum() - m) / (m * (m - 1))
        return float(within_x + within_y - 2 * kxy.mean())
