"""Samplers: exact ABC from a DP release."""

import importlib

from ._precision import PrecisionWarning
from .abcdp import abcdp
from .abcdp._privacy_seed import check_privacy_rng
from .abcdp._public import PublicDraws, public_distances
from .abcdp._variants import rejection_abcdp_gaussian, soft_abcdp
from .acceptance import AcceptanceRate, estimate_acceptance_rate
from .da import da_mcmc
from .importance import importance_abc
from .mcem import (
    AscentSchedule,
    BoundaryEstimateWarning,
    MCEMConvergenceWarning,
    MCEMResult,
    ProfileWarning,
    StagedSchedule,
    mcem,
)
from .rejection import SimulationBudgetExceeded, rejection_abc
from .smc import smc_abc
from .smc._tolerance import tolerance_smc_abc

__all__ = [
    "AcceptanceRate",
    "AscentSchedule",
    "BoundaryEstimateWarning",
    "MCEMConvergenceWarning",
    "MCEMResult",
    "PrecisionWarning",
    "PublicDraws",
    "ProfileWarning",
    "StagedSchedule",
    "mcem",
    "SimulationBudgetExceeded",
    "abcdp",
    "check_privacy_rng",
    "da_mcmc",
    "estimate_acceptance_rate",
    "importance_abc",
    "public_distances",
    "rejection_abc",
    "rejection_abcdp_gaussian",
    "smc_abc",
    "soft_abcdp",
    "tolerance_smc_abc",
]


# modules that moved into the family packages; importing them warns (DeprecationWarning)
_MOVED = ("abcdp_variants", "smc_tolerance")


def __getattr__(name):
    if name in _MOVED:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
