"""PyMC reference posteriors: a model's prior and statistic, the mechanism as likelihood.

A reference is an independent route to the posterior given a DP release
(Gong 2022, eq. 3.2): the confidential statistic ``s`` is a latent variable of
a PyMC model and the release enters through the mechanism's density
(:meth:`~dpinfer.Mechanism.to_pymc`), or with ``s`` summed out when it is
discrete. NUTS samples it; the draws come back as the same
:class:`arviz.InferenceData` layout every dpinfer sampler returns, so
:func:`dpinfer.compare.compare_posteriors` can set ABC against it.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from . import _validate
from ._compile_once import compiled_once
from ._rng import RNGLike, as_seed_sequence, seed_entropy
from .marginal._latent import read_latent
from .mechanisms.base import Mechanism
from .model import Model
from .results import to_inference_data
from .samplers._common import check_count, check_options, mechanism_constants, privacy_attrs

if TYPE_CHECKING:
    import pymc as pm

    from .results import InferenceData

__all__ = ["reference_model", "sample_nuts", "sample_reference"]

REFERENCE = (
    "Hoffman, M. D. and Gelman, A. (2014). The No-U-Turn sampler. JMLR 15, 1593-1623; "
    "as implemented in PyMC (Abril-Pla et al. 2023, PeerJ Comput. Sci. 9:e1516)."
)


def sample_reference(
    model: Model | Callable,
    mechanism: Mechanism,
    released: ArrayLike,
    *,
    support: ArrayLike | None = None,
    loglik: Callable | None = None,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 2,
    rng: RNGLike = None,
    progressbar: bool = False,
    var_names: Sequence[str] | None = None,
    **nuts_kwargs: Any,
) -> InferenceData:
    r"""Sample the posterior given a DP release with NUTS on a PyMC model.

    Parameters
    ----------
    model : Model or callable
        Either a :class:`dpinfer.Model` built by :meth:`Model.from_pymc`, the
        same object that :func:`dpinfer.smc_abc` and :func:`dpinfer.mcem` take:
        its PyMC model is copied and the release attached to its statistic
        (a continuous statistic stays a latent variable; a discrete one is
        summed out, count by count, by :func:`dpinfer.to_pymc`, or over
        ``support``). Or a ``build`` callable, called with no
        arguments inside a fresh ``pm.Model()`` context, that defines the prior
        and the confidential statistic and returns, by path:

        * default: the confidential statistic ``s`` (a PyTensor variable of
          shape ``mechanism.event_shape``); the release is attached as
          ``mechanism.to_pymc("s_dp", s, observed=released)``;
        * with ``support``: an *unregistered* distribution of ``s`` (for
          instance ``pm.Poisson.dist(theta)``), which is summed out over
          ``support``;
        * with ``loglik``: anything, passed on to ``loglik``.
    mechanism : Mechanism
        The public mechanism that produced the release.
    released : array_like
        The release, of shape ``mechanism.event_shape``.
    support : array_like, optional
        Not needed for a discrete statistic whose counts are independent given
        the parameters (one PyMC variable of a supported family, a scalar or a
        vector of counts): it is then summed out cell by cell, exactly, with
        the windows :func:`dpinfer.to_pymc` chooses. Otherwise: joint values of
        a scalar discrete statistic, shape ``(k, *event_shape)``, over
        which it is marginalised (refused for a vector statistic, whose rows
        would be joint configurations of all its counts):
        ``log pi(s_dp | theta) = logsumexp_s [log pi(s | theta) + log eta(s_dp | s)]``,
        added as ``pm.Potential("s_dp", ...)``. It must hold all but a
        negligible part of the posterior mass of ``s``; the caller proves it
        (see :func:`dpinfer.models.poisson_count.count_support`).
    loglik : callable, optional
        ``loglik(built, released) -> scalar TensorVariable``, a custom
        marginal log-likelihood of the release (added as a ``pm.Potential``),
        for models that marginalise ``s`` in their own way (build callables
        only).
    draws, tune, chains : int
        NUTS draws and tuning steps per chain, and the number of chains.
    rng : None, int, SeedSequence or Generator, optional
        Seed; a 32-bit seed derived from it is passed to PyMC, which spawns one
        per chain.
    progressbar : bool, default False
        Show PyMC's progress bar.
    var_names : sequence of str, optional
        Variables stored in the posterior; default, every free random variable
        and deterministic of the model.
    **nuts_kwargs
        Passed to :func:`pymc.sample` (``target_accept``, ``cores``, ...).
        ``cores`` defaults to 1 (chains run sequentially).

    Returns
    -------
    arviz.InferenceData
        ``posterior`` with ``chains`` chains; ``sample_stats`` with NUTS
        diagnostics; ``attrs``: ``method='pymc_nuts'``, ``divergences``,
        ``rhat_max`` and ``ess`` (the smallest bulk ESS over scalar components).

    Notes
    -----
    The target is the exact posterior

    .. math:: \pi(\theta, s \mid s_{dp}) \propto \pi_0(\theta)\, \pi(s \mid \theta)\,
              \eta(s_{dp} \mid s),

    whose ``theta`` margin is Gong's (3.2); NUTS approximates it by MCMC, so
    its draws are autocorrelated (use the ESS in ``attrs``) and exact only
    asymptotically. A Laplace density is not differentiable at ``s = s_dp``:
    a kink in the log density costs NUTS efficiency but not validity. A
    continuous confidential statistic is sampled jointly with ``theta``; a
    discrete one must be summed out (``support`` or ``loglik``) since NUTS
    needs a continuous state.

    References
    ----------
    .. [1] Gong, R. (2022). Exact inference with approximate computation for
       differentially private data via perturbations. JPC 12(2), eq. (3.2).
    .. [2] Hoffman, M. D. and Gelman, A. (2014). The No-U-Turn sampler. JMLR 15.

    Examples
    --------
    One PyMC model for ABC, MCEM and this reference:

    >>> import pymc as pm, dpinfer as dp
    >>> with pm.Model() as pm_model:
    ...     mu = pm.Normal("mu", 0.0, 10.0)
    ...     s = pm.Normal("s", mu, 1.0)
    >>> model = dp.Model.from_pymc(pm_model, statistic="s")
    >>> mech = dp.Laplace(3.0, sensitivity=1.0)
    >>> idata = dp.sample_reference(model, mech, 4.2, draws=200, tune=200, rng=1)
    >>> idata.posterior["mu"].shape
    (2, 200)

    Or a ``build`` callable:

    >>> def build():
    ...     mu = pm.Normal("mu", 0.0, 10.0)
    ...     return pm.Normal("s", mu, 1.0)
    >>> dp.sample_reference(build, mech, 4.2, draws=200, tune=200, rng=1).attrs["chains"]
    2
    """
    if not isinstance(mechanism, Mechanism):
        raise TypeError(
            f"mechanism must be a dpinfer Mechanism, got {type(mechanism).__name__}: {mechanism!r}"
        )
    _check_nuts_options(draws, tune, chains, rng, progressbar, var_names)
    pymc_model = reference_model(model, mechanism, released, support=support, loglik=loglik)
    nuts: dict[str, Any] = {
        "draws": draws,
        "tune": tune,
        "chains": chains,
        "rng": rng,
        "var_names": var_names,
    }
    return sample_nuts(
        pymc_model,
        **nuts,
        progressbar=progressbar,
        mechanism=mechanism,
        observed=mechanism.check_released(released),
        attrs={"likelihood": _path(pymc_model, support, loglik)},
        **nuts_kwargs,
    )


def reference_model(
    model: Model | Callable,
    mechanism: Mechanism,
    released: ArrayLike,
    *,
    support: ArrayLike | None = None,
    loglik: Callable | None = None,
) -> pm.Model:
    """Build the PyMC model that :func:`sample_reference` samples, without sampling it.

    Parameters
    ----------
    model, mechanism, released, support, loglik
        As in :func:`sample_reference`.

    Returns
    -------
    pymc.Model
        The model, with the release's likelihood term named ``"s_dp"``
        (an observed variable, or a ``pm.Potential`` when ``s`` is summed out).

    Examples
    --------
    >>> import pymc as pm, dpinfer as dp
    >>> mech = dp.Laplace(5.0, sensitivity=1.0)
    >>> def build():
    ...     return pm.Poisson.dist(pm.Gamma("theta", 25.0, 1.0))
    >>> m = reference_model(build, mech, 37.4, support=np.arange(200))
    >>> [v.name for v in m.potentials]
    ['s_dp']
    """
    import pymc as pm

    released = mechanism.check_released(released)
    if support is not None and loglik is not None:
        raise ValueError("pass at most one of support= and loglik=, got both")
    if loglik is not None and not callable(loglik):
        raise TypeError(f"loglik must be callable, got {type(loglik).__name__}")
    if support is not None:
        support = mechanism.check_value(support)
        if support.ndim != len(mechanism.event_shape) + 1 or len(support) == 0:
            raise ValueError(
                f"support must have shape (k, *event_shape) with k >= 1, got shape {support.shape}"
            )
    if isinstance(model, Model):
        if loglik is not None:
            raise ValueError(
                "loglik= is for build callables; a Model from PyMC brings the statistic's own "
                "distribution (pass support= to sum a discrete statistic out)"
            )
        return _from_model(model, mechanism, released, support)
    if not callable(model):
        raise TypeError(
            "model must be a dpinfer.Model built by Model.from_pymc or a build callable, "
            f"got {type(model).__name__}: {model!r}"
        )
    build = model
    with pm.Model() as pymc_model:
        built = build()
        if support is not None:
            if getattr(built, "ndim", 0) > 0:
                raise ValueError(_VECTOR_SUPPORT.format(names="returned by build"))
            pm.Potential("s_dp", _summed_out(built, mechanism, released, support))
        elif loglik is not None:
            pm.Potential("s_dp", loglik(built, released))
        else:
            mechanism.to_pymc("s_dp", built, observed=released)
    return pymc_model


#: The NUTS settings of :func:`sample_nuts` and their defaults (as in :func:`sample_reference`).
_NUTS_DEFAULTS = {
    "draws": 1000,
    "tune": 1000,
    "chains": 2,
    "rng": None,
    "progressbar": False,
    "var_names": None,
}


def sample_nuts(
    pymc_model: pm.Model,
    *,
    mechanism: Mechanism | None = None,
    observed: ArrayLike | None = None,
    constant_data: Mapping[str, ArrayLike] | None = None,
    attrs: Mapping[str, Any] | None = None,
    **options: Any,
) -> InferenceData:
    """Sample any PyMC model with NUTS and return dpinfer's InferenceData layout.

    Parameters
    ----------
    pymc_model : pymc.Model
        The model to sample.
    **options
        ``draws`` (1000), ``tune`` (1000), ``chains`` (2), ``rng`` (None),
        ``progressbar`` (False), ``var_names`` (None) and keywords of
        :func:`pymc.sample`: as in :func:`sample_reference`.
    mechanism : Mechanism, optional
        The mechanism of a release the model holds (attached with
        :meth:`~dpinfer.Mechanism.to_pymc`): its repr and privacy guarantee
        (``epsilon``, ``delta``, ``rho``) are recorded in ``attrs``, its
        numeric parameters in ``constant_data``, as :func:`sample_reference`
        records them.
    observed : array_like, optional
        Stored as ``observed_data['s_dp']``.
    constant_data : dict, optional
        Stored in ``constant_data`` (after the mechanism's parameters).
    attrs : dict, optional
        Extra metadata merged into the standard ``attrs``.

    Returns
    -------
    arviz.InferenceData
        As in :func:`sample_reference`.

    Notes
    -----
    NUTS compiles the model's log-density and gradient once per model: a model
    sampled again (in one process, ``cores=1``) reuses them, so a model of one
    shape fitted to new data takes the data through ``pm.Data`` and
    ``pm.set_data`` and is compiled once. The draws are those of a fresh
    compilation of the same model, seed for seed.

    Examples
    --------
    A hand-built model of a release, its mechanism recorded:

    >>> import pymc as pm, dpinfer as dp
    >>> mech = dp.Laplace.from_privacy(epsilon=1.0, sensitivity=1.0)
    >>> with pm.Model() as m:
    ...     s = pm.Normal("s", 0.0, 1.0)
    ...     _ = mech.to_pymc("s_dp", s, observed=0.5)
    >>> idata = sample_nuts(m, mechanism=mech, observed=0.5, draws=100, tune=100, rng=1)
    >>> idata.posterior["s"].shape
    (2, 100)
    >>> idata.attrs["epsilon"], idata.constant_data["mechanism_scale"].values.tolist()
    (1.0, [1.0])
    """
    if mechanism is not None:
        if not isinstance(mechanism, Mechanism):
            raise TypeError(
                f"mechanism must be a dpinfer Mechanism, got {type(mechanism).__name__}: "
                f"{mechanism!r}"
            )
        constant_data = {**mechanism_constants(mechanism), **(constant_data or {})}
        attrs = {"mechanism": repr(mechanism), **privacy_attrs(mechanism), **(attrs or {})}
    import pymc as pm

    nuts_kwargs = {**_NUTS_DEFAULTS, **options}
    draws, tune, chains, rng, progressbar, var_names = map(nuts_kwargs.pop, _NUTS_DEFAULTS)
    draws, tune, chains = _check_nuts_options(draws, tune, chains, rng, progressbar, var_names)
    root = as_seed_sequence(rng)
    seed = int(root.generate_state(1)[0])  # PyMC spawns the per-chain seeds from one int
    names = list(var_names) if var_names is not None else _default_names(pymc_model)
    missing = [n for n in names if n not in pymc_model.named_vars]
    if missing:
        raise ValueError(f"var_names {missing} are not variables of the model")
    nuts_kwargs.setdefault("cores", 1)
    size = {"draws": draws, "tune": tune, "chains": chains}
    # chains in one process reuse the model's compiled log-density; several processes
    # would pickle the model, and a model holding a compiled function may not pickle
    reuse = compiled_once(pymc_model) if nuts_kwargs["cores"] == 1 else contextlib.nullcontext()
    with pymc_model, reuse:
        trace = pm.sample(
            **size,
            random_seed=seed,
            progressbar=progressbar,
            return_inferencedata=False,
            compute_convergence_checks=False,
            **nuts_kwargs,
        )

    per_chain = {
        n: [np.asarray(trace.get_values(n, chains=c)) for c in trace.chains] for n in names
    }
    posterior = {n: np.concatenate(v) for n, v in per_chain.items()}
    stats = {}
    for key in ("diverging", "model_logp", "tree_depth", "step_size", "energy"):
        source = "depth" if key == "tree_depth" else key
        if source in trace.stat_names:
            stats[key] = np.concatenate(
                [np.asarray(trace.get_sampler_stats(source, chains=c)) for c in trace.chains]
            )
    divergences = int(np.sum(stats.get("diverging", 0)))
    groups: dict[str, Any] = {
        "sample_stats": stats,
        "observed": observed,
        "constant_data": constant_data,
    }
    return to_inference_data(
        posterior,
        **groups,
        chains=len(trace.chains),
        attrs={
            "method": "pymc_nuts",
            "reference": REFERENCE,
            "mechanism": "none",
            "epsilon": math.nan,
            "delta": math.nan,
            "n_simulations": math.nan,
            "acceptance_rate": math.nan,
            "log_evidence": math.nan,
            **(attrs or {}),
            "divergences": divergences,
            "draws": draws,
            "tune": int(tune),
            "chains": chains,
            "seed": seed_entropy(root),
        },
    )


def _from_model(model: Model, mechanism, released, support):
    """Copy the model's PyMC model and attach the release to its statistic."""
    import pymc as pm
    import pytensor.tensor as pt
    from pymc.model.fgraph import clone_model
    from pytensor.graph.replace import graph_replace

    source = model.pymc_model
    if source is None:
        raise ValueError(
            "sample_reference needs a Model built by Model.from_pymc (which keeps its PyMC "
            "model) or a build callable; this Model was built from Python callables"
        )
    names = [model.statistic] if isinstance(model.statistic, str) else list(model.statistic)
    stats = [source[name] for name in names]
    discrete = [rv.type.dtype.startswith(("int", "uint", "bool")) for rv in stats]
    if any(discrete) and not all(discrete):
        raise ValueError(
            f"the statistic's variables {names} mix discrete and continuous ones; build the "
            "reference with a build callable (and loglik=) instead"
        )
    if not any(discrete):
        if support is not None:
            raise ValueError(
                f"support= sums a discrete statistic out, but {names} is continuous: it stays "
                "a latent variable of the reference, so leave support out"
            )
        pymc_model = clone_model(source)
        with pymc_model:
            mechanism.to_pymc("s_dp", _joined([pymc_model[n] for n in names]), observed=released)
        return pymc_model
    if support is None:
        return _marginalised(source, stats, mechanism, released)
    if stats[0].ndim or len(stats) > 1:
        raise ValueError(_VECTOR_SUPPORT.format(names=names))
    # the statistic becomes a constant of the copy; its distribution enters summed out
    pymc_model = pm.do(
        source, {rv.name: np.zeros(tuple(rv.shape.eval()), dtype=rv.type.dtype) for rv in stats}
    )
    parameters = [rv for rv in source.free_RVs if rv.name not in names]
    swap = {rv: pymc_model[rv.name] for rv in parameters}
    values = pt.as_tensor_variable(support)
    log_s = sum(_event_sum(pm.logp(rv, part)) for rv, part in _parts(stats, values))
    with pymc_model:
        pm.Potential("s_dp", _logsumexp(graph_replace(log_s, swap), mechanism, released, support))
    return pymc_model


_VECTOR_SUPPORT = (
    "support= lists joint values of the whole statistic {names}, which for a vector of counts "
    "is not a sum over each count: leave support out, and each count is summed out cell by "
    "cell, exactly (dpinfer.to_pymc), when the counts are independent given the parameters"
)


def _marginalised(source, stats, mechanism, released):
    """Copy the model with each count of the statistic summed out by :func:`dpinfer.to_pymc`."""
    import pymc as pm
    from pytensor.graph.replace import graph_replace
    from pytensor.graph.traversal import ancestors

    names = [rv.name for rv in stats]
    op = stats[0].owner.op if len(stats) == 1 and stats[0].owner is not None else None
    if op is None or getattr(op, "ndim_supp", 1) != 0:
        raise ValueError(
            f"the statistic {names} is not one variable with independent cells given the "
            "parameters, so its counts cannot be summed out one by one: pass support= (joint "
            "values of the whole statistic, shape (k, *event_shape)) or loglik="
        )
    read_latent(stats[0])  # refuses a distribution whose tail cannot be bounded, by name
    pymc_model = pm.do(
        source, {rv.name: np.zeros(tuple(rv.shape.eval()), dtype=rv.type.dtype) for rv in stats}
    )
    # the free variables the statistic reads directly (hyperparameters behind them stay put)
    free = [rv for rv in source.free_RVs if rv.name not in names]
    direct = [v for v in ancestors([stats[0]], blockers=free) if v in free]
    swap = {rv: pymc_model[rv.name] for rv in direct}
    with pymc_model:
        mechanism.to_pymc("s_dp", graph_replace(stats[0], swap), observed=released)
    return pymc_model


def _joined(stats):
    """Return the statistic as one tensor (several variables concatenated on the last axis)."""
    import pytensor.tensor as pt

    if len(stats) == 1:
        return stats[0]
    return pt.concatenate([pt.atleast_1d(rv).reshape((-1,)) for rv in stats])


def _parts(stats, values):
    """Pair each statistic with its slice of the support values ``(k, *event_shape)``."""
    if len(stats) == 1:
        yield stats[0], values
        return
    start = 0
    for rv in stats:
        shape = tuple(int(d) for d in rv.shape.eval())
        width = int(np.prod(shape)) if shape else 1
        part = values[:, start : start + width]
        yield rv, (part.reshape((-1, *shape)) if shape else part[:, 0])
        start += width


def _event_sum(log_s):
    while log_s.ndim > 1:
        log_s = log_s.sum(axis=-1)
    return log_s


def _summed_out(dist, mechanism, released, support):
    """``logsumexp_s [log pi(s | theta) + log eta(s_dp | s)]`` over the support."""
    import pymc as pm
    import pytensor.tensor as pt

    log_s = _event_sum(pm.logp(dist, pt.as_tensor_variable(support)))
    return _logsumexp(log_s, mechanism, released, support)


def _logsumexp(log_s, mechanism, released, support):
    import pytensor.tensor as pt

    log_eta = mechanism.logpdf(released, support)  # constants: (k,)
    terms = log_s + pt.as_tensor_variable(log_eta)
    top = pt.max(terms)
    return top + pt.log(pt.sum(pt.exp(terms - top)))


def _path(pymc_model, support, loglik) -> str:
    if support is not None:
        return f"s summed over {len(support)} support points"
    if loglik is not None:
        return "custom marginal log-likelihood"
    if getattr(pymc_model.named_vars.get("s_dp"), "tag", None) is not None:
        if getattr(pymc_model["s_dp"].tag, "dpinfer_marginal", False):
            return "s summed out cell by cell (dpinfer.to_pymc)"
    return "latent s, mechanism.to_pymc"


def _default_names(pymc_model) -> list[str]:
    return [v.name for v in pymc_model.free_RVs] + [v.name for v in pymc_model.deterministics]


def _check_nuts_options(draws, tune, chains, rng, progressbar, var_names) -> tuple[int, int, int]:
    check_options(rng=rng, executor=None, progressbar=progressbar)
    if var_names is not None and (
        not isinstance(var_names, list | tuple) or not all(isinstance(n, str) for n in var_names)
    ):
        raise TypeError(f"var_names must be a list of variable names, got {var_names!r}")
    return (
        check_count("draws", draws),
        _validate.non_negative_int("tune", tune),
        check_count("chains", chains),
    )
