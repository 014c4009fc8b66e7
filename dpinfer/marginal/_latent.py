"""The latent confidential value: which family a PyMC distribution is, and its parameters."""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeGuard

import numpy as np

from . import _dispatch
from ._families import LatentFamily
from ._quadrature import has_quantile_function

# the latents with their own graphs (not a kernel family), keyed on their op classes too
_NORMAL = "pytensor.tensor.random.basic:NormalRV"
_MIXTURE = "pymc.distributions.mixture:MixtureRV"
_SUPPORTED = (
    "Poisson, Binomial, NegativeBinomial, Geometric, DiscreteUniform, DiracDelta, Normal, "
    "continuous distributions with an inverse CDF in PyMC (Gamma, LogNormal, Beta, ...), "
    "and mixtures of them (Mixture with a list of components, ZeroInflatedPoisson, "
    "ZeroInflatedBinomial, ZeroInflatedNegativeBinomial)"
)


if TYPE_CHECKING:
    from pytensor.tensor.variable import TensorVariable


class SharedLatentWarning(UserWarning):
    """Two observed variables of one model each sum out the same latent expression.

    Each ``to_pymc`` call marginalises its own copy of the confidential value,
    so two calls over one latent (two releases of the same cells) model the
    cells as holding two independent confidential values. Releases of the same
    cells go in one call, ``dp.to_pymc(name, dist, observed=[(m1, y1), (m2, y2)])``,
    which sums each cell's value once against the product of its densities.
    """


@dataclass(frozen=True)
class Latent:
    """A univariate latent distribution, read off an unregistered PyMC distribution.

    Attributes
    ----------
    kind : str
        ``"kernel"`` (a discrete family summed by the compiled kernel),
        ``"normal"`` (closed forms), ``"quadrature"`` (another continuous
        family, integrated numerically) or ``"mixture"`` (a weighted sum of
        component latents: the marginal of a mixture is the mixture of the
        components' marginals).
    family : LatentFamily or None
        The kernel's family record (kernel kind only).
    params : tuple
        The distribution's own parameter tensors (for a mixture, its weights).
    discrete : bool
        Whether the latent takes integer values.
    components : tuple of Latent
        The components of a mixture.
    op : RandomVariable or None
        The distribution's PyTensor op (quadrature kind only), which rebuilds it
        at other parameters.
    """

    kind: str
    family: LatentFamily | None
    params: tuple
    discrete: bool
    components: tuple = ()
    op: Any = None

    def tensors(self) -> list:
        """Every parameter tensor, the components' after the mixture's weights."""
        return [*self.params, *(t for c in self.components for t in c.tensors())]

    def core_signatures(self) -> list[str]:
        """Return the core dimensions of :meth:`tensors` (mixture weights have one)."""
        own = ["(w)"] if self.kind == "mixture" else ["()"] * len(self.params)
        return [*own, *(s for c in self.components for s in c.core_signatures())]

    def split(self, values):
        """Split values of :meth:`tensors` into (own, one list per component)."""
        own, rest = list(values[: len(self.params)]), list(values[len(self.params) :])
        parts = []
        for component in self.components:
            size = len(component.tensors())
            parts.append(rest[:size])
            rest = rest[size:]
        return own, parts

    def same_expression(self, other: Latent) -> bool:
        """Whether ``other`` is the same family with the same parameter expressions."""
        from pytensor.graph.basic import equal_computations

        def kinds(latent):
            parts = tuple(kinds(c) for c in latent.components)
            return latent.kind, latent.family, type(latent.op).__name__, parts

        return kinds(self) == kinds(other) and equal_computations(self.tensors(), other.tensors())

    def sample(self, values, rng: np.random.Generator, size) -> np.ndarray:
        """Draw latent values with NumPy, for posterior predictive releases."""
        own, parts = self.split(values)
        if self.kind == "mixture":
            draws = np.stack(
                [c.sample(p, rng, size) for c, p in zip(self.components, parts, strict=True)],
                axis=-1,
            )
            weights = np.broadcast_to(own[0], draws.shape)
            cumulative = np.cumsum(weights, axis=-1)
            u = rng.random(size=(*draws.shape[:-1], 1)) * cumulative[..., -1:]
            pick = np.minimum((u > cumulative).sum(axis=-1, keepdims=True), draws.shape[-1] - 1)
            return np.take_along_axis(draws, pick, axis=-1)[..., 0]
        if self.kind == "normal":
            return rng.normal(own[0], own[1], size=size)
        if self.kind == "quadrature":
            return self.op.rng_fn(rng, *own, size)
        if self.family is None:  # a kernel latent always has its family
            raise TypeError(f"a {self.kind} latent has no sampler")
        return self.family.sample(rng, own[0], own[1], size)


def is_unregistered_distribution(value: object) -> TypeGuard[TensorVariable]:
    """Whether ``value`` is a PyMC distribution made with ``.dist(...)`` (not a model variable)."""
    from pytensor.tensor.random.op import RandomVariable
    from pytensor.tensor.variable import TensorVariable

    if not isinstance(value, TensorVariable) or value.owner is None:
        return False
    from pymc.distributions.distribution import SymbolicRandomVariable

    if not isinstance(value.owner.op, RandomVariable | SymbolicRandomVariable):
        return False
    import pymc as pm

    model = pm.modelcontext(None)
    return value not in model.rvs_to_values


def read_latent(dist) -> Latent:
    """Return the :class:`Latent` of an unregistered univariate PyMC distribution, or refuse."""
    op = dist.owner.op
    name = type(op).__name__
    if getattr(op, "ndim_supp", 0) != 0:
        raise ValueError(
            f"the confidential value must be a univariate distribution (one number per cell), "
            f"got {name} with support dimension {op.ndim_supp}"
        )
    family = kernel_family(op)
    if family is not None:
        a, b = family.parameters(tuple(op.dist_params(dist.owner)))
        return Latent("kernel", family, (a, a.zeros_like() if b is None else b), True)
    if isinstance(op, _op_class(_NORMAL)):
        return Latent("normal", None, tuple(op.dist_params(dist.owner)), False)
    if isinstance(op, _op_class(_MIXTURE)):
        weights, *components = op.dist_params(dist.owner)
        parts = tuple(read_latent(c) for c in components)
        if len(parts) < 2 or len({p.discrete for p in parts}) != 1:
            raise ValueError(
                "a mixture confidential value needs a list of at least two components, all "
                "discrete or all continuous"
            )
        return Latent("mixture", None, (weights,), parts[0].discrete, parts)
    if dist.dtype.startswith("float") and getattr(op, "ndim_supp", None) == 0:
        params = tuple(op.dist_params(dist.owner))
        if has_quantile_function(op, params):
            return Latent("quadrature", None, params, False, op=op)
    raise ValueError(
        f"cannot marginalise a confidential value distributed as {name.removesuffix('RV')}: "
        f"no bound on its tail is available here; supported: {_SUPPORTED}"
    )


def kernel_family(op) -> LatentFamily | None:
    """Return the registered family whose op class ``op`` is an instance of, or None.

    Keyed on the class, as ``pymc.logprob`` registers its log-densities; the
    classes are imported when first asked for.
    """
    for family in _dispatch.registered():
        if isinstance(op, _op_class(family.op)):
            return family
    return None


@functools.cache
def _op_class(path: str) -> type[Any]:
    module, name = path.split(":")
    return getattr(importlib.import_module(module), name)
