"""The two SIR curve simulators of :mod:`dpinfer.models.sir`: exact Gillespie and hybrid leaps.

Both validate their arguments here and run a compiled loop of :mod:`._compiled`.
"""

from __future__ import annotations

import numpy as np

from dpinfer import validate
from dpinfer.random import RNGLike, as_generator

from . import _compiled
from ._setting import POPULATION, TIMES, _check_flag, _check_times

# simulate_approx: exact events below this many infectives; at most this expected
# fraction of the susceptibles infected in one leap.
_EXACT_BELOW = 100
_DEPLETION = 0.1
#: Marks a call of the exact loop (no leap settings).
_EXACT = object()


def simulate_exact(
    beta,
    gamma,
    *,
    population: int = POPULATION,
    times=TIMES,
    rng: RNGLike = None,
    full: bool = False,
) -> np.ndarray:
    r"""Exact SIR epidemic curves by Gillespie's direct method.

    Parameters
    ----------
    beta, gamma : array_like
        Infection and recovery rates (finite, non-negative), broadcast
        together to a batch shape ``B``.
    population : int, default 10**6
        Population size ``K``; the epidemic starts at ``(K - 1, 1, 0)``.
    times : array_like, default ``0, 17, ..., 153``
        Observation times: non-negative and strictly increasing.
    rng : None, int, SeedSequence or Generator, optional
        Source of randomness; a Generator is drawn from directly.
    full : bool, default False
        Return all three compartments instead of ``I`` alone.

    Returns
    -------
    numpy.ndarray
        int64 counts ``I(t_i)`` of shape ``(*B, L)``; with ``full=True``,
        ``(S, I, R)`` stacked as ``(*B, 3, L)``.

    Notes
    -----
    From state :math:`(S, I)` the next event comes after an
    :math:`\mathrm{Exp}(a_0)` waiting time, :math:`a_0 = \beta S I / K +
    \gamma I`, and is an infection with probability :math:`\beta S I / (K
    a_0)`, a recovery otherwise (Gillespie 1977). The state recorded at
    :math:`t_i` is the state after all events up to :math:`t_i`. A
    trajectory stops when :math:`I = 0` (an epidemic that dies out, which
    with one initial infective happens with probability about
    :math:`\gamma / \beta` when :math:`\beta > \gamma`) and then keeps its
    state. The loop runs in numba and costs two random draws per event
    (about 10 ns of one core); a full epidemic at the truth and ``K =
    10**6`` has about :math:`2 \times 10^6` events, so about 20 ms
    (``benchmarks/sir.py``). Trajectories stop at the last observation time.

    References
    ----------
    .. [1] Gillespie, D. T. (1977). Exact stochastic simulation of coupled
       chemical reactions. The Journal of Physical Chemistry 81(25), 2340-2361.

    Examples
    --------
    >>> curves = simulate_exact([0.6, 0.6], [0.05, 0.05], population=1000, rng=3)
    >>> curves.shape, curves.dtype.name
    ((2, 10), 'int64')
    >>> int(curves[0, 0])  # one infective at t = 0
    1
    >>> sir = simulate_exact(0.6, 0.05, population=1000, rng=3, full=True)
    >>> bool((sir.sum(axis=0) == 1000).all())
    True
    """
    return _simulate(_compiled.gillespie, beta, gamma, population, times, full, rng)


def simulate_approx(
    beta,
    gamma,
    *,
    population: int = POPULATION,
    times=TIMES,
    dt: float = 0.5,
    rng: RNGLike = None,
    full: bool = False,
) -> np.ndarray:
    r"""Approximate SIR epidemic curves: exact while rare, tau-leaping above.

    Parameters
    ----------
    beta, gamma, population, times
        As in :func:`simulate_exact`: rates broadcast to a batch shape ``B``,
        population ``K`` (default 10**6), observation times.
    dt : float, default 0.5
        Largest leap.
    rng : None, int, SeedSequence or Generator, optional
        Source of randomness; a Generator is drawn from directly.
    full : bool, default False
        Return ``(S, I, R)`` as ``(*B, 3, L)`` instead of ``I`` as ``(*B, L)``.

    Returns
    -------
    numpy.ndarray
        int64 counts, shaped as in :func:`simulate_exact`.

    Notes
    -----
    *Scheme.* While :math:`I < 100` events are simulated exactly, as in
    :func:`simulate_exact`; this covers the early phase, where the epidemic
    dies out or takes off, and any late phase with few infectives. Above,
    the state advances by leaps of length :math:`h \le` ``dt``, with
    :math:`h \beta I / K \le 0.1` (at most a tenth of the susceptibles
    expected to be infected in one leap: the leap condition of Cao,
    Gillespie and Petzold 2006 for the infection propensity), ending on the
    observation times. Within a leap the per-capita growth rate
    :math:`r = \beta S_{1/2} / K - \gamma` is frozen at the predicted
    midpoint :math:`S_{1/2}` of the susceptibles, so that
    :math:`\int I = I (e^{rh} - 1) / r` (exact for exponential growth and
    decay, which a plain midpoint leap under-estimates), and the numbers of
    infections and recoveries are Poisson with means
    :math:`\beta S_{1/2} \int I / K` and :math:`\gamma \int I`, clipped to
    the available people, so :math:`S, I \ge 0` and :math:`S + I + R = K`
    hold exactly.

    *Measured error* (``python benchmarks/sir.py --accuracy``). At the truth
    :math:`(\beta, \gamma) = (e^{-0.5}, e^{-3})`, ``K = 10**6`` and the
    default times, 2000 exact against 20000 approximate curves; largest
    absolute difference (approximate minus exact) over the times :math:`t > 0`,
    in units of ``K`` (the exact mean curve peaks at 0.588 K), with the
    bootstrap Monte Carlo standard error of that difference:

    ===========  ================  ==============
    summary      max abs. diff.    its MC s.e.
    ===========  ================  ==============
    mean         0.0017 (t = 34)   0.0042
    10% quant.   0.0024 (t = 34)   0.054
    50% quant.   0.0023 (t = 34)   0.0016
    90% quant.   0.0016 (t = 17)   0.0010
    ===========  ================  ==============

    All 36 differences lie within 1.6 standard errors of zero, and 8.35% of
    the curves died out in both samples (theory :math:`\gamma / \beta =`
    8.2%). At ``K = 10**5`` (two independent sets of 20000 exact curves
    against 50000 approximate ones) every difference is at most 0.0027 K
    and within 2.6 standard errors; at ``K = 2 * 10**4`` (20000 against
    50000) at most 0.005 K (the median at t = 17) and within 2.9 standard
    errors. No bias is detected at these resolutions; the stated error is
    at most 0.002 K per summary and time beyond Monte Carlo noise, which the
    tests check at ``K = 2 * 10**4``. The 10% quantile has a large standard error because about
    8% of the curves are 0 (died out) from t = 34 on, next to it.

    *Cost.* A few hundred leaps of two Poisson draws per curve, nearly
    independent of ``K``: about 35 microseconds of one core per curve at the
    truth (``benchmarks/sir.py``), against about 20 ms for the exact one at
    ``K = 10**6``.

    References
    ----------
    .. [1] Gillespie, D. T. (2001). Approximate accelerated stochastic
       simulation of chemically reacting systems. The Journal of Chemical
       Physics 115(4), 1716-1733.
    .. [2] Cao, Y., Gillespie, D. T. and Petzold, L. R. (2006). Efficient step
       size selection for the tau-leaping simulation method. The Journal of
       Chemical Physics 124(4), 044109.

    Examples
    --------
    >>> curves = simulate_approx([0.6] * 3, [0.05] * 3, population=10_000, rng=5)
    >>> curves.shape
    (3, 10)
    """
    return _simulate(_compiled.hybrid_leap, beta, gamma, population, times, full, rng, dt=dt)


def _simulate(loop, beta, gamma, population, times, full, rng, *, dt=_EXACT):
    """Check the arguments in the simulators' order, run ``loop``, shape its output.

    ``dt`` is given for the leaping loop only; it is checked after ``times``.
    """
    beta, gamma, shape = _check_rates(beta, gamma)
    population = validate.positive_int("population", population)
    times = _check_times(times)
    leap = () if dt is _EXACT else (validate.positive_finite("dt", dt), _EXACT_BELOW, _DEPLETION)
    full = _check_flag("full", full)
    generator = as_generator(rng)
    s_out, i_out = _empty(beta.size, times.size)
    loop(beta, gamma, population, times, *leap, generator, s_out, i_out)
    return _assemble(s_out, i_out, population, shape, full)


def _empty(n, n_times):
    return np.zeros((n, n_times), dtype=np.int64), np.zeros((n, n_times), dtype=np.int64)


def _assemble(s_out, i_out, population, shape, full):
    n_times = i_out.shape[1]
    if not full:
        return i_out.reshape(*shape, n_times)
    r_out = population - s_out - i_out
    return np.stack([s_out, i_out, r_out], axis=1).reshape(*shape, 3, n_times)


def _check_rates(beta, gamma):
    rates = {}
    for name, value in (("beta", beta), ("gamma", gamma)):
        try:
            arr = np.asarray(value, dtype=float)
        except (TypeError, ValueError) as err:
            raise TypeError(f"{name} must be an array of real rates, got {value!r}") from err
        bad = ~(np.isfinite(arr) & (arr >= 0))
        if np.any(bad):
            first = arr[bad].flat[0]
            raise ValueError(
                f"{name} must hold finite non-negative rates, got {float(first)!r} "
                f"(in {name}={validate.abbreviated(arr)})"
            )
        rates[name] = arr
    try:
        b, g = np.broadcast_arrays(rates["beta"], rates["gamma"])
    except ValueError as err:
        raise ValueError(
            f"beta and gamma must broadcast together, got shapes {rates['beta'].shape} and "
            f"{rates['gamma'].shape}"
        ) from err
    shape = b.shape
    return (
        np.ascontiguousarray(b, dtype=np.float64).ravel(),
        np.ascontiguousarray(g, dtype=np.float64).ravel(),
        shape,
    )
