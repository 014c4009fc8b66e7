"""Named parameters with shapes and supports, flattened, and their unconstrained scale.

One class serves every sampler: MCEM's optimisers work on one parameter set at a
time (:meth:`ParameterSpace.flatten`, :meth:`~ParameterSpace.to_natural` with the
chain rule's derivatives); the SMC and DA-MCMC moves and the neural estimators
work on batches (:meth:`~ParameterSpace.batch_to_unconstrained`,
:meth:`~ParameterSpace.batch_from_unconstrained` with the log-Jacobian). A space
is built from names and supports (the constructor), or read from a prior's draws
(:meth:`ParameterSpace.from_prior`): supports from its frozen ``scipy.stats``
distributions, and integer parameters (a discrete ``scipy.stats`` prior such as
``randint``, or integer draws from a callable prior), which stay on their own
scale and come back rounded, with their dtype.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import scipy.stats

from . import _support, _validate

__all__ = ["ParameterSpace"]

_NAMED_SUPPORTS = {
    "real": (-math.inf, math.inf),
    "positive": (0.0, math.inf),
    "unit": (0.0, 1.0),
}


class ParameterSpace:
    """Named parameters with shapes and supports, flattened to one vector.

    Parameters
    ----------
    params : sequence of str or mapping
        Parameter names (scalars), or a mapping from name to shape.
    support : mapping, optional
        Per parameter: ``"real"`` (default), ``"positive"``, ``"unit"`` or an
        interval ``(lower, upper)`` with infinite ends allowed. The support is
        open: boundary values are outside it.

    Attributes
    ----------
    names : tuple of str
        The parameters, in the order of the flat vector.
    shapes, sizes, bounds : dict
        Per parameter: its shape, its number of flat coordinates, and the
        ``(lower, upper)`` ends of its support.
    labels : tuple of str
        The name of each flat coordinate: ``name``, or ``name[i,j]`` for arrays.
    size : int
        The number of flat coordinates.
    lower, upper : numpy.ndarray
        The support's ends per flat coordinate, shape ``(size,)`` (infinite
        where unbounded).
    dtypes : dict
        Per parameter: the integer dtype of an integer parameter (see
        :meth:`from_prior`), None for a continuous one.

    Notes
    -----
    The unconstrained coordinate of a component with support ``(a, b)`` is
    ``x`` on the real line, ``log(x - a)`` on ``(a, inf)``, ``log(b - x)`` on
    ``(-inf, b)`` and ``logit((x - a) / (b - a))`` on a bounded interval.

    Examples
    --------
    >>> space = ParameterSpace({"mu": (), "sigma": ()}, support={"sigma": "positive"})
    >>> space.labels
    ('mu', 'sigma')
    >>> space.to_unconstrained(np.array([1.0, np.e]))
    array([1., 1.])
    """

    def __init__(
        self,
        params: Mapping[str, int | Sequence[int]] | Sequence[str],
        *,
        support: Mapping | None = None,
    ) -> None:
        if isinstance(params, Mapping):
            shapes = {str(k): _as_shape(v) for k, v in params.items()}
        elif isinstance(params, Sequence) and not isinstance(params, str):
            shapes = {k: () for k in _validate.names("params", params)}
        else:
            raise TypeError(
                "params must be a sequence of parameter names or a mapping from name to "
                f"shape, got {type(params).__name__}: {params!r}"
            )
        if not shapes:
            raise ValueError("params must name at least one parameter, got none")
        support = _validate.mapping("support", support)
        unknown = set(support) - set(shapes)
        if unknown:
            raise ValueError(
                f"support names parameters {sorted(unknown)} that are not among the "
                f"parameters {list(shapes)}"
            )
        bounds = {k: as_bounds(k, support.get(k, "real")) for k in shapes}
        self._build(shapes, bounds, dict.fromkeys(shapes))

    @classmethod
    def from_prior(
        cls, prior: Any, example: Mapping, *, support: Mapping | None = None
    ) -> ParameterSpace:
        """Return the space of a prior's parameters, read from a batch of its draws.

        Parameters
        ----------
        prior : dpinfer.Prior
            Scalar parameters with a frozen ``scipy.stats`` distribution take its
            support; the others the real line.
        example : mapping
            A batch of draws, ``{name: (n, *shape)}``: the names, shapes and dtypes.
        support : mapping, optional
            Supports (as in the constructor) that give or override the prior's,
            for callable priors; names that are not parameters are ignored.

        Returns
        -------
        ParameterSpace
            Where a parameter drawn as integers, or with a discrete
            ``scipy.stats`` prior, is an integer parameter: on its own scale, and
            returned rounded, with its dtype, by :meth:`batch_from_unconstrained`.
        """
        spec = getattr(prior, "_spec", None) or {}
        support = support or {}
        shapes = {k: np.asarray(v).shape[1:] for k, v in example.items()}
        dtypes = {k: _integer_dtype(spec.get(k), np.asarray(v).dtype) for k, v in example.items()}
        bounds = {}
        for name, shape in shapes.items():
            if dtypes[name] is not None:
                bounds[name] = _NAMED_SUPPORTS["real"]
            elif name in support:
                bounds[name] = as_bounds(name, support[name])
            else:
                bounds[name] = _prior_bounds(spec.get(name), shape)
        space = cls.__new__(cls)
        space._build(shapes, bounds, dtypes)
        return space

    def _build(self, shapes: dict, bounds: dict, dtypes: dict) -> None:
        self.names = tuple(shapes)
        self.shapes = shapes
        self.sizes = {k: int(np.prod(s, dtype=int)) for k, s in shapes.items()}
        self.bounds = bounds
        self.dtypes = dtypes
        self.size = sum(self.sizes.values())
        labels, lower, upper, integer = [], [], [], []
        for name in self.names:
            lo, hi = self.bounds[name]
            for idx in np.ndindex(*self.shapes[name]):
                suffix = "[" + ",".join(map(str, idx)) + "]" if idx else ""
                labels.append(name + suffix)
                lower.append(lo)
                upper.append(hi)
                integer.append(dtypes[name] is not None)
        self.labels = tuple(labels)
        self.lower = np.array(lower, dtype=float)
        self.upper = np.array(upper, dtype=float)
        self._integer = np.array(integer, dtype=bool)
        self._splits = np.cumsum([self.sizes[k] for k in self.names])[:-1]

    @property
    def integer(self) -> np.ndarray:
        """Boolean mask of the flat coordinates that hold integer parameters."""
        return self._integer

    # --- dict <-> flat vector -----------------------------------------------------------
    def flatten(self, params: Mapping) -> np.ndarray:
        """Return the flat vector ``(size,)`` of one parameter set."""
        return np.concatenate([np.asarray(params[k], dtype=float).reshape(-1) for k in self.names])

    def unflatten(self, theta: np.ndarray) -> dict[str, np.ndarray | float]:
        """Return the dict of one parameter set from its flat vector."""
        out, i = {}, 0
        for name in self.names:
            size = self.sizes[name]
            value = np.asarray(theta[i : i + size], dtype=float).reshape(self.shapes[name])
            out[name] = float(value) if value.ndim == 0 else value
            i += size
        return out

    def batch(self, theta: np.ndarray, n: int) -> dict[str, np.ndarray]:
        """Return ``n`` copies of one parameter set: a dict of ``(n, *shape)`` arrays."""
        out, i = {}, 0
        for name in self.names:
            size = self.sizes[name]
            value = np.asarray(theta[i : i + size], dtype=float).reshape(self.shapes[name])
            out[name] = np.broadcast_to(value, (n, *self.shapes[name])).copy()
            i += size
        return out

    # --- validation ---------------------------------------------------------------------
    def check(self, params: Mapping, *, name: str = "start") -> np.ndarray:
        """Validate one parameter set (names, shapes, finiteness, support); return it flat."""
        if not isinstance(params, Mapping):
            raise TypeError(
                f"{name} must be a dict from parameter name to value, got "
                f"{type(params).__name__}: {params!r}"
            )
        missing = [k for k in self.names if k not in params]
        extra = [k for k in params if k not in self.shapes]
        if missing or extra:
            raise ValueError(
                f"{name} must give exactly the parameters {list(self.names)}; "
                f"missing {missing}, unknown {extra}"
            )
        for key in self.names:
            value = _validate.numeric_array(f"{name}[{key!r}]", params[key]).astype(float)
            if value.shape != self.shapes[key]:
                raise ValueError(
                    f"{name}[{key!r}] must have shape {self.shapes[key]}, got {value.shape}"
                )
            lo, hi = self.bounds[key]
            if not np.all(np.isfinite(value)):
                raise ValueError(f"{name}[{key!r}] must be finite, got {params[key]!r}")
            if not np.all((value > lo) & (value < hi)):
                raise ValueError(
                    f"{name}[{key!r}] = {params[key]!r} lies outside the support of "
                    f"{key!r}, the open interval ({lo:g}, {hi:g})"
                )
        return self.flatten(params)

    def contains(self, theta: np.ndarray) -> bool:
        """Whether a flat vector lies in the (open) support."""
        theta = np.asarray(theta, dtype=float)
        return bool(
            np.all(np.isfinite(theta)) and np.all((theta > self.lower) & (theta < self.upper))
        )

    # --- unconstrained scale ------------------------------------------------------------
    def to_unconstrained(self, theta: np.ndarray) -> np.ndarray:
        """Map a flat natural-scale vector (or rows of them) to the unconstrained scale."""
        return _support.to_unconstrained(theta, self.lower, self.upper)

    def to_natural(self, phi: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Map an unconstrained vector back; also return ``dtheta/dphi`` and its derivative.

        Returns
        -------
        theta, d1, d2 : numpy.ndarray
            The natural-scale vector and the elementwise first and second
            derivatives of the (componentwise) map, for the chain rule.
        """
        return _support.to_constrained(phi, self.lower, self.upper)

    def log_jacobian(self, phi: np.ndarray) -> np.ndarray:
        """Return ``log |dtheta/dphi|`` per coordinate, without underflow for large ``|phi|``."""
        return _support.log_jacobian(phi, self.lower, self.upper)

    def batch_to_unconstrained(self, params: Mapping) -> np.ndarray:
        """Return the ``(n, size)`` unconstrained coordinates of a batch of parameters."""
        cols = [np.asarray(params[k], float).reshape(len(params[k]), -1) for k in self.names]
        return self.to_unconstrained(np.concatenate(cols, axis=1))

    def batch_from_unconstrained(self, z: np.ndarray) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """Return the parameters of the rows of ``z`` and each row's log-Jacobian.

        Integer parameters are rounded and take their dtype.
        """
        x = self.to_natural(z)[0]
        log_jac = self.log_jacobian(z).sum(axis=1)
        out = {}
        for name, block in zip(self.names, np.split(x, self._splits, axis=1), strict=True):
            if self.dtypes[name] is not None:
                block = np.rint(block).astype(self.dtypes[name])
            out[name] = block.reshape(len(z), *self.shapes[name])
        return out, log_jac

    def __repr__(self) -> str:
        parts = []
        for name in self.names:
            lo, hi = self.bounds[name]
            shape = f"{self.shapes[name]} " if self.shapes[name] else ""
            parts.append(f"{name}: {shape}({lo:g}, {hi:g})")
        return f"ParameterSpace({', '.join(parts)})"


def as_bounds(name: str, spec) -> tuple[float, float]:
    """Return ``(lower, upper)`` of a named support or an interval; refuse others."""
    if isinstance(spec, str) or (isinstance(spec, np.ndarray) and spec.dtype.kind in "US"):
        also = "an interval (lower, upper)"
        return _NAMED_SUPPORTS[
            _validate.choice(f"support[{name!r}]", spec, _NAMED_SUPPORTS, alternatives=also)
        ]
    try:
        lo, hi = (float(x) for x in spec)
    except (TypeError, ValueError):
        raise ValueError(
            f"support[{name!r}] must be a name or an interval (lower, upper), got {spec!r}"
        ) from None
    if not lo < hi:
        raise ValueError(f"support[{name!r}] must have lower < upper, got {spec!r}")
    return lo, hi


def _as_shape(value) -> tuple[int, ...]:
    if isinstance(value, int | np.integer):
        return (int(value),)
    return tuple(int(d) for d in value)


def _integer_dtype(dist, dtype: np.dtype):
    """Return the dtype of an integer parameter, or None for a continuous one."""
    if dtype.kind in "iub":
        return dtype
    if isinstance(getattr(dist, "dist", None), scipy.stats.rv_discrete):
        return np.dtype(np.int64)
    return None


def _prior_bounds(dist, shape) -> tuple[float, float]:
    """Return the support of a scalar parameter's frozen distribution, else the real line."""
    if dist is None or shape != () or not hasattr(dist, "support"):
        return _NAMED_SUPPORTS["real"]
    lower, upper = dist.support()
    return float(lower), float(upper)
