"""The mechanisms' PyTensor Ops in PyTensor's JAX backend.

Importing this module registers, with ``pytensor.link.jax.dispatch.jax_funcify``,
JAX implementations of :class:`._pytensor_ops.DiscreteGaussianLogCDF` (the
probability that a discrete Gaussian release is suppressed, in a ``to_pymc``
model of :class:`~dpinfer.Thresholded` releases) and of
:class:`dpinfer._tensor_shapes.ShapeCheck` (the check of a shape known only when
the model runs). :func:`._pymc.observe` has it imported when PyTensor's JAX dispatch is
(:mod:`dpinfer._backend_hooks`).

The log-CDF is a ``jax.pure_callback`` into the NumPy function the default
backend calls: it runs on the host, and on an accelerator its arguments are
copied there and back at each evaluation. Its derivative in ``x`` is 0 (the
function is piecewise constant in ``x``), as in the Op's ``grad``; a derivative in
``sigma`` is not implemented and raises NotImplementedError when traced.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_derivatives import SymbolicZero
from pytensor.link.jax.dispatch import jax_funcify

from .. import _jax_special  # noqa: F401 (erfcx and gammaincinv without tensorflow-probability)
from .._tensor_shapes import ShapeCheck, _message, fits
from ..noise.discrete_gaussian import discrete_gaussian_log_cdf
from ._pytensor_ops import DiscreteGaussianLogCDF


def _host_log_cdf(x, sigma):
    x, sigma = np.broadcast_arrays(np.asarray(x, dtype=float), np.asarray(sigma, dtype=float))
    return np.asarray(discrete_gaussian_log_cdf(x, sigma), dtype=float).reshape(x.shape)


@jax.custom_jvp
def discrete_gaussian_log_cdf_jax(x, sigma):
    """``log P(X <= x)`` for ``X ~ N_Z(0, sigma^2)``, elementwise, by a host callback."""
    shape = jax.ShapeDtypeStruct(jnp.broadcast_shapes(jnp.shape(x), jnp.shape(sigma)), jnp.float64)
    return jax.pure_callback(_host_log_cdf, shape, x, sigma, vmap_method="broadcast_all")


def _log_cdf_jvp(primals, tangents):
    x, sigma = primals
    if not isinstance(tangents[1], SymbolicZero):
        raise NotImplementedError(
            "the derivative of the discrete Gaussian log-CDF in sigma is not implemented"
        )
    out = discrete_gaussian_log_cdf_jax(x, sigma)
    return out, jnp.zeros_like(out)


discrete_gaussian_log_cdf_jax.defjvp(_log_cdf_jvp, symbolic_zeros=True)


@jax_funcify.register(DiscreteGaussianLogCDF)
def _jax_discrete_gaussian_log_cdf(op, **kwargs):
    def log_cdf(x, sigma):
        return discrete_gaussian_log_cdf_jax(jnp.asarray(x, dtype=jnp.float64), sigma)

    return log_cdf


@jax_funcify.register(ShapeCheck)
def _jax_shape_check(op, **kwargs):
    def refuse_unless_fits(shape_of):
        shape = tuple(int(d) for d in np.asarray(shape_of))
        if not fits(shape, op.target, exact=op.exact):
            raise ValueError(_message(op.name, shape, op.target, op.about, op.exact))

    def shape_check(x, shape_of):
        try:
            concrete = np.asarray(shape_of)
        except jax.errors.TracerArrayConversionError:
            # known only when the function runs: checked then, on the host
            jax.debug.callback(refuse_unless_fits, shape_of)
        else:
            refuse_unless_fits(concrete)
        return x

    return shape_check
