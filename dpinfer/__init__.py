"""dpinfer: statistical inference from differentially private data."""

from . import accounting, distances, theory
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
from .samplers import (
    SimulationBudgetExceeded,
    abcdp,
    importance_abc,
    rejection_abc,
    rejection_abcdp_gaussian,
    smc_abc,
    soft_abcdp,
    tolerance_smc_abc,
)

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
    "abcdp",
    "accounting",
    "distances",
    "importance_abc",
    "rejection_abc",
    "rejection_abcdp_gaussian",
    "smc_abc",
    "soft_abcdp",
    "theory",
    "tolerance_smc_abc",
]
