"""Compiled (numba) loops of the stochastic SIR simulators (see :mod:`dpinfer.models.sir`).

Both loops run over a batch of parameter sets and write the compartments
``S`` and ``I`` at the observation times into preallocated ``(n, L)`` int64
arrays (``R = K - S - I``). The numpy ``Generator`` is passed in and numba
draws from its bit generator directly, so a seeded generator reproduces the
curves. The callers validate the inputs: the loops assume finite
non-negative rates, ``population >= 1``, non-negative increasing times,
``dt > 0``, ``threshold >= 1`` and ``depletion > 0``.

The state recorded at ``times[j]`` is the state after every event at a time
``<= times[j]``. A trajectory in which no event can happen any more (``I = 0``,
or both rates zero) keeps its state at every later time.
"""

from __future__ import annotations

import math

import numba


@numba.njit(cache=True)
def gillespie(beta, gamma, population, times, rng, s_out, i_out):  # pragma: no cover - numba
    """Exact trajectories by Gillespie's direct method, one per parameter set."""
    for b in range(beta.shape[0]):
        _gillespie_one(
            beta[b] / float(population), gamma[b], population, times, rng, s_out[b], i_out[b]
        )


@numba.njit(cache=True)
def _gillespie_one(beta_k, g, population, times, rng, s_out, i_out):  # pragma: no cover - numba
    """One exact trajectory, ``beta_k = beta / K``.

    Per event: the two rates, one standard exponential (numpy's ziggurat)
    for the waiting time and one uniform for the event type.
    """
    n_times = times.shape[0]
    s = population - 1
    i = 1
    t = 0.0
    j = 0
    next_time = times[0]
    while True:
        rate_inf = beta_k * s * i
        total = rate_inf + g * i
        if not total > 0.0:
            break
        t += rng.standard_exponential() / total
        if t > next_time:
            while t > next_time:
                s_out[j] = s
                i_out[j] = i
                j += 1
                if j == n_times:
                    break
                next_time = times[j]
            if j == n_times:
                break
        if rng.random() * total < rate_inf:
            s -= 1
            i += 1
        else:
            i -= 1
    _hold(s, i, j, s_out, i_out)


@numba.njit(cache=True)
def _hold(s, i, j, s_out, i_out):  # pragma: no cover - numba
    """Record the state ``(s, i)`` at every observation time from index ``j`` on."""
    while j < s_out.shape[0]:
        s_out[j] = s
        i_out[j] = i
        j += 1


@numba.njit(cache=True)
def _growth_integral(r, h):  # pragma: no cover - numba
    """``int_0^h exp(r u) du``, accurate for small ``r h``."""
    x = r * h
    if abs(x) < 1e-5:
        return h * (1.0 + 0.5 * x + x * x / 6.0)
    return math.expm1(x) / r


@numba.njit(cache=True)
def hybrid_leap(
    beta, gamma, population, times, dt, threshold, depletion, rng, s_out, i_out
):  # pragma: no cover - numba
    """Hybrid trajectories (:func:`_leap_one`), one per parameter set."""
    for b in range(beta.shape[0]):
        beta_k = beta[b] / float(population)
        _leap_one(
            beta_k, gamma[b], population, times, dt, threshold, depletion, rng, s_out[b], i_out[b]
        )


@numba.njit(cache=True)
def _leap_one(
    beta_k, g, population, times, dt, threshold, depletion, rng, s_out, i_out
):  # pragma: no cover - numba
    """Exact events while ``I < threshold``; exponential-midpoint Poisson leaps above.

    Exact mode is Gillespie's direct method, except that a waiting time that
    crosses the next observation time is cut there and redrawn (exact, by the
    memoryless property), so the two modes hand over at observation times or
    between events. A leap of length ``h`` (at most ``dt``, at most
    ``depletion / (beta I / K)``, and ending on observation times) freezes
    the per-capita growth rate ``r = beta S_mid / K - gamma`` of ``I`` at the
    predicted midpoint ``S_mid`` of the susceptibles, so that
    ``int I = I (e^{rh} - 1) / r`` over the leap, and draws Poisson numbers
    of infections and recoveries with means ``beta S_mid / K int I`` and
    ``gamma int I``, clipped to the available susceptibles and infectives.
    """
    n_times = times.shape[0]
    s = population - 1
    i = 1
    t = 0.0
    j = 0
    while j < n_times:
        next_time = times[j]
        rate_inf = beta_k * s * i
        total = rate_inf + g * i
        if not total > 0.0:
            break
        if i < threshold:
            wait = rng.standard_exponential() / total
            if t + wait > next_time:
                t = next_time
                s_out[j] = s
                i_out[j] = i
                j += 1
                continue
            t += wait
            if rng.random() * total < rate_inf:
                s -= 1
                i += 1
            else:
                i -= 1
            continue
        h_max = dt
        force = beta_k * i
        if force * h_max > depletion:
            h_max = depletion / force
        h = next_time - t
        if h > h_max:
            h = h_max
            t_new = t + h_max
        else:
            t_new = next_time
        x = (beta_k * s - g) * h
        s_mid = s - 0.5 * rate_inf * h * (1.0 + 0.5 * x + x * x / 6.0)
        if s_mid < 0.0:
            s_mid = 0.0
        area = i * _growth_integral(beta_k * s_mid - g, h)
        n_inf = rng.poisson(beta_k * s_mid * area)
        if n_inf > s:
            n_inf = s
        n_rec = rng.poisson(g * area)
        if n_rec > i + n_inf:
            n_rec = i + n_inf
        s -= n_inf
        i += n_inf - n_rec
        t = t_new
        if t >= next_time:
            s_out[j] = s
            i_out[j] = i
            j += 1
    _hold(s, i, j, s_out, i_out)
