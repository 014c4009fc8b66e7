"""Deprecated: :func:`tolerance_smc_abc` lives in :mod:`dpinfer.samplers`."""

from .._deprecation import warn_moved_module
from .smc._tolerance import tolerance_smc_abc

__all__ = ["tolerance_smc_abc"]

warn_moved_module(__name__, __all__)
