"""Exact rejection ABC for a DP release (Gong 2022, Algorithm 1)."""

from __future__ import annotations

import math
from concurrent.futures import Executor

import numpy as np

from .. import parallel
from .._progress import progress_bar
from .._rng import RNGLike, as_seed_sequence
from ._chains import per_chain
from ._common import abc_result, check_count, check_inputs, check_options, stack_draws
from ._precision import density_bound_message, nan_density_message, warn_if_coarse_release

__all__ = ["SimulationBudgetExceeded", "rejection_abc"]

REFERENCE = (
    "Gong, R. (2022). Exact inference with approximate computation for differentially "
    "private data via perturbations. Journal of Privacy and Confidentiality 12(2), Algorithm 1."
)


class SimulationBudgetExceeded(RuntimeError):
    """Raised when a sampler reaches ``max_simulations`` before its target."""


def rejection_abc(
    model,
    mechanism,
    released,
    *,
    draws: int,
    chains: int = 4,
    rng: RNGLike = None,
    batch_size: int = 100_000,
    max_simulations: int = 10**9,
    executor: Executor | None = None,
    progressbar: bool = True,
):
    r"""Draw exactly from the posterior given a DP release, by rejection ABC.

    Each proposal draws ``theta`` from the prior and a confidential statistic
    ``s`` from the model, and is accepted with probability
    ``eta(released | s) / sup_s eta(released | s)``.

    Parameters
    ----------
    model : Model
        Prior and simulator of the confidential statistic.
    mechanism : Mechanism
        The public mechanism that produced the release.
    released : array_like
        The release ``s_dp``, of shape ``mechanism.event_shape``.
    draws : int
        Number of posterior draws to return, over all chains together (rounded
        up to a multiple of ``chains``).
    chains : int, default 4
        The i.i.d. draws, in the order they were accepted, are split into this
        many chains of ``ceil(draws / chains)``, so that ArviZ's R-hat and
        ESS are defined. Splitting costs nothing: i.i.d. blocks are
        independent chains.
    rng : None, int, SeedSequence or Generator, optional
        Seed; the same seed gives the same draws under any executor.
    batch_size : int, default 100_000
        Proposals per chunk; memory is bounded by one chunk per worker.
    max_simulations : int, default 10**9
        Stop with :class:`SimulationBudgetExceeded` past this many proposals.
    executor : concurrent.futures.Executor, optional
        Runs chunks (serially when None).
    progressbar : bool, default True
        Show a progress bar.

    Returns
    -------
    arviz.InferenceData
        ``posterior``: the accepted draws (i.i.d.); ``attrs``: the acceptance
        rate and the evidence estimate ``log(acceptance rate) + log sup eta``.

    Raises
    ------
    RuntimeError
        When the mechanism's log-density exceeds its stated supremum, or is NaN,
        at a simulated value; the message names the cause it can tell (integer
        overflow or float64 rounding at values that large, or a wrong bound).

    Warns
    -----
    PrecisionWarning
        When float64 rounding at the release exceeds 1/100 of the noise scale
        (for the integer families: when the simulator returns floats there), so
        that the densities are rounded by more than 1%
        (:mod:`dpinfer.samplers._precision`).

    Notes
    -----
    Exact (Gong 2022, Theorem 3.1): the accepted ``theta`` are i.i.d. draws from

    .. math:: \pi(\theta \mid s_{dp}) \propto \pi_0(\theta)
              \int \eta(s_{dp} \mid s)\, \pi(s \mid \theta)\, ds,

    because the acceptance probability is the mechanism density itself, scaled
    by its supremum. Nothing is approximate; only Monte Carlo error remains. The
    acceptance rate estimates the evidence ``pi(s_dp) / sup eta`` (Appendix B).

    References
    ----------
    .. [1] Gong, R. (2022). Exact inference with approximate computation for
       differentially private data via perturbations. JPC 12(2).

    Examples
    --------
    >>> import scipy.stats as st, dpinfer as dp
    >>> model = dp.Model(prior={"theta": st.gamma(25)},
    ...                  simulate=lambda p, rng: rng.poisson(p["theta"]))
    >>> mech = dp.Laplace.from_privacy(epsilon=0.2, sensitivity=1.0)
    >>> idata = dp.rejection_abc(model, mech, 37.4, draws=200, rng=1, progressbar=False)
    >>> idata.posterior["theta"].shape
    (4, 50)
    """
    released = check_inputs(model, mechanism, released)
    check_options(rng=rng, executor=executor, progressbar=progressbar)
    chains, per = per_chain("draws", draws, chains)
    draws = chains * per
    batch_size = check_count("batch_size", batch_size)
    max_simulations = check_count("max_simulations", max_simulations)
    root = as_seed_sequence(rng)
    log_bound = mechanism.log_max_density_at(released)
    warn_if_coarse_release("rejection_abc", mechanism, released, float_simulations=False)

    def task(_, chunk_rng):
        return _rejection_chunk(model, mechanism, released, log_bound, batch_size, chunk_rng)

    accepted, n_sim, n_acc, float_sims = [], 0, 0, False
    with progress_bar("rejection ABC", total=draws, enabled=progressbar) as bar:
        for chunk in parallel.iter_chunks(task, root, executor=executor):
            accepted.append(chunk)
            n_sim += batch_size
            n_acc += chunk["_n"]
            if chunk["_float"] and mechanism.discrete and not float_sims:
                float_sims = True  # integer families: only float simulations round
                warn_if_coarse_release("rejection_abc", mechanism, released)
            bar.advance(min(chunk["_n"], draws - (n_acc - chunk["_n"])))
            if n_acc >= draws:
                break
            if n_sim >= max_simulations:
                raise _budget_error(n_acc, n_sim, draws)

    names = [k for k in accepted[0] if k not in ("_n", "_float")]
    posterior = {k: v[:draws] for k, v in stack_draws(accepted, names).items()}
    rate = n_acc / n_sim
    return abc_result(
        posterior,
        chains=chains,
        mechanism=mechanism,
        released=released,
        method="rejection_abc",
        reference=REFERENCE,
        root=root,
        n_simulations=n_sim,
        acceptance_rate=rate,
        ess=float(draws),
        log_evidence=math.log(rate) + log_bound if rate > 0 else -math.inf,
        log_max_density=log_bound,
    )


def _rejection_chunk(model, mechanism, released, log_bound, size, rng) -> dict:
    params = model.prior.sample(size, rng)
    s = model.simulate_checked(params, rng, event_shape=mechanism.event_shape)
    log_density = mechanism.logpdf(released, s)
    if np.any(np.isnan(log_density)):
        raise RuntimeError(nan_density_message(mechanism, log_density, s))
    log_accept = log_density - log_bound
    if np.any(log_accept > 1e-9):
        raise RuntimeError(density_bound_message(mechanism, log_density, log_bound, s))
    keep = rng.random(size) < np.exp(log_accept)
    out = {name: value[keep] for name, value in params.items()}
    out["_n"] = int(np.count_nonzero(keep))
    out["_float"] = s.dtype.kind == "f"
    return out


def _budget_error(n_acc: int, n_sim: int, draws: int) -> SimulationBudgetExceeded:
    rate = n_acc / n_sim
    expected = f"about {draws / rate:.3g} simulations in all" if n_acc else "unknown (none yet)"
    return SimulationBudgetExceeded(
        f"rejection_abc reached max_simulations={n_sim} with {n_acc} of {draws} draws accepted "
        f"(acceptance rate {rate:.3g}); the expected cost of {draws} draws is {expected}. "
        "Raise max_simulations, or use importance_abc or smc_abc for low-evidence releases."
    )
