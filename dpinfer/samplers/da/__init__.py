"""Record-level data-augmentation MCMC for a DP release (Ju, Awan, Gong & Rao 2022)."""

from __future__ import annotations

from concurrent.futures import Executor
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from ... import _validate, parallel
from ..._progress import progress_bar
from ..._rng import RNGLike, as_seed_sequence
from ...mechanisms.base import Mechanism
from ...record_model import RecordModel
from .._common import AbcCall, check_count, check_mechanism, check_options
from ._initial import initial_records
from ._records import RecordUpdater
from ._theta import ThetaKernel

if TYPE_CHECKING:
    from ...results import InferenceData

__all__ = ["da_mcmc"]

REFERENCE = (
    "Ju, N., Awan, J. A., Gong, R. and Rao, V. A. (2022). Data augmentation MCMC for "
    "Bayesian inference from privatized data. NeurIPS 35."
)

_BLOCK = 65_536  # records proposed at once: bounded memory for any n
_IMPUTED = "s_confidential"  # posterior variable of the imputed statistic


class DAState(NamedTuple):
    """One chain: parameters, imputed records and the running sum of their statistics."""

    params: dict  # (1, *shape) per parameter
    walk: object  # random-walk Metropolis state of theta (None with an exact update)
    records: np.ndarray  # (n, *record_shape)
    stats: np.ndarray  # (n, k) per-record statistics t(x_i), flattened
    total: np.ndarray  # (k,) their sum
    log_eta: float  # log eta(s_dp | summary(total))


class DAInfo(NamedTuple):
    """What one Gibbs sweep did; each field becomes a ``sample_stats`` variable."""

    record_acceptance_rate: float
    theta_acceptance_rate: float
    log_mechanism_density: float


def da_mcmc(
    record_model: RecordModel,
    mechanism: Mechanism,
    released: ArrayLike,
    *,
    n: int,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 4,
    rng: RNGLike = None,
    theta_steps: int = 3,
    init_datasets: int | None = None,
    executor: Executor | None = None,
    progressbar: bool = True,
) -> InferenceData:
    r"""Sample the exact posterior given a DP release by data-augmentation MCMC.

    The confidential records are latent variables. Each iteration is a Gibbs
    sweep: ``theta`` given the records, then every record in turn by the
    privacy-aware Metropolis step of Ju et al. (2022): propose a fresh record
    :math:`x_i^* \sim f(\cdot \mid \theta)` and accept it with probability

    .. math:: \min\Big\{1, \frac{\eta(s_{dp} \mid g(T - t(x_i) + t(x_i^*)))}
              {\eta(s_{dp} \mid g(T))}\Big\},

    where :math:`T = \sum_i t(x_i)` is kept as a running sum, so a record
    update costs O(1) in ``n``.

    Parameters
    ----------
    record_model : RecordModel
        Prior, record simulator, per-record statistic (and summary), and the
        ``theta | records`` update (``update`` or ``loglik``).
    mechanism : Mechanism
        The public mechanism that produced the release.
    released : array_like
        The release ``s_dp``, of shape ``mechanism.event_shape``.
    n : int
        Number of confidential records (public).
    draws, tune : int, default 1000
        Iterations kept per chain, and iterations before them (discarded;
        the ``theta`` proposal adapts only then).
    chains : int, default 4
        Independent chains, each from its own starting dataset.
    rng : None, int, SeedSequence or Generator, optional
        Seed; chain ``c`` draws from the ``c``-th child generator, so the same
        seed gives the same draws under any executor.
    theta_steps : int, default 3
        Random-walk Metropolis steps of ``theta`` per iteration, when the model
        has no ``update`` (see Notes).
    init_datasets : int, optional
        Prior-predictive datasets drawn per chain to pick its start (see
        Notes); default ``max(1, min(1000, 10**6 // n))``.
    executor : concurrent.futures.Executor, optional
        Runs the chains (serially in this process when None).
    progressbar : bool, default True
        Show a progress bar.

    Returns
    -------
    arviz.InferenceData
        ``posterior``: the parameters and ``s_confidential``, the imputed
        confidential statistic :math:`g(T)`, with ``chains`` chains of
        ``draws``; ``sample_stats``: per iteration ``record_acceptance_rate``
        (fraction of the ``n`` record proposals accepted),
        ``theta_acceptance_rate`` (1 for an exact update) and
        ``log_mechanism_density``; ``attrs``: ``ess`` (smallest bulk ESS over
        the parameters' scalar components), ``rhat_max`` (largest R-hat over
        them; both as ArviZ computes them on the parameters alone, not on
        ``s_confidential``), ``acceptance_rate`` (mean record
        acceptance), ``n_simulations`` (records simulated), ``record_kernel``
        (``'compiled'`` or ``'speculative blocks'``) and ``theta_update``.

    Notes
    -----
    **Target.** The chain leaves

    .. math:: \pi(\theta, x \mid s_{dp}) \propto \pi_0(\theta) \prod_i f(x_i \mid \theta)\,
              \eta(s_{dp} \mid g(\textstyle\sum_i t(x_i)))

    invariant. The record step is Metropolis-Hastings with the independence
    proposal :math:`f(\cdot \mid \theta)`, whose density cancels the prior term,
    leaving the ratio above; the ``theta`` step is exact (``update``) or a
    Metropolis step on the complete-data posterior. The ``theta`` margin of
    the chain's limit is the exact posterior given the release: no ABC
    tolerance, no approximation beyond Monte Carlo error. Records are visited
    in a fixed order; the sequential dependence through :math:`T` is kept
    exactly.

    **Record kernel.** A sweep first draws all ``n`` proposals of a chain in
    one call of ``simulate`` (in blocks of 65,536 records for large ``n``) and
    their statistics in one call of ``statistic``, then runs the sequential
    accept/reject loop. With the identity summary and a mechanism of the
    library the loop is compiled (numba) and evaluates the mechanism's
    per-coordinate log-density formula; otherwise it scores blocks of
    candidates with one ``mechanism.logpdf`` call each (exact, and fast while
    acceptances are rare).

    **Why not SOMA.** The SOMA record update (Xiong et al. 2025 [3]_: one offered
    record, an attempt at every slot) mixes better per iteration, but each
    offer scores all ``n`` records, O(n) against O(1) here. Measured in
    ``benchmarks/da_mcmc.py`` at equal iterations, its ESS per CPU second is
    about a fifth of this update's on the regression at epsilon = 100 and on
    naive Bayes at epsilon = 10, so it is not offered.

    **Theta.** Without ``update``, ``theta_steps`` random-walk Metropolis steps
    on the unconstrained scale, with the proposal covariance and scale adapted
    during tuning and frozen after it (chosen over slice sampling because a step
    costs exactly one complete-data log-likelihood evaluation and needs no
    gradient).

    **Initialisation.** With little mechanism noise a dataset far from the
    release is almost never improved upon by a random proposal, so each chain
    starts from the most compatible of ``init_datasets`` prior-predictive
    datasets (``theta`` from the prior, ``n`` records given it): the one whose
    statistic has the largest ``eta(s_dp | s)``. From there the record updates
    only accept moves that do not lower that density by much, which pulls the
    sum to the release within the first tuning iterations.

    References
    ----------
    .. [1] Ju, N., Awan, J. A., Gong, R. and Rao, V. A. (2022). Data augmentation
       MCMC for Bayesian inference from privatized data. NeurIPS 35.
    .. [2] Andrieu, C. and Thoms, J. (2008). A tutorial on adaptive MCMC.
       Stat. Comput. 18, 343-373.
    .. [3] Xiong et al. (2025). arXiv:2505.00635.

    Examples
    --------
    Fifty Bernoulli records whose count is released with Laplace noise:

    >>> import scipy.stats as st, dpinfer as dp
    >>> model = dp.RecordModel(
    ...     prior={"p": st.beta(2, 2)},
    ...     simulate=lambda prm, n, rng: rng.random((len(prm["p"]), n)) < prm["p"][:, None],
    ...     statistic=lambda x: x.astype(float),
    ...     update=lambda x, rng: {"p": rng.beta(2 + x.sum(1), 2 + (~x).sum(1))},
    ... )
    >>> mech = dp.Laplace.from_privacy(epsilon=1.0, sensitivity=1.0)
    >>> idata = dp.da_mcmc(model, mech, 31.2, n=50, draws=200, tune=100, rng=1,
    ...                    progressbar=False)
    >>> idata.posterior["p"].shape
    (4, 200)
    """
    released, settings = _check_arguments(
        record_model, mechanism, released, n, draws, tune, chains, theta_steps, init_datasets
    )
    check_options(rng=rng, executor=executor, progressbar=progressbar)
    root = as_seed_sequence(rng)
    chains = settings["chains"]
    total_iterations = settings["tune"] + settings["draws"]

    def run(_index, chain_rng, on_iteration=None):
        return _run_chain(
            record_model, mechanism, released, settings, chain_rng, on_iteration=on_iteration
        )

    with progress_bar("DA-MCMC", total=chains * total_iterations, enabled=progressbar) as bar:
        if executor is None:
            task = lambda i, g: run(i, g, bar.advance)  # noqa: E731
            results = parallel.map_chunks(task, root, chains)
        else:
            results = parallel.map_chunks(
                run,
                root,
                chains,
                executor=executor,
                on_result=lambda _: bar.advance(total_iterations),
            )
    return _result(results, record_model, mechanism, released, settings, root, chains)


def _check_arguments(record_model, mechanism, released, n, draws, tune, chains, steps, init):
    if not isinstance(record_model, RecordModel):
        raise TypeError(
            f"record_model must be a dpinfer.RecordModel, got {type(record_model).__name__}: "
            f"{record_model!r}"
        )
    check_mechanism(mechanism)
    if _IMPUTED in (record_model.prior.names or ()):
        raise ValueError(f"a parameter may not be called {_IMPUTED!r} (the imputed statistic)")
    released = mechanism.check_released(released)
    n = check_count("n", n)
    tune = _validate.non_negative_int("tune", tune)
    init = max(1, min(1000, 10**6 // n)) if init is None else check_count("init_datasets", init)
    settings = {
        "n": n,
        "draws": check_count("draws", draws),
        "tune": int(tune),
        "chains": check_count("chains", chains),
        "theta_steps": check_count("theta_steps", steps),
        "init_datasets": init,
    }
    return released, settings


def _run_chain(record_model, mechanism, released, settings, rng, *, on_iteration=None):
    """Initialise one chain, run tuning and kept iterations; return its draws."""
    n = settings["n"]
    start = initial_records(record_model, mechanism, released, n, settings["init_datasets"], rng)
    updater = RecordUpdater(record_model, mechanism, released, t_shape=start.t_shape)
    theta = ThetaKernel(record_model, steps=settings["theta_steps"], n_records=n)
    state = DAState(
        start.params,
        theta.start(start.params, start.prior_draws),
        start.records,
        start.stats,
        start.stats.sum(axis=0),
        float(updater.log_density(start.stats.sum(axis=0)[None])[0]),
    )
    kept: dict[str, list] = {"params": [], "s": [], "info": []}
    for it in range(settings["tune"] + settings["draws"]):
        tuning_step = it if it < settings["tune"] else None
        state, info = step(state, record_model, updater, theta, rng, tuning_step=tuning_step)
        if tuning_step is None:
            kept["params"].append(state.params)
            kept["s"].append(updater.summary(state.total[None])[0])
            kept["info"].append(info)
        if on_iteration is not None:
            on_iteration()
    return {
        "params": {k: np.concatenate([p[k] for p in kept["params"]]) for k in state.params},
        "s": np.stack(kept["s"]),
        "info": {f: np.array([getattr(i, f) for i in kept["info"]]) for f in DAInfo._fields},
        "n_simulations": start.n_simulations + n * (settings["tune"] + settings["draws"]),
        "compiled": updater.compiled,
    }


def step(state: DAState, record_model, updater, theta, rng, *, tuning_step=None):
    """One Gibbs sweep: ``theta`` given the records, then every record in turn."""
    params, walk, theta_rate = theta.update(
        state.params, state.walk, state.records, rng, tuning_step=tuning_step
    )
    records, stats, total = state.records.copy(), state.stats.copy(), state.total.copy()
    n, accepted, log_eta = len(records), 0, state.log_eta
    for lo in range(0, n, _BLOCK):
        hi = min(n, lo + _BLOCK)
        offered = record_model.simulate_records(params, hi - lo, rng)
        offered_stats = record_model.statistics(offered)[0].reshape(hi - lo, -1)
        log_u = -rng.standard_exponential(hi - lo)
        mask, log_eta = updater.sweep(stats[lo:hi], total, offered_stats, log_u)
        records[lo:hi][mask] = offered[0][mask]
        accepted += int(np.count_nonzero(mask))
    # the running sum is recomputed once per sweep so that rounding cannot drift
    total = stats.sum(axis=0)
    log_eta = float(updater.log_density(total[None])[0])
    new = DAState(params, walk, records, stats, total, log_eta)
    return new, DAInfo(accepted / n, theta_rate, log_eta)


def _result(results, record_model, mechanism, released, settings, root, chains):
    posterior = {
        name: np.concatenate([r["params"][name] for r in results]) for name in results[0]["params"]
    }
    if _IMPUTED in posterior:
        raise ValueError(f"a parameter may not be called {_IMPUTED!r} (the imputed statistic)")
    posterior[_IMPUTED] = np.concatenate([r["s"] for r in results])
    stats = {f: np.concatenate([r["info"][f] for r in results]) for f in DAInfo._fields}
    call = AbcCall("da_mcmc", REFERENCE, mechanism, released, chains, settings["draws"])
    return call.result(
        posterior,
        sample_stats=stats,
        root=root,
        diagnostic_vars=list(results[0]["params"]),
        n_simulations=sum(r["n_simulations"] for r in results),
        acceptance_rate=float(np.mean(stats["record_acceptance_rate"])),
        n_records=settings["n"],
        draws=settings["draws"],
        tune=settings["tune"],
        record_kernel="compiled" if results[0]["compiled"] else "speculative blocks",
        theta_update="exact (update)"
        if record_model.update is not None
        else f"random-walk Metropolis, {settings['theta_steps']} steps per iteration",
    )
