r"""Likelihood inference from a DP release: Monte Carlo EM and Louis information.

Gong (2022), Section 4: the release ``s_dp`` is the observed data, the
confidential statistic ``s`` the missing data. EM (Algorithm 2) alternates an
E-step, here by importance sampling (Algorithm 3: simulate ``s_i`` from the
confidential model at ``theta_t``, weight by the mechanism density
``eta(s_dp | s_i)``), with an M-step in closed form for exponential families
(4.2-4.3) or by numerical maximisation of ``Q-hat`` (4.5). At the estimate the
observed score (4.6) and Louis' observed information (4.7) give standard
errors that account for the privacy noise.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Mapping
from concurrent.futures import Executor
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from ... import _validate
from ..._progress import progress_bar
from ..._rng import RNGLike, as_seed_sequence, seed_entropy
from ...likelihood import Likelihood, needs_message
from .._common import check_count, check_inputs, check_options, privacy_attrs
from . import _boundary, _estep, _health, _mstep
from ._estep import Means, WeightedSample, make_draw
from ._health import MCEMConvergenceWarning
from ._profile import ProfileIntervals, ProfileWarning
from ._result import MCEMResult, _FitContext
from ._schedule import AscentSchedule, StagedSchedule, as_schedule

MCEMResult.__module__ = __name__  # its home for pickles and documentation

if TYPE_CHECKING:
    from ...mechanisms.base import Mechanism
    from ...model import Model

__all__ = [
    "BoundaryEstimateWarning",
    "MCEMConvergenceWarning",
    "MCEMInfo",
    "MCEMResult",
    "MCEMState",
    "ProfileIntervals",
    "ProfileWarning",
    "mcem",
]

_NO_Q = (math.nan, math.nan)  # no Q increase when the M-step lands on a bound


class BoundaryEstimateWarning(UserWarning):
    """The MLE lies on the boundary of the parameter space: no Wald interval applies."""


REFERENCE = (
    "Gong, R. (2022). Exact inference with approximate computation for differentially "
    "private data via perturbations. Journal of Privacy and Confidentiality 12(2), Section 4, "
    "Algorithms 2-3, eqs. (4.2)-(4.7), Appendices C-E."
)


class MCEMState(NamedTuple):
    """Where Monte Carlo EM stands: the parameter, the stage and the next sample size."""

    theta: np.ndarray
    iteration: int
    stage: int
    stage_iteration: int
    size: int


class MCEMInfo(NamedTuple):
    """What one EM iteration did; every field becomes a variable of ``MCEMResult.trace``."""

    theta: np.ndarray
    n_simulations: int
    ess: float
    q_increase: float
    q_increase_se: float
    step: float
    stage: int
    limit_cycle: bool


# ----------------------------------------------------------------------------------------
def mcem(
    model: Model,
    mechanism: Mechanism,
    released: ArrayLike,
    *,
    start: Mapping[str, ArrayLike],
    rng: RNGLike = None,
    schedule: str | StagedSchedule | AscentSchedule = "auto",
    mstep: str = "auto",
    accelerate: bool = False,
    batch_size: int = 100_000,
    executor: Executor | None = None,
    progressbar: bool = True,
) -> MCEMResult:
    r"""Maximum likelihood estimate from a DP release by Monte Carlo EM, with Louis errors.

    Parameters
    ----------
    model : Model
        Simulator of the confidential statistic, with a likelihood
        (:class:`dpinfer.Likelihood`: from PyMC by automatic differentiation,
        via :meth:`Model.from_pymc` or ``Model(..., likelihood=...)``, or from
        user callables with score and Hessian). The prior is not used and
        may be None (``dp.Model(simulate=..., likelihood=...)``).
    mechanism : Mechanism
        The public mechanism that produced the release.
    released : array_like
        The release ``s_dp``, of shape ``mechanism.event_shape``.
    start : dict
        Starting parameter value, inside the parameter support.
    rng : None, int, SeedSequence or Generator, optional
        Seed; the same seed gives the same result under any executor.
    schedule : {"auto", "staged"} or schedule object, default "auto"
        ``"auto"``, the default: ascent-based sample sizes
        (:class:`AscentSchedule`), which start at ``10^3`` simulations and
        grow only when the Monte Carlo error hides EM's progress, so small
        problems take a second or two: on Gong's Poisson example several to
        tens of times fewer simulations than the staged schedule for the
        same estimate (``benchmarks/mcem_poisson.py``), on a two-parameter
        survey release 1 to 3 CPU seconds and 1 to 2 million simulations,
        10^6 of them the information pass (``benchmarks/mcem_survey.py``).
        ``"staged"``: Gong's Appendix E stages (:class:`StagedSchedule`:
        ``10^3``, ``10^5`` then ``10^7`` simulations per E-step), to
        reproduce the paper.
    mstep : {"auto", "exponential", "general"}, default "auto"
        ``"exponential"``: closed form from the weighted mean of the
        sufficient statistic (4.3), needs ``likelihood.exponential_family``;
        ``"general"``: maximise ``Q-hat`` (4.5) numerically with exact
        gradient and Hessian; ``"auto"``: exponential when declared.
    accelerate : bool, default False
        After each M-step, also try the Newton step ``theta + I_obs^-1 score``
        with the Louis information on the same sample, and keep whichever of
        the two has the larger estimated likelihood (see Notes). For slow EM
        (a large fraction of missing information); with ``schedule="staged"``
        only.
    batch_size : int, default 100_000
        Simulations per chunk; memory is bounded by a few chunks.
    executor : concurrent.futures.Executor, optional
        Runs the simulation chunks (serially when None).
    progressbar : bool, default True
        Show a progress bar.

    Returns
    -------
    MCEMResult

    Notes
    -----
    Exact target, approximate computation: the likelihood maximised is the
    exact observed-data likelihood of the release,
    :math:`\pi(s_{dp} \mid \theta) = \int \eta(s_{dp} \mid s)\, \pi(s \mid \theta)\, ds`,
    because the E-step's weights are the mechanism density itself (the
    mechanism is ignorable for :math:`\theta`). Only Monte Carlo error
    remains, reported as ``monte_carlo_se``. With normalised weights
    :math:`\tilde w_i \propto \eta(s_{dp} \mid s_i)`,
    :math:`\lambda_i = \nabla_\theta \log \pi(s_i \mid \theta)`:

    .. math::

        \text{score} &= \textstyle\sum_i \tilde w_i \lambda_i, \qquad
        \text{ESS} = 1 / \textstyle\sum_i \tilde w_i^2, \\
        I_{obs} &= \textstyle\sum_i \tilde w_i \{-\nabla_\theta \lambda_i
                   - \lambda_i \lambda_i^\top\}
                   + \text{score}\,\text{score}^\top.

    EM converges linearly, at the rate of the largest fraction of missing
    information (``MCEMResult.fraction_missing_information``); when the noise
    swamps the statistic (0.93 for Lalonde's means) that takes hundreds of
    iterations. ``accelerate=True`` adds the Newton step that Gong suggests
    (end of Section 4; Louis 1982), chosen only when the importance estimate
    of the likelihood ratio :math:`\sum_i \tilde w_i \pi(s_i \mid \theta')
    / \pi(s_i \mid \theta_t)` prefers it to the EM update; the fixed point
    (score zero) is the same, but the trace's Q increase may then be negative.

    When the likelihood keeps rising toward a finite end of a parameter's
    support, the MLE is that bound: EM stops there (or the score at its last
    iterate points to the bound, less than 0.01 standard errors away), the
    estimate is reported as
    the bound, listed in ``MCEMResult.at_boundary``, without standard error or
    Wald interval, and a :class:`BoundaryEstimateWarning` says what a
    boundary MLE means (Self and Liang 1987).

    The importance sampler of the E-step collapses when the release lies
    where the model at the current parameter almost never simulates (far in
    the tail, or in many dimensions at once): a few simulations carry all the
    weight and the Monte Carlo errors computed from the same weights vanish
    whatever the real error. Far from the MLE that is normal (EM then follows
    the simulations nearest the release, which still moves it toward the
    MLE), but an E-step whose effective sample size is below 100
    (``dpinfer.samplers.mcem._estep.MIN_ESS``) never ends a run: the ascent-based
    schedule grows the sample instead (at most tenfold per iteration, up to
    its ``max_size``). A run whose last E-step is below the floor, or
    whose information pass is below it, or that runs out of iterations, is
    reported with ``converged=False`` and a :class:`MCEMConvergenceWarning`
    saying "not converged" and why; after a collapse its standard errors and
    Monte Carlo standard errors are NaN, with the reason in
    ``attrs["standard_error_note"]``.

    For intervals that follow the likelihood's shape rather than its
    curvature at the estimate, use :meth:`MCEMResult.profile_interval`.

    The information is computed on the natural scale of the parameters, on a
    fresh sample at the estimate of the schedule's final size; the M-step
    optimises on an unconstrained scale. EM converges to a stationary point:
    start from several values when the likelihood may be multimodal.

    References
    ----------
    .. [1] Gong, R. (2022). Exact inference with approximate computation for
       differentially private data via perturbations. JPC 12(2), Section 4.
    .. [2] Louis, T. A. (1982). Finding the observed information matrix when
       using the EM algorithm. JRSS B 44(2), 226-233.
    .. [3] Caffo, B. S., Jank, W. and Jones, G. L. (2005). Ascent-based Monte
       Carlo expectation-maximization. JRSS B 67(2), 235-251.
    .. [4] Self, S. G. and Liang, K.-Y. (1987). Asymptotic properties of
       maximum likelihood estimators and likelihood ratio tests under
       nonstandard conditions. JASA 82(398), 605-610.

    Examples
    --------
    >>> import pymc as pm, scipy.stats as st, dpinfer as dp
    >>> lik = dp.Likelihood.from_pymc(
    ...     lambda p: pm.Poisson.dist(mu=p["theta"]), params=["theta"],
    ...     support={"theta": "positive"},
    ...     exponential_family=dp.ExponentialFamily(
    ...         statistic=lambda s: s, maximize=lambda m: {"theta": m[0]}))
    >>> model = dp.Model(simulate=lambda p, rng: rng.poisson(p["theta"]), likelihood=lik)
    >>> mech = dp.Laplace.from_privacy(epsilon=0.2, sensitivity=1.0)
    >>> fit = dp.mcem(model, mech, 37.4, start={"theta": 1.0}, rng=1, progressbar=False)
    >>> round(fit.estimate["theta"]), round(float(fit.observed_information[0, 0]), 3)  # 37.237
    (37, 0.016)
    """
    released = check_inputs(model, mechanism, released, needs_prior=False)
    check_options(rng=rng, executor=executor, progressbar=progressbar)
    _validate.flag("accelerate", accelerate)
    likelihood = _likelihood_of(model)
    space = likelihood.space
    theta = space.check(start, name="start")
    schedule = as_schedule(schedule)
    batch_size = check_count("batch_size", batch_size)
    use_family = _choose_mstep(mstep, likelihood)
    if accelerate and not isinstance(schedule, StagedSchedule):
        raise ValueError(
            "accelerate=True needs schedule='staged': the ascent-based schedule (the default, "
            "'auto') tests EM's Q increase, which a Newton step need not have"
        )
    likelihood.require(order=2)
    root = as_seed_sequence(rng)

    def sample_at(theta, size, seed):
        draw = make_draw(model, mechanism, released, space, theta, compress=True)
        return WeightedSample(draw, _chunk_sizes(size, batch_size), seed, executor=executor)

    em = (likelihood, use_family, accelerate, batch_size)
    run = _run_em(schedule, theta, root, sample_at, em, progressbar)
    state, infos = run.state, run.infos
    # Louis at the last interior iterate; EM stopped before when an M-step returned a bound.
    # A collapsed run gets no larger sample than its last E-step: nothing it gives is reported.
    final_size = max(schedule.final_size, infos[-1].n_simulations)
    if _health.collapse_run(i.ess for i in infos if np.isfinite(i.ess)):
        final_size = min(final_size, infos[-1].n_simulations)
    info_sample = sample_at(state.theta, final_size, _child(root, 2))
    louis = _mstep.louis(info_sample, likelihood, state.theta)
    health = _health.diagnose(infos, run.outcomes, schedule, louis.ess)
    bounded = _boundary.on_closed_bound(space, infos[-1].theta)
    bound = infos[-1].theta  # the bound the M-step returned
    if not bounded.any() and not health.collapsed:
        bounded = _boundary.at_bound(space, state.theta, louis.score, louis.information)
        bound = _boundary.nearest_bound(space, state.theta)
    estimate = np.where(bounded, bound, state.theta)
    if bounded.any() and not health.collapsed:
        idx = np.flatnonzero(bounded)
        message = _boundary.boundary_message(
            [space.labels[i] for i in idx], estimate[idx], state.theta[idx], louis.score[idx]
        )
        warnings.warn(message, BoundaryEstimateWarning, stacklevel=2)
    if not health.converged:
        warnings.warn(health.message(len(infos)), MCEMConvergenceWarning, stacklevel=2)
    naive_theta, naive_info, naive_note = _naive(likelihood, released, theta, use_family)
    # the estimate's Monte Carlo error comes from the last E-step's sample size
    louis = louis._replace(
        score_covariance=louis.score_covariance * info_sample.n / infos[-1].n_simulations
    )
    fit = _result(
        space,
        estimate,
        louis,
        infos,
        health.converged,
        naive_theta,
        naive_info,
        run.simulations + info_sample.n,
        bounded,
        health,
        attrs={
            "at_boundary": ", ".join(space.labels[i] for i in np.flatnonzero(bounded)),
            "naive_note": naive_note,
            "method": "mcem",
            "reference": REFERENCE,
            "mechanism": repr(mechanism),
            **privacy_attrs(mechanism),
            "schedule": schedule.name,
            "mstep": "exponential" if use_family else "general",
            "accelerate": int(accelerate),
            "likelihood": likelihood.source,
            "ess_at_estimate": louis.ess,
            "min_ess": _estep.MIN_ESS,
            "convergence_note": "; ".join(health.reasons),
            "n_information": info_sample.n,
            "seed": seed_entropy(root),
        },
    )
    context = _FitContext(model, mechanism, released, likelihood, batch_size, root)
    return dataclasses.replace(fit, _context=context)


# ----------------------------------------------------------------------------------------
class _Run(NamedTuple):
    state: MCEMState
    infos: list
    outcomes: list
    simulations: int


def _run_em(schedule, theta, root, sample_at, em, bar_on) -> _Run:
    """Run the EM loop (E-step, M-step, schedule decision) until the schedule stops it."""
    likelihood, use_family, accelerate, batch = em
    space = likelihood.space
    state = MCEMState(theta, 0, 0, 0, schedule.initial_size())
    infos: list[MCEMInfo] = []
    total_sims, outcomes, seen = 0, [], {theta.tobytes()}
    with progress_bar("MCEM", total=None, enabled=bar_on) as bar:
        while True:
            sample = sample_at(state.theta, state.size, _seed_for(root, schedule, state))
            while True:
                if use_family:
                    theta_new = _mstep.exponential_mstep(sample, likelihood)
                else:
                    theta_new = _mstep.general_mstep(sample, likelihood, state.theta)
                if not space.contains(theta_new):  # the M-step returned a finite bound
                    break
                if accelerate:
                    theta_new, _ = _mstep.newton_update(sample, likelihood, state.theta, theta_new)
                dq, se, ess = _mstep.q_increase(sample, likelihood, state.theta, theta_new)
                extra = schedule.accept(dq, se, sample.n)
                if not extra:
                    break
                sample = sample.extend(extra, batch)
            total_sims += sample.n
            step = float(np.max(np.abs(theta_new - state.theta)))
            if not space.contains(theta_new):
                info = MCEMInfo(theta_new, sample.n, math.nan, *_NO_Q, step, state.stage, False)
                infos.append(info)
                break
            cycled = schedule.common_random_numbers and theta_new.tobytes() in seen
            seen.add(theta_new.tobytes())
            infos.append(MCEMInfo(theta_new, sample.n, ess, dq, se, step, state.stage, cycled))
            bar.advance(1)
            bar.update(description=_describe(state, sample.n, space, theta_new))
            done, ok, stage, size = schedule.advance(
                state.stage,
                state.stage_iteration,
                step,
                dq,
                se,
                state.size,
                sample.n,
                cycled=cycled,
                ess=ess,
            )
            if ok is not None:
                outcomes.append(bool(ok))
            if stage != state.stage:
                seen = {theta_new.tobytes()}
            stage_iteration = state.stage_iteration + 1 if stage == state.stage else 0
            state = MCEMState(theta_new, state.iteration + 1, stage, stage_iteration, size)
            if done:
                break
    return _Run(state, infos, outcomes, total_sims)


# ----------------------------------------------------------------------------------------
def _likelihood_of(model) -> Likelihood:
    lik = getattr(model, "likelihood", None)
    if isinstance(lik, Likelihood):
        return lik
    has_loglik = getattr(model, "loglik", None) is not None
    detail = (
        "the model has only a loglik callable, without derivatives"
        if has_loglik
        else "the model has no likelihood"
    )
    raise ValueError(f"mcem cannot run: {detail}. It needs {needs_message()}.")


def _choose_mstep(mstep: str, likelihood: Likelihood) -> bool:
    mstep = _validate.choice("mstep", mstep, ("auto", "exponential", "general"))
    has_family = likelihood.exponential_family is not None
    if mstep == "exponential" and not has_family:
        raise ValueError(
            "mstep='exponential' needs a likelihood declaring exponential_family="
            "ExponentialFamily(statistic=..., maximize=...)"
        )
    return has_family and mstep != "general"


def _child(root: np.random.SeedSequence, *keys: int) -> np.random.SeedSequence:
    return np.random.SeedSequence(
        root.entropy, spawn_key=(*root.spawn_key, *keys), pool_size=root.pool_size
    )


def _seed_for(root, schedule, state: MCEMState):
    if schedule.common_random_numbers:
        return _child(root, 0, state.stage)
    return _child(root, 1, state.iteration)


def _naive(likelihood, released, start, use_family):
    """Maximise ``log pi(s_dp | theta)`` as if the release were the confidential statistic."""
    space = likelihood.space
    s = np.asarray(released, dtype=float)[np.newaxis]
    nan = np.full(space.size, np.nan), np.full((space.size, space.size), np.nan)
    try:
        if use_family:
            family = likelihood.exponential_family
            theta = space.check(family.maximize(family.mean_statistic(s)[0]), name="naive MLE")
        else:
            why = _boundary.naive_failure(likelihood, released, start)
            if why is not None:
                return (*nan, why)
            theta = _mstep.general_mstep(_SingleRow(s), likelihood, start)
            if not space.contains(theta):
                return (*nan, f"the naive likelihood is maximised on a bound, at {theta.tolist()}")
        hess = likelihood.derivatives(s, theta, order=2)[2][0]
    except (ValueError, FloatingPointError, np.linalg.LinAlgError) as err:
        return (*nan, f"no naive MLE: {err}")
    return theta, -hess, ""


class _SingleRow:
    """A weighted sample of one row (the release itself), for the naive M-step."""

    def __init__(self, s):
        self.s, self.n = s, 1

    def means(self, terms=None, *, squared=()):
        values = terms(self.s) if terms is not None else {}
        first = {k: np.asarray(v, dtype=float)[0] for k, v in values.items()}
        return Means(first, {"one": 1.0}, 1.0, 0.0)


def _result(
    space, theta, louis, infos, converged, naive_theta, naive_info, sims, bounded, health, attrs
):
    import xarray as xr

    cov = _boundary.restricted_covariance(louis.information, bounded)
    se = np.sqrt(np.where(np.diag(cov) >= 0, np.diag(cov), np.nan))
    free_cov = np.nan_to_num(cov) if bounded.any() else cov
    mc_cov = free_cov @ louis.score_covariance @ free_cov
    mc_se = np.where(bounded, np.nan, np.sqrt(np.clip(np.diag(mc_cov), 0, None)))
    if health.collapsed or health.unreliable_information:
        # weights on a few simulations: their delta-method errors are not errors
        se, mc_se = np.full_like(se, np.nan), np.full_like(mc_se, np.nan)
        attrs = {**attrs, "standard_error_note": "; ".join(health.reasons)}
    naive_cov = _boundary.restricted_covariance(naive_info, np.zeros(len(naive_theta), bool))
    naive_se = np.sqrt(np.where(np.diag(naive_cov) >= 0, np.diag(naive_cov), np.nan))

    thetas = np.array([i.theta for i in infos])
    data: dict[str, tuple] = {}
    for name in space.names:
        sl = _slice(space, name)
        values = thetas[:, sl].reshape(len(infos), *space.shapes[name])
        dims = ("iteration", *(f"{name}_dim_{d}" for d in range(len(space.shapes[name]))))
        data[name] = (dims, values)
    fields = ("n_simulations", "ess", "q_increase", "q_increase_se", "step", "stage")
    for field_name in (*fields, "limit_cycle"):
        data[field_name] = ("iteration", np.array([getattr(i, field_name) for i in infos]))
    trace = xr.Dataset(data, coords={"iteration": np.arange(1, len(infos) + 1)})
    return MCEMResult(
        estimate=space.unflatten(theta),
        observed_information=louis.information,
        covariance=cov,
        standard_error=space.unflatten(se),
        score=louis.score,
        converged=bool(converged),
        trace=trace,
        complete_information=louis.complete_information,
        monte_carlo_se=space.unflatten(mc_se),
        naive_estimate=space.unflatten(naive_theta),
        naive_information=naive_info,
        naive_standard_error=space.unflatten(naive_se),
        labels=space.labels,
        n_simulations=int(sims),
        attrs=attrs,
    )


def _slice(space, name) -> slice:
    start = 0
    for key in space.names:
        if key == name:
            return slice(start, start + space.sizes[key])
        start += space.sizes[key]
    raise KeyError(name)


def _chunk_sizes(total: int, batch_size: int) -> list[int]:
    full, rest = divmod(int(total), batch_size)
    return [batch_size] * full + ([rest] if rest else [])


def _describe(state: MCEMState, n: int, space, theta) -> str:
    values = ", ".join(f"{k}={v:.5g}" for k, v in zip(space.labels, theta, strict=True))
    return f"MCEM stage {state.stage + 1}, iteration {state.iteration + 1}, N={n:,}: {values}"


__all__ += ["AscentSchedule", "StagedSchedule"]
