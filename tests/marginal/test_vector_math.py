"""The contour integral's vectorised exp, sine and cosine, and its versine and u - sin u.

Checked against mpmath at 40 digits over their domains; each with a planted companion (a
coarser reduction, a shorter polynomial) that the same check must catch.
"""

from __future__ import annotations

import mpmath as mp
import numba as nb
import numpy as np

from dpinfer.marginal import _vector_math

from ._recompiled import recompiled


def _loop(function):
    """A compiled loop of ``function`` (one number in, one or two out) over an array."""

    @nb.njit(error_model="numpy")
    def values(x):
        out = np.empty((2, x.size))
        for i in range(x.size):
            result = function(x[i])
            out[:, i] = result if isinstance(result, tuple) else (result, result)
        return out

    return values


def _sample(low, high, size=4000):
    rng = np.random.default_rng(11)
    return np.concatenate([rng.uniform(low, high, size), np.linspace(low, high, 101)])


def _worst(values, x, exact, *, relative):
    """The largest error of ``values`` against ``exact(mpf)`` (relative to it, or absolute)."""
    with mp.workdps(40):
        want = np.array([float(exact(mp.mpf(float(v)))) for v in x])
    error = np.abs(values - want)
    return float(np.max(error / np.abs(want) if relative else error))


def test_exp_within_two_ulps():
    x = _sample(-700.0, 0.0)
    assert _worst(_loop(_vector_math.exp)(x)[0], x, mp.exp, relative=True) <= 4.5e-16


def test_sine_and_cosine_within_2e_16():
    x = _sample(-_vector_math.LARGEST_ANGLE, _vector_math.LARGEST_ANGLE)
    sine, cosine = _loop(_vector_math.sincos)(x)
    assert _worst(sine, x, mp.sin, relative=False) <= 2e-16
    assert _worst(cosine, x, mp.cos, relative=False) <= 2e-16


def test_versine_and_u_minus_sine_within_5e_16_relative():
    x = _sample(-1.0, 1.0)
    x = x[x != 0.0]
    versine = _loop(_vector_math.versine)(x)[0]
    u_sine = _loop(_vector_math.u_minus_sine)(x)[0]
    assert _worst(versine, x, lambda u: 1 - mp.cos(u), relative=True) <= 5e-16
    assert _worst(u_sine, x, lambda u: u - mp.sin(u), relative=True) <= 5e-16


def test_companion_a_reduction_by_pi_2_in_one_part_is_caught():
    # planted: pi / 2 as its first part alone (off by 6e-11)
    broken = recompiled(_vector_math.sincos, _PIO2_2=0.0, _PIO2_3=0.0)
    x = _sample(1e4, _vector_math.LARGEST_ANGLE)
    assert _worst(_loop(broken)(x)[0], x, mp.sin, relative=False) > 1e-15


def test_companion_a_versine_by_one_minus_cosine_is_caught():
    # planted: 1 - cos u, which cancels near 0
    broken = nb.njit(lambda u: 1.0 - _vector_math.sincos(u)[1])
    x = _sample(1e-4, 1e-2)
    assert _worst(_loop(broken)(x)[0], x, lambda u: 1 - mp.cos(u), relative=True) > 1e-12
