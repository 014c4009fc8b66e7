r"""The acceptance rate of exact rejection ABC, estimated before (or while) paying for it.

Exact rejection ABC (Gong 2022, Algorithm 1) accepts a prior proposal with
probability :math:`w = \eta(s_{dp} \mid s) / \sup \eta`, so its acceptance rate is
:math:`p = E[w] = \pi(s_{dp}) / \sup \eta`, the evidence over the density bound, and
``draws`` posterior draws cost about ``draws / p`` simulations. A pilot of ``n``
prior simulations estimates ``p`` by the mean of the ``w_i`` (the acceptance
probabilities themselves, not the coin flips: the Rao-Blackwellised estimate, whose
variance is never larger), with the standard error ``sd(w) / sqrt(n)``. Everything is
kept in log space, so a release so far in the tail that every ``w_i`` underflows
(``e^{-10^{20}}``) still gets a finite log rate and an honest prediction.

:func:`rejection_abc` runs the same estimate on its own proposals as they arrive and
stops as soon as even the optimistic end of the prediction (the rate plus
:data:`Z_PREDICT` standard errors) exceeds ``max_simulations``.
"""

from __future__ import annotations

import math
from concurrent.futures import Executor
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import logsumexp

from .. import _validate, parallel
from .._rng import RNGLike, as_seed_sequence
from ._common import check_count, check_inputs, check_options
from ._precision import density_bound_message, nan_density_message

if TYPE_CHECKING:
    from ..mechanisms.base import Mechanism
    from ..model import Model

__all__ = ["AcceptanceRate", "estimate_acceptance_rate"]

#: Standard errors above the estimated rate at which a run is still predicted to exceed
#: its budget before it is stopped (a normal tail of 3e-5; the estimate's tail is heavier
#: when a rare region of the prior gives the release a high density, see the Notes of
#: :func:`estimate_acceptance_rate`).
Z_PREDICT = 4.0


class AcceptanceRate(NamedTuple):
    """An estimate of exact rejection ABC's acceptance rate ``pi(s_dp) / sup eta``.

    Attributes
    ----------
    log_rate : float
        Log of the estimated rate (the mean acceptance probability).
    log_standard_error : float
        Log of its Monte Carlo standard error (``-inf`` when every proposal had
        the same acceptance probability).
    simulations : int
        Prior simulations the estimate rests on.
    log_max_density : float
        ``log sup eta`` at the release, so that ``log_rate + log_max_density``
        estimates the log evidence.
    """

    log_rate: float
    log_standard_error: float
    simulations: int
    log_max_density: float

    @property
    def rate(self) -> float:
        """The estimated acceptance rate (0.0 when it underflows; see :attr:`log_rate`)."""
        return math.exp(self.log_rate)

    @property
    def standard_error(self) -> float:
        """The Monte Carlo standard error of :attr:`rate`."""
        return math.exp(self.log_standard_error)

    @property
    def log_evidence(self) -> float:
        """Estimated ``log pi(s_dp)``: ``log_rate + log_max_density``."""
        return self.log_rate + self.log_max_density

    def log_upper(self, z: float = Z_PREDICT) -> float:
        """Log of ``rate + z * standard_error``, an optimistic rate."""
        z = _validate.non_negative("z", z)
        if z == 0:
            return self.log_rate
        return float(np.logaddexp(self.log_rate, math.log(z) + self.log_standard_error))

    def expected_simulations(self, draws: int, *, z: float = 0.0) -> float:
        """Return the simulations expected for ``draws`` draws: ``draws / (rate + z * s.e.)``.

        ``z = 0`` gives the central prediction, ``z > 0`` an optimistic one
        (a lower bound on the cost, up to the estimate's own uncertainty).
        Returns ``inf`` beyond the float range (see
        :meth:`log_expected_simulations`).

        Examples
        --------
        >>> est = AcceptanceRate(math.log(1e-6), math.log(1e-7), 10**6, 0.0)
        >>> f"{est.expected_simulations(20):.3g}", f"{est.expected_simulations(20, z=4):.3g}"
        ('2e+07', '1.43e+07')
        """
        log_n = self.log_expected_simulations(draws, z=z)
        return math.exp(log_n) if log_n < 709 else math.inf

    def log_expected_simulations(self, draws: int, *, z: float = 0.0) -> float:
        """Return the log of :meth:`expected_simulations`, finite however small the rate."""
        return math.log(check_count("draws", draws)) - self.log_upper(z)

    def __str__(self) -> str:
        return (
            f"acceptance rate {describe(self.log_rate)} (s.e. "
            f"{describe(self.log_standard_error)}, from {self.simulations:,} simulations)"
        )


def estimate_acceptance_rate(
    model: Model,
    mechanism: Mechanism,
    released: ArrayLike,
    *,
    simulations: int = 100_000,
    rng: RNGLike = None,
    batch_size: int = 100_000,
    executor: Executor | None = None,
) -> AcceptanceRate:
    r"""Estimate exact rejection ABC's acceptance rate from prior simulations, in log space.

    Predicts the cost of :func:`dpinfer.rejection_abc` before running it:
    ``draws`` draws take about ``est.expected_simulations(draws)`` simulations.
    Where that is more than one can afford, use :func:`dpinfer.smc_abc` or
    :func:`dpinfer.importance_abc`, whose cost does not grow with ``1 / rate``.

    Parameters
    ----------
    model : Model
        Prior and simulator of the confidential statistic.
    mechanism : Mechanism
        The mechanism that produced the release.
    released : array_like
        The release ``s_dp``.
    simulations : int, default 100_000
        Prior simulations of the pilot (at least 2).
    rng : None, int, SeedSequence or Generator, optional
        Seed of the pilot.
    batch_size : int, default 100_000
        Simulations per chunk.
    executor : concurrent.futures.Executor, optional
        Runs the chunks (serially when None).

    Returns
    -------
    AcceptanceRate
        The log rate, the log of its standard error, the number of
        simulations and ``log sup eta``; ``.rate``, ``.standard_error``,
        ``.log_evidence`` and ``.expected_simulations(draws, z=...)``.

    Notes
    -----
    The estimate is the mean of the acceptance probabilities
    :math:`w_i = \eta(s_{dp} \mid s_i) / \sup \eta` of ``simulations`` prior
    draws: unbiased for :math:`p = \pi(s_{dp}) / \sup\eta`, with standard error
    :math:`\mathrm{sd}(w)/\sqrt n`. Like any Monte Carlo estimate it cannot see
    a region of the prior it never sampled: when a rare region gives the release
    a much higher density, the pilot underestimates the rate (and its error),
    and the rejection run itself would be as slow to find that region.

    Examples
    --------
    The release of :func:`rejection_abc`'s example, and one far beyond the
    prior's reach:

    >>> import scipy.stats as st, dpinfer as dp
    >>> model = dp.Model(prior={"theta": st.gamma(25)},
    ...                  simulate=lambda p, rng: rng.poisson(p["theta"]))
    >>> mech = dp.Laplace.from_privacy(epsilon=0.2, sensitivity=1.0)
    >>> est = dp.estimate_acceptance_rate(model, mech, 37.4, simulations=20_000, rng=1)
    >>> round(est.rate, 2), est.expected_simulations(200) < 2000
    (0.16, True)
    >>> far = dp.estimate_acceptance_rate(model, mech, 2**70, simulations=20_000, rng=1)
    >>> far.rate, far.expected_simulations(20)
    (0.0, inf)
    >>> print(far)
    acceptance rate 10^-1.03e+20 (s.e. 0, from 20,000 simulations)
    """
    released = check_inputs(model, mechanism, released)
    check_options(rng=rng, executor=executor, progressbar=False)
    simulations = check_count("simulations", simulations)
    if simulations < 2:
        raise ValueError(
            f"simulations must be at least 2 (for a standard error), got {simulations}"
        )
    batch_size = check_count("batch_size", batch_size)
    log_bound = mechanism.log_max_density_at(released)
    sizes = [min(batch_size, simulations - lo) for lo in range(0, simulations, batch_size)]
    prior = model.require_prior("estimate_acceptance_rate")

    def task(index, chunk_rng):
        params = prior.sample(sizes[index], chunk_rng)
        log_accept, _ = log_acceptance(model, mechanism, released, log_bound, params, chunk_rng)
        return log_sums(log_accept)

    sums = parallel.map_chunks(task, as_seed_sequence(rng), len(sizes), executor=executor)
    return from_log_sums(
        float(logsumexp([s[0] for s in sums])),
        float(logsumexp([s[1] for s in sums])),
        simulations,
        log_bound,
    )


def log_acceptance(model, mechanism, released, log_bound, params, rng) -> tuple[np.ndarray, bool]:
    """``log w`` of fresh simulations at ``params``, and whether the simulator returned floats.

    A NaN density, or one above its bound, is refused with the cause it can name
    (:func:`._precision.density_bound_message`).
    """
    s = model.simulate_checked(params, rng, event_shape=mechanism.event_shape)
    log_density = mechanism.logpdf(released, s)
    if np.any(np.isnan(log_density)):
        raise RuntimeError(nan_density_message(mechanism, log_density, s))
    log_accept = log_density - log_bound
    if np.any(log_accept > 1e-9):
        raise RuntimeError(density_bound_message(mechanism, log_density, log_bound, s))
    return log_accept, s.dtype.kind == "f"


def log_sums(log_accept: np.ndarray) -> tuple[float, float]:
    """``(log sum w, log sum w^2)`` of one chunk."""
    return float(logsumexp(log_accept)), float(logsumexp(2 * log_accept))


def from_log_sums(log_s1: float, log_s2: float, n: int, log_bound: float) -> AcceptanceRate:
    """Return the estimate from ``log sum w``, ``log sum w^2`` and ``n`` simulations."""
    log_n = math.log(n)
    log_mean, log_m2 = log_s1 - log_n, log_s2 - log_n
    # var = m2 - mean^2 >= 0, in log space: log m2 + log(1 - mean^2 / m2)
    gap = 2 * log_mean - log_m2 if math.isfinite(log_m2) else 0.0
    log_var = log_m2 + math.log1p(-math.exp(gap)) if gap < 0 else -math.inf
    # unbiased variance, then the standard error of the mean: var * n / (n - 1) / n
    log_se = 0.5 * (log_var - math.log(n - 1)) if n > 1 else math.inf
    return AcceptanceRate(log_mean, log_se, n, float(log_bound))


def describe(log_x: float) -> str:
    """``exp(log_x)`` to three figures, as a power of ten when it underflows or overflows."""
    if log_x == -math.inf:
        return "0"
    if abs(log_x) < 700:
        return f"{math.exp(log_x):.3g}"
    return f"10^{log_x / math.log(10):.3g}"
