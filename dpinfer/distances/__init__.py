"""Distances with declared sensitivity, for ABCDP."""

from .base import DataDerived, Distance
from .clipped import ClippedL2
from .kernels import GaussianKernel, median_heuristic
from .mmd import MMD, RandomFeatureMMD
from .paired import PairedClippedL2
from .precomputed import PrecomputedDistances

__all__ = [
    "MMD",
    "ClippedL2",
    "DataDerived",
    "Distance",
    "GaussianKernel",
    "PairedClippedL2",
    "PrecomputedDistances",
    "RandomFeatureMMD",
    "median_heuristic",
]
