"""Exact rejection ABC for a DP release (Gong 2022, Algorithm 1)."""

from __future__ import annotations

import math
from concurrent.futures import Executor
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from .. import parallel
from .._progress import progress_bar
from .._rng import RNGLike, as_seed_sequence
from .._validate import MAX_SIZE
from ._common import AbcCall, check_count, stack_draws
from ._precision import warn_if_coarse_release
from .acceptance import (
    Z_PREDICT,
    AcceptanceRate,
    describe,
    from_log_sums,
    log_acceptance,
    log_sums,
)

if TYPE_CHECKING:
    from ..mechanisms.base import Mechanism
    from ..model import Model
    from ..results import InferenceData

__all__ = ["SimulationBudgetExceeded", "rejection_abc"]

REFERENCE = (
    "Gong, R. (2022). Exact inference with approximate computation for differentially "
    "private data via perturbations. Journal of Privacy and Confidentiality 12(2), Algorithm 1."
)


class SimulationBudgetExceeded(RuntimeError):
    """Raised when a sampler reaches ``max_simulations`` before its target, or predicts it would.

    :func:`rejection_abc` raises it as soon as its own proposals predict (even
    optimistically) that the draws cannot be had within the budget; the message
    names the predicted cost. :func:`dpinfer.estimate_acceptance_rate` makes the
    same prediction before a run.
    """


def rejection_abc(
    model: Model,
    mechanism: Mechanism,
    released: ArrayLike,
    *,
    draws: int,
    chains: int = 4,
    rng: RNGLike = None,
    batch_size: int = 100_000,
    max_simulations: int = 10**9,
    executor: Executor | None = None,
    progressbar: bool = True,
) -> InferenceData:
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
        The budget of proposals. The run stops with
        :class:`SimulationBudgetExceeded` past it, and **before** it as soon as
        its own proposals predict that the draws cannot be had within it: after
        every chunk, the acceptance rate is estimated from the acceptance
        probabilities so far (:func:`dpinfer.estimate_acceptance_rate` does the
        same before a run), and even the optimistic cost, at the rate plus four
        standard errors, exceeds the budget. The message names the prediction;
        :func:`dpinfer.smc_abc` and :func:`dpinfer.importance_abc` are the
        samplers for such low-evidence releases.
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
    A count with a Gamma(25) prior, released with Laplace noise at epsilon 0.2;
    about one proposal in six is accepted, as :func:`dpinfer.estimate_acceptance_rate`
    predicts:

    >>> import scipy.stats as st, dpinfer as dp
    >>> model = dp.Model(prior={"theta": st.gamma(25)},
    ...                  simulate=lambda p, rng: rng.poisson(p["theta"]))
    >>> mech = dp.Laplace.from_privacy(epsilon=0.2, sensitivity=1.0)
    >>> idata = dp.rejection_abc(model, mech, 37.4, draws=200, rng=1, progressbar=False)
    >>> idata.posterior["theta"].shape, round(idata.attrs["acceptance_rate"], 2)
    ((4, 50), 0.16)
    """
    call = AbcCall.check(
        "rejection_abc", REFERENCE, model, mechanism, released, ("draws", draws), chains,
        rng=rng, executor=executor, progressbar=progressbar,
    )  # fmt: skip
    released, draws = call.released, call.chains * call.per_chain
    batch_size = check_count("batch_size", batch_size)
    max_simulations = check_count("max_simulations", max_simulations)
    root = as_seed_sequence(rng)
    log_bound = mechanism.log_max_density_at(released)
    warn_if_coarse_release("rejection_abc", mechanism, released, float_simulations=False)

    def task(_, chunk_rng):
        return _rejection_chunk(model, mechanism, released, log_bound, batch_size, chunk_rng)

    accepted, n_sim, n_acc, float_sims = [], 0, 0, False
    log_s1 = log_s2 = -math.inf
    with progress_bar("rejection ABC", total=draws, enabled=progressbar) as bar:
        for chunk in parallel.iter_chunks(task, root, executor=executor):
            accepted.append(chunk)
            n_sim += batch_size
            n_acc += chunk["_n"]
            if chunk["_float"] and mechanism.discrete and not float_sims:
                float_sims = True  # integer families: only float simulations round
                warn_if_coarse_release("rejection_abc", mechanism, released)
            log_s1, log_s2 = np.logaddexp((log_s1, log_s2), chunk["_log_sums"])
            bar.advance(min(chunk["_n"], draws - (n_acc - chunk["_n"])))
            if n_acc >= draws:
                break
            rate = from_log_sums(float(log_s1), float(log_s2), n_sim, log_bound)
            too_many = _log_cheapest(rate, draws - n_acc) > math.log(max_simulations)
            if n_sim >= max_simulations or too_many:
                raise _budget_error(rate, n_acc, draws, max_simulations)

    names = [k for k in accepted[0] if not k.startswith("_")]
    posterior = {k: v[:draws] for k, v in stack_draws(accepted, names).items()}
    accepted_share = n_acc / n_sim
    return call.result(
        posterior,
        root=root,
        n_simulations=n_sim,
        acceptance_rate=accepted_share,
        ess=float(draws),
        log_evidence=math.log(accepted_share) + log_bound if accepted_share > 0 else -math.inf,
        log_max_density=log_bound,
    )


def _rejection_chunk(model, mechanism, released, log_bound, size, rng) -> dict:
    params = model.prior.sample(size, rng)
    log_accept, float_output = log_acceptance(model, mechanism, released, log_bound, params, rng)
    keep = rng.random(size) < np.exp(log_accept)
    out = {name: value[keep] for name, value in params.items()}
    out["_n"] = int(np.count_nonzero(keep))
    out["_log_sums"] = log_sums(log_accept)
    out["_float"] = float_output
    return out


def _budget_error(
    rate: AcceptanceRate, n_acc: int, draws: int, max_simulations: int
) -> SimulationBudgetExceeded:
    n_sim = rate.simulations
    log_cheapest = _log_cheapest(rate, draws - n_acc)
    if n_sim >= max_simulations:
        reached = f"reached max_simulations={max_simulations}"
    else:
        reached = (
            f"stopped after {n_sim:,} simulations: it would exceed max_simulations="
            f"{max_simulations} (even at the rate plus {Z_PREDICT:g} standard errors, the "
            f"draws need at least {describe(log_cheapest)} simulations)"
        )
    tail = (
        " The release is far in the tail of the model's prior predictive."
        if rate.log_rate < math.log(1e-3)
        else ""
    )
    raise_to = (
        f", or raise max_simulations to at least {describe(log_cheapest)}"
        if log_cheapest <= math.log(MAX_SIZE)
        else ""
    )
    return SimulationBudgetExceeded(
        f"rejection_abc {reached}, with {n_acc} of {draws} draws accepted; the {rate}, so "
        f"the expected cost of {draws} draws is about "
        f"{describe(rate.log_expected_simulations(draws))} simulations in all (log evidence "
        f"{rate.log_evidence:.4g}).{tail} Use smc_abc or importance_abc, whose cost does not "
        f"grow with 1 / acceptance rate{raise_to}."
    )


def _log_cheapest(rate: AcceptanceRate, missing: int) -> float:
    """Return the log of the simulations in all for ``missing`` more draws, optimistically."""
    more = rate.log_expected_simulations(missing, z=Z_PREDICT)
    return float(np.logaddexp(math.log(rate.simulations), more))
