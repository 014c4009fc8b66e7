"""``erfcx`` and ``gammaincinv`` in PyTensor's JAX backend, by host callbacks into SciPy.

PyTensor's JAX backend takes these two scalar functions from tensorflow-probability
and refuses them without it. dpinfer's models need them: ``erfcx`` in the log-CDF of
the Normal (a Normal latent under Laplace noise, a Gaussian release's log-CDF) and
``gammaincinv`` in the Gamma's inverse CDF (the quadrature's pieces). Importing this
module registers, with ``pytensor.link.jax.dispatch.jax_funcify``, a fallback used
only where PyTensor's own implementation raises NotImplementedError: a
``jax.pure_callback`` into :func:`scipy.special.erfcx` or
:func:`scipy.special.gammaincinv`, elementwise on the host (on an accelerator the
arguments are copied there and back at each evaluation).

Derivatives: ``erfcx'(x) = 2 x erfcx(x) - 2 / sqrt(pi)``; ``gammaincinv(a, p)`` in
``p`` is ``1 / f(x)``, ``f`` the Gamma(a) density at ``x = gammaincinv(a, p)``. Its
derivative in ``a`` is not implemented (as in PyTensor's ``GammaIncInv.grad``) and
raises NotImplementedError when traced; the quadrature holds its parameters fixed
before the inverse CDF, so it never asks for it.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import scipy.special as sc
from jax.custom_derivatives import SymbolicZero
from pytensor.link.jax.dispatch import jax_funcify
from pytensor.scalar.math import Erfcx, GammaIncInv

__all__ = ["erfcx", "gammaincinv"]


def _host(function):
    """Return the JAX function of the elementwise NumPy ``function``, as a host callback."""

    def on_host(*args):
        return np.asarray(function(*(np.asarray(x, dtype=float) for x in args)), dtype=float)

    def call(*args):
        arrays = [jnp.asarray(x, dtype=jnp.float64) for x in args]
        shape = jax.ShapeDtypeStruct(jnp.broadcast_shapes(*(x.shape for x in arrays)), jnp.float64)
        return jax.pure_callback(on_host, shape, *arrays, vmap_method="broadcast_all")

    return call


_erfcx_host, _gammaincinv_host = _host(sc.erfcx), _host(sc.gammaincinv)


@jax.custom_jvp
def erfcx(x):
    """Return ``exp(x^2) erfc(x)``, elementwise, by a host callback into SciPy."""
    return _erfcx_host(x)


@erfcx.defjvp
def _erfcx_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    out = erfcx(x)
    return out, (2.0 * x * out - 2.0 / math.sqrt(math.pi)) * dx


@jax.custom_jvp
def gammaincinv(a, p):
    """Return the ``x`` with ``gammainc(a, x) = p``, elementwise, by a host callback."""
    return _gammaincinv_host(a, p)


def _gammaincinv_jvp(primals, tangents):
    (a, p), (da, dp) = primals, tangents
    if not isinstance(da, SymbolicZero):
        raise NotImplementedError(
            "the derivative of gammaincinv in its shape a is not implemented"
        )
    x = gammaincinv(a, p)
    if isinstance(dp, SymbolicZero):
        return x, jnp.zeros_like(x)
    # dx/dp = 1 / density of Gamma(a, 1) at x
    return x, jnp.exp(jax.scipy.special.gammaln(a) + x - (a - 1.0) * jnp.log(x)) * dp


gammaincinv.defjvp(_gammaincinv_jvp, symbolic_zeros=True)


def _fall_back(op_class, function) -> None:
    """Register ``function`` for ``op_class`` where PyTensor's implementation is missing."""
    pytensor_funcify = jax_funcify.dispatch(op_class)

    @jax_funcify.register(op_class)
    def funcify(op, **kwargs):
        try:
            return pytensor_funcify(op, **kwargs)
        except NotImplementedError:
            return function


_fall_back(Erfcx, erfcx)
_fall_back(GammaIncInv, gammaincinv)
