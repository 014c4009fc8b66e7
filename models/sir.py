r"""A stochastic SIR epidemic released through the binomial mechanism (Xiong et al. 2023).

Section 4.1 and S3.1 of Xiong, Ju and Zhang (2023): a closed population of
``K`` people moves through the compartments susceptible, infected and
recovered as a Markov jump process with infection rate ``beta S I / K`` and
recovery rate ``gamma I``, from ``(S, I, R) = (K - 1, 1, 0)``. The number
infected ``I(t)`` at ``L`` observation times is the confidential statistic;
the curator publishes ``s_i ~ Binomial(n, (I(t_i) + m) / (K + 2m))``, which is
``epsilon = nL/m``-DP (Proposition 4; :class:`dpinfer.BinomialRelease`).

The example's settings: ``K = 10**6``; times ``t = 0, 17, ..., 153`` (``L =
10``, horizon 160); ``n = m = 1000``, so ``epsilon = 10``; parameters
``(log beta, log gamma)`` with independent normal priors of means
``(log 0.4, log 0.125)`` and *variances* ``(0.5, 0.2)``; truth ``(log beta,
log gamma) = (-0.5, -3)`` (``R0 = beta / gamma`` about 12, a measles-like
outbreak). Xiong et al. report the release as fractions ``s_i / n``
(:data:`RELEASED_FRACTIONS`); dpinfer's mechanism works with the integer
counts (:data:`RELEASED`).

Two simulators of the curve, both compiled with numba and drawing from the
numpy ``Generator`` passed as ``rng``:

* :func:`simulate_exact`, Gillespie's direct method (exact; about 2 million
  events per full epidemic at ``K = 10**6``);
* :func:`simulate_approx`, exact events while few are infected and
  tau-leaps above (approximate; its measured error is in its docstring).

Examples
--------
>>> import numpy as np
>>> from dpinfer.models import sir
>>> sir.RELEASED
array([  1,  31, 614, 263, 123,  47,  18,   9,   5,   3])
>>> sir.mechanism().privacy.epsilon
10.0
>>> curves = sir.simulate_exact([0.6, 0.6], [0.05, 0.05], population=1000, rng=1)
>>> curves.shape
(2, 10)
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping

import numpy as np
import scipy.stats as st

import dpinfer as dp
from dpinfer import _validate
from dpinfer._rng import RNGLike, as_generator, as_seed_sequence

from . import _sir_kernels
from ._example import Example, Option, between, choice, integer, vector
from ._report import (
    Report,
    Result,
    distribution_rows,
    draw_rows,
    idata_draws,
    smc_note,
    value_rows,
)

__all__ = [
    "EPSILON",
    "M",
    "NoiselessFraction",
    "N_TRIALS",
    "POPULATION",
    "PRIOR_MEAN",
    "PRIOR_VARIANCE",
    "RELEASED",
    "RELEASED_FRACTIONS",
    "TIMES",
    "TRUTH",
    "mechanism",
    "model",
    "naive_abc",
    "naive_mechanism",
    "prior",
    "r0",
    "run",
    "simulate_approx",
    "simulate_exact",
    "simulate_release",
]

#: Population size ``K``.
POPULATION = 10**6
#: Observation times ``0, 17, ..., 153`` (``L = 10`` points in ``[0, 160]``).
TIMES = np.arange(0.0, 160.0, 17.0)
#: Binomial trials per time point, ``n``.
N_TRIALS = 1000
#: Pseudo-count ``m`` of the release.
M = 1000.0
#: The privacy-loss budget ``n L / m`` of the example.
EPSILON = 10.0
#: Xiong et al.'s release at ``epsilon = 10``, as they report it: ``s_i / n``.
RELEASED_FRACTIONS = np.array(
    [0.0010, 0.0310, 0.6140, 0.2630, 0.1230, 0.0470, 0.0180, 0.0090, 0.0050, 0.0030]
)
#: The same release as integer counts ``s_i`` (what the mechanism scores).
RELEASED = np.array([1, 31, 614, 263, 123, 47, 18, 9, 5, 3], dtype=np.int64)
#: Prior means of ``(log beta, log gamma)``.
PRIOR_MEAN = {"log_beta": math.log(0.4), "log_gamma": math.log(0.125)}
#: Prior variances (not standard deviations) of ``(log beta, log gamma)``.
PRIOR_VARIANCE = {"log_beta": 0.5, "log_gamma": 0.2}
#: The parameters that generated the release.
TRUTH = {"log_beta": -0.5, "log_gamma": -3.0}

REFERENCE = (
    "Xiong, Ju and Zhang (2023). Simulation-based inference from privacy-protected data. "
    "Section 4.1, Proposition 4 and Supplement S3.1."
)

EXAMPLE = Example(
    name="sir",
    title="SIR epidemic curve released through the binomial mechanism: exact SMC-ABC",
    paper="Xiong, Ju & Zhang (2023), Section 4.1",
    seconds=60,
    module=__name__,
    smallest={"particles": 100},
    options=(
        Option(
            "released",
            RELEASED,
            "the released counts s_i out of n at the 10 times",
            vector(
                TIMES.size,
                integer(0, N_TRIALS, hint=f"a binomial release counts out of n = {N_TRIALS}"),
            ),
            flag="--release",
        ),
        Option("epsilon", EPSILON, "privacy budget n L / m of the release", between(0.1, 100)),
        Option(
            "particles", 2000, "SMC particles (exact and naive analyses)", integer(100, 20_000)
        ),
        Option(
            "simulator",
            "approx",
            "curve simulator for inference: tau-leaping, or exact Gillespie (slow)",
            choice("approx", "exact"),
        ),
    ),
)

# simulate_approx: exact events below this many infectives; at most this expected
# fraction of the susceptibles infected in one leap.
_EXACT_BELOW = 100
_DEPLETION = 0.1
_SIMULATORS = ("exact", "approx")


def prior() -> dict:
    """Return the independent normal priors on ``log beta`` and ``log gamma``.

    Returns
    -------
    dict
        ``{"log_beta": norm(log 0.4, sd sqrt(0.5)), "log_gamma": norm(log 0.125,
        sd sqrt(0.2))}``, frozen ``scipy.stats`` distributions. Xiong et al.
        write ``N(log 0.4, 0.5)`` and ``N(log 0.125, 0.2)``; their code
        treats the second numbers as variances.

    Examples
    --------
    >>> p = prior()
    >>> round(float(p["log_gamma"].std() ** 2), 12)
    0.2
    """
    return {
        name: st.norm(PRIOR_MEAN[name], math.sqrt(PRIOR_VARIANCE[name])) for name in PRIOR_MEAN
    }


def model(
    *,
    simulator: str = "exact",
    population: int = POPULATION,
    times=TIMES,
    dt: float = 0.5,
) -> dp.Model:
    """Return the Bayesian model of the confidential epidemic curve.

    Parameters
    ----------
    simulator : {"exact", "approx"}
        :func:`simulate_exact` or :func:`simulate_approx`.
    population : int
        Population size ``K``.
    times : array_like
        Observation times (non-negative, increasing).
    dt : float, default 0.5
        Largest leap of the approximate simulator (ignored when exact).

    Returns
    -------
    dpinfer.Model
        Prior :func:`prior` over ``"log_beta"`` and ``"log_gamma"``; the
        simulator returns ``(n, L)`` int64 counts ``I(t_i)``.

    Examples
    --------
    >>> import numpy as np
    >>> m = model(simulator="approx", population=10_000)
    >>> rng = np.random.default_rng(0)
    >>> m.simulate(m.prior.sample(4, rng), rng).shape
    (4, 10)
    """
    simulator = _check_simulator(simulator)
    population = _validate.positive_int("population", population)
    times = _check_times(times)
    dt = _validate.positive_finite("dt", dt)
    simulate = functools.partial(
        _simulate_curves, simulator=simulator, population=population, times=times, dt=dt
    )
    simulate.__name__ = f"sir.simulate_{simulator}"
    return dp.Model(prior=prior(), simulate=simulate)


def mechanism(
    epsilon: float = EPSILON,
    *,
    n: int = N_TRIALS,
    population: int = POPULATION,
    length: int = TIMES.size,
) -> dp.BinomialRelease:
    """Return the binomial release of the curve, ``m = n L / epsilon`` (Proposition 4).

    Parameters
    ----------
    epsilon : float, default 10
        Privacy-loss budget.
    n : int, default 1000
        Binomial trials per time point.
    population : int, default 10**6
        Population size ``K``.
    length : int, default 10
        Number of observation times ``L``.

    Returns
    -------
    dpinfer.BinomialRelease

    Examples
    --------
    >>> mech = mechanism()
    >>> mech.m, mech.privacy.epsilon
    (1000.0, 10.0)
    """
    return dp.BinomialRelease.from_privacy(
        epsilon=epsilon, n=n, population=population, length=length
    )


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
    beta, gamma, shape = _check_rates(beta, gamma)
    population = _validate.positive_int("population", population)
    times = _check_times(times)
    full = _check_flag("full", full)
    generator = as_generator(rng)
    s_out, i_out = _empty(beta.size, times.size)
    _sir_kernels.gillespie(beta, gamma, population, times, generator, s_out, i_out)
    return _assemble(s_out, i_out, population, shape, full)


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
    beta, gamma : array_like
        Infection and recovery rates (finite, non-negative), broadcast
        together to a batch shape ``B``.
    population : int, default 10**6
        Population size ``K``; the epidemic starts at ``(K - 1, 1, 0)``.
    times : array_like, default ``0, 17, ..., 153``
        Observation times: non-negative and strictly increasing.
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
    beta, gamma, shape = _check_rates(beta, gamma)
    population = _validate.positive_int("population", population)
    times = _check_times(times)
    dt = _validate.positive_finite("dt", dt)
    full = _check_flag("full", full)
    generator = as_generator(rng)
    s_out, i_out = _empty(beta.size, times.size)
    _sir_kernels.hybrid_leap(
        beta,
        gamma,
        population,
        times,
        dt,
        _EXACT_BELOW,
        _DEPLETION,
        generator,
        s_out,
        i_out,
    )
    return _assemble(s_out, i_out, population, shape, full)


def simulate_release(
    theta,
    *,
    epsilon: float | None = None,
    n: int = N_TRIALS,
    m: float | None = None,
    population: int = POPULATION,
    times=TIMES,
    simulator: str = "exact",
    dt: float = 0.5,
    rng: RNGLike = None,
) -> np.ndarray:
    """Simulate binomial releases of epidemic curves at given parameters.

    Parameters
    ----------
    theta : dict or array_like
        ``{"log_beta": ..., "log_gamma": ...}`` (broadcast together to a
        batch shape ``B``), or an array of shape ``(*B, 2)`` holding
        ``(log beta, log gamma)`` in its last axis.
    epsilon : float, optional
        Privacy-loss budget; sets ``m = n L / epsilon``. Give ``epsilon`` or
        ``m``, not both; with neither, ``epsilon = 10``.
    n : int, default 1000
        Binomial trials per time point.
    m : float, optional
        Pseudo-count of the release (then ``epsilon = n L / m``).
    population : int, default 10**6
        Population size ``K``.
    times : array_like, default ``0, 17, ..., 153``
        Observation times (``L`` of them).
    simulator : {"exact", "approx"}
        Which curve simulator to use.
    dt : float, default 0.5
        Largest leap of the approximate simulator.
    rng : None, int, SeedSequence or Generator, optional
        Source of randomness; None draws fresh OS entropy.

    Returns
    -------
    numpy.ndarray
        int64 release counts ``s_i`` of shape ``(*B, L)``; divide by ``n``
        for Xiong et al.'s fractions.

    Examples
    --------
    >>> s = simulate_release(TRUTH, population=10_000, simulator="approx", rng=0)
    >>> s.shape, bool(((0 <= s) & (s <= N_TRIALS)).all())
    ((10,), True)
    """
    log_beta, log_gamma = _check_theta(theta)
    simulator = _check_simulator(simulator)
    times = _check_times(times)
    population = _validate.positive_int("population", population)
    n = _validate.positive_int("n", n)
    if epsilon is not None and m is not None:
        raise ValueError(
            f"give epsilon or m, not both (m = n L / epsilon); got epsilon={epsilon!r}, m={m!r}"
        )
    if m is None:
        mech = mechanism(
            EPSILON if epsilon is None else epsilon,
            n=n,
            population=population,
            length=times.size,
        )
    else:
        mech = dp.BinomialRelease(n=n, m=m, population=population, length=times.size)
    generator = as_generator(rng)
    simulate = simulate_exact if simulator == "exact" else simulate_approx
    extra = {} if simulator == "exact" else {"dt": dt}
    curves = simulate(
        np.exp(log_beta),
        np.exp(log_gamma),
        population=population,
        times=times,
        rng=generator,
        **extra,
    )
    return np.asarray(generator.binomial(mech.n, mech.success_probability(curves)), np.int64)


# --- posterior analysis: R0 and the naive analysis ----------------------------------


def r0(theta) -> np.ndarray:
    """Return the basic reproduction number ``R0 = beta / gamma`` of parameter draws.

    Parameters
    ----------
    theta : dict, InferenceData or array_like
        ``{"log_beta": ..., "log_gamma": ...}`` (broadcast together), an
        object with a ``posterior`` group holding those two variables, or an
        array of shape ``(*B, 2)`` holding ``(log beta, log gamma)`` in its
        last axis.

    Returns
    -------
    numpy.ndarray
        ``exp(log_beta - log_gamma)``, of the broadcast batch shape (for a
        posterior group, flattened over chains and draws).

    Examples
    --------
    >>> round(float(r0(TRUTH)), 4)  # exp(2.5)
    12.1825
    """
    posterior = getattr(theta, "posterior", None)
    if posterior is not None:
        theta = {k: np.asarray(posterior[k]).ravel() for k in ("log_beta", "log_gamma")}
    log_beta, log_gamma = _check_theta(theta)
    return np.exp(log_beta - log_gamma)


class NoiselessFraction(dp.Mechanism):
    r"""The naive analyst's model of the release: the fractions are the exact proportions.

    The release is taken to be ``s_i = round(n I(t_i) / K)``: the published
    fraction ``s_i / n`` is the proportion infected ``I(t_i) / K`` to the
    reported precision ``1 / n``, with no sampling or privacy noise. This is
    **not** how the release was made (that is :func:`mechanism`); it is the
    model of an analysis that ignores the mechanism, here only to show what
    that costs.

    Parameters
    ----------
    n : int, default 1000
        Denominator of the published fractions.
    population : int, default 10**6
        Population size ``K``.
    length : int, default 10
        Number of time points ``L``.

    Notes
    -----
    The density is the rounding indicator :math:`\eta(s \mid I) = 1\{|s - n
    I / K| \le 1/2\}` at every time point; it offers no privacy
    (``epsilon = inf``). Exact ABC with this kernel asks for an exact match of
    all ``L`` fractions, which no simulation achieves; :func:`naive_abc`
    therefore shrinks a tolerance on the distance instead.

    Examples
    --------
    >>> NoiselessFraction(length=2).release([1, 500_000], rng=0).tolist()
    [0, 500]
    """

    discrete = True

    def __init__(self, *, n: int = N_TRIALS, population: int = POPULATION, length: int = 10):
        self.n = _validate.positive_int("n", n)
        self.population = _validate.positive_int("population", population)
        self.event_shape = (_validate.positive_int("length", length),)

    def _fraction(self, value):
        return np.asarray(value, dtype=float) * (self.n / self.population)

    def _log_density(self, xp, released, value):
        inside = np.abs(np.asarray(released, dtype=float) - self._fraction(value)) <= 0.5
        return np.where(inside, 0.0, -np.inf)

    def _sample(self, value, rng):
        return np.rint(self._fraction(value)).astype(np.int64)

    def _check_value(self, value):
        arr = super()._check_value(value)
        if np.any((arr < 0) | (arr > self.population)):
            raise ValueError(
                f"value must be counts in [0, population={self.population}], got "
                f"min {arr.min()} and max {arr.max()}"
            )
        return arr

    @property
    def privacy(self) -> dp.Privacy:
        """No guarantee: ``epsilon = inf``."""
        return dp.Privacy(epsilon=math.inf, neighbouring="none: the fractions are published")

    @property
    def log_max_density(self) -> float:
        """The indicator's supremum, ``log 1 = 0``."""
        return 0.0

    def _repr_params(self):
        return {"n": self.n, "population": self.population, "length": self.event_shape[0]}


def naive_mechanism(
    *, n: int = N_TRIALS, population: int = POPULATION, length: int = TIMES.size
) -> NoiselessFraction:
    """Return :class:`NoiselessFraction`: the release read as the exact fractions ``I / K``.

    Examples
    --------
    >>> naive_mechanism().privacy.epsilon
    inf
    """
    return NoiselessFraction(n=n, population=population, length=length)


def naive_abc(
    released,
    *,
    particles: int = 2000,
    simulator: str = "approx",
    min_acceptance: float = 0.01,
    population: int = POPULATION,
    times=TIMES,
    n: int = N_TRIALS,
    rng: RNGLike = None,
    **kwargs,
):
    r"""Run the naive analysis: ABC taking the released fractions as the exact ``I(t) / K``.

    The analyst reads ``s_i / n`` as the proportion infected at ``t_i`` and
    fits the SIR model to it by the standard likelihood-free recipe:
    simulate curves, and keep the parameters whose fractions ``I(t_i) / K``
    come within a tolerance ``h`` of ``s_i / n`` (Euclidean distance, in
    units of ``1 / n``), shrinking ``h`` by tolerance-based SMC-ABC
    (:func:`dpinfer.tolerance_smc_abc` with :func:`naive_mechanism`) until the
    ABC-MCMC acceptance rate falls below ``min_acceptance``.

    Parameters
    ----------
    released : array_like
        The release: integer counts ``s_i`` out of ``n``.
    particles : int, default 2000
    simulator : {"approx", "exact"}, default "approx"
    min_acceptance : float, default 0.01
        Stop shrinking the tolerance when fewer moves than this are accepted.
    population, times, n
        As in :func:`model` and :func:`mechanism`.
    rng : seed, optional
    **kwargs
        Passed on to :func:`dpinfer.tolerance_smc_abc`.

    Returns
    -------
    arviz.InferenceData
        As from :func:`dpinfer.tolerance_smc_abc`; ``attrs["tolerance"]`` is the
        final ``h``, and ``attrs["analysis"]`` is ``"naive"``.

    Notes
    -----
    As :math:`h \to 0` the target is :math:`\pi(\theta \mid I(t_i) / K =
    s_i / n,\ i = 1, \dots, L)`, the posterior given an exactly observed
    curve; at the final ``h`` it is an approximation to it that is still
    wider. Both ignore the binomial sampling of ``n`` people and the
    pseudo-count ``m`` of the mechanism, which :func:`dpinfer.smc_abc` with
    :func:`mechanism` accounts for exactly.
    """
    times = _check_times(times)
    idata = dp.tolerance_smc_abc(
        model(simulator=simulator, population=population, times=times),
        naive_mechanism(n=n, population=population, length=times.size),
        released,
        particles=particles,
        min_acceptance=min_acceptance,
        rng=rng,
        **kwargs,
    )
    idata.posterior.attrs["analysis"] = "naive"
    return idata


def run(
    *,
    released=RELEASED,
    epsilon: float = EPSILON,
    particles: int = 2000,
    simulator: str = "approx",
    rng: RNGLike = None,
    progressbar: bool = True,
    verbose: bool = False,
) -> Result:
    """Fit the exact posterior of ``(log beta, log gamma)`` and ``R0``, and the naive one.

    Runs :func:`dpinfer.smc_abc` with the release's mechanism (exact: the
    binomial density is the ABC kernel) and :func:`naive_abc`, which reads the
    released fractions as the exact proportions infected.

    Parameters
    ----------
    released : array_like
        Release counts ``s_i`` (default Xiong et al.'s :data:`RELEASED`).
    epsilon : float
        Privacy budget of the release (``m = n L / epsilon``).
    particles : int
        Particles of both SMC runs.
    simulator : {"approx", "exact"}
        Curve simulator used for inference.
    rng : seed, optional
        Root seed of both runs.
    progressbar : bool
        Show the samplers' progress bars.
    verbose : bool
        Unused; part of every example's ``run``.

    Returns
    -------
    Result
        ``posterior`` is the exact SMC-ABC result; ``extra["naive"]`` the naive run.
    """
    seeds = as_seed_sequence(rng).spawn(2)
    mech = mechanism(epsilon)
    exact = dp.smc_abc(
        model(simulator=simulator),
        mech,
        released,
        particles=particles,
        rng=seeds[0],
        progressbar=progressbar,
    )
    naive = naive_abc(
        released, particles=particles, simulator=simulator, rng=seeds[1], progressbar=progressbar
    )

    def with_r0(idata):
        draws = idata_draws(idata, ("log_beta", "log_gamma"))
        return {**draws, "R0": r0(draws)}

    a, b = exact.posterior.attrs, naive.posterior.attrs
    rows = [
        *draw_rows("exact (smc_abc)", "exact", with_r0(exact)),
        *draw_rows("naive (fractions as exact)", "naive", with_r0(naive)),
        *distribution_rows("prior", "prior", prior()),
        *value_rows("truth", "truth", {**TRUTH, "R0": r0(TRUTH)}),
    ]
    exact_text, diagnostics = smc_note("smc_abc", exact, "smc")
    naive_text, naive_numbers = smc_note("naive ABC", naive, "naive")
    notes = [
        f"{exact_text}; log evidence {float(a['log_evidence']):.3f}",
        f"{naive_text}; final tolerance {float(b['tolerance']):.1f} (units of 1/n)",
        f"privacy: {mech.privacy} (n = {mech.n}, m = {mech.m:g}, L = {TIMES.size})",
    ]
    diagnostics.update(
        naive_numbers, log_evidence=float(a["log_evidence"]), naive_tolerance=float(b["tolerance"])
    )
    report = Report(
        "SIR epidemic from a binomial release of the curve (Xiong et al. 2023, Section 4.1)",
        [
            f"K = {POPULATION:,}; times {TIMES.astype(int).tolist()}; simulator {simulator}",
            f"released s = {np.asarray(released).tolist()} out of n = {mech.n}",
        ],
        rows,
        notes,
        diagnostics,
    )
    return Result(report, exact, extra={"naive": naive})


# --- internals ---------------------------------------------------------------------


def _simulate_curves(params, rng, *, simulator, population, times, dt):
    beta = np.exp(np.asarray(params["log_beta"], dtype=float))
    gamma = np.exp(np.asarray(params["log_gamma"], dtype=float))
    if simulator == "exact":
        return simulate_exact(beta, gamma, population=population, times=times, rng=rng)
    return simulate_approx(beta, gamma, population=population, times=times, dt=dt, rng=rng)


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
                f"(in {name}={_validate._short(arr)})"
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


def _check_times(times) -> np.ndarray:
    try:
        arr = np.array(times, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(f"times must be an array of real numbers, got {times!r}") from err
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"times must be a non-empty 1-d array, got shape {arr.shape}: {times!r}")
    if not np.all(np.isfinite(arr) & (arr >= 0)):
        raise ValueError(f"times must be finite and non-negative, got {_validate._short(arr)}")
    if arr.size > 1 and not np.all(np.diff(arr) > 0):
        raise ValueError(f"times must be strictly increasing, got {_validate._short(arr)}")
    return np.ascontiguousarray(arr)


def _check_theta(theta):
    if isinstance(theta, Mapping):
        missing = {"log_beta", "log_gamma"} - set(theta)
        if missing:
            raise ValueError(
                f"theta must have keys 'log_beta' and 'log_gamma', missing {sorted(missing)}; "
                f"got keys {sorted(theta)}"
            )
        values = (theta["log_beta"], theta["log_gamma"])
    else:
        arr = np.asarray(theta, dtype=float)
        if arr.ndim == 0 or arr.shape[-1] != 2:
            raise ValueError(
                "theta must be a dict with 'log_beta' and 'log_gamma' or an array whose last "
                f"axis holds (log beta, log gamma), got shape {arr.shape}"
            )
        values = (arr[..., 0], arr[..., 1])
    out = []
    for name, value in zip(("log_beta", "log_gamma"), values, strict=True):
        arr = np.asarray(value, dtype=float)
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"theta[{name!r}] must be finite, got {_validate._short(arr)}")
        out.append(arr)
    return out


def _check_simulator(simulator) -> str:
    if simulator not in _SIMULATORS:
        raise ValueError(f"simulator must be 'exact' or 'approx', got {simulator!r}")
    return simulator


def _check_flag(name, value) -> bool:
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)
