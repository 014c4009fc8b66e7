"""PyTensor pieces of the mechanisms' log-CDFs (imported only when building a PyMC model)."""

from __future__ import annotations

import math

import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import grad_not_implemented
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op

from ..noise.discrete_gaussian import discrete_gaussian_log_cdf as _numpy_discrete_gaussian_log_cdf

__all__ = ["discrete_gaussian_log_cdf", "log_ndtr"]

_SQRT2 = math.sqrt(2.0)


def log_ndtr(z):
    """``log Phi(z)`` with its digits in both tails (and finite gradients in each branch).

    ``erfcx`` below -1, where ``Phi(z) = erfcx(-z / sqrt 2) exp(-z^2 / 2) / 2``;
    ``log1p(-erfc(z / sqrt 2) / 2)`` above. Each branch sees only its own range.
    """
    lo = pt.minimum(z, -1.0)
    hi = pt.maximum(z, -1.0)
    left = pt.log(pt.erfcx(-lo / _SQRT2) / 2.0) - pt.sqr(lo) / 2.0
    right = pt.log1p(-pt.erfc(hi / _SQRT2) / 2.0)
    return pt.switch(pt.lt(z, -1.0), left, right)


class DiscreteGaussianLogCDF(Op):
    """``log P(X <= x)`` for ``X ~ N_Z(0, sigma^2)``, elementwise over broadcast inputs.

    The numbers come from :func:`dpinfer.noise.discrete_gaussian.discrete_gaussian_log_cdf`.
    The function of ``x`` is piecewise constant, so its gradient is 0 wherever
    it exists; a gradient in ``sigma`` is not implemented.
    """

    __props__ = ()

    # PyTensor's Ops name their inputs (the base class takes *inputs)
    def make_node(self, x, sigma):  # type: ignore[override]
        x, sigma = pt.broadcast_arrays(pt.as_tensor_variable(x), pt.as_tensor_variable(sigma))
        out = pt.TensorType("float64", shape=x.type.shape)()
        return Apply(self, [x, sigma], [out])

    def perform(self, node, inputs, output_storage):
        x, sigma = inputs
        output_storage[0][0] = np.asarray(_numpy_discrete_gaussian_log_cdf(x, sigma))

    def grad(self, inputs, output_grads):
        x, _ = inputs
        zero = pt.zeros_like(x, dtype="float64") if x.dtype.startswith("float") else x.zeros_like()
        return [zero, grad_not_implemented(self, 1, inputs[1])]


def discrete_gaussian_log_cdf(x, sigma):
    """Return the PyTensor discrete Gaussian log-CDF at ``x`` (per-cell ``sigma``)."""
    return DiscreteGaussianLogCDF()(x, np.asarray(sigma, dtype=float))
