"""Maps between parameters with bounded support and an unconstrained scale.

SMC moves propose on the unconstrained scale ``z``; the target there carries
the log-Jacobian ``log |dtheta/dz|``. The support is read from each frozen
``scipy.stats`` distribution of the prior; parameters whose support is not
available (multivariate or callable priors) are moved on their own scale,
which stays valid because proposals outside the support have zero prior
density and are rejected.

Integer parameters (a discrete ``scipy.stats`` prior such as ``randint``, or
integer draws from a callable prior) stay on their own scale: their columns
of ``z`` hold integers, the moves step them by integers, and
:meth:`ParameterSpace.unflatten` returns them with the prior's integer dtype.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.stats

from .. import _support


@dataclass(frozen=True)
class Transform:
    """Unconstrained map of one scalar parameter with support ``[lower, upper]``."""

    lower: float = -np.inf
    upper: float = np.inf

    def to_unconstrained(self, x):
        """Map parameter values to the real line."""
        return _support.to_unconstrained(x, self.lower, self.upper)

    def to_constrained(self, z):
        """Map real values back to the support."""
        return _support.to_constrained(z, self.lower, self.upper)[0]

    def log_jacobian(self, z):
        """``log |d theta / d z|``."""
        return _support.log_jacobian(z, self.lower, self.upper)


class ParameterSpace:
    """Flattens a dict of parameter arrays into an unconstrained ``(n, d)`` matrix."""

    def __init__(self, prior, example: dict[str, np.ndarray]):
        self.names = list(example)
        self.shapes = {k: np.asarray(v).shape[1:] for k, v in example.items()}
        spec = getattr(prior, "_spec", None) or {}
        self.dtypes = {
            k: _integer_dtype(spec.get(k), np.asarray(v).dtype) for k, v in example.items()
        }
        self.transforms = {
            k: Transform() if self.dtypes[k] is not None else _transform_for(spec.get(k), s)
            for k, s in self.shapes.items()
        }

    @property
    def integer(self) -> np.ndarray:
        """Boolean mask of the columns of ``z`` that hold integer parameters."""
        return np.concatenate(
            [
                np.full(int(np.prod(self.shapes[k], dtype=int)), self.dtypes[k] is not None)
                for k in self.names
            ]
        )

    @property
    def dim(self) -> int:
        """Number of unconstrained coordinates."""
        return int(sum(np.prod(s, dtype=int) for s in self.shapes.values()))

    def flatten(self, params: dict[str, np.ndarray]) -> np.ndarray:
        """``(n, d)`` unconstrained coordinates of a batch of parameters."""
        cols = [
            self.transforms[k]
            .to_unconstrained(np.asarray(params[k], float))
            .reshape(len(params[k]), -1)
            for k in self.names
        ]
        return np.concatenate(cols, axis=1)

    def unflatten(self, z: np.ndarray) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """Parameters for ``z`` and the log-Jacobian of the map, per row."""
        out, log_jac, col = {}, np.zeros(len(z)), 0
        for k in self.names:
            width = int(np.prod(self.shapes[k], dtype=int))
            block = z[:, col : col + width]
            col += width
            if self.dtypes[k] is not None:
                out[k] = np.rint(block).astype(self.dtypes[k]).reshape(len(z), *self.shapes[k])
                continue
            tr = self.transforms[k]
            out[k] = tr.to_constrained(block).reshape(len(z), *self.shapes[k])
            log_jac += tr.log_jacobian(block).sum(axis=1)
        return out, log_jac


def _integer_dtype(dist, dtype: np.dtype):
    """The dtype to return an integer parameter in, or None for a continuous one."""
    if dtype.kind in "iub":
        return dtype
    if isinstance(getattr(dist, "dist", None), scipy.stats.rv_discrete):
        return np.dtype(np.int64)
    return None


def _transform_for(dist, shape) -> Transform:
    if dist is None or shape != () or not hasattr(dist, "support"):
        return Transform()
    lower, upper = dist.support()
    return Transform(float(lower), float(upper))
