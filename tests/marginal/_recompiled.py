"""Kernels recompiled with some of their globals replaced: planted bugs, paths switched off."""

from __future__ import annotations

import types

import numba as nb


def recompiled(function, **replaced):
    """``function`` (a numba dispatcher) compiled anew with some of its globals replaced."""
    code = function.py_func
    namespace = {**code.__globals__, **replaced}
    return nb.njit(error_model="numpy")(types.FunctionType(code.__code__, namespace))


def module_with(module, **replaced):
    """A copy of ``module`` with some of its names replaced, for :func:`recompiled`."""
    copy = types.ModuleType(f"{module.__name__}_planted")
    copy.__dict__.update({**vars(module), **replaced})
    return copy


def sweep_with(**replaced):
    """``._sweep.sweep_cells`` with some globals of its loop and of its batches replaced."""
    from dpinfer.marginal import _sweep

    sum_wide = recompiled(_sweep._sum_wide, **replaced)
    loop = recompiled(_sweep._sweep, **{"_sum_wide": sum_wide, **replaced})
    return recompiled(_sweep.sweep_cells, _family_sweep=loop)
