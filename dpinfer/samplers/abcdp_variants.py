"""Deprecated: the ABCDP variants live in :mod:`dpinfer.samplers`."""

from .._deprecation import warn_moved_module
from .abcdp._variants import rejection_abcdp_gaussian, soft_abcdp

__all__ = ["rejection_abcdp_gaussian", "soft_abcdp"]

warn_moved_module(__name__, __all__)
