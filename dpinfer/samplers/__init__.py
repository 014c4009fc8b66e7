"""Samplers: exact ABC from a DP release."""

from .importance import importance_abc
from .rejection import SimulationBudgetExceeded, rejection_abc

__all__ = ["SimulationBudgetExceeded", "importance_abc", "rejection_abc"]
