r"""Posteriors on a grid: the exact reference for one or two parameters.

A :class:`GridPosterior` is the posterior of one parameter (or two) computed
by quadrature on a grid from a log-likelihood and a log prior density: its
normalising constant (the evidence), mean, standard deviation, quantiles,
CDF and draws. It is the independent reference that an example, a test or a
benchmark sets a sampler against, when the likelihood of the release can be
evaluated (in closed form, or by a finite sum over a discrete latent).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike
from scipy.integrate import cumulative_simpson, simpson
from scipy.interpolate import CubicHermiteSpline
from scipy.optimize import brentq

from . import _validate
from ._rng import RNGLike, as_generator
from .results import to_inference_data

if TYPE_CHECKING:
    from .results import InferenceData

__all__ = ["GridPosterior"]

# bisection steps that shrink a grid cell below double precision (2**-56 of its width)
_BISECTIONS = 56


class GridPosterior:
    r"""The posterior of one or two parameters by quadrature on a grid.

    Parameters
    ----------
    grid : array_like or tuple of two array_like
        The parameter's grid points (strictly increasing, at least 3), or a
        pair of them for two parameters (the grid is their product).
    log_likelihood : callable or array_like
        ``log_likelihood(x)`` (one parameter) or ``log_likelihood(x, y)`` (two:
        called with arrays of shape ``(len(x), len(y))``), vectorised; or its
        values on the grid. ``-inf`` is allowed, NaN is not.
    log_prior : callable or array_like, optional
        The log prior density, in the same form; default a flat prior on the
        grid (the posterior is then the normalised likelihood).
    log_shift : float, optional
        The constant subtracted from the log density before it is
        exponentiated; default its largest value on the grid (log-sum-exp).
        A known log evidence makes the grid values the normalised density and
        :attr:`integral` a check that should be 1. Only rounding depends on it.

    Attributes
    ----------
    log_evidence : float
        ``log`` of the integral of likelihood times prior over the grid.
    integral : float
        The quadrature of ``exp(log density - log_shift)``.
    quadrature_error : float
        A conservative estimate of the relative error of the evidence: the
        difference between Simpson's rule on the grid and on every second
        node (see Notes).
    ndim : int
        1 or 2.

    Notes
    -----
    The density is integrated by Simpson's rule (:func:`scipy.integrate.simpson`;
    cumulatively, :func:`scipy.integrate.cumulative_simpson`, for the CDF). In
    one dimension the CDF between nodes is the cubic Hermite interpolant of the
    cumulative integral with the density as its derivative, quantiles invert
    it by Brent's method, and draws invert it by bisection; in two, every
    summary is of a margin (Simpson's rule over the other axis), and draws
    come from the bilinear interpolant of the density, cell by cell.

    Simpson's error on a smooth integrand is :math:`O(h^4)`, and the error of
    the finer rule is about 1/15 of :attr:`quadrature_error`; near a kink (a
    Laplace density's) it is :math:`O(h^2)` locally, about 1/3 of it. The mass
    outside the grid is neglected: choose a grid whose ends hold a negligible
    part of the posterior (a bound such as ``likelihood <= max`` times the
    prior's tail mass proves it). :meth:`logspace` integrates over
    :math:`\log x` instead, for a positive parameter with a long right tail.

    Examples
    --------
    A normal mean with a normal prior, whose posterior is ``N(0.8, 0.2)``:

    >>> import numpy as np, scipy.stats as st, dpinfer as dp
    >>> post = dp.GridPosterior(
    ...     np.linspace(-5, 5, 2001),
    ...     lambda m: st.norm(m, 0.5).logpdf(1.0),
    ...     st.norm(0, 1).logpdf,
    ... )
    >>> round(post.mean(), 6), round(post.std() ** 2, 6)
    (0.8, 0.2)
    >>> float(np.round(post.ppf(0.5), 6)), float(np.round(post.cdf(0.8), 6))
    (0.8, 0.5)
    >>> round(float(post.log_evidence - st.norm(0, np.sqrt(1.25)).logpdf(1.0)), 8)
    0.0
    >>> post.draws(3, rng=1).shape
    (3,)
    """

    def __init__(
        self,
        grid: ArrayLike | Sequence[ArrayLike],
        log_likelihood: Callable[..., ArrayLike],
        log_prior: Callable[..., ArrayLike] | None = None,
        *,
        log_shift: float | None = None,
    ) -> None:
        axes = _check_grid(grid)
        self.ndim = len(axes)
        if self.ndim == 1:
            self._init_1d(axes[0], axes[0], 0.0, log_likelihood, log_prior, log_shift)
        else:
            self._init_2d(axes, log_likelihood, log_prior, log_shift)

    @classmethod
    def logspace(
        cls,
        lower: float,
        upper: float,
        log_likelihood: Callable[[np.ndarray], ArrayLike],
        log_prior: Callable[[np.ndarray], ArrayLike] | None = None,
        *,
        num: int = 8001,
        log_shift: float | None = None,
    ) -> GridPosterior:
        """Posterior of a positive parameter on a grid uniform in its logarithm.

        The nodes are ``exp(u)`` for ``num`` points ``u`` uniform on
        ``[log lower, log upper]``, and the density of ``u`` (the density of
        ``x`` times ``x``) is integrated, which resolves a density that is
        concentrated near 0 and one with a long right tail alike.

        Examples
        --------
        >>> import scipy.stats as st
        >>> post = GridPosterior.logspace(
        ...     1e-6, 200.0, lambda t: st.poisson.logpmf(5, t), st.gamma(2.0).logpdf
        ... )
        >>> round(post.mean(), 8)  # Gamma(2 + 5, rate 1 + 1)
        3.5
        """
        lo = _validate.positive_finite("lower", lower)
        hi = _validate.positive_finite("upper", upper)
        if not hi > lo:
            raise ValueError(f"upper must exceed lower, got lower={lower!r}, upper={upper!r}")
        n = _validate.size("num", num)
        if n < 3:
            raise ValueError(f"num must be at least 3, got {num!r}")
        self = cls.__new__(cls)
        self._init_logspace(lo, hi, n, log_likelihood, log_prior, log_shift)
        return self

    # --- construction -------------------------------------------------------------

    def _init_logspace(self, lower, upper, num, log_likelihood, log_prior, log_shift):
        u = np.linspace(math.log(lower), math.log(upper), num)
        self.ndim = 1
        self._init_1d(u, np.exp(u), u, log_likelihood, log_prior, log_shift)

    def _init_1d(self, u, x, log_jacobian, log_likelihood, log_prior, log_shift):
        self._u, self._x, self._log = u, x, x is not u
        log_p = _log_density(x, log_likelihood, log_prior)
        shift = _shift(log_p + log_jacobian, log_shift)
        g = np.exp(log_p - shift + log_jacobian)  # density of u, scaled
        cdf = cumulative_simpson(g, x=u, initial=0.0)
        total = _check_total(float(cdf[-1]))
        self._cdf, self._g = cdf / total, g / total
        self._spline = CubicHermiteSpline(u, self._cdf, self._g)
        self.integral = total
        self.log_evidence = shift + math.log(total)
        self.quadrature_error = _halved_difference(g, u, total)
        mean = float(simpson(self._g * x, x=u))
        second = float(simpson(self._g * x**2, x=u))
        self._moments = (mean, math.sqrt(max(second - mean**2, 0.0)))

    def _init_2d(self, axes, log_likelihood, log_prior, log_shift):
        x, y = axes
        self._axes = axes
        log_p = _log_density(np.meshgrid(x, y, indexing="ij"), log_likelihood, log_prior)
        shift = _shift(log_p, log_shift)
        g = np.exp(log_p - shift)
        inner = simpson(g, x=y, axis=1)
        total = _check_total(float(simpson(inner, x=x)))
        self._g = g / total
        self.integral = total
        self.log_evidence = shift + math.log(total)
        outer = simpson(g, x=x, axis=0)
        self.quadrature_error = max(
            _halved_difference(inner, x, total), _halved_difference(outer, y, total)
        )
        with np.errstate(divide="ignore"):
            self._margins = GridPosterior(x, np.log(inner)), GridPosterior(y, np.log(outer))
        mx, my = self._margins[0].mean(), self._margins[1].mean()
        cross = float(simpson(simpson(self._g * y, x=y, axis=1) * x, x=x))
        self._cov = cross - mx * my

    # --- summaries ----------------------------------------------------------------

    @property
    def evidence(self) -> float:
        """``exp(log_evidence)``."""
        return math.exp(self.log_evidence)

    def marginal(self, axis: int) -> GridPosterior:
        """Return the one-dimensional margin of a two-parameter posterior (``axis`` 0 or 1)."""
        if self.ndim != 2 or axis not in (0, 1):
            raise ValueError(f"axis must be 0 or 1 of a 2-D posterior, got {axis!r}")
        return self._margins[axis]

    def mean(self) -> float | np.ndarray:
        """Posterior mean (a float; an array of the two means in 2-D)."""
        if self.ndim == 2:
            return np.array([m.mean() for m in self._margins])
        return self._moments[0]

    def std(self) -> float | np.ndarray:
        """Posterior standard deviation (a float; an array of the two in 2-D)."""
        if self.ndim == 2:
            return np.array([m.std() for m in self._margins])
        return self._moments[1]

    def cov(self) -> np.ndarray:
        """Posterior covariance matrix, ``(1, 1)`` or ``(2, 2)``."""
        if self.ndim == 1:
            return np.array([[self._moments[1] ** 2]])
        sx, sy = (m.std() for m in self._margins)
        return np.array([[sx * sx, self._cov], [self._cov, sy * sy]])

    def cdf(self, value: ArrayLike) -> np.ndarray:
        """Posterior CDF; in 2-D the marginal CDFs of ``value[..., 0]`` and ``value[..., 1]``."""
        if self.ndim == 2:
            value = np.asarray(value, dtype=float)
            return np.stack([m.cdf(value[..., i]) for i, m in enumerate(self._margins)], -1)
        x = np.asarray(value, dtype=float)
        u, below = (np.log(np.where(x <= 0, 1.0, x)), x <= 0) if self._log else (x, False)
        inside = self._spline(np.clip(u, self._u[0], self._u[-1]))
        out = np.where(u <= self._u[0], 0.0, np.where(u >= self._u[-1], 1.0, inside))
        return np.clip(np.where(below, 0.0, out), 0.0, 1.0)

    def ppf(self, q: ArrayLike) -> np.ndarray:
        """Posterior quantiles (2-D: marginal quantiles on a last axis of length 2)."""
        q = _validate.numeric_array("q", q).astype(float)
        if not np.all((q > 0) & (q < 1)):
            raise ValueError(f"q must lie in (0, 1), got {q!r}")
        if self.ndim == 2:
            return np.stack([m.ppf(q) for m in self._margins], -1)
        flat = [self._ppf_one(v) for v in q.ravel()]
        return np.asarray(flat).reshape(q.shape)

    def pdf(self, value: ArrayLike) -> np.ndarray:
        """Interpolated posterior density (1-D): the derivative of the interpolated CDF."""
        if self.ndim != 1:
            raise ValueError("pdf is defined for a 1-D grid; use marginal(axis).pdf")
        x = np.asarray(value, dtype=float)
        u = np.log(np.where(x <= 0, 1.0, x)) if self._log else x
        dens = self._spline(u, 1) / (x if self._log else 1.0)
        outside = (u < self._u[0]) | (u > self._u[-1]) | ((x <= 0) if self._log else False)
        return np.where(outside, 0.0, np.maximum(dens, 0.0))

    # --- draws --------------------------------------------------------------------

    def draws(self, n: int, *, rng: RNGLike = None) -> np.ndarray:
        """Return ``n`` draws, shape ``(n,)`` (1-D) or ``(n, 2)`` (2-D).

        1-D: the interpolated CDF inverted at uniforms, by bisection within a
        grid cell. 2-D: a cell drawn with its trapezoid mass, then a point from
        the bilinear interpolant of the density in it (exactly).
        """
        n = _validate.size("n", n)
        gen = as_generator(rng)
        if self.ndim == 2:
            return self._draws_2d(n, gen)
        q = gen.random(n)
        i = np.clip(np.searchsorted(self._cdf, q), 1, len(self._u) - 1)
        lo, hi = self._u[i - 1], self._u[i]
        for _ in range(_BISECTIONS):
            mid = 0.5 * (lo + hi)
            below = self._spline(mid) < q
            lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
        u = 0.5 * (lo + hi)
        return np.exp(u) if self._log else u

    def sample(
        self,
        draws: int,
        *,
        chains: int = 4,
        names: Sequence[str] = ("x", "y"),
        rng: RNGLike = None,
    ) -> InferenceData:
        """Return ``chains * draws`` independent draws as an InferenceData.

        ``names`` names the parameters (the first one in 1-D).

        Examples
        --------
        >>> import numpy as np
        >>> post = GridPosterior(np.linspace(-6, 6, 801), lambda x: -0.5 * x**2)
        >>> post.sample(50, names=["mu"], rng=0).posterior["mu"].shape
        (4, 50)
        """
        chains = _validate.size("chains", chains)
        total = _validate.size("draws", draws) * chains
        values = self.draws(_validate.size("draws times chains", total), rng=rng)
        names = list(names)[: self.ndim]
        columns = [values] if self.ndim == 1 else [values[:, 0], values[:, 1]]
        return to_inference_data(
            dict(zip(names, columns, strict=True)),
            chains=chains,
            attrs={"method": "grid", "log_evidence": self.log_evidence},
        )

    def _ppf_one(self, q: float) -> float:
        i = int(np.clip(np.searchsorted(self._cdf, q), 1, len(self._u) - 1))
        lo, hi = self._u[i - 1], self._u[i]
        u = brentq(lambda v: float(self._spline(v)) - q, lo, hi, xtol=1e-14)
        return math.exp(u) if self._log else u

    def _draws_2d(self, n: int, gen: np.random.Generator) -> np.ndarray:
        (x, y), g = self._axes, self._g
        corners = (g[:-1, :-1], g[1:, :-1], g[:-1, 1:], g[1:, 1:])  # f00 f10 f01 f11
        area = np.diff(x)[:, None] * np.diff(y)[None, :]
        mass = (area * sum(corners) / 4.0).ravel()
        cell = gen.choice(mass.size, size=n, p=mass / mass.sum())
        i, j = np.unravel_index(cell, area.shape)
        f00, f10, f01, f11 = (c[i, j] for c in corners)
        tx = _linear_draw(f00 + f01, f10 + f11, gen.random(n))
        ty = _linear_draw(f00 + tx * (f10 - f00), f01 + tx * (f11 - f01), gen.random(n))
        return np.column_stack([x[i] + tx * (x[i + 1] - x[i]), y[j] + ty * (y[j + 1] - y[j])])

    def __repr__(self) -> str:
        nodes = "x".join(str(len(a)) for a in getattr(self, "_axes", (self._u,)))
        return f"GridPosterior({nodes} nodes, log_evidence={self.log_evidence:.6g})"


def _check_grid(grid) -> tuple[np.ndarray, ...]:
    axes = grid if isinstance(grid, tuple | list) and len(grid) == 2 else (grid,)
    out = []
    for k, axis in enumerate(axes):
        name = "grid" if len(axes) == 1 else f"grid[{k}]"
        arr = _validate.finite_array(name, axis)
        if arr.ndim != 1 or arr.size < 3:
            raise ValueError(f"{name} must be 1-D with at least 3 points, got shape {arr.shape}")
        if not np.all(np.diff(arr) > 0):
            raise ValueError(f"{name} must be strictly increasing")
        out.append(arr)
    return tuple(out)


def _log_density(points, log_likelihood, log_prior) -> np.ndarray:
    """``log prior + log likelihood`` on the grid (``points`` an array or a meshgrid pair)."""
    if log_likelihood is None:
        raise TypeError("log_likelihood must be a callable or its values on the grid, got None")
    shape = points.shape if isinstance(points, np.ndarray) else points[0].shape
    parts = [
        _values(name, f, points, shape)
        for name, f in (("log_prior", log_prior), ("log_likelihood", log_likelihood))
        if f is not None
    ]
    total = parts[0] + parts[1] if len(parts) == 2 else parts[0]
    if np.any(np.isnan(total)) or np.any(total == np.inf):
        raise ValueError("the log density is NaN or +inf at some grid points")
    return total


def _values(name: str, f: Callable | np.ndarray, points, shape) -> np.ndarray:
    if callable(f):
        out = f(points) if isinstance(points, np.ndarray) else f(*points)
    else:
        out = f
    arr = _validate.numeric_array(name, out).astype(float, copy=False)
    if arr.shape != shape:
        raise ValueError(f"{name} must give shape {shape} on the grid, got {arr.shape}")
    return arr


def _shift(log_p: np.ndarray, log_shift) -> float:
    top = float(np.max(log_p))
    if log_shift is not None:
        shift = _validate.finite("log_shift", log_shift)
        if top - shift > 700.0:
            raise ValueError(
                f"log_shift={log_shift!r} is {top - shift:.4g} below the log density's largest "
                "value on the grid: its exponential would overflow"
            )
        return shift
    if not math.isfinite(top):
        raise ValueError("the posterior has no mass on the grid (log density -inf everywhere)")
    return top


def _check_total(total: float) -> float:
    if not (total > 0 and math.isfinite(total)):
        raise ValueError(
            f"the density integrates to {total!r} on the grid; give a log_shift near the "
            "log evidence, or a grid where the posterior has mass"
        )
    return total


def _halved_difference(g: np.ndarray, u: np.ndarray, total: float) -> float:
    """Relative difference of Simpson's rule on every node and on every second node."""
    if len(u) < 5:
        return math.nan
    end = len(u) if len(u) % 2 else len(u) - 1  # an odd count keeps the last node
    coarse = simpson(g[:end:2], x=u[:end:2]) + simpson(g[end - 1 :], x=u[end - 1 :])
    return abs(float(coarse) - total) / total


def _linear_draw(a, b, w) -> np.ndarray:
    """Inverse CDF on ``[0, 1]`` of the density proportional to ``a + (b - a) t``."""
    m = 0.5 * w * (a + b)
    root = np.sqrt(np.maximum(a * a + 2.0 * (b - a) * m, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(a + root > 0, 2.0 * m / (a + root), w)
    return np.clip(t, 0.0, 1.0)
