"""Simulation-based calibration of any posterior sampler for DP releases."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping
from concurrent.futures import Executor
from typing import TYPE_CHECKING

import numpy as np

from .. import _validate, parallel
from .._progress import progress_bar
from .._rng import RNGLike, as_seed_sequence, child_sequence, seed_entropy
from .._user_code import outside_dpinfer
from ..mechanisms.base import Mechanism
from ..model import Model, _callable_name
from ..samplers._common import check_options
from ._ranks import draws_ess, ranks, thinned
from ._result import SBCResult

if TYPE_CHECKING:
    from ..neural import NeuralLikelihood, NeuralPosterior
    from ..results import InferenceData

__all__ = ["DegenerateDrawsWarning", "sbc"]

ESTIMATOR_DRAWS = 100
#: Prior draws behind the prior variance of each component (its relative standard
#: error is about sqrt(2 / 20,000) = 1% for a normal prior).
PRIOR_DRAWS = 20_000
#: A replicate's draws of a component are degenerate with fewer distinct values than this
#: (or than the prior's draws among the replicates' truths have, if fewer).
DISTINCT = 10
#: The fraction of replicates with degenerate draws from which sbc warns.
DEGENERATE_SHARE = 0.1


class DegenerateDrawsWarning(UserWarning):
    """A sampler's posterior draws have no spread (zero variance, or a handful of values).

    Ranks among such draws test little: a sampler that returns one constant for
    every release passes the rank test when the constant is the prior median.
    """


def sbc(
    sample: Callable[..., InferenceData] | NeuralPosterior | NeuralLikelihood,
    model: Model,
    mechanism: Mechanism,
    *,
    replicates: int = 200,
    estimator_options: Mapping | None = None,
    rng: RNGLike = None,
    executor: Executor | None = None,
    progressbar: bool = True,
) -> SBCResult:
    r"""Check a posterior sampler by simulation-based calibration (SBC).

    Each replicate draws ``theta`` from the model's prior, a confidential
    statistic ``s`` from its simulator and a release ``s_dp`` from the mechanism,
    calls ``sample(s_dp, rng)`` and ranks the true ``theta`` among the returned
    posterior draws. If the sampler draws from the exact posterior, every rank is
    uniform (Talts et al. 2018): :attr:`SBCResult.p_values` test that, one
    component at a time.

    Parameters
    ----------
    sample : callable or trained neural estimator
        ``sample(released, rng) -> arviz.InferenceData`` whose ``posterior`` group
        holds every parameter of the prior (other variables are ignored), for
        example ``lambda r, rng: dp.smc_abc(model, mech, r, particles=400, rng=rng,
        progressbar=False)``. ``rng`` is a :class:`numpy.random.Generator`
        reserved for the replicate's sampler. Or a
        :class:`~dpinfer.neural.NeuralPosterior` (:func:`~dpinfer.neural.sppe`) or
        :class:`~dpinfer.neural.NeuralLikelihood` (:func:`~dpinfer.neural.sple`):
        its posterior is drawn for all replicates' releases in one batched call
        (``estimator.sample(releases, ...)`` or ``estimator.posterior(releases,
        model.prior, ...)``).
    model : dpinfer.Model
        The prior and simulator the replicates are drawn from (the model the
        sampler is meant to invert).
    mechanism : dpinfer.Mechanism
        Makes each replicate's release (any object with ``event_shape`` and
        ``release(value, rng=...)`` serves).
    replicates : int, default 200
        Number of simulated releases. The test has ``min(20, replicates // 5)``
        bins; with fewer than 10 replicates it is not run (NaN p-values).
    estimator_options : dict, optional
        Keyword arguments of a trained estimator's batched call, for example
        ``{"draws": 200, "mcmc": MCMC(warmup=200)}`` for a ``NeuralLikelihood``;
        ``draws`` (per release) defaults to 100, and ``rng`` and ``prior`` are
        set here. A callable takes its own options, so it must be None then.
    rng : None, int, SeedSequence or Generator, optional
        Seed. Replicate ``i`` draws its truth, statistic and release from the
        ``i``-th child of the root seed, its sampler's ``rng`` and the tie-breaking
        of its ranks from two children of that, so the same seed gives the same
        result under any executor, and the same replicates whatever the sampler.
    executor : concurrent.futures.Executor, optional
        Runs replicates (one chunk each) in parallel; serially when None. The
        ``sample`` callable, the model and the mechanism are sent to the workers
        with cloudpickle: lambdas and closures work, but not what cannot be
        pickled (an open file, a live executor or pool inside ``sample``).
    progressbar : bool, default True
        Show a progress bar over replicates.

    Returns
    -------
    SBCResult
        ``ranks`` (replicate x component), ``p_values`` and beside them
        ``contraction`` (``1 - mean posterior variance / prior variance``),
        ``coverage(levels)``, ``plot()``, ``to_inference_data()``.

    Warns
    -----
    DegenerateDrawsWarning
        When a component's draws have no spread: one value in every replicate,
        or, in a tenth of the replicates or more, fewer than 10 distinct values
        (fewer than the replicate's draws, or than the distinct true values of a
        discrete parameter, if those are fewer). Ranks among such draws test
        little: a sampler that returns one constant for every release passes
        the rank test when the constant is near the prior median.

    Notes
    -----
    *Ranks and thinning.* Autocorrelated draws (ESS below 0.8 times their number;
    the result's ``attrs['ess']``, else the bulk ESS of the draws) are thinned to
    about half their ESS, equally spaced along each chain, before ranking:
    correlated draws would pile ranks at the ends even for an exact sampler.
    Draws equal to the truth (a discrete parameter) are ranked in random order,
    with the replicate's own generator. See :mod:`dpinfer.calibration._ranks`.

    *The test* is Pearson's chi-square of the fractional ranks in equiprobable
    bins; under an exact sampler each p-value is uniform, so a check at level
    ``alpha`` fails it with probability ``alpha`` per component (no multiplicity
    correction; :attr:`SBCResult.p_value` is the Bonferroni-adjusted minimum).
    A sampler that passes is calibrated on average over the prior: SBC cannot see
    an error that is the same for every release's posterior in rank terms (the
    prior returned as the posterior is the known blind spot when the release says
    little: :attr:`SBCResult.contraction` is about 0 for it, against
    ``Var(E[theta | s_dp]) / Var(theta)`` for an exact sampler), and a small
    number of replicates sees only large errors. At 100
    replicates (with tens of independent draws each) the test at level 1e-3
    flags posteriors 0.6 times as wide as the exact ones with probability about
    0.93 (0.25 at 40 replicates); a posterior that reads a count released with
    Laplace noise of scale 6 as the exact count, with probability near 1, but
    at scale 4 only 0.89 (simulated on the Poisson-Gamma example of the tests,
    ``tests/calibration/test_sbc_samplers.py``).

    References
    ----------
    .. [1] Talts, S., Betancourt, M., Simpson, D., Vehtari, A. and Gelman, A. (2018).
       Validating Bayesian inference algorithms with simulation-based calibration.
       arXiv:1804.06788.

    Examples
    --------
    >>> import scipy.stats as st, dpinfer as dp
    >>> model = dp.Model(prior={"theta": st.gamma(4, scale=2.5)},
    ...                  simulate=lambda p, rng: rng.poisson(p["theta"]))
    >>> mech = dp.Laplace(4.0)
    >>> def sample(released, rng):
    ...     return dp.rejection_abc(model, mech, released, draws=100, batch_size=2000,
    ...                             rng=rng, progressbar=False)
    >>> result = dp.sbc(sample, model, mech, replicates=20, rng=1, progressbar=False)
    >>> result.ranks.shape, sorted(result.p_values)
    ((20, 1), ['theta'])
    """
    _check_model(model, mechanism)
    replicates = _validate.size("replicates", replicates)
    check_options(rng=rng, executor=executor, progressbar=progressbar)
    kind = _estimator_kind(sample)
    options = _check_options(estimator_options, kind, sample)
    if kind:
        _check_estimator(sample, None, model, mechanism)
    root = as_seed_sequence(rng)
    seeds = child_sequence(root, 0)
    # a sample callable ranks per replicate; an estimator ranks the batch below
    per_replicate = None if kind or not callable(sample) else sample
    task = _Replicate(model, mechanism, per_replicate, seeds)
    with progress_bar("SBC replicates", total=replicates, enabled=progressbar) as bar:
        outs = parallel.map_chunks(
            task, seeds, replicates, executor=executor, on_result=lambda _: bar.advance()
        )
    if kind:
        _rank_batch(sample, kind, model, outs, options, child_sequence(root, 1), seeds)
    result = SBCResult(
        truths={name: np.stack([o["truth"][name] for o in outs]) for name in outs[0]["truth"]},
        statistics=np.stack([o["s"] for o in outs]),
        releases=np.stack([o["s_dp"] for o in outs]),
        ranks=np.stack([o["rank"] for o in outs]),
        fractional_ranks=np.stack([o["fractional"] for o in outs]),
        n_draws=np.array([o["n_draws"] for o in outs]),
        posterior_variances=np.stack([o["variance"] for o in outs]),
        prior_variances=_prior_variances(model, child_sequence(root, 2)),
        info={
            "seed": seed_entropy(root),
            "sampler": repr(sample) if kind else _callable_name(sample),
            "path": f"batched {kind} estimator, {options['draws']} draws per release"
            if kind
            else "one sample call per replicate",
        },
    )
    _warn_if_degenerate(result, *(np.stack([o[k] for o in outs]) for k in _SPREAD))
    return result


def _prior_variances(model, seed) -> np.ndarray:
    """Each component's prior variance, from ``PRIOR_DRAWS`` draws of the prior."""
    draws = model.prior.sample(PRIOR_DRAWS, np.random.default_rng(seed))
    columns = [np.asarray(v, dtype=float).reshape(PRIOR_DRAWS, -1) for v in draws.values()]
    return np.concatenate(columns, axis=1).var(axis=0, ddof=1)


#: What each replicate keeps about the spread of its draws (see _warn_if_degenerate).
_SPREAD = ("draws", "distinct", "first")


def _warn_if_degenerate(result, draws, distinct, firsts) -> None:
    """Warn about components whose draws have too few distinct values (see the constants).

    ``draws`` is each replicate's number of draws (before thinning); ``distinct``
    ``(replicates, components)`` the distinct values among them, ``firsts`` the first.
    A component is flagged when at least ``DEGENERATE_SHARE`` of the replicates have
    fewer distinct values than ``DISTINCT``, their number of draws, or the number of
    distinct truths (a discrete parameter's), whichever is least, or when every draw of
    every replicate (even a single draw each) is one and the same value.
    """
    truths = result.flat_truths()
    flagged = []
    for j, label in enumerate(result.parameters):
        need = np.minimum(min(DISTINCT, np.unique(truths[:, j]).size), draws)
        few = distinct[:, j] < need
        constant = (
            np.unique(truths[:, j]).size > 1
            and np.all(distinct[:, j] == 1)
            and np.unique(firsts[:, j]).size == 1
        )
        if constant or few.sum() >= DEGENERATE_SHARE * len(few):
            what = (
                "one value in every replicate"
                if constant
                else f"too few distinct values in {few.sum()} of {len(few)} replicates"
            )
            flagged.append(f"{label} ({what})")
    if flagged:
        warnings.warn(
            f"sbc: the sampler's posterior draws are degenerate: {'; '.join(flagged)}. Ranks "
            "among draws without spread test little (a sampler that returns one constant "
            "passes when it is the prior median); check that sample(released, rng) returns "
            "draws of the posterior of the release it is given, and read the result's "
            "contraction beside its p-values.",
            DegenerateDrawsWarning,
            stacklevel=outside_dpinfer(),
        )


class _Replicate:
    """One replicate: truth, statistic and release; then, given a sampler, the ranks."""

    def __init__(self, model, mechanism, sample: Callable | None, seeds):
        self.model, self.mechanism, self.sample, self.seeds = model, mechanism, sample, seeds

    def __call__(self, index: int, gen: np.random.Generator) -> dict:
        params = self.model.prior.sample(1, gen)
        s = self.model.simulate_checked(params, gen, event_shape=self.mechanism.event_shape)
        released = np.asarray(self.mechanism.release(s[0], rng=gen))
        out = {"truth": {k: v[0] for k, v in params.items()}, "s": s[0], "s_dp": released}
        if self.sample is not None:
            idata = self.sample(released, _generator(self.seeds, index, 0))
            draws, reported = _posterior_draws(idata, out["truth"], index)
            _rank_into(out, draws, reported, _generator(self.seeds, index, 1))
        return out


def _rank_into(out: dict, draws: np.ndarray, reported: float, gen) -> None:
    flat = draws.reshape(-1, draws.shape[-1])
    out["variance"] = flat.var(axis=0, ddof=1) if len(flat) > 1 else np.zeros(flat.shape[1])
    out["draws"] = len(flat)
    out["distinct"] = np.array([np.unique(column).size for column in flat.T])
    out["first"] = flat[0].copy()  # with "distinct", tells a sampler returning one constant
    kept = thinned(draws, draws_ess(draws, reported))
    truth = np.concatenate([np.ravel(v) for v in out["truth"].values()]).astype(float)
    out["rank"], out["fractional"] = ranks(kept, truth, gen)
    out["n_draws"] = len(kept)


def _generator(seeds, index: int, stream: int) -> np.random.Generator:
    """Stream 0 (the sampler's) or 1 (tie-breaking) of replicate ``index``."""
    return np.random.default_rng(child_sequence(child_sequence(seeds, index), stream))


def _posterior_draws(idata, truth: dict, index: int) -> tuple[np.ndarray, float]:
    """Return the draws of every parameter as ``(chains, n, components)`` and the reported ESS."""
    posterior = getattr(idata, "posterior", None)
    if posterior is None:
        raise TypeError(
            "sample must return an arviz.InferenceData with a posterior group, got "
            f"{type(idata).__name__} (replicate {index})"
        )
    columns = []
    for name, value in truth.items():
        if name not in posterior:
            raise ValueError(
                f"sample returned a posterior without the parameter {name!r} (replicate "
                f"{index}); it has {sorted(posterior.data_vars)}"
            )
        arr = np.asarray(posterior[name].values, dtype=float)
        if arr.size == 0:
            raise ValueError(f"sample returned no posterior draws (replicate {index})")
        if arr.ndim < 2 or arr.shape[2:] != np.shape(value):
            raise ValueError(
                f"posterior[{name!r}] has shape {arr.shape}; expected (chain, draw, "
                f"*{np.shape(value)}) like the prior's draws (replicate {index})"
            )
        columns.append(arr.reshape(*arr.shape[:2], -1))
    draws = np.concatenate(columns, axis=2)
    if not np.all(np.isfinite(draws)):
        raise ValueError(f"sample returned non-finite posterior draws (replicate {index})")
    return draws, _reported_ess(getattr(idata, "attrs", {}))


def _reported_ess(attrs) -> float:
    try:
        return float(attrs.get("ess", math.nan))
    except (TypeError, ValueError):
        return math.nan


def _rank_batch(estimator, kind: str, model, outs: list, options: dict, seq, seeds) -> None:
    """Draw every replicate's posterior in one batched call, then rank each."""
    releases = np.stack([o["s_dp"] for o in outs])
    names = list(outs[0]["truth"])
    _check_estimator(estimator, names, model, None)
    if kind == "posterior":
        prior = model.prior if model.prior.has_logpdf else None
        idata = estimator.sample(releases, **options, prior=prior, rng=seq)
    else:
        idata = estimator.posterior(releases, model.prior, **options, rng=seq)
    ess = np.asarray(idata.attrs["ess_release"], dtype=float)
    arrays = {name: np.asarray(idata.posterior[name].values, dtype=float) for name in names}
    for i, out in enumerate(outs):
        columns = [arr[:, :, i].reshape(*arr.shape[:2], -1) for arr in arrays.values()]
        _rank_into(out, np.concatenate(columns, axis=2), float(ess[i]), _generator(seeds, i, 1))


def _check_estimator(estimator, names, model, mechanism) -> None:
    """Refuse an estimator trained for other parameters or another release shape."""
    names = names if names is not None else model.prior.names
    if names is not None and sorted(estimator.names) != sorted(names):
        raise ValueError(
            f"the estimator was trained for the parameters {estimator.names}; the model's "
            f"prior has {list(names)}"
        )
    shape = None if mechanism is None else tuple(mechanism.event_shape)
    if shape is not None and shape != estimator.event_shape:
        raise ValueError(
            f"the estimator was trained on releases of shape {estimator.event_shape}; the "
            f"mechanism releases shape {shape}"
        )


def _estimator_kind(sample) -> str | None:
    """``'posterior'`` or ``'likelihood'`` for a trained neural estimator, else None."""
    if not type(sample).__module__.startswith("dpinfer.neural"):
        return None  # never import torch for a plain callable
    from ..neural import NeuralLikelihood, NeuralPosterior

    if isinstance(sample, NeuralPosterior):
        return "posterior"
    if isinstance(sample, NeuralLikelihood):
        return "likelihood"
    return None


def _check_options(options, kind: str | None, sample) -> dict:
    """Return the options of a batched estimator's call (none for a sample callable)."""
    if kind is None:
        if not callable(sample):
            raise TypeError(
                "sample must be a callable sample(released, rng) -> InferenceData or a trained "
                f"NeuralPosterior/NeuralLikelihood, got {type(sample).__name__}: {sample!r:.80}"
            )
        if options is not None:
            raise ValueError(
                "estimator_options applies to a trained neural estimator; a sample callable "
                f"takes its own options (got estimator_options={options!r:.80})"
            )
        return {}
    options = {"draws": ESTIMATOR_DRAWS, **_validate.mapping("estimator_options", options)}
    taken = sorted({"rng", "prior"} & set(options))
    if taken:
        raise ValueError(f"estimator_options must not set {taken}: sbc sets them")
    return options


def _check_model(model, mechanism) -> None:
    if not isinstance(model, Model):
        raise TypeError(f"model must be a dpinfer.Model, got {type(model).__name__}: {model!r}")
    model.require_prior("sbc")
    if not isinstance(mechanism, Mechanism) and not (
        callable(getattr(mechanism, "release", None)) and hasattr(mechanism, "event_shape")
    ):
        raise TypeError(
            "mechanism must be a dpinfer Mechanism (or have event_shape and "
            f"release(value, rng=...)), got {type(mechanism).__name__}: {mechanism!r:.80}"
        )
