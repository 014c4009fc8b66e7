"""The discrete Gaussian's log-CDF table beyond 40 sigma below 0, by its recurrence.

``dpinfer.noise.form`` tables ``log F(k)`` and ``F(k - 1) / F(k)`` of a suppressed cell's
noise from ``k`` some 200 sigma below 0 (:func:`~dpinfer.noise.form.table_range`); beyond
40 sigma the entries come from ``deep_log_cdf``'s recurrence on the tail over its first
term. Checked against mpmath's sums of the tails at 50 digits, and against the direct
log-CDF; a recurrence that takes ``q(m)`` half a count off (``e^{-m / sigma^2}``) must fail.
"""

from __future__ import annotations

import math

import mpmath as mp
import numba as nb
import numpy as np
import pytest

from dpinfer.noise import discrete_gaussian as dg
from dpinfer.noise.discrete_gaussian import discrete_gaussian_log_cdf
from dpinfer.noise.form import _log_cdf_table, table_range

# (sigma, m / sigma): from just beyond 40 sigma to the table's end
POINTS = [(1.0, 41.0), (1.0, 200.0), (18.3, 45.0), (18.3, 199.0), (179.8, 120.0), (1e3, 170.0)]


def _tail(m: int, sigma: float) -> mp.mpf:
    """``sum_{j >= m} exp(-j^2 / (2 sigma^2))`` in mpmath, to 1e-40 of itself."""
    s, total, j = mp.mpf(sigma), mp.mpf(0), m
    while True:
        term = mp.exp(-(mp.mpf(j) ** 2) / (2 * s * s))
        total += term
        if j > m and term < total * mp.mpf(10) ** -40:
            return total
        j += 1


def _entry(sigma, m):
    """The (log F, ratio) at ``k = -m`` of sigma's table."""
    low, high = (int(v) for v in table_range(sigma))
    log_cdf, ratio = _log_cdf_table(low, high, sigma)
    return log_cdf[-m - low], ratio[-m - low]


@pytest.mark.parametrize(("sigma", "depth"), POINTS)
def test_deep_ratios_are_mpmaths(sigma, depth):
    with mp.workdps(50):
        m = math.ceil(depth * sigma)
        exact = float(_tail(m + 1, sigma) / _tail(m, sigma))
    _, ratio = _entry(sigma, m)
    assert ratio == pytest.approx(exact, rel=1e-14)


@pytest.mark.parametrize("sigma", [0.3, 18.3, 179.8, 1e3])
def test_deep_log_cdf_is_the_direct_one(sigma):
    low, high = (int(v) for v in table_range(sigma))
    log_cdf, ratio = _log_cdf_table(low, high, sigma)
    k = np.arange(low, high + 1, dtype=float)
    pick = np.unique(np.linspace(0, k.size - 1, 300).astype(int))
    direct = discrete_gaussian_log_cdf(k[pick], sigma)
    np.testing.assert_allclose(log_cdf[pick], direct, rtol=1e-15, atol=1e-13)
    # and the ratios are those of consecutive entries, to the rounding of the logs
    gap = np.exp(log_cdf[:-1] - log_cdf[1:])
    np.testing.assert_allclose(ratio[1:], gap, rtol=1e-11)


@nb.njit
def _half_off(first, sigma, log_z, log_cdf, ratio):
    """Planted: ``deep_log_cdf`` with ``q(m) = exp(-m / sigma^2)`` instead of ``-(m + 1/2)``."""
    n = log_cdf.size
    inv = 1.0 / (sigma * sigma)
    after = dg._tail_over_first(first + n, inv)
    for i in range(n):
        m = first + n - 1 - i
        q = math.exp(-m * inv)
        tail = 1.0 + q * after
        log_cdf[i] = -0.5 * m * m * inv + math.log(tail) - log_z
        ratio[i] = q * after / tail
        after = tail


def test_companion_a_recurrence_half_a_count_off_is_caught(monkeypatch):
    sigma, depth = 18.3, 120.0
    with mp.workdps(50):
        m = math.ceil(depth * sigma)
        exact = float(_tail(m + 1, sigma) / _tail(m, sigma))
    monkeypatch.setattr("dpinfer.noise.form.deep_log_cdf", _half_off)
    _, ratio = _entry(sigma, m)
    assert ratio != pytest.approx(exact, rel=1e-14)
