"""Compiled code calling a compiled procedure by its address (``dpinfer.marginal._native``).

The numba Ops call the sweeps this way, so that every graph runs one machine copy of
each family's sums. A call must run the procedure on the caller's arrays, raise what
it raises, and refuse, while compiling, arguments of other types than the address's.
"""

from __future__ import annotations

import numba as nb
import numpy as np
import pytest
from numba import types
from numba.core.errors import TypingError

from dpinfer.marginal import _native

from ._linked import linked_libraries


@nb.njit
def _scaled(x, out, factor):
    for i in range(x.size):
        out[i] = factor * x[i]
    if factor < 0.0:
        raise ValueError("a negative factor")


_VECTOR = types.Array(types.float64, 1, "C")


def _types(first):
    return (_VECTOR, _VECTOR, types.float64)


_call = _native.caller("_scaled", _types)


@nb.njit
def _through(code, x, out, factor):
    _call(code, (x, out, factor))
    return out.sum()


def _code():
    return np.uint64(_native.address(_scaled, _types(None)))


def test_a_call_runs_the_procedure_on_the_callers_arrays():
    out = np.zeros(4)
    assert _through(_code(), np.arange(4.0), out, 2.5) == pytest.approx(15.0)
    np.testing.assert_array_equal(out, 2.5 * np.arange(4.0))


def test_the_procedures_exception_reaches_the_caller():
    with pytest.raises(ValueError, match="a negative factor"):
        _through(_code(), np.arange(4.0), np.zeros(4), -1.0)


def test_arguments_of_other_types_are_refused_while_compiling():
    with pytest.raises(TypingError, match="other types than compiled"):
        _through(_code(), np.arange(4), np.zeros(4), 2.0)  # int64 values


def test_a_call_by_address_links_none_of_the_procedures_code():
    _through(_code(), np.arange(2.0), np.zeros(2), 1.0)
    assert id(_scaled.overloads[_types(None)].library) not in linked_libraries(_through)


def test_companion_a_direct_call_links_the_procedures_code():
    # what the check above tells apart: numba links a directly called function's code
    @nb.njit
    def direct(x, out, factor):
        _scaled(x, out, factor)

    direct(np.arange(2.0), np.zeros(2), 1.0)
    assert id(_scaled.overloads[_types(None)].library) in linked_libraries(direct)


def test_a_function_that_returns_a_value_has_no_address_here():
    @nb.njit
    def total(x):
        return x.sum()

    with pytest.raises(TypeError, match="returns a value"):
        _native.address(total, (_VECTOR,))
