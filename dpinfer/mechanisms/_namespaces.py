"""The array namespaces a family's formulas are written over: NumPy and PyTensor.

A family writes its log-density and its noise's log-CDF once, elementwise, over
a namespace ``xp`` of operations; :data:`NUMPY` evaluates them on arrays,
:func:`pytensor_namespace` builds them into a PyTensor graph (imported only when
a PyMC model is built).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import scipy.special as sc

from ..noise.discrete_gaussian import discrete_gaussian_log_cdf

__all__ = ["NUMPY", "pytensor_namespace"]

# The elementwise operations a family's ``_log_density`` may use, for NumPy and PyTensor;
# ``is_integer`` and ``as_float`` let :func:`._numerics.difference` keep int64 exact.
NUMPY = SimpleNamespace(
    abs=np.abs,
    log=np.log,
    log1p=np.log1p,
    gammaln=sc.gammaln,
    square=np.square,
    exp=np.exp,
    floor=np.floor,
    where=np.where,
    log_ndtr=sc.log_ndtr,
    discrete_gaussian_log_cdf=discrete_gaussian_log_cdf,
    as_float=lambda x: np.asarray(x, dtype=float),
    is_integer=lambda x: np.asarray(x).dtype.kind in "iu",
)


def pytensor_namespace() -> SimpleNamespace:
    """Return the PyTensor namespace (PyTensor is imported here, on first use)."""
    import pytensor.tensor as pt

    from . import _pytensor_ops

    return SimpleNamespace(
        abs=pt.abs,
        log=pt.log,
        log1p=pt.log1p,
        gammaln=pt.gammaln,
        square=pt.square,
        exp=pt.exp,
        floor=pt.floor,
        where=pt.switch,
        log_ndtr=_pytensor_ops.log_ndtr,
        discrete_gaussian_log_cdf=_pytensor_ops.discrete_gaussian_log_cdf,
        as_float=lambda x: pt.cast(x, "float64"),
        is_integer=lambda x: str(x.dtype).startswith(("int", "uint")),
    )
