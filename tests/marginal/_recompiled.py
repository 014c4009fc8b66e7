"""Kernels recompiled with some of their globals replaced: planted bugs."""

from __future__ import annotations

import types

import numba as nb


def recompiled(function, **replaced):
    """``function`` (a numba dispatcher) compiled anew with some of its globals replaced."""
    code = function.py_func
    namespace = {**code.__globals__, **replaced}
    return nb.njit(error_model="numpy")(types.FunctionType(code.__code__, namespace))


def sweep_with(**replaced):
    """``._sweep.sweep_cells`` with some globals of its loop (``._sweep._sweep``) replaced."""
    from dpinfer.marginal import _sweep

    return recompiled(_sweep.sweep_cells, _family_sweep=recompiled(_sweep._sweep, **replaced))
