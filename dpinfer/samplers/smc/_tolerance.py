"""Tolerance-based SMC-ABC on simulated releases: an approximate baseline."""

from __future__ import annotations

import math
from concurrent.futures import Executor
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from ... import _validate
from ..._rng import RNGLike, as_seed_sequence
from .. import _weights
from .._chains import ChainRun
from .._common import AbcCall, check_count
from ._particles import COMBINE_RULES as SMC_RULES
from ._particles import (
    check_particles,
    expand,
    moves_needed,
    n_distinct,
    proposal_factor,
    random_walk,
    run_smc_chains,
    start_chain,
    take,
)

if TYPE_CHECKING:
    from ...mechanisms.base import Mechanism
    from ...model import Model
    from ...results import InferenceData

__all__ = ["tolerance_smc_abc"]

REFERENCE = (
    "Del Moral, P., Doucet, A. and Jasra, A. (2012). An adaptive sequential Monte Carlo "
    "method for approximate Bayesian computation. Statistics and Computing 22; used as the "
    "SMC-ABC baseline by Xiong, Ju and Zhang (2023)."
)


class _State(NamedTuple):
    z: np.ndarray
    params: dict
    log_prior: np.ndarray
    distance: np.ndarray  # ||simulated release - observed release||
    tolerance: float


@dataclass(frozen=True)
class _Settings:
    """The options of one tolerance SMC chain (validated)."""

    particles: int
    final_tolerance: float
    quantile: float
    min_acceptance: float
    move_probability: float
    max_moves: int
    max_stages: int
    batch_size: int


def tolerance_smc_abc(
    model: Model,
    mechanism: Mechanism,
    released: ArrayLike,
    *,
    particles: int = 2000,
    chains: int = 4,
    final_tolerance: float = 0.0,
    quantile: float = 0.5,
    min_acceptance: float = 0.02,
    move_probability: float = 0.99,
    max_moves: int = 30,
    max_stages: int = 100,
    rng: RNGLike = None,
    batch_size: int = 100_000,
    executor: Executor | None = None,
    progressbar: bool = True,
) -> InferenceData:
    r"""Approximate SMC-ABC with a shrinking tolerance on the release distance.

    Each particle simulates ``s`` and then a release ``s~ = mechanism.release(s)``;
    a particle is alive when ``||s~ - released||_2 <= tolerance``. The tolerance
    shrinks to the ``quantile`` of the alive particles' distances each stage,
    with resampling and ABC-MCMC moves, until it reaches ``final_tolerance``
    or the move acceptance rate falls below ``min_acceptance``. Each of the
    ``chains`` runs is independent, with its own tolerance schedule.

    This is **approximate**: it targets the ABC posterior at the final
    tolerance, not the exact posterior. It is here as the baseline of Xiong,
    Ju & Zhang (2023); use :func:`smc_abc` for exact inference.

    Parameters
    ----------
    model, mechanism, released
        As in :func:`smc_abc`.
    particles : int, default 2000
        Number of particles over all chains together, as in :func:`smc_abc`.
    chains : int, default 4
        Independent runs (the chains of the result).
    final_tolerance : float, default 0
        Stop once the tolerance is at or below this value.
    quantile : float, default 0.5
        Fraction of alive particles kept when shrinking the tolerance.
    min_acceptance : float, default 0.02
        Stop when the ABC-MCMC acceptance rate falls below this.
    move_probability, max_moves, max_stages, rng, batch_size, executor, progressbar
        As in :func:`smc_abc`.

    Returns
    -------
    arviz.InferenceData
        ``posterior``: the final (equally weighted) particles of each chain;
        ``attrs``: ``tolerance`` (the largest final tolerance of the chains:
        the loosest ABC approximation among them), ``chain_tolerance``,
        ``chain_acceptance_rate`` (each chain's last), ``chain_n_simulations``,
        ``chain_n_stages``, ``chain_n_distinct`` and per-stage ``stage_tolerance``,
        ``stage_acceptance_rate``, ``stage_simulations`` and
        ``stage_n_distinct``, concatenated over the chains (``stage_chain``).

    Warns
    -----
    RuntimeWarning
        When a chain's final population, or a stage, keeps fewer than a
        quarter of its particles distinct.
    """
    call = AbcCall.check(
        "tolerance_smc_abc (approximate)", REFERENCE, model, mechanism, released,
        ("particles", particles), chains, rng=rng, executor=executor, progressbar=progressbar,
    )  # fmt: skip
    released, chains, n = call.released, call.chains, call.per_chain
    check_particles("tolerance_smc_abc", particles, chains, n)
    final = _validate.non_negative("final_tolerance", final_tolerance)
    _validate.probability_open("quantile", quantile)
    _validate.probability_open("min_acceptance", min_acceptance)
    _validate.probability_open("move_probability", move_probability)
    settings = _Settings(
        n,
        final,
        quantile,
        min_acceptance,
        move_probability,
        check_count("max_moves", max_moves),
        check_count("max_stages", max_stages),
        check_count("batch_size", batch_size),
    )
    if not model.require_prior("tolerance_smc_abc").has_logpdf:
        raise ValueError("tolerance_smc_abc needs a prior with a logpdf")
    root = as_seed_sequence(rng)
    posterior, sample_stats, attrs = run_smc_chains(
        "tolerance_smc_abc",
        call,
        partial(_run_chain, model, mechanism, released, settings),
        root,
        label="tolerance SMC-ABC (stages)",
        units=settings.max_stages,
        rules=COMBINE_RULES,
        check_acceptance=False,  # it stops by design once the moves stop accepting
    )
    return call.result(
        posterior,
        sample_stats=sample_stats,
        root=root,
        ess=float(attrs["n_distinct"]),
        log_evidence=math.nan,
        **attrs,
    )


# The loosest chain's tolerance is the tolerance of the result.
COMBINE_RULES = {**SMC_RULES, "tolerance": "max"}


def _run_chain(model, mechanism, released, settings, seed, executor, advance) -> ChainRun:
    """One tolerance SMC run from its own seed."""
    target = np.asarray(released, dtype=float)

    def score(s, rng):
        return _distance(mechanism.release(s, rng=rng), target)

    driver, sim, space, z, params, log_prior = start_chain(
        model,
        mechanism,
        released,
        seed,
        particles=settings.particles,
        batch_size=settings.batch_size,
        executor=executor,
        score=score,
    )
    state = _State(z, params, log_prior, sim(params), math.inf)
    stages: list[tuple[float, float, int, int]] = []
    while len(stages) < settings.max_stages:
        before = sim.n_simulations
        tolerance = max(
            settings.final_tolerance, float(np.quantile(state.distance, settings.quantile))
        )
        state = _resample_alive(state._replace(tolerance=tolerance), driver)
        state, rate = _rejuvenate(
            state, model, sim, space, driver, settings.move_probability, settings.max_moves
        )
        stages.append(
            (tolerance, rate, sim.n_simulations - before, n_distinct(state.z, state.distance))
        )
        advance(1)
        if tolerance <= settings.final_tolerance or rate < settings.min_acceptance:
            break
    advance(settings.max_stages - len(stages))
    tol, rates, sims, distinct = (np.array(col, dtype=float) for col in zip(*stages, strict=True))
    return ChainRun(
        posterior=state.params,
        sample_stats={"release_distance": state.distance},
        stats={
            "n_simulations": sim.n_simulations,
            "acceptance_rate": float(rates[-1]),
            "last_acceptance_rate": float(rates[-1]),
            "tolerance": float(tol[-1]),
            "n_stages": len(stages),
            "n_distinct": int(distinct[-1]),
        },
        stages={
            "stage_tolerance": tol,
            "stage_acceptance_rate": rates,
            "stage_simulations": sims,
            "stage_n_distinct": distinct,
        },
    )


def _distance(simulated, target) -> np.ndarray:
    diff = np.asarray(simulated, dtype=float) - target
    return np.sqrt(np.sum(diff.reshape(len(diff), -1) ** 2, axis=1))


def _resample_alive(state: _State, driver) -> _State:
    alive = (state.distance <= state.tolerance).astype(float)
    weights = alive / alive.sum()
    return take(state, _weights.systematic_resample(weights, len(alive), driver))


def _rejuvenate(state, model, sim, space, driver, move_probability, max_moves):
    chol = proposal_factor(state.z, np.ones(len(state.z)), space.integer, space.labels)
    accepted, moves, needed = 0, 0, 1
    while moves < needed:
        state, n_acc = _abc_mcmc_move(state, model, sim, space, chol, driver)
        accepted += n_acc
        moves += 1
        if moves == 1:
            needed = moves_needed(accepted / len(state.z), move_probability, max_moves)
    return state, accepted / (moves * len(state.z))


def _abc_mcmc_move(state, model, sim, space, chol, driver):
    n = len(state.z)
    z_new = random_walk(state.z, chol, driver, space.integer)
    params_new, log_jac = space.batch_from_unconstrained(z_new)
    log_prior_new = np.asarray(model.prior.logpdf(params_new), dtype=float) + log_jac
    prior_ok = np.log(driver.random(n)) < log_prior_new - state.log_prior
    dist_new = np.full(n, np.inf)
    if prior_ok.any():
        dist_new[prior_ok] = sim({k: v[prior_ok] for k, v in params_new.items()})
    accept = prior_ok & (dist_new <= state.tolerance)
    return state._replace(
        z=np.where(accept[:, None], z_new, state.z),
        params={k: np.where(expand(accept, v), params_new[k], v) for k, v in state.params.items()},
        log_prior=np.where(accept, log_prior_new, state.log_prior),
        distance=np.where(accept, dist_new, state.distance),
    ), int(accept.sum())
