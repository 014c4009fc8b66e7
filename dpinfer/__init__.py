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
from .model import Model, Prior
from .samplers import SimulationBudgetExceeded, importance_abc, rejection_abc

__all__ = [
    "BinomialRelease",
    "DiscreteGaussian",
    "DiscreteLaplace",
    "Gaussian",
    "Laplace",
    "Mechanism",
    "Model",
    "Prior",
    "Privacy",
    "SVTResult",
    "SimulationBudgetExceeded",
    "SparseVector",
    "__version__",
    "accounting",
    "importance_abc",
    "rejection_abc",
]
