r"""Mechanism log-densities as per-coordinate formulas that compiled kernels can evaluate.

Every additive and count-release family of dpinfer has a log-density that is a
sum over the coordinates of the release of one of three elementwise formulas in
the confidential value ``s``:

=============  ==========================================================
kind           term of coordinate ``j`` (``r`` the released coordinate)
=============  ==========================================================
``LAPLACE``    ``c - |r - s| / a``                (Laplace, discrete Laplace)
``GAUSSIAN``   ``c - z^2 / 2``, ``z = (r - s) / a``  (Gaussian, discrete Gaussian)
``BINOMIAL``   ``c + r log(s + a) + b log(d - s)``  (binomial release)
=============  ==========================================================

and ``-inf`` outside ``[lower, upper]``. A :class:`CoordinateForm` holds the
kind and the numbers ``(a, b, c, d)`` of each coordinate for one release, so
that a numba kernel (the record updates of :func:`dpinfer.da_mcmc`) can score
many confidential values without a Python call per value. The formulas are
written in the same floating-point order as the families' ``_log_density``;
the Gaussian one divides by the scale ``a = sigma`` before squaring, so that it
overflows only where the log-density itself is beyond the float64 range.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["BINOMIAL", "GAUSSIAN", "LAPLACE", "CoordinateForm"]

LAPLACE = 0
GAUSSIAN = 1
BINOMIAL = 2


@dataclass(frozen=True)
class CoordinateForm:
    """The log-density of one release as a sum of per-coordinate formulas.

    Attributes
    ----------
    kind : int
        :data:`LAPLACE`, :data:`GAUSSIAN` or :data:`BINOMIAL` (one kind for all coordinates).
    released : numpy.ndarray
        The release, flattened: shape ``(k,)``.
    coefficients : numpy.ndarray
        ``(k, 4)``: the numbers ``a, b, c, d`` of each coordinate's formula.
    lower, upper : numpy.ndarray
        ``(k,)``: the support of each confidential coordinate.
    """

    kind: int
    released: np.ndarray
    coefficients: np.ndarray
    lower: np.ndarray
    upper: np.ndarray

    @classmethod
    def build(cls, kind: int, released, *, a, c, b=0.0, d=0.0, lower=-np.inf, upper=np.inf):
        """Broadcast per-coordinate numbers against the flattened release."""
        r = np.ascontiguousarray(np.asarray(released, dtype=float).reshape(-1))
        columns = [
            np.broadcast_to(np.asarray(v, float).reshape(-1), r.shape) for v in (a, b, c, d)
        ]
        coef = np.stack(columns, axis=1)
        bounds = [np.broadcast_to(np.asarray(v, float), r.shape).copy() for v in (lower, upper)]
        return cls(int(kind), r, np.ascontiguousarray(coef), *bounds)
