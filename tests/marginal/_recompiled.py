"""Kernels with some of their globals replaced, recompiled or interpreted: planted bugs."""

from __future__ import annotations

import types

import numba as nb
import numpy as np


def recompiled(function, **replaced):
    """``function`` (a numba dispatcher) compiled anew with some of its globals replaced."""
    code = function.py_func
    namespace = {**code.__globals__, **replaced}
    return nb.njit(error_model="numpy")(types.FunctionType(code.__code__, namespace))


def interpreted(function, **replaced):
    """``function`` (a numba dispatcher) run by the interpreter, some of its globals replaced.

    The compiled functions it calls stay compiled: a planted bug in one of them costs their
    compilation alone, not the caller's again (a batch sum: 8-11 s at the suite's level).
    """
    code = function.py_func
    run = types.FunctionType(code.__code__, {**code.__globals__, **replaced})

    def quietly(*args):
        # as compiled with error_model="numpy": 0/0 is a NaN, not a warning
        with np.errstate(all="ignore"):
            return run(*args)

    return quietly


def loop_with(**replaced):
    """``._sweep._sweep`` (a Poisson family's loop) with some of its globals replaced.

    Run by the interpreter, calling the compiled functions it calls (the family's
    compile-time choices made here as numba makes them).
    """
    from dpinfer.marginal import _sweep

    constants = types.SimpleNamespace(poisson_fast_path=lambda family: family.poisson_fast_path)
    return interpreted(_sweep._sweep, latent=constants, **replaced)


def sweep_with(**replaced):
    """``._sweep.sweep_cells`` with some globals of its loop (:func:`loop_with`) replaced."""
    from dpinfer.marginal import _sweep

    return interpreted(_sweep.sweep_cells, _family_sweep=loop_with(**replaced))
