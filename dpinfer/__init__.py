"""dpinfer: statistical inference from differentially private data."""

from . import accounting
from ._version import __version__
from .mechanisms import (
    BinomialRelease,
    DiscreteGaussian,
    DiscreteLaplace,
    Gaussian,
    Laplace,
    Mechanism,
    Privacy,
    SparseVector,
    SVTResult,
)

__all__ = [
    "BinomialRelease",
    "DiscreteGaussian",
    "DiscreteLaplace",
    "Gaussian",
    "Laplace",
    "Mechanism",
    "Privacy",
    "SVTResult",
    "SparseVector",
    "__version__",
    "accounting",
]
