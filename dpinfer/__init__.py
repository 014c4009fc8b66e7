"""dpinfer: statistical inference from differentially private data."""

import importlib

# first, before any module with compiled kernels: where no cache folder is writable,
# they are then compiled without one (with a warning) rather than failing the import
from . import _numba_cache  # noqa: F401

# isort: split
from . import accounting, distances, theory
from ._version import __version__
from .calibration import DegenerateDrawsWarning, SBCResult, sbc
from .grid import GridPosterior
from .likelihood import ExponentialFamily, Likelihood
from .marginal import SharedLatentWarning, to_pymc
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
    Thresholded,
)
from .model import Model, Prior
from .record_model import RecordModel
from .reference import sample_reference
from .samplers import (
    AcceptanceRate,
    AscentSchedule,
    BoundaryEstimateWarning,
    MCEMConvergenceWarning,
    MCEMResult,
    PrecisionWarning,
    ProfileWarning,
    SimulationBudgetExceeded,
    StagedSchedule,
    abcdp,
    da_mcmc,
    estimate_acceptance_rate,
    importance_abc,
    mcem,
    rejection_abc,
    rejection_abcdp_gaussian,
    smc_abc,
    soft_abcdp,
    tolerance_smc_abc,
)

__all__ = [
    "AcceptanceRate",
    "AscentSchedule",
    "BinomialRelease",
    "BoundaryEstimateWarning",
    "DegenerateDrawsWarning",
    "DiscreteGaussian",
    "DiscreteLaplace",
    "ExponentialFamily",
    "Gaussian",
    "GridPosterior",
    "Laplace",
    "Likelihood",
    "MCEMConvergenceWarning",
    "MCEMResult",
    "Mechanism",
    "Model",
    "PrecisionWarning",
    "Prior",
    "Privacy",
    "ProfileWarning",
    "RecordModel",
    "SBCResult",
    "SVTResult",
    "SharedLatentWarning",
    "SimulationBudgetExceeded",
    "SparseVector",
    "StagedSchedule",
    "Thresholded",
    "__version__",
    "abcdp",
    "accounting",
    "da_mcmc",
    "distances",
    "estimate_acceptance_rate",
    "importance_abc",
    "mcem",
    "rejection_abc",
    "rejection_abcdp_gaussian",
    "sample_reference",
    "sbc",
    "smc_abc",
    "soft_abcdp",
    "theory",
    "to_pymc",
    "tolerance_smc_abc",
]


def __getattr__(name):
    # dpinfer.neural needs the optional extra (torch); import it on first use only
    if name == "neural":
        return importlib.import_module(".neural", __name__)
    raise AttributeError(f"module 'dpinfer' has no attribute {name!r}")
