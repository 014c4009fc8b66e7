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

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import scipy.stats

from .. import _support


@dataclass(frozen=True)
class Transform:
    """Unconstrained map of parameters with support ``[lower, upper]`` (scalars or arrays)."""

    lower: float | np.ndarray = -np.inf
    upper: float | np.ndarray = np.inf

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
    """Flattens a dict of parameter arrays into an unconstrained ``(n, d)`` matrix.

    Supports are read from the prior's frozen distributions; ``support``
    (``{name: (lower, upper)}``) gives or overrides them, for callable priors.
    """

    def __init__(self, prior, example: dict[str, np.ndarray], *, support=None):
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
        for name, (lower, upper) in (support or {}).items():
            if name in self.transforms and self.dtypes[name] is None:
                self.transforms[name] = Transform(float(lower), float(upper))
        self._build_flat()

    def _build_flat(self) -> None:
        # per-coordinate bounds, so that one call maps every parameter of a batch
        widths = [int(np.prod(self.shapes[k], dtype=int)) for k in self.names]
        self._flat = Transform(
            np.repeat([self.transforms[k].lower for k in self.names], widths),
            np.repeat([self.transforms[k].upper for k in self.names], widths),
        )
        self._splits = np.cumsum(widths)[:-1]
        self._integer = np.repeat([self.dtypes[k] is not None for k in self.names], widths)

    @classmethod
    def from_bounds(cls, names, shapes: dict, bounds: dict) -> ParameterSpace:
        """Rebuild a space of continuous parameters from names, shapes and ``(lower, upper)``."""
        space = cls.__new__(cls)
        space.names = list(names)
        space.shapes = {k: tuple(shapes[k]) for k in space.names}
        space.dtypes = dict.fromkeys(space.names)
        space.transforms = {k: Transform(*map(float, bounds[k])) for k in space.names}
        space._build_flat()
        return space

    def bounds(self) -> dict[str, tuple[float | np.ndarray, float | np.ndarray]]:
        """``(lower, upper)`` of each parameter's map (infinite where unbounded)."""
        return {k: (t.lower, t.upper) for k, t in self.transforms.items()}

    def labels(self) -> list[str]:
        """Return the name of each column of ``z``: ``name``, or ``name[i, ...]`` for arrays."""
        out = []
        for k in self.names:
            shape = self.shapes[k]
            out += [k] if shape == () else [f"{k}{list(i)}" for i in np.ndindex(shape)]
        return out

    @property
    def integer(self) -> np.ndarray:
        """Boolean mask of the columns of ``z`` that hold integer parameters."""
        return self._integer

    @property
    def dim(self) -> int:
        """Number of unconstrained coordinates."""
        return int(sum(np.prod(s, dtype=int) for s in self.shapes.values()))

    def flatten(self, params: Mapping[str, np.ndarray]) -> np.ndarray:
        """``(n, d)`` unconstrained coordinates of a batch of parameters."""
        cols = [np.asarray(params[k], float).reshape(len(params[k]), -1) for k in self.names]
        return self._flat.to_unconstrained(np.concatenate(cols, axis=1))

    def unflatten(self, z: np.ndarray) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """Parameters for ``z`` and the log-Jacobian of the map, per row."""
        x = self._flat.to_constrained(z)
        log_jac = self._flat.log_jacobian(z).sum(axis=1)
        blocks = np.split(x, self._splits, axis=1)
        out = {}
        for k, block in zip(self.names, blocks, strict=True):
            if self.dtypes[k] is not None:
                block = np.rint(block).astype(self.dtypes[k])
            out[k] = block.reshape(len(z), *self.shapes[k])
        return out, log_jac


def _integer_dtype(dist, dtype: np.dtype):
    """Return the dtype of an integer parameter, or None for a continuous one."""
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
