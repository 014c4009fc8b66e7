r"""Choosing the simulations per SMC particle by a pilot run (``simulations_per_particle="auto"``).

A cheap pilot, one SMC chain of at most :data:`PILOT_PARTICLES` particles on the
same model from its own child of the root seed, is run with ``m = 1, 2, 4, ...``
simulations per particle until its last stage's move acceptance reaches the
target :func:`target_acceptance`, or ``m`` reaches the cap (:data:`MAX_COUNT`).
The main run then uses that ``m``, fixed, so its result and its reported
error are exactly those of a run given ``m`` by hand; the pilot's particles
never enter it, only its simulations are counted.

Changing ``m`` inside one run instead (an importance step onto the target
with more simulations) is exact as well, but its lineage ESS overstated the
precision (see :mod:`dpinfer.samplers.smc._pseudo_marginal`).

The target is the move acceptance and not the variance of
:math:`\log \hat L_m` at the posterior, which Doucet et al. (2015) advise to
keep near 1 to 2 for pseudo-marginal MCMC: on the Normal-mean example with a
Laplace release that variance needs hundreds of simulations at epsilon = 1000,
whereas SMC, which moves a whole population many times per stage, reaches its
best ESS per simulation at a few tens. The pilot still estimates the variance
at its final particles (``pilot_log_density_variance``), so a user can see
where a chosen ``m`` stands on Doucet's scale.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import replace
from typing import NamedTuple

import numpy as np

from ... import _validate
from ..._rng import child_sequence
from .._common import check_count
from .._simulate import BatchSimulator
from . import _pseudo_marginal as _pm

__all__ = [
    "MAX_COUNT",
    "PILOT_PARTICLES",
    "Pilot",
    "check_count_option",
    "choose_by_pilot",
    "choose_count",
    "pilot_seed",
    "target_acceptance",
]

# Particles of the pilot chain: enough for the adaptive temperatures and the
# moves' covariance to behave as in the main run, few enough to be cheap.
PILOT_PARTICLES = 200

# The largest m the pilot tries (a warning says when it is reached without the target).
MAX_COUNT = 64

# The pilot's seeds descend from this child of the root seed; chains use children
# 0 .. chains - 1, so no pilot shares a generator with a chain.
PILOT_SEED_INDEX = 2**31 - 1


class Pilot(NamedTuple):
    """What the pilot measured: the counts tried and each one's figures, in order."""

    counts: np.ndarray
    acceptance: np.ndarray  # the last stage's move acceptance of each pilot
    log_density_variance: np.ndarray  # of log L-hat_m at the pilot's final particles
    n_simulations: int  # all pilots together
    target: float

    @property
    def chosen(self) -> int:
        return int(self.counts[-1])

    @property
    def reached_target(self) -> bool:
        return bool(self.acceptance[-1] >= self.target)

    def attrs(self) -> dict:
        """Return the pilot's figures, for the result's ``attrs``."""
        return {
            "pilot_simulations_per_particle": self.counts,
            "pilot_acceptance_rate": self.acceptance,
            "pilot_log_density_variance": self.log_density_variance,
            "pilot_n_simulations": self.n_simulations,
            "pilot_target_acceptance": self.target,
        }


def target_acceptance(move_probability: float, max_moves: int) -> float:
    """Return the acceptance at which ``max_moves`` moves move a particle often enough.

    That is, with probability ``move_probability``: 0.142 with the defaults
    0.99 and 30. Below it a stage's moves stop at the cap before a particle has
    moved with the probability asked for, and the population is left with
    copies the ESS counts as distinct draws.
    """
    return 1.0 - (1.0 - move_probability) ** (1.0 / max_moves)


def pilot_seed(root: np.random.SeedSequence, m: int) -> np.random.SeedSequence:
    """Return the seed of the pilot with ``m`` simulations per particle."""
    return child_sequence(child_sequence(root, PILOT_SEED_INDEX), m)


def choose_count(
    run_pilot: Callable[[int], tuple[float, float, int]],
    *,
    target: float,
    cap: int,
) -> Pilot:
    """Double ``m`` from 1 until the pilot's acceptance reaches ``target`` or ``m`` the cap.

    ``run_pilot(m)`` runs a pilot and returns its last stage's move acceptance,
    the variance of the log averaged density at its final particles and the
    simulations it used.
    """
    counts, rates, variances, sims = [], [], [], 0
    m = 1
    while True:
        rate, variance, used = run_pilot(m)
        counts.append(m)
        rates.append(rate)
        variances.append(variance)
        sims += used
        if rate >= target or 2 * m > cap:
            break
        m *= 2
    return Pilot(np.array(counts), np.array(rates), np.array(variances), sims, target)


def log_density_variance(sim, params: dict, m: int, repeats: int = 4) -> tuple[float, int]:
    """Mean over particles of the variance of ``log L-hat_m`` over ``repeats`` fresh estimates.

    Returns ``(variance, simulations used)``; infinite where an estimate is
    ``-inf`` (a release the simulations cannot reach).
    """
    before = sim.n_simulations
    tiled = {k: np.tile(v, (repeats,) + (1,) * (np.ndim(v) - 1)) for k, v in params.items()}
    n = len(next(iter(params.values())))
    logs = _pm.averaged_log_density(sim, tiled, m).reshape(repeats, n)
    with np.errstate(invalid="ignore"):
        variance = float(np.mean(np.var(logs, axis=0, ddof=1)))
    return (variance if np.isfinite(variance) else np.inf), sim.n_simulations - before


def check_count_option(value) -> int | str:
    """Return ``simulations_per_particle``: a positive integer or ``"auto"``."""
    if isinstance(value, str | list | tuple) or (
        isinstance(value, np.ndarray) and value.dtype.kind in "USO"
    ):
        also = "a positive integer"
        return _validate.choice("simulations_per_particle", value, ("auto",), alternatives=also)
    return check_count("simulations_per_particle", value)


def choose_by_pilot(run_chain, model, mechanism, released, settings, root, executor) -> Pilot:
    """Choose ``m`` by pilot chains; warn when the cap is reached without the target.

    ``run_chain(settings, seed, executor, advance)`` runs one SMC chain and
    returns its :class:`~dpinfer.samplers._chains.ChainRun`; ``settings`` are
    the sampler's, with ``particles`` per chain.
    """
    pilot_settings = replace(settings, particles=min(settings.particles, PILOT_PARTICLES))

    def run_pilot(m):
        seed = pilot_seed(root, m)
        run = run_chain(
            replace(pilot_settings, simulations_per_particle=m),
            child_sequence(seed, 0), executor, _ignore,
        )  # fmt: skip
        sim = BatchSimulator(
            model, mechanism, released, child_sequence(seed, 1),
            batch_size=settings.batch_size, executor=executor,
        )  # fmt: skip
        variance, used = log_density_variance(sim, run.posterior, m)
        return run.stats["last_acceptance_rate"], variance, run.stats["n_simulations"] + used

    target = target_acceptance(settings.move_probability, settings.max_moves)
    pilot = choose_count(run_pilot, target=target, cap=MAX_COUNT)
    if not pilot.reached_target:
        warnings.warn(
            f"smc_abc: with simulations_per_particle={pilot.chosen}, the most the pilot tries, "
            f"its moves still accept only {pilot.acceptance[-1]:.3g} of the time (target "
            f"{pilot.target:.3g}); the run goes on with {pilot.chosen}. Check "
            "its ESS, pass a larger simulations_per_particle or use a PyMC reference.",
            RuntimeWarning,
            stacklevel=3,
        )
    return pilot


def _ignore(_units) -> None:
    return None
