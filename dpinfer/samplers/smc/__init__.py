"""Exact SMC-ABC for a DP release: tempering the mechanism density (pseudo-marginal)."""

from __future__ import annotations

import math
from concurrent.futures import Executor
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Literal, NamedTuple

import numpy as np
import scipy.optimize as so
from numpy.typing import ArrayLike
from scipy.special import logsumexp

from ... import _validate
from ..._rng import RNGLike, as_seed_sequence
from .. import _mcse, _weights
from .._chains import ChainRun
from .._common import AbcCall, check_count
from .._precision import warn_if_coarse_release, warn_if_unresolved_log_weights
from . import _pilot
from . import _pseudo_marginal as _pm
from ._particles import COMBINE_RULES as SMC_RULES
from ._particles import (
    check_particles,
    expand,
    moves_needed,
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

__all__ = ["smc_abc"]

REFERENCE = (
    "Gong, R. (2022). Exact inference with approximate computation for differentially "
    "private data via perturbations. JPC 12(2), Section 3 (SMC variant); tempering and "
    "adaptive moves after Del Moral, Doucet & Jasra (2006, 2012)."
)


class SMCState(NamedTuple):
    """Particles on the extended space (theta, s), tempered at ``lam``."""

    z: np.ndarray  # (n, d) unconstrained parameters
    params: dict  # constrained parameters
    log_prior: np.ndarray  # log prior density on the z scale (with Jacobian)
    log_lik: np.ndarray  # log eta(released | s) of each particle's own simulation
    log_weight: np.ndarray  # normalised log weights
    lam: float
    ident: np.ndarray  # a particle's identity: shared by resampled copies, new on a move
    lineage: np.ndarray  # the initial particle it descends from (moves keep it)
    m: int = 1  # simulations per particle: log_lik is the log of their mean density


class StageInfo(NamedTuple):
    """What one tempering stage did; every field becomes a per-stage record."""

    lam: float
    ess: float
    resampled: bool
    acceptance_rate: float
    n_moves: int
    n_simulations: int
    n_distinct: int
    log_evidence_increment: float


@dataclass(frozen=True)
class _Settings:
    """The options of one SMC chain (validated)."""

    particles: int
    ess_fraction: float
    resample_fraction: float
    move_probability: float
    max_moves: int
    max_stages: int
    batch_size: int
    simulations_per_particle: int | str


def smc_abc(
    model: Model,
    mechanism: Mechanism,
    released: ArrayLike,
    *,
    particles: int = 2000,
    chains: int = 4,
    rng: RNGLike = None,
    ess_fraction: float = 0.5,
    resample_fraction: float = 0.5,
    move_probability: float = 0.99,
    max_moves: int = 30,
    max_stages: int = 500,
    simulations_per_particle: int | Literal["auto"] = 1,
    batch_size: int = 100_000,
    executor: Executor | None = None,
    progressbar: bool = True,
) -> InferenceData:
    r"""Sample the exact posterior given a DP release by tempered, pseudo-marginal SMC.

    Stage targets are :math:`\pi_\lambda(\theta, s) \propto \pi_0(\theta)\,
    \pi(s \mid \theta)\, \eta(s_{dp} \mid s)^\lambda` on the extended space,
    with :math:`\lambda` rising from 0 to 1. Each particle keeps one simulated
    ``s``; reweighting multiplies by :math:`\eta^{\lambda' - \lambda}`, the next
    :math:`\lambda'` is chosen so the conditional ESS is ``ess_fraction``
    of the particles, and rejuvenation uses Metropolis-Hastings moves that
    propose ``theta*`` by a Gaussian random walk (covariance adapted to the
    population, on an unconstrained scale with its Jacobian) together with a
    fresh ``s* ~ pi(s | theta*)``; integer parameters (a discrete prior such
    as ``scipy.stats.randint``) take the rounded step, a symmetric integer
    random walk scaled from the population (at least one integer per standard
    deviation), and keep their integer dtype. ``chains`` independent SMC runs are made, as
    PyMC's ``sample_smc`` does, so that R-hat compares them.

    Parameters
    ----------
    model, mechanism, released
        As in :func:`rejection_abc`.
    particles : int, default 2000
        Number of particles over all chains together (and of posterior draws);
        each chain runs ``ceil(particles / chains)``, which must be at least
        ``MIN_PARTICLES_PER_CHAIN`` (20).
    chains : int, default 4
        Independent SMC runs (the chains of the result).
    rng : seed, optional
        The same seed gives the same result under any executor.
    ess_fraction : float, default 0.5
        Target conditional ESS fraction when choosing the next temperature.
    resample_fraction : float, default 0.5
        Resample (systematically) when the ESS falls below this fraction.
    move_probability : float, default 0.99
        Moves per stage are repeated until a particle has moved with this
        probability, given the observed acceptance rate (at most ``max_moves``).
    max_moves, max_stages : int
        Caps on moves per stage and on stages.
    simulations_per_particle : int, default 1
        Simulations ``m`` behind each particle: it carries the mean of their
        mechanism densities, an unbiased estimate of the likelihood of the
        release (a pseudo-marginal target, still exact; see Notes). When the
        mechanism noise is small next to the spread of the statistic, one
        simulation per particle leaves the moves stuck; on the Normal-mean
        example of ``benchmarks/small_noise_smc.py`` ``m = 4`` at epsilon =
        100 and ``m = 16`` to ``64`` at epsilon = 1000 give 3 to 25 times the
        ESS of ``m = 1`` at equal or better ESS per simulation (and far better
        per CPU second, as the simulations are batched).
        ``"auto"`` chooses ``m`` by a pilot: one cheap chain (at most 200
        particles, from its own child of the seed) per ``m = 1, 2, 4, ...``
        until its last stage's move acceptance reaches
        :math:`1 - (1 - p)^{1/M}` (``p = move_probability``,
        ``M = max_moves``: 0.142 with the defaults, the rate at which the
        move budget moves a particle with probability ``p``), at most 64 (a
        warning says when 64 falls short). The run then uses that ``m`` fixed:
        it is the run ``simulations_per_particle=m`` gives with the same seed,
        and its reported error is as honest; the pilot's simulations are added
        to ``n_simulations``. On the benchmark's example it chose ``m = 1``,
        4, 32 to 64 and 64 (the cap) at epsilon = 1, 10, 100 and 1000, with
        the real error 0.91 to 1.06 times the reported one, but a well chosen
        fixed ``m`` did as well for fewer simulations and less CPU time at
        every epsilon (auto costs a pilot, and its target acceptance asks
        for more simulations than the ESS needs at epsilon = 10).
    batch_size : int, default 100_000
        Simulations per chunk.
    executor : concurrent.futures.Executor, optional
        With several chains, each chain is one task on the executor; with one
        chain, its simulation chunks are.
    progressbar : bool, default True
        Show a progress bar.

    Returns
    -------
    arviz.InferenceData
        ``posterior``: ``chains`` chains of equally weighted final particles;
        ``sample_stats``: each particle's ``log_mechanism_density`` and
        ``lineage`` (the initial particle of its chain it descends from through
        resampling; moves keep it). ``attrs``
        (the ESS figures are explained in :mod:`dpinfer.results`):
        ``log_evidence``, the log of the mean of the chains' evidence
        estimates; ``ess_sampler`` (the lineage estimate of the error of the
        posterior means, or the between-chain one, as ``ess_method`` says),
        ``ess_kish`` (the sum of the chains' last Kish ESS); per chain,
        ``chain_log_evidence``, ``chain_ess``,
        ``chain_n_simulations``, ``chain_n_stages``, ``chain_n_distinct``
        (distinct final particles: copies left by resampling count once, a
        particle that has moved since counts anew, even when a discrete
        parameter takes a value another particle holds) and ``chain_acceptance_rate``; over all
        chains, ``n_stages`` (the most of any chain), ``n_distinct`` and
        ``n_simulations``; per-stage arrays concatenated over the chains, with
        ``stage_chain`` naming the chain: ``stage_lam``, ``stage_ess``,
        ``stage_resampled``, ``stage_acceptance_rate``, ``stage_n_moves``,
        ``stage_n_simulations``, ``stage_n_distinct`` and
        ``stage_log_evidence_increment``.
        ``simulations_per_particle``, the ``m`` used; with ``"auto"``, also
        ``pilot_simulations_per_particle`` (the counts tried),
        ``pilot_acceptance_rate`` (each pilot's last-stage move acceptance),
        ``pilot_log_density_variance`` (the variance of the log averaged
        density at each pilot's final particles, which Doucet et al. (2015)
        advise to keep near 1 to 2 in pseudo-marginal MCMC),
        ``pilot_target_acceptance`` and ``pilot_n_simulations`` (included in
        ``n_simulations``, not in ``chain_n_simulations``).

    Raises
    ------
    ValueError
        When the particles are so spread out that their covariance (the
        random-walk proposal) overflows float64; the message names the parameter.

    Warns
    -----
    RuntimeWarning
        With ``simulations_per_particle="auto"``, when the pilot's acceptance
        is still below its target at the largest ``m`` it tries.
    RuntimeWarning
        When a chain's final population, or a stage, keeps fewer than a
        quarter of its particles distinct (or the last moves accept under
        0.5%): its ESS then counts copies, and the Monte Carlo error is much
        larger than the ESS suggests.
    PrecisionWarning
        As in :func:`importance_abc`, with the final particles' log mechanism
        densities in place of the log weights.

    Notes
    -----
    At :math:`\lambda = 1` the extended target's :math:`\theta`-marginal is
    :math:`\pi(\theta \mid s_{dp}) \propto \pi_0(\theta) \int \eta(s_{dp} \mid s)
    \pi(s \mid \theta) ds`: the final population targets the exact posterior
    (the moves are pseudo-marginal MH kernels invariant for each stage target,
    and the incremental weights are exact ratios of consecutive targets). The
    With ``m`` simulations per particle the extended space holds all of them
    and :math:`\eta` is replaced by their averaged density
    :math:`\hat L_m = m^{-1} \sum_j \eta(s_{dp} \mid s_j)`; its expectation is
    the likelihood, so the :math:`\theta`-marginal at :math:`\lambda = 1` is
    unchanged. The
    product of the mean incremental weights is an unbiased estimate of the
    evidence :math:`\pi(s_{dp})` in each chain, and so is their mean over the
    independent chains.

    References
    ----------
    .. [1] Gong, R. (2022). JPC 12(2), Section 3.
    .. [2] Del Moral, P., Doucet, A. and Jasra, A. (2012). An adaptive sequential
       Monte Carlo method for approximate Bayesian computation. Stat. Comput.
    .. [3] Andrieu, C. and Roberts, G. O. (2009). The pseudo-marginal approach
       for efficient Monte Carlo computations. Ann. Statist.

    Examples
    --------
    The release of :func:`rejection_abc`'s example, by 500 particles in four SMC
    chains, each with its own estimate of the evidence:

    >>> import scipy.stats as st, dpinfer as dp
    >>> model = dp.Model(prior={"theta": st.gamma(25)},
    ...                  simulate=lambda p, rng: rng.poisson(p["theta"]))
    >>> mech = dp.Laplace.from_privacy(epsilon=0.2, sensitivity=1.0)
    >>> idata = dp.smc_abc(model, mech, 37.4, particles=500, rng=1, progressbar=False)
    >>> idata.posterior["theta"].shape
    (4, 125)
    >>> idata.attrs["chain_log_evidence"].shape
    (4,)
    """
    call = AbcCall.check(
        "smc_abc", REFERENCE, model, mechanism, released, ("particles", particles), chains,
        rng=rng, executor=executor, progressbar=progressbar,
    )  # fmt: skip
    released, chains, n = call.released, call.chains, call.per_chain
    check_particles("smc_abc", particles, chains, n)
    for name, value in (
        ("ess_fraction", ess_fraction),
        ("resample_fraction", resample_fraction),
        ("move_probability", move_probability),
    ):
        _validate.probability_open(name, value)
    settings = _Settings(
        n,
        ess_fraction,
        resample_fraction,
        move_probability,
        check_count("max_moves", max_moves),
        check_count("max_stages", max_stages),
        check_count("batch_size", batch_size),
        _pilot.check_count_option(simulations_per_particle),
    )
    if not model.require_prior("smc_abc").has_logpdf:
        raise ValueError("smc_abc needs a prior with a logpdf (pass logpdf= to a callable Prior)")
    root = as_seed_sequence(rng)
    warn_if_coarse_release("smc_abc", mechanism, released, float_simulations=False)
    pilot_attrs = {}
    if settings.simulations_per_particle == "auto":
        pilot = _pilot.choose_by_pilot(
            partial(_run_chain, model, mechanism, released), model, mechanism, released,
            settings, root, executor,
        )  # fmt: skip
        settings = replace(settings, simulations_per_particle=pilot.chosen)
        pilot_attrs = pilot.attrs()
    posterior, sample_stats, attrs = run_smc_chains(
        "smc_abc",
        call,
        partial(_run_chain, model, mechanism, released, settings),
        root,
        label=f"SMC-ABC ({chains} chains, lambda)",
        rules=COMBINE_RULES,
    )
    float_simulations = bool(np.any(attrs.pop("chain_float_simulations")))
    if mechanism.discrete and float_simulations:
        warn_if_coarse_release("smc_abc", mechanism, released)  # only float simulations round
    warn_if_unresolved_log_weights(
        "smc_abc", sample_stats["log_mechanism_density"], "final log mechanism density"
    )
    by_chain = {k: v.reshape(chains, n, *v.shape[1:]) for k, v in posterior.items()}
    attrs["ess_kish"] = attrs.pop("ess")
    attrs["n_simulations"] += pilot_attrs.get("pilot_n_simulations", 0)
    attrs.update(pilot_attrs)
    attrs["ess"], attrs["ess_method"] = _mcse.smc_ess(
        _mcse.columns_by_chain(by_chain),
        sample_stats["lineage"].reshape(chains, n),
        attrs["stage_chain"],
        attrs["stage_resampled"],
    )
    return call.result(posterior, sample_stats=sample_stats, root=root, **attrs)


# How the per-chain figures combine; the ESS of independent chains adds up, and the mean
# of the chains' unbiased evidence estimates is unbiased.
COMBINE_RULES = {
    **SMC_RULES,
    "log_evidence": "logmeanexp",
    "ess": "sum",
    "simulations_per_particle": "max",
}


def _run_chain(model, mechanism, released, settings, seed, executor, advance) -> ChainRun:
    """One SMC run from its own seed: tempering from lambda = 0 to 1, then resampling."""
    n = settings.particles
    driver, sim, space, z, params, log_prior = start_chain(
        model,
        mechanism,
        released,
        seed,
        particles=n,
        batch_size=settings.batch_size,
        executor=executor,
    )
    state = SMCState(
        z,
        params,
        log_prior,
        _pm.averaged_log_density(sim, params, settings.simulations_per_particle),
        np.full(n, -math.log(n)),
        0.0,
        np.arange(n),
        np.arange(n),
        settings.simulations_per_particle,
    )
    infos: list[StageInfo] = []
    while state.lam < 1:
        if len(infos) >= settings.max_stages:
            raise RuntimeError(f"smc_abc did not reach lambda = 1 in {settings.max_stages} stages")
        before = state.lam
        state, info = _step(state, model, sim, space, driver, settings)
        infos.append(info)
        advance(state.lam - before)

    index = _weights.systematic_resample(np.exp(state.log_weight), n, driver)
    stages = {f"stage_{k}": np.array([getattr(i, k) for i in infos]) for k in StageInfo._fields}
    return ChainRun(
        posterior={k: v[index] for k, v in state.params.items()},
        sample_stats={
            "log_mechanism_density": state.log_lik[index],
            "lineage": state.lineage[index],
        },
        stats={
            "n_simulations": sim.n_simulations,
            "log_evidence": float(stages["stage_log_evidence_increment"].sum()),
            # the last reweighting's ESS: the final resampled draws are worth at most this
            "ess": float(stages["stage_ess"][-1]),
            "acceptance_rate": float(np.mean(stages["stage_acceptance_rate"])),
            "last_acceptance_rate": float(stages["stage_acceptance_rate"][-1]),
            "n_stages": len(infos),
            "n_distinct": len(np.unique(state.ident[index])),
            "simulations_per_particle": state.m,
            "float_simulations": sim.float_output,
        },
        stages=stages,
    )


def _step(state, model, sim, space, driver, settings) -> tuple[SMCState, StageInfo]:
    n = len(state.z)
    lam = _next_lambda(state.log_weight, state.log_lik, state.lam, settings.ess_fraction * n)
    increment = _tempered(state.log_lik, lam - state.lam)
    log_z = float(logsumexp(state.log_weight + increment))
    log_w = state.log_weight + increment - log_z
    state = state._replace(log_weight=log_w, lam=lam)
    ess = _weights.ess(log_w)
    # The ESS lands on ess_fraction * n up to round-off; with the default
    # ess_fraction == resample_fraction the decision must not hinge on the last digit.
    resampled = ess < settings.resample_fraction * n * (1 + 1e-9) or lam == 1.0
    if resampled:
        idx = _weights.systematic_resample(np.exp(log_w), n, driver)
        state = take(state, idx)._replace(log_weight=np.full(n, -math.log(n)))
    sims_before = sim.n_simulations
    state, rate, moves = _rejuvenate(
        state, model, sim, space, driver, settings.move_probability, settings.max_moves
    )
    return state, StageInfo(
        lam,
        ess,
        resampled,
        rate,
        moves,
        sim.n_simulations - sims_before,
        len(np.unique(state.ident)),
        log_z,
    )


def _rejuvenate(state, model, sim, space, driver, move_probability, max_moves):
    chol = proposal_factor(state.z, np.exp(state.log_weight), space.integer, space.labels)
    accepted, moves, needed = 0, 0, 1
    while moves < needed:
        state, n_acc = _mh_move(state, model, sim, space, chol, driver)
        accepted += n_acc
        moves += 1
        rate = accepted / (moves * len(state.z))
        if moves == 1:
            needed = moves_needed(rate, move_probability, max_moves)
    return state, accepted / (moves * len(state.z)), moves


def _mh_move(state, model, sim, space, chol, driver):
    n = len(state.z)
    z_new = random_walk(state.z, chol, driver, space.integer)
    params_new, log_jac = space.batch_from_unconstrained(z_new)
    log_prior_new = np.asarray(model.prior.logpdf(params_new), dtype=float) + log_jac
    log_lik_new = np.full(n, -np.inf)
    alive = np.isfinite(log_prior_new)
    if alive.any():
        alive_params = {k: v[alive] for k, v in params_new.items()}
        log_lik_new[alive] = _pm.averaged_log_density(sim, alive_params, state.m)
    with np.errstate(invalid="ignore"):
        log_ratio = (log_prior_new + _tempered(log_lik_new, state.lam)) - (
            state.log_prior + _tempered(state.log_lik, state.lam)
        )
    accept = np.log(driver.random(n)) < np.nan_to_num(log_ratio, nan=-np.inf)
    params = {k: np.where(expand(accept, v), params_new[k], v) for k, v in state.params.items()}
    new = state._replace(
        z=np.where(accept[:, None], z_new, state.z),
        params=params,
        log_prior=np.where(accept, log_prior_new, state.log_prior),
        log_lik=np.where(accept, log_lik_new, state.log_lik),
        ident=np.where(accept, state.ident.max() + 1 + np.arange(n), state.ident),
    )
    return new, int(accept.sum())


def _next_lambda(log_w, log_lik, lam, target) -> float:
    """Largest step whose conditional ESS stays at ``target`` (bisection on the increment)."""
    if not np.any(np.isfinite(log_lik[np.isfinite(log_w)])):
        raise ValueError(
            "every particle's simulation has zero mechanism density at the release: "
            "the release is impossible under the sampled parameters"
        )

    def cess_gap(delta):
        inc = _tempered(log_lik, delta)
        num = 2 * logsumexp(log_w + inc)
        den = logsumexp(log_w + 2 * inc)
        return math.exp(num - den) * len(log_w) - target

    remaining = 1.0 - lam
    if cess_gap(remaining) >= 0:
        return 1.0
    delta = so.brentq(cess_gap, 0.0, remaining, xtol=1e-12)
    return min(1.0, lam + max(delta, 1e-12))


def _tempered(log_lik, power):
    """``power * log_lik`` with ``0 * -inf = 0`` (no tempering means no information)."""
    if power == 0:
        return np.zeros_like(log_lik)
    return power * log_lik
