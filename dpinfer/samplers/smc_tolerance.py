"""Tolerance-based SMC-ABC on simulated releases: an approximate baseline."""

from __future__ import annotations

import math
from concurrent.futures import Executor
from typing import NamedTuple

import numpy as np

from .. import _validate
from .._progress import progress_bar
from .._rng import RNGLike, as_seed_sequence, child_sequence, chunk_generator
from . import _weights
from ._common import abc_result, check_count, check_inputs
from ._simulate import BatchSimulator
from ._smc_kernels import expand, initial_particles, moves_needed, proposal_factor, take

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


def tolerance_smc_abc(
    model,
    mechanism,
    released,
    *,
    particles: int = 2000,
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
):
    r"""Approximate SMC-ABC with a shrinking tolerance on the release distance.

    Each particle simulates ``s`` and then a release ``s~ = mechanism.release(s)``;
    a particle is alive when ``||s~ - released||_2 <= tolerance``. The tolerance
    shrinks to the ``quantile`` of the alive particles' distances each stage,
    with resampling and ABC-MCMC moves, until it reaches ``final_tolerance``
    or the move acceptance rate falls below ``min_acceptance``.

    This is **approximate**: it targets the ABC posterior at the final
    tolerance, not the exact posterior. It is here as the baseline of Xiong,
    Ju & Zhang (2023); use :func:`smc_abc` for exact inference.

    Parameters
    ----------
    model, mechanism, released
        As in :func:`smc_abc`.
    particles : int, default 2000
        Number of particles.
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
        ``posterior``: the final (equally weighted) particles; ``attrs``:
        ``tolerance`` and per-stage ``stage_tolerance``, ``stage_acceptance_rate``
        and ``stage_simulations``.
    """
    released = check_inputs(model, mechanism, released)
    n = check_count("particles", particles)
    final = _validate.non_negative("final_tolerance", final_tolerance)
    _validate.probability_open("quantile", quantile)
    _validate.probability_open("min_acceptance", min_acceptance)
    _validate.probability_open("move_probability", move_probability)
    max_moves = check_count("max_moves", max_moves)
    max_stages = check_count("max_stages", max_stages)
    if not model.prior.has_logpdf:
        raise ValueError("tolerance_smc_abc needs a prior with a logpdf")
    root = as_seed_sequence(rng)
    driver = np.random.default_rng(child_sequence(root, 1))
    target = np.asarray(released, dtype=float)

    def score(s, rng):
        return _distance(mechanism.release(s, rng=rng), target)

    sim = BatchSimulator(
        model,
        mechanism,
        released,
        child_sequence(root, 0),
        batch_size=check_count("batch_size", batch_size),
        executor=executor,
        score=score,
    )
    space, z, params, log_prior = initial_particles(
        model, n, chunk_generator(child_sequence(root, 2), 0)
    )
    state = _State(z, params, log_prior, sim(params), math.inf)

    stages = []
    with progress_bar("tolerance SMC-ABC (stages)", total=max_stages, enabled=progressbar) as bar:
        while len(stages) < max_stages:
            before = sim.n_simulations
            tolerance = max(final, float(np.quantile(state.distance, quantile)))
            state = _resample_alive(state._replace(tolerance=tolerance), driver)
            state, rate = _rejuvenate(
                state, model, sim, space, driver, move_probability, max_moves
            )
            stages.append((tolerance, rate, sim.n_simulations - before))
            bar.advance(1)
            if tolerance <= final or rate < min_acceptance:
                break

    tol, rates, sims = (np.array(col, dtype=float) for col in zip(*stages, strict=True))
    return abc_result(
        state.params,
        sample_stats={"release_distance": state.distance},
        mechanism=mechanism,
        released=released,
        method="tolerance_smc_abc (approximate)",
        reference=REFERENCE,
        root=root,
        n_simulations=sim.n_simulations,
        acceptance_rate=float(rates[-1]),
        ess=float(n),
        log_evidence=math.nan,
        tolerance=float(tol[-1]),
        stage_tolerance=tol,
        stage_acceptance_rate=rates,
        stage_simulations=sims,
    )


def _distance(simulated, target) -> np.ndarray:
    diff = np.asarray(simulated, dtype=float) - target
    return np.sqrt(np.sum(diff.reshape(len(diff), -1) ** 2, axis=1))


def _resample_alive(state: _State, driver) -> _State:
    alive = (state.distance <= state.tolerance).astype(float)
    weights = alive / alive.sum()
    return take(state, _weights.systematic_resample(weights, len(alive), driver))


def _rejuvenate(state, model, sim, space, driver, move_probability, max_moves):
    chol = proposal_factor(state.z, np.ones(len(state.z)))
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
    z_new = state.z + driver.standard_normal(state.z.shape) @ chol.T
    params_new, log_jac = space.unflatten(z_new)
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
