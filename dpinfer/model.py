"""Priors and models: vectorised prior, simulator of the confidential statistic."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, cast

import numpy as np
import scipy.stats
from numpy.typing import ArrayLike

from . import _validate
from ._pymc_bridge import model_parts
from ._rng import RNGLike, as_generator
from ._user_code import no_writes, outside_domain, read_only
from .likelihood import Likelihood

if TYPE_CHECKING:
    import pymc as pm

    from .likelihood import ExponentialFamily, Likelihood

__all__ = ["Model", "Prior", "as_prior"]


class Prior:
    """A proper prior over named parameters, sampled and scored in batches.

    Parameters
    ----------
    spec : dict or callable
        Either a mapping from parameter name to a frozen ``scipy.stats``
        distribution (independent components; multivariate ones such as
        ``dirichlet`` or ``multivariate_normal`` give vector parameters), or a
        callable ``sample(n, rng) -> dict`` of arrays with leading dimension
        ``n``, for dependent priors.
    logpdf : callable, optional
        With a callable ``spec``: ``logpdf(params) -> (n,)``, given read-only
        arrays (the draws a sampler keeps; see :class:`Model`). Samplers that
        need prior densities (importance sampling with a proposal, SMC) refuse
        a prior without one. A dict ``spec`` has its densities already, so a
        ``logpdf`` beside it is refused rather than ignored.

    Examples
    --------
    >>> import scipy.stats as st
    >>> prior = Prior({"theta": st.gamma(25)})
    >>> draws = prior.sample(3, rng=np.random.default_rng(0))
    >>> draws["theta"].shape, prior.logpdf(draws).shape
    ((3,), (3,))
    """

    def __init__(
        self,
        spec: Mapping[str, Any] | Callable[..., Mapping[str, ArrayLike]],
        *,
        logpdf: Callable | None = None,
    ) -> None:
        _validate.optional_callable("logpdf", logpdf)
        # what describe() says of a callable prior (set from PyMC)
        self._described: str | None = None
        if isinstance(spec, Mapping) and logpdf is not None:
            raise ValueError(
                "logpdf is for a prior given as a sample function; a dict of scipy.stats "
                "distributions has its own densities (drop logpdf=)"
            )
        if isinstance(spec, Mapping):
            if not spec:
                raise ValueError("prior must name at least one parameter, got an empty mapping")
            for name, dist in spec.items():
                _check_frozen(name, dist)
            self._spec: dict | None = dict(spec)
            self._sample_fn: Callable | None = None
            self._logpdf_fn: Callable | None = None
            self.names: tuple[str, ...] | None = tuple(spec)
        elif callable(spec):
            self._spec = None
            self._sample_fn = spec
            self._logpdf_fn = logpdf
            self.names = None
        else:
            raise TypeError(
                "prior must be a dict of frozen scipy.stats distributions or a callable "
                f"sample(n, rng) -> dict, got {type(spec).__name__}: {spec!r}"
            )

    @property
    def has_logpdf(self) -> bool:
        """Whether the prior density can be evaluated."""
        return self._spec is not None or self._logpdf_fn is not None

    def sample(self, n: int, rng: RNGLike = None) -> dict[str, np.ndarray]:
        """Draw ``n`` parameter sets as a dict of arrays with leading dimension ``n``.

        ``rng`` is a seed or Generator (None: fresh OS entropy; NumPy's global
        state is never used). The draws are checked: numbers, finite, leading
        dimension ``n``; an error names the prior as their source.
        """
        n = _validate.size("n", n)
        rng = as_generator(rng)
        if self._spec is not None:
            draws = {name: _batch_rvs(dist, n, rng) for name, dist in self._spec.items()}
        elif self._sample_fn is not None:  # a callable prior: it has no spec
            draws = self._sample_fn(n, rng)
            if not isinstance(draws, Mapping):
                raise TypeError(
                    f"the prior's sample function must return a dict, got {type(draws)}"
                )
        return {name: self._checked_draws(name, value, n) for name, value in draws.items()}

    def _checked_draws(self, name: str, value, n: int) -> np.ndarray:
        source = f"the prior of {name!r}"
        arr = _validate.numeric_output(value, source=source)
        if arr.shape[:1] != (n,):
            raise ValueError(
                f"{source} returned draws of shape {arr.shape}; expected a leading "
                f"dimension of {n} (one draw per parameter set)"
            )
        if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
            bad = int(np.sum(~np.isfinite(arr).reshape(n, -1).all(axis=1)))
            raise ValueError(
                f"{source} returned non-finite draws (NaN or inf) in {bad} of {n} parameter "
                "sets; a proper prior draws finite values"
            )
        return arr

    def logpdf(self, params: Mapping[str, np.ndarray]) -> np.ndarray:
        """Log prior density of a batch of parameter sets, shape ``(n,)``."""
        if self._spec is None:
            if self._logpdf_fn is None:
                raise ValueError("this prior was given as a sampler only; pass logpdf=... too")
            with no_writes(f"the prior density {_callable_name(self._logpdf_fn)}", "params"):
                return np.asarray(self._logpdf_fn(read_only(params)), dtype=float)
        total: float | np.ndarray = 0.0
        for name, dist in self._spec.items():
            x = np.asarray(params[name])
            batch = x.shape[:1]
            if isinstance(getattr(dist, "_dist", None), type(scipy.stats.dirichlet)):
                x = np.moveaxis(x, 0, -1)  # scipy's dirichlet wants components first
            score = dist.logpdf if hasattr(dist, "logpdf") else dist.logpmf
            # scipy's multivariate densities squeeze a batch of one; restore it.
            total = total + np.asarray(score(x), dtype=float).reshape(batch)
        return np.asarray(total, dtype=float)

    def __repr__(self) -> str:
        return f"Prior({self.describe()})"

    def describe(self) -> str:
        """Say, in one short line, each parameter's name and distribution.

        Examples
        --------
        >>> import scipy.stats as st
        >>> Prior({"theta": st.gamma(25), "mu": st.norm(0, np.float64(10))}).describe()
        'theta ~ gamma(25), mu ~ norm(0, 10)'
        """
        if self._spec is not None:
            return ", ".join(f"{k} ~ {_describe(d)}" for k, d in self._spec.items())
        if self._described is not None:
            return self._described
        logpdf = "none" if self._logpdf_fn is None else _callable_name(self._logpdf_fn)
        return f"sample={_callable_name(self._sample_fn)}, logpdf={logpdf}"


class Model:
    """A Bayesian model of a confidential statistic: prior and batched simulator.

    Parameters
    ----------
    prior : Prior or dict or None
        The prior (a dict is passed to :class:`Prior`). Only likelihood
        inference (:func:`dpinfer.mcem`) runs without one; the ABC samplers
        refuse a model whose prior is None.
    simulate : callable
        ``simulate(params, rng) -> array`` of shape ``(n, *event_shape)``:
        one confidential statistic per parameter set in the batch ``params``
        (a dict of arrays with leading dimension ``n``). The arrays of
        ``params`` are **read-only** views of the draws the sampler keeps: a
        simulator computes new arrays from them (``params["theta"] * 1.2``)
        and never changes them in place (``params["theta"] *= 1.2`` raises a
        ValueError that says so, instead of silently changing the draws).
    loglik : callable, optional
        ``loglik(s, params) -> (n,)``, the confidential log-likelihood
        ``log pi(s | theta)``, for likelihood-based methods.
    likelihood : dpinfer.Likelihood, optional
        The confidential log-likelihood with its score and Hessian (from PyMC
        by automatic differentiation, or from callables), which
        :func:`dpinfer.mcem` needs; it also serves as ``loglik`` when that is
        not given. :meth:`from_pymc` builds all of a model from PyMC.

    Examples
    --------
    >>> import scipy.stats as st
    >>> model = Model(prior={"theta": st.gamma(25)},
    ...               simulate=lambda p, rng: rng.poisson(p["theta"]))
    >>> model.simulate_checked(model.prior.sample(4, np.random.default_rng(1)),
    ...                        np.random.default_rng(2), event_shape=()).shape
    (4,)
    """

    def __init__(
        self,
        prior: Prior | Mapping[str, Any] | None = None,
        simulate: Callable | None = None,
        *,
        loglik: Callable | None = None,
        likelihood: Likelihood | None = None,
    ) -> None:
        self.prior = prior if prior is None or isinstance(prior, Prior) else Prior(prior)
        if not callable(simulate):
            raise TypeError(f"simulate must be callable, got {type(simulate).__name__}")
        if loglik is not None and not callable(loglik):
            raise TypeError(f"loglik must be callable, got {type(loglik).__name__}")
        self.simulate = simulate
        self.loglik = loglik
        self.likelihood = _check_likelihood(likelihood)
        if loglik is None and likelihood is not None:
            self.loglik = likelihood.logp
        self.pymc_model = None
        self.statistic: str | tuple[str, ...] | None = None

    @classmethod
    def from_pymc(
        cls,
        pymc_model: pm.Model,
        *,
        statistic: str | Sequence[str],
        params: Sequence[str] | None = None,
        support: Mapping[str, Any] | None = None,
        exponential_family: ExponentialFamily | None = None,
    ) -> Model:
        """Build prior, simulator and likelihood from one PyMC model.

        Parameters
        ----------
        pymc_model : pymc.Model
            Free random variables for the parameters, with their priors, and
            random variable(s) for the confidential statistic.
        statistic : str or sequence of str
            Name(s) of the statistic's random variables; several are
            concatenated, in order, along the last axis.
        params : sequence of str, optional
            Parameter names; default every other free random variable.
        support : dict, optional
            Overrides of the parameter supports, which are otherwise read from
            PyMC's default transforms (log: positive; interval: its bounds).
        exponential_family : dpinfer.ExponentialFamily, optional
            Closed-form M-step for :func:`dpinfer.mcem`.

        Returns
        -------
        Model
            With ``likelihood`` differentiated by PyTensor, the batched prior
            (sampler and density), the batched simulator, and the PyMC model as
            ``pymc_model`` (with ``statistic``, the names) for reference fits.

        Examples
        --------
        >>> import pymc as pm
        >>> with pm.Model() as pm_model:
        ...     theta = pm.Gamma("theta", alpha=25, beta=1)
        ...     s = pm.Poisson("s", mu=theta)
        >>> model = Model.from_pymc(pm_model, statistic="s")
        >>> rng = np.random.default_rng(0)
        >>> model.simulate(model.prior.sample(5, rng), rng).shape
        (5,)
        >>> model.likelihood.space
        ParameterSpace(theta: (0, inf))
        """
        sample, logpdf, simulate, likelihood, names = model_parts(
            pymc_model,
            statistic=statistic,
            params=params,
            support=support,
            exponential_family=exponential_family,
        )
        prior = pymc_prior(sample, logpdf, pymc_model, likelihood.space.names)
        model = cls(prior, simulate, likelihood=likelihood)
        model.pymc_model = pymc_model
        model.statistic = names[0] if isinstance(statistic, str) else tuple(names)
        return model

    def simulate_checked(
        self,
        params: Mapping[str, np.ndarray],
        rng: np.random.Generator,
        *,
        event_shape: tuple[int, ...],
    ) -> np.ndarray:
        """Simulate, then check the output's shape and that every value is finite.

        Every sampler simulates through this method, so a simulator returning
        NaN or inf is reported once, here: with the simulator's name, how many
        of the batch's outputs were not finite, and the first few parameter
        sets that produced them. The simulator gets read-only views of
        ``params`` (see :mod:`dpinfer._user_code`), so it cannot change the
        draws a sampler keeps.
        """
        n = len(next(iter(params.values())))
        name = f"the simulator {_callable_name(self.simulate)}"
        with no_writes(name, "params"), outside_domain(name, params):
            s = _validate.numeric_output(self.simulate(read_only(params), rng), source=name)
        expected = (n, *event_shape)
        if s.shape != expected:
            raise ValueError(
                f"simulate returned an array of shape {s.shape} for a batch of {n} parameter "
                f"sets; the mechanism expects (batch, *event_shape) = {expected}"
            )
        if s.dtype.kind == "f":
            bad = ~np.isfinite(s).reshape(n, -1).all(axis=1)
            if bad.any():
                raise ValueError(self._non_finite_message(params, bad))
        return s

    def _non_finite_message(self, params, bad: np.ndarray, shown: int = 3) -> str:
        rows = np.flatnonzero(bad)[:shown]
        examples = "; ".join(
            ", ".join(f"{k}={_compact(v[i])}" for k, v in params.items()) for i in rows
        )
        return (
            f"the simulator {_callable_name(self.simulate)} returned non-finite values (NaN or "
            f"inf) for {int(bad.sum())} of {len(bad)} parameter sets in one batch; the first "
            f"{len(rows)}: {examples}. Make the simulator finite over the prior's support "
            "(or restrict the prior)."
        )

    def __repr__(self) -> str:
        """``Model(prior: ...; simulate: ...; likelihood: ...)``, each part in short."""
        prior = "none" if self.prior is None else self.prior.describe()
        parts = [f"prior: {prior}", f"simulate: {_simulator_name(self)}"]
        if self.likelihood is not None:
            parts.append(f"likelihood: {self.likelihood!r}")
        elif self.loglik is not None:
            parts.append(f"loglik: {_callable_name(self.loglik)}")
        return f"Model({'; '.join(parts)})"

    def require_prior(self, user: str) -> Prior:
        """Return the prior, or explain that ``user`` (a sampler) needs one."""
        if self.prior is None:
            raise ValueError(
                f"{user} needs a model with a prior; this model was built with prior=None, "
                "which only likelihood inference (mcem) accepts"
            )
        return self.prior


def _callable_name(fn) -> str:
    return getattr(fn, "__qualname__", None) or type(fn).__name__


def _simulator_name(model) -> str:
    """Return the simulator's name; for a PyMC model, the statistic it simulates."""
    if model.pymc_model is not None:
        return f"PyMC model of {model.statistic}"
    return _callable_name(model.simulate)


def pymc_prior(sample, logpdf, pymc_model, names) -> Prior:
    """Return a callable prior from a PyMC model that describes its parameters' laws."""
    prior = Prior(sample, logpdf=logpdf)
    prior._described = ", ".join(_describe_pymc(pymc_model, name) for name in names)
    return prior


def _describe_pymc(pymc_model, name: str) -> str:
    try:
        return pymc_model[name].str_repr(formatting="plain")  # "theta ~ Gamma(25, f())"
    except Exception:  # a variable PyMC cannot print is still named
        return f"{name} ~ (PyMC)"


def _compact(value) -> str:
    arr = np.asarray(value)
    if arr.ndim == 0:
        return f"{arr.item():.6g}" if arr.dtype.kind == "f" else str(arr.item())
    return np.array2string(arr, precision=4, threshold=6, edgeitems=2, separator=", ")


def _check_likelihood(likelihood):
    if likelihood is None:
        return None
    if not isinstance(likelihood, Likelihood):
        raise TypeError(
            "likelihood must be a dpinfer.Likelihood (Likelihood.from_pymc, from_pytensor or "
            f"from_callables), got {type(likelihood).__name__}: {likelihood!r}"
        )
    return likelihood


class PriorLike(Protocol):
    """What a sampler needs of a prior or a proposal: batched draws and their density."""

    def sample(self, n: int, rng: RNGLike = None) -> Mapping[str, np.ndarray]:
        """Draw ``n`` parameter sets as a dict of arrays with leading dimension ``n``."""
        ...

    def logpdf(self, params: Mapping[str, np.ndarray]) -> np.ndarray:
        """Log density of a batch of parameter sets, shape ``(n,)``."""
        ...


def as_prior(obj: object, *, name: str = "prior") -> Prior | PriorLike:
    """Return ``obj`` as something with ``sample(n, rng)`` and ``logpdf(params)``.

    Accepts a :class:`Prior`, a dict of frozen distributions, or any object
    with both methods (a proposal, for instance).
    """
    if isinstance(obj, Prior):
        return obj
    if isinstance(obj, Mapping):
        return Prior(obj)
    if callable(getattr(obj, "sample", None)) and callable(getattr(obj, "logpdf", None)):
        return cast(PriorLike, obj)
    raise TypeError(
        f"{name} must be a dict of frozen scipy.stats distributions or an object with "
        f"sample(n, rng) and logpdf(params) methods, got {type(obj).__name__}: {obj!r}"
    )


def _batch_rvs(dist, n: int, rng) -> np.ndarray:
    value = np.asarray(dist.rvs(size=n, random_state=rng))
    # Multivariate scipy distributions squeeze a batch of one: (d,) instead of (1, d).
    if n == 1 and (value.ndim == 0 or value.shape[0] != 1):
        value = value[np.newaxis]
    return value


def _check_frozen(name, dist) -> None:
    if isinstance(dist, type) or _is_unfrozen_family(dist):
        raise TypeError(
            f"prior[{name!r}] must be a frozen scipy.stats distribution such as "
            f"scipy.stats.gamma(25), not the family itself; got {dist!r}"
        )
    has_score = hasattr(dist, "logpdf") or hasattr(dist, "logpmf")
    if not (hasattr(dist, "rvs") and has_score):
        raise TypeError(
            f"prior[{name!r}] must be a frozen scipy.stats distribution (with rvs and "
            f"logpdf/logpmf), got {type(dist).__name__}: {dist!r}"
        )


def _is_unfrozen_family(dist) -> bool:
    # scipy names its (unfrozen) family classes ``<name>_gen``: norm_gen, dirichlet_gen, ...
    return isinstance(dist, scipy.stats.rv_continuous | scipy.stats.rv_discrete) or (
        type(dist).__module__.startswith("scipy.stats") and type(dist).__name__.endswith("_gen")
    )


def _describe(dist) -> str:
    """``family(args, key=value)`` of a frozen scipy distribution, numbers in short."""
    parent = getattr(dist, "dist", None)
    if parent is not None:  # univariate: scipy keeps the arguments
        family = getattr(parent, "name", type(parent).__name__)
        args = [_short_value(a) for a in getattr(dist, "args", ())]
        args += [f"{k}={_short_value(v)}" for k, v in getattr(dist, "kwds", {}).items()]
    else:  # multivariate: the parameters are attributes of the frozen object
        family = type(dist).__name__.removesuffix("_frozen")
        args = [
            f"{k}={_short_value(getattr(dist, k))}"
            for k in _MULTIVARIATE_PARAMETERS
            if k in _public_attributes(dist) and not callable(getattr(dist, k))
        ]
    return f"{family}({', '.join(args)})"


# parameters of scipy's multivariate families, in the order their constructors take them
_MULTIVARIATE_PARAMETERS = ("alpha", "n", "p", "mean", "loc", "cov", "shape", "df", "scale")


def _public_attributes(obj) -> set[str]:
    try:
        return set(dir(obj))
    except Exception:  # an object whose dir() fails shows no parameters
        return set()


def _short_value(value) -> str:
    """Show a number as ``%g``, a small array as a list of them, a larger one by its shape."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        return type(value).__name__
    if arr.ndim == 0:
        return f"{float(arr):g}"
    if arr.size <= 4 and arr.ndim == 1:
        return f"[{', '.join(f'{x:g}' for x in arr)}]"
    return f"<array of shape {arr.shape}>"
