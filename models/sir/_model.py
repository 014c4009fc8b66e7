"""The SIR model, simulated releases, and the naive analysis of :mod:`dpinfer.models.sir`.

Imported by :mod:`dpinfer.models.sir`, which documents the example.
"""

from __future__ import annotations

import functools
import math

import numpy as np

import dpinfer as dp
from dpinfer import validate
from dpinfer.random import RNGLike, as_generator

from ._setting import (
    EPSILON,
    N_TRIALS,
    POPULATION,
    TIMES,
    TRUTH,  # noqa: F401 - the docstring examples use it
    _check_simulator,
    _check_theta,
    _check_times,
    mechanism,
    prior,
)
from ._simulate import simulate_approx, simulate_exact


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
    population = validate.positive_int("population", population)
    times = _check_times(times)
    dt = validate.positive_finite("dt", dt)
    simulate = functools.partial(
        _simulate_curves, simulator=simulator, population=population, times=times, dt=dt
    )
    simulate.__name__ = f"sir.simulate_{simulator}"
    return dp.Model(prior=prior(), simulate=simulate)


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
    population = validate.positive_int("population", population)
    n = validate.positive_int("n", n)
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
    population, length : int, default 10**6 and 10
        Population size ``K`` and number of time points ``L``.

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
        self.n = validate.positive_int("n", n)
        self.population = validate.positive_int("population", population)
        self.event_shape = (validate.positive_int("length", length),)

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


def _simulate_curves(params, rng, *, simulator, population, times, dt):
    beta = np.exp(np.asarray(params["log_beta"], dtype=float))
    gamma = np.exp(np.asarray(params["log_gamma"], dtype=float))
    if simulator == "exact":
        return simulate_exact(beta, gamma, population=population, times=times, rng=rng)
    return simulate_approx(beta, gamma, population=population, times=times, dt=dt, rng=rng)
