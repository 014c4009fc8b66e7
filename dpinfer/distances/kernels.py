"""Bounded kernels and the median heuristic."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .. import _validate
from .._rng import RNGLike, as_generator
from ._derived import DataDerived

__all__ = ["GaussianKernel", "median_heuristic"]


class GaussianKernel:
    r"""Gaussian kernel ``k(x, y) = exp(-||x - y||^2 / (2 l^2))``, bounded by ``B_k = 1``.

    Parameters
    ----------
    bandwidth : float
        ``l > 0``. Compute it from simulated (public) data only, e.g. with
        :func:`median_heuristic`.
    """

    bound = 1.0

    def __init__(self, bandwidth: float | DataDerived) -> None:
        self.bandwidth = (
            bandwidth
            if isinstance(bandwidth, DataDerived)
            else (_validate.positive_finite("bandwidth", bandwidth))
        )
        _validate.positive_finite("bandwidth", float(self.bandwidth))

    def gram(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Kernel matrices for batches: ``x`` (..., n, d), ``y`` (..., m, d) -> (..., n, m)."""
        sq = (
            np.sum(x**2, axis=-1)[..., :, None]
            + np.sum(y**2, axis=-1)[..., None, :]
            - 2 * x @ np.swapaxes(y, -1, -2)
        )
        return np.exp(-np.maximum(sq, 0.0) / (2 * float(self.bandwidth) ** 2))

    def __repr__(self) -> str:
        return f"GaussianKernel(bandwidth={float(self.bandwidth)!r})"


def median_heuristic(data: ArrayLike, *, max_points: int = 1000, rng: RNGLike = 0) -> DataDerived:
    """Median pairwise distance of the rows of ``data`` (subsampled), as a bandwidth.

    Use simulated data only. The returned value remembers the points it was
    computed from, and :func:`dpinfer.abcdp` refuses it if any of them is a
    confidential observation (a bandwidth from confidential data leaks; charge
    it to the budget if you must use one), and refuses its plain-number copies
    too (see :mod:`dpinfer.distances.provenance` for what is recognised and
    what cannot be).
    """
    pts = heuristic_points(data, max_points=max_points, rng=rng)
    # The bandwidth is a function of the points used, and of nothing else: remember them
    # (points, not first-axis slices, so that a stack of datasets is covered too).
    return DataDerived(median_distance(pts), data=pts)


def heuristic_points(data, *, max_points: int = 1000, rng: RNGLike = 0) -> np.ndarray:
    """Return the points :func:`median_heuristic` uses: rows of ``data``, subsampled."""
    arr = _validate.confidential_data("data", data)
    max_points = _validate.size("max_points", max_points)
    pts = arr.reshape(-1, arr.shape[-1]) if arr.ndim > 1 else arr.reshape(-1, 1)
    gen = as_generator(rng)
    if len(pts) > max_points:
        pts = pts[gen.choice(len(pts), size=max_points, replace=False)]
    return pts


def median_distance(pts: np.ndarray) -> float:
    """Median of the positive pairwise distances between the rows of ``pts``."""
    diff = np.sqrt(np.maximum(_sq(pts), 0.0))
    positive = diff[np.triu_indices(len(pts), k=1)]
    positive = positive[positive > 0]
    if positive.size == 0:
        raise ValueError("median_heuristic needs data with at least two distinct points")
    return float(np.median(positive))


def _sq(p):
    return np.sum(p**2, 1)[:, None] + np.sum(p**2, 1)[None, :] - 2 * p @ p.T
