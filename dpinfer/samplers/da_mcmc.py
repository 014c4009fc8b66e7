"""Deprecated: :func:`da_mcmc` lives in :mod:`dpinfer.samplers` (its module is now ``da``)."""

import sys
import types

from .._deprecation import warn_moved_module
from .da import da_mcmc

__all__ = ["da_mcmc"]


class _CallableModule(types.ModuleType):
    # Importing this module makes it the attribute ``dpinfer.samplers.da_mcmc``, where the
    # function of that name was; calling the module keeps calling the function.
    def __call__(self, *args, **kwargs):
        return da_mcmc(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
warn_moved_module(__name__, __all__)
