"""A :class:`dpinfer.Model` from one PyMC model: batched prior, simulator and likelihood.

The PyMC model defines the parameters (free random variables with their
priors) and the confidential statistic (one or more random variables that
depend on them). From it we compile, with PyTensor:

* the prior, sampled and scored for a batch of ``n`` parameter sets;
* the simulator of the statistic given a batch of parameters;
* the confidential log-likelihood with its score and Hessian by automatic
  differentiation (:class:`dpinfer.Likelihood`).

Batching uses :func:`pytensor.graph.replace.vectorize_graph` on the scalar
model; random generators are explicit inputs seeded from dpinfer's ``rng``,
so draws follow the chunk seeds of :mod:`dpinfer.parallel`. Compiled
functions are built lazily, once per thread, and dropped on pickling.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping, Sequence

import numpy as np

from . import _validate
from ._parameter_space import ParameterSpace
from .likelihood import ExponentialFamily, Likelihood, _PytensorEvaluator

__all__ = ["model_parts"]


def model_parts(
    pymc_model,
    *,
    statistic,
    params: Sequence[str] | None = None,
    support: Mapping | None = None,
    exponential_family: ExponentialFamily | None = None,
):
    """Return ``(prior_sample, prior_logpdf, simulate, likelihood, statistic_names)``."""
    import pymc as pm

    if not isinstance(pymc_model, pm.Model):
        raise TypeError(f"pymc_model must be a pymc.Model, got {type(pymc_model).__name__}")
    stat_names = _validate.names("statistic", statistic, single=True)
    if not stat_names:
        raise ValueError("statistic must name at least one random variable of the model")
    rv_names = [rv.name for rv in pymc_model.basic_RVs]
    for name in stat_names:
        if name not in rv_names:
            raise ValueError(
                f"statistic {name!r} is not a random variable of the PyMC model; "
                f"its random variables are {rv_names}"
            )
    free = [rv.name for rv in pymc_model.free_RVs if rv.name not in stat_names]
    params = free if params is None else _validate.names("params", params)
    for name in params:
        if name not in free:
            raise ValueError(
                f"params: {name!r} is not a free random variable of the PyMC model "
                f"(other than the statistic); candidates are {free}"
            )
    param_rvs = [pymc_model[name] for name in params]
    stat_rvs = [pymc_model[name] for name in stat_names]
    _check_closed(stat_rvs, param_rvs, pymc_model)
    _check_generative(pymc_model)
    shapes = {rv.name: tuple(int(d) for d in rv.shape.eval()) for rv in param_rvs}
    bounds = {rv.name: _support_of(pymc_model, rv) for rv in param_rvs}
    bounds.update(_validate.mapping("support", support))
    space = ParameterSpace(shapes, support=bounds)
    graphs = _Graphs(pymc_model, params, stat_names)
    likelihood = Likelihood(
        space,
        evaluate=_LikelihoodEvaluator(space, graphs),
        has_score=True,
        has_hessian=True,
        exponential_family=exponential_family,
        source="pymc",
    )
    compiled = _Compiled(graphs, space)
    try:
        compiled.compile()
    except Exception as err:  # a PyTensor error deep in a graph rewrite: say what failed
        raise ValueError(
            "cannot build a batched prior sampler and simulator from this PyMC model "
            f"({type(err).__name__}: {err}). Model.from_pymc needs the parameters as free "
            "random variables with their priors (random effects included, centred or not) and "
            "the statistic as random variables that depend on them; write the model that way, "
            "or build dpinfer.Model from Python callables"
        ) from err
    return compiled.prior_sample, compiled.prior_logpdf, compiled.simulate, likelihood, stat_names


class _Graphs:
    """Picklable description of the parts of the model (names only, graphs rebuilt)."""

    def __init__(self, pymc_model, params, stats):
        self.model, self.params, self.stats = pymc_model, list(params), list(stats)


def _check_closed(stat_rvs, param_rvs, pymc_model) -> None:
    from pytensor.graph.traversal import ancestors

    allowed = set(param_rvs) | set(stat_rvs)
    for rv in stat_rvs:
        for var in ancestors([rv], blockers=list(allowed - {rv})):
            if var in pymc_model.free_RVs and var not in allowed:
                raise ValueError(
                    f"the statistic {rv.name!r} depends on the random variable {var.name!r}, "
                    "which is neither a parameter nor part of the statistic; list it in params"
                )


def _check_generative(pymc_model) -> None:
    """Refuse what a prior sampler cannot draw from: observed variables and potentials."""
    if pymc_model.observed_RVs:
        names = [rv.name for rv in pymc_model.observed_RVs]
        raise ValueError(
            f"the PyMC model has observed variables {names}: the prior that ABC and MCEM draw "
            "from would ignore them; remove them (the release enters through the mechanism) "
            "or fold that data into the prior"
        )
    if pymc_model.potentials:
        names = [v.name for v in pymc_model.potentials]
        raise ValueError(
            f"the PyMC model has potentials {names}, which a prior sampler cannot draw from; "
            "express them as distributions of the parameters"
        )


def _support_of(pymc_model, rv) -> tuple[float, float]:
    from pymc.logprob.transforms import IntervalTransform, LogOddsTransform, LogTransform

    transform = pymc_model.rvs_to_transforms.get(rv)
    if transform is None:
        return (-math.inf, math.inf)
    if isinstance(transform, LogTransform):
        return (0.0, math.inf)
    if isinstance(transform, LogOddsTransform):
        return (0.0, 1.0)
    if isinstance(transform, IntervalTransform):
        lower, upper = transform.args_fn(*rv.owner.inputs)
        lo = -math.inf if lower is None else float(np.asarray(lower.eval()).min())
        hi = math.inf if upper is None else float(np.asarray(upper.eval()).max())
        return (lo, hi)
    raise ValueError(
        f"cannot read the support of {rv.name!r} from its PyMC transform "
        f"{type(transform).__name__}; pass support={{{rv.name!r}: (lower, upper)}}"
    )


class _Compiled:
    """Lazily compiled prior sampler, prior density and simulator (one set per thread)."""

    def __init__(self, graphs: _Graphs, space: ParameterSpace):
        self.graphs, self.space = graphs, space
        self._local = threading.local()

    def __getstate__(self):
        return {"graphs": self.graphs, "space": self.space}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._local = threading.local()

    def _fns(self):
        fns = getattr(self._local, "fns", None)
        if fns is None:
            fns = self._local.fns = _compile_model(self.graphs, self.space)
        return fns

    def compile(self) -> None:
        """Compile now (in this thread), so that a model that cannot be built fails at once."""
        self._fns()

    def prior_sample(self, n, rng):
        """Draw ``n`` parameter sets from the PyMC prior."""
        fn, n_rngs = self._fns()["prior"]
        values = fn(int(n), *_generators(rng, n_rngs))
        return {k: np.asarray(v) for k, v in zip(self.space.names, values, strict=True)}

    def prior_logpdf(self, params):
        """Log prior density of a batch of parameter sets."""
        fn = self._fns()["prior_logp"]
        return np.asarray(fn(*[np.asarray(params[k], dtype=float) for k in self.space.names]))

    def simulate(self, params, rng):
        """Simulate the statistic for a batch of parameter sets."""
        fn, n_rngs = self._fns()["simulate"]
        args = [np.asarray(params[k], dtype=float) for k in self.space.names]
        return np.asarray(fn(*args, *_generators(rng, n_rngs)))


def _generators(rng, k):
    return [np.random.default_rng(int(x)) for x in rng.integers(0, 2**63, size=k)]


def _compile_model(graphs: _Graphs, space: ParameterSpace) -> dict:
    import pymc as pm
    import pytensor
    import pytensor.tensor as pt
    from pymc.distributions.shape_utils import change_dist_size
    from pytensor.graph.replace import vectorize_graph

    model = graphs.model
    param_rvs = [model[k] for k in graphs.params]
    stat_rvs = [model[k] for k in graphs.stats]

    # prior: batched by vectorising dependent parameters, resizing root ones
    n = pt.iscalar("n")
    replace: dict = {}
    for rv in param_rvs:
        new = vectorize_graph(rv, replace=replace) if replace else rv
        if new.ndim == rv.ndim:
            new = change_dist_size(new, new_size=(n,), expand=True)
        replace[rv] = new
    prior = _random_function([n], [replace[rv] for rv in param_rvs])

    # prior density, batched
    inputs = {
        k: pt.tensor(k, dtype="float64", shape=(None, *space.shapes[k])) for k in space.names
    }
    values = [pt.tensor(dtype="float64", shape=rv.type.shape) for rv in param_rvs]
    terms = pm.logprob.conditional_logp(dict(zip(param_rvs, values, strict=True)))
    total = pt.add(*[t.sum() for t in terms.values()])
    batched = vectorize_graph(
        total, replace={v: inputs[k] for v, k in zip(values, space.names, strict=True)}
    )
    prior_logp = pytensor.function(list(inputs.values()), batched)

    # simulator of the statistic given a batch of parameters
    sub = {rv: inputs[k] for rv, k in zip(param_rvs, space.names, strict=True)}
    stats = _batched_statistic(model, stat_rvs, sub, inputs[space.names[0]].shape[0])
    if len(stats) == 1:
        out = pt.as_tensor_variable(stats[0])
    else:
        out = pt.concatenate([s.reshape((s.shape[0], -1)) for s in stats], axis=1)
    simulate = _random_function(list(inputs.values()), [out], single=True)
    return {"prior": prior, "prior_logp": prior_logp, "simulate": simulate}


def _batched_statistic(model, stat_rvs, replace, batch):
    """Return the statistic's random variables, drawn once per parameter set of the batch.

    Each is vectorised over the batched parameters, in the model's order so that one may
    depend on another; one that depends on no parameter (a covariate) is resized to the
    batch, so that every parameter set gets its own draw.
    """
    from pymc.distributions.shape_utils import change_dist_size
    from pytensor.graph.replace import vectorize_graph

    replace = dict(replace)
    order = {rv: i for i, rv in enumerate(model.basic_RVs)}
    for rv in sorted(stat_rvs, key=order.__getitem__):
        new = vectorize_graph(rv, replace=replace)
        if new.ndim == rv.ndim:
            new = change_dist_size(new, new_size=(batch,), expand=True)
        replace[rv] = new
    return [replace[rv] for rv in stat_rvs]


def _random_function(inputs, outputs, *, single: bool = False):
    """Compile ``outputs`` with every random generator turned into an explicit input."""
    import pytensor
    from pytensor.graph.replace import graph_replace
    from pytensor.graph.traversal import ancestors
    from pytensor.tensor.random.type import RandomGeneratorType

    rngs = [v for v in ancestors(outputs) if isinstance(v.type, RandomGeneratorType)]
    rngs = list(dict.fromkeys(rngs))
    rng_inputs = [r.type() for r in rngs]
    outputs = graph_replace(outputs, replace=dict(zip(rngs, rng_inputs, strict=True)))
    # a statistic may depend on some parameters only (the counts of a hierarchical model depend
    # on the random effects, not on the hyperparameters above them)
    fn = pytensor.function(
        [*inputs, *rng_inputs], outputs[0] if single else outputs, on_unused_input="ignore"
    )
    return fn, len(rng_inputs)


class _LikelihoodEvaluator:
    """Log-likelihood of the statistic given the parameters, with autodiff derivatives."""

    def __init__(self, space: ParameterSpace, graphs: _Graphs):
        self._inner = _PytensorEvaluator(space, _StatLogp(graphs))

    def __call__(self, s, params, order):
        return self._inner(s, params, order)


class _StatLogp:
    """Builds ``sum_j log pi(s_j | theta)`` for the statistic's random variables, batched."""

    def __init__(self, graphs: _Graphs):
        self.graphs = graphs

    def __call__(self, s_var, param_vars):
        import pymc as pm
        import pytensor.tensor as pt
        from pytensor.graph.replace import graph_replace, vectorize_graph

        model = self.graphs.model
        param_rvs = [model[k] for k in self.graphs.params]
        # parameters become plain placeholders first, so that PyMC's logprob
        # rewrites see only the statistic as random
        holders = {rv: pt.tensor(dtype="float64", shape=rv.type.shape) for rv in param_rvs}
        stat_rvs = graph_replace([model[k] for k in self.graphs.stats], replace=holders)
        # float64 values: discrete log-densities accept them (the naive fit needs that)
        values = [pt.tensor(dtype="float64", shape=rv.type.shape) for rv in stat_rvs]
        terms = pm.logprob.conditional_logp(dict(zip(stat_rvs, values, strict=True)))
        total = pt.add(*[t.sum() for t in terms.values()])
        replace: dict = {holders[rv]: param_vars[rv.name] for rv in param_rvs}
        if len(stat_rvs) == 1:
            replace[values[0]] = s_var
        else:
            start = 0
            for value in values:
                width = int(np.prod(value.type.shape)) if value.ndim else 1
                if value.ndim == 0:
                    replace[value] = s_var[:, start]
                else:
                    replace[value] = s_var[:, start : start + width].reshape(
                        (-1, *value.type.shape)
                    )
                start += width
        return vectorize_graph(total, replace=replace)
