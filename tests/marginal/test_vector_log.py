"""The sweep's vectorised logarithm: libm's to within an ulp on its domain, NaN off it."""

from __future__ import annotations

import math
import types

import numba as nb
import numpy as np
import pytest

from dpinfer.marginal import _vector_log


def _loop(log):
    """A compiled loop of ``log`` over an array, as the sweep's batch takes it."""

    @nb.njit(error_model="numpy")
    def logs(x):
        out = np.empty_like(x)
        for i in range(x.size):
            out[i] = log(x[i])
        return out

    return logs


_logs = _loop(_vector_log.log)


def _domain_sample() -> np.ndarray:
    """Every binade's edges, the edges of the reduction at sqrt(2), and random numbers."""
    rng = np.random.default_rng(5)
    powers = 2.0 ** np.arange(-1022, 1024, dtype=float)
    edges = np.concatenate([powers, math.sqrt(2.0) * powers[:-1], 1.5 * powers])
    edges = np.concatenate([edges, np.nextafter(edges, 0.0), np.nextafter(edges, np.inf)])
    spread = np.exp(rng.uniform(-700.0, 709.0, 200_000))
    near_one = 1.0 + rng.uniform(-1e-3, 1e-3, 20_000)
    x = np.concatenate([edges, spread, near_one, [2.0**-1022, np.finfo(float).max]])
    return x[(x >= 2.0**-1022) & np.isfinite(x)]


def _worst_ulps(logs: np.ndarray, x: np.ndarray) -> float:
    exact = np.log(x)
    return float(np.max(np.abs(logs - exact) / np.spacing(np.abs(exact) + 1e-300)))


def test_the_log_is_libms_within_an_ulp_on_its_domain():
    x = _domain_sample()
    assert _worst_ulps(_logs(x), x) <= 1.0
    assert _logs(np.array([1.0]))[0] == 0.0


def test_companion_a_log_without_its_low_part_of_ln2_is_caught():
    # Planted bug: the library's log with ln 2's low part dropped (k ln 2 off by k 1.9e-10)
    code = _vector_log.log.py_func
    broken = types.FunctionType(code.__code__, {**code.__globals__, "_LN2_LO": 0.0})
    x = _domain_sample()
    assert _worst_ulps(_loop(nb.njit(error_model="numpy")(broken))(x), x) > 1.0


@pytest.mark.parametrize("x", [0.0, -1.0, 5e-324, 2.0**-1023, math.inf, -math.inf, math.nan])
def test_off_its_domain_the_log_is_nan(x):
    assert math.isnan(_logs(np.array([x]))[0])
