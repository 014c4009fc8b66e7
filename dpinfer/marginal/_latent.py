"""The latent confidential value: which family a PyMC distribution is, and its parameters."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _kernels as k

# PyTensor's random variable ops by class name -> (kernel family, parameter names)
_KERNEL_FAMILIES = {
    "PoissonRV": (k.POISSON, ("mu",)),
    "BinomialRV": (k.BINOMIAL_LATENT, ("n", "p")),
    "NegBinomialRV": (k.NEGATIVE_BINOMIAL, ("n", "p")),
    "GeometricRV": (k.GEOMETRIC, ("p",)),
    "DiscreteUniformRV": (k.DISCRETE_UNIFORM, ("lower", "upper")),
}
_CLOSED_FORMS = {"NormalRV": ("mu", "sigma")}


@dataclass(frozen=True)
class Latent:
    """A univariate latent distribution, read off an unregistered PyMC distribution.

    Attributes
    ----------
    kind : str
        ``"kernel"`` (a discrete family summed by the compiled kernel) or
        ``"normal"`` (closed forms).
    family : int
        The kernel's family code (kernel kind only).
    params : tuple
        The distribution's parameter tensors, in the family's order.
    names : tuple of str
        Their names.
    discrete : bool
        Whether the latent takes integer values.
    """

    kind: str
    family: int
    params: tuple
    names: tuple
    discrete: bool

    def sample(self, params, rng: np.random.Generator, size) -> np.ndarray:
        """Draw latent values with NumPy, for posterior predictive releases."""
        if self.kind == "normal":
            return rng.normal(params[0], params[1], size=size)
        a = params[0]
        if self.family == k.POISSON:
            return rng.poisson(a, size=size)
        if self.family == k.BINOMIAL_LATENT:
            return rng.binomial(np.asarray(a, dtype=np.int64), params[1], size=size)
        if self.family == k.NEGATIVE_BINOMIAL:
            return rng.negative_binomial(a, params[1], size=size)
        if self.family == k.GEOMETRIC:
            return rng.geometric(a, size=size)
        return rng.integers(
            np.asarray(a, np.int64), np.asarray(params[1], np.int64) + 1, size=size
        )


def is_unregistered_distribution(value) -> bool:
    """Whether ``value`` is a PyMC distribution made with ``.dist(...)`` (not a model variable)."""
    from pytensor.tensor.random.op import RandomVariable
    from pytensor.tensor.variable import TensorVariable

    if not isinstance(value, TensorVariable) or value.owner is None:
        return False
    op = value.owner.op
    try:
        from pymc.distributions.distribution import SymbolicRandomVariable
    except ImportError:  # pragma: no cover - PyMC always has it
        SymbolicRandomVariable = RandomVariable  # noqa: N806
    if not isinstance(op, RandomVariable | SymbolicRandomVariable):
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
    params = tuple(op.dist_params(dist.owner))
    if name in _KERNEL_FAMILIES:
        family, names = _KERNEL_FAMILIES[name]
        return Latent("kernel", family, params, names, True)
    if name in _CLOSED_FORMS:
        return Latent("normal", -1, params, _CLOSED_FORMS[name], False)
    supported = sorted(n.removesuffix("RV") for n in (*_KERNEL_FAMILIES, *_CLOSED_FORMS))
    raise ValueError(
        f"cannot marginalise a confidential value distributed as {name.removesuffix('RV')}: "
        f"its tail cannot be bounded here; supported: {', '.join(supported)}"
    )
