"""Pieces shared by the SMC samplers: proposals, move counts, particle selection."""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..._parameter_space import ParameterSpace
from ..._progress import progress_bar
from ..._rng import child_sequence, chunk_generator
from .._chains import combine, run_chains
from .._precision import check_covariance
from .._simulate import BatchSimulator


def proposal_factor(z, weights, integer=None, labels=None) -> np.ndarray:
    """Return the Cholesky factor of the random-walk covariance (2.38^2/d times weighted).

    Rows of ``integer`` coordinates are scaled up to a standard deviation of at
    least one, so that their rounded steps (:func:`random_walk`) are not mostly
    zero when the population has collapsed onto a few integers. A covariance
    beyond float64 is refused, naming the column (``labels``) that overflows.
    """
    d = z.shape[1]
    with np.errstate(over="ignore", invalid="ignore"):
        cov = np.atleast_2d(np.cov(z, rowvar=False, aweights=weights))
    check_covariance(cov, z, labels)
    cov = cov + 1e-10 * np.eye(d) * max(1.0, float(np.trace(cov)) / d)
    chol = np.linalg.cholesky(cov * (2.38**2 / d))
    if integer is not None and np.any(integer):
        sd = np.linalg.norm(chol, axis=1)
        chol = chol * np.where(integer & (sd < 1), 1 / np.maximum(sd, 1e-300), 1.0)[:, None]
    return chol


def random_walk(z, chol, driver, integer=None) -> np.ndarray:
    """Propose ``z + L xi``; integer coordinates take the rounded step.

    Rounding a symmetric Gaussian step gives a symmetric integer step, so the
    Metropolis-Hastings ratio needs no proposal term; the integer coordinates
    of ``z`` stay integers.
    """
    step = driver.standard_normal(z.shape) @ chol.T
    if integer is not None and np.any(integer):
        step[:, integer] = np.rint(step[:, integer])
    return z + step


def moves_needed(rate, move_probability, max_moves) -> int:
    """Return how many moves make a particle move with ``move_probability`` at this rate."""
    if rate <= 0:
        return max_moves
    if rate >= 1:
        return 1
    return int(
        min(max_moves, max(1, math.ceil(math.log1p(-move_probability) / math.log1p(-rate))))
    )


def take(state, idx):
    """Select particles ``idx`` from every per-particle field of a state NamedTuple."""

    def pick(value):
        if isinstance(value, dict):
            return {k: v[idx] for k, v in value.items()}
        if isinstance(value, np.ndarray) and value.ndim:
            return value[idx]
        return value

    return state._replace(**{f: pick(getattr(state, f)) for f in state._fields})


def expand(mask, like):
    """Reshape a per-particle mask to broadcast against ``like``."""
    return mask.reshape(mask.shape + (1,) * (np.ndim(like) - 1))


# How the per-chain figures of an SMC sampler combine (see _chains.combine).
COMBINE_RULES = {
    "n_simulations": "sum",
    "acceptance_rate": "mean",
    "n_stages": "max",
    "n_distinct": "sum",
}


def run_smc_chains(sampler, call, run_one, root, *, label, units=1.0, rules=COMBINE_RULES,
                   check_acceptance=True):  # fmt: skip
    """Run the chains of an SMC sampler, combine them and warn about degenerate ones.

    ``call`` (an :class:`~dpinfer.samplers._common.AbcCall`) gives the chains, the
    particles of each, the executor and the progress bar. Returns
    ``(posterior, sample_stats, attrs)`` for its
    :meth:`~dpinfer.samplers._common.AbcCall.result`; the progress bar counts
    ``units`` per chain (temperature, or stages).
    """
    chains, executor = call.chains, call.executor
    with progress_bar(label, total=float(chains * units), enabled=call.progressbar) as bar:
        runs = run_chains(run_one, root, chains, executor=executor, bar=bar, units=units)
    posterior, sample_stats, attrs = combine(runs, rules=rules)
    warn_if_degenerate(sampler, attrs, call.per_chain, check_acceptance=check_acceptance)
    return posterior, sample_stats, attrs


def start_chain(model, mechanism, released, seed, *, particles, batch_size, executor, score=None):
    """Seed one chain: its move driver, its simulator and its prior particles.

    Returns ``(driver, sim, space, z, params, log_prior)``; the generators are
    children ``0`` (simulations), ``1`` (moves, resampling) and ``2`` (the prior
    draw) of the chain's ``seed``.
    """
    driver = np.random.default_rng(child_sequence(seed, 1))
    sim = BatchSimulator(
        model,
        mechanism,
        released,
        child_sequence(seed, 0),
        batch_size=batch_size,
        executor=executor,
        score=score,
    )
    first = initial_particles(model, particles, chunk_generator(child_sequence(seed, 2), 0))
    return driver, sim, *first


def initial_particles(model, n, rng):
    """Draw ``n`` prior particles; return the space, ``z``, parameters and log prior on z."""
    params = model.prior.sample(n, rng)
    space = ParameterSpace.from_prior(model.prior, params)
    z = space.batch_to_unconstrained(params)
    params, log_jac = space.batch_from_unconstrained(z)
    return space, z, params, model.prior.logpdf(params) + log_jac


# Below this many particles per chain the adaptive temperatures (an ESS target of
# ess_fraction x particles) and the moves' population covariance rest on a handful of
# particles, and the result is silently biased; with one particle the covariance is
# undefined.
MIN_PARTICLES_PER_CHAIN = 20

# A population whose distinct particles are fewer than this fraction is degenerate: its
# ESS counts copies of the same particles.
MIN_DISTINCT_FRACTION = 0.25

# Pseudo-marginal moves accepting less often than this have stopped mixing.
MIN_LAST_ACCEPTANCE = 0.005


def check_particles(sampler: str, particles: int, chains: int, per_chain: int) -> None:
    """Refuse fewer than :data:`MIN_PARTICLES_PER_CHAIN` particles per chain."""
    if per_chain < MIN_PARTICLES_PER_CHAIN:
        raise ValueError(
            f"{sampler} needs at least {MIN_PARTICLES_PER_CHAIN} particles per chain, got "
            f"particles={particles} over chains={chains} ({per_chain} per chain): with fewer, "
            "the adaptive temperatures and the moves' covariance rest on a handful of "
            f"particles and the result is badly biased. Pass particles >= "
            f"{MIN_PARTICLES_PER_CHAIN * chains}, or fewer chains."
        )


def n_distinct(z: np.ndarray, simulation=None) -> int:
    """Return the number of distinct particles: rows of ``z``, with their ``simulation``.

    A particle lives on the extended space ``(theta, s)``: with a discrete
    parameter many distinct particles share ``theta``, and only a copy left by
    resampling shares its simulation too (given as any per-particle summary of
    it, such as its mechanism log-density).
    """
    if simulation is not None:
        z = np.column_stack([z, np.asarray(simulation, dtype=float).reshape(len(z), -1)])
    return len(np.unique(z, axis=0))


def warn_if_degenerate(sampler: str, attrs: dict, n: int, *, check_acceptance=True) -> None:
    """Warn when a chain's final population, or one of its stages, is degenerate.

    With very little mechanism noise the pseudo-marginal moves stop accepting
    (a particle's lucky simulation is hard to beat) and the population
    collapses onto a few particles; the ESS of the weights does not show it.
    ``attrs`` are the combined chain records (``chain_n_distinct``,
    ``chain_last_acceptance_rate``, ``stage_n_distinct``, ``stage_chain``).
    Called through :func:`run_smc_chains` from a sampler: ``stacklevel=4``
    points the warning at the user's call.
    """
    floor = MIN_DISTINCT_FRACTION * n
    final = attrs["chain_n_distinct"]
    last = attrs["chain_last_acceptance_rate"]
    stuck = (final < floor) | ((last < MIN_LAST_ACCEPTANCE) if check_acceptance else False)
    if np.any(stuck):
        chains = np.flatnonzero(stuck)
        detail = ", ".join(
            f"chain {c}: {final[c]} distinct of {n}, last move acceptance {last[c]:.3g}"
            for c in chains
        )
        warnings.warn(
            f"{sampler}: the final population is degenerate ({detail}); its Monte Carlo error "
            "is much larger than the ESS suggests. Use more particles or max_moves, several "
            "simulations per particle (smc_abc's simulations_per_particle) or a PyMC "
            "reference when the mechanism noise is small.",
            RuntimeWarning,
            stacklevel=4,
        )
        return
    few = np.flatnonzero(attrs["stage_n_distinct"] < floor)
    if few.size:
        chain, counts = attrs["stage_chain"][few], attrs["stage_n_distinct"][few]
        starts = np.searchsorted(attrs["stage_chain"], chain)
        shown = ", ".join(
            f"chain {c} stage {i - s + 1}: {int(k)} of {n}"
            for c, i, s, k in list(zip(chain, few, starts, counts, strict=True))[:3]
        )
        warnings.warn(
            f"{sampler}: {few.size} stage(s) ended with fewer than {MIN_DISTINCT_FRACTION:.0%} "
            f"of their particles distinct ({shown}{', ...' if few.size > 3 else ''}); the "
            "ESS that chose the next stage counted copies. Use more particles or max_moves.",
            RuntimeWarning,
            stacklevel=4,
        )
