"""Discrete Laplace and discrete Gaussian mechanisms: the hardened curator path."""

from __future__ import annotations

import abc
import math
from fractions import Fraction

import numpy as np
from numpy.typing import ArrayLike

from .. import _validate, accounting
from .._numbers import INTEGER_SCALE_MAX, check_range, fsum_or_inf
from .._validate import integer_sensitivity as _integer_sensitivity
from ..accounting._discrete_gaussian import discrete_gaussian_epsilon, discrete_gaussian_sigma
from ..noise import form as cells
from ..noise.discrete_gaussian import (
    check_sigma,
    discrete_gaussian_log_normaliser,
    discrete_gaussian_sf,
)
from . import _exact
from ._additive import AdditiveNoise
from ._bits import word_source
from ._discrete_quantiles import discrete_gaussian_quantile, discrete_laplace_quantile
from ._numerics import checked_add, scaled_difference
from ._params import (
    as_shape,
    budget_per_cell,
    calibrated,
    compact,
    gaussian_privacy,
    neighbouring,
    noise_array,
    require_sensitivity,
    scalar_or_cells,
    sensitivity_array,
)
from ._tails import discrete_laplace_log_cdf
from .base import Privacy

__all__ = ["DiscreteGaussian", "DiscreteLaplace", "discrete_gaussian_sf"]


class _IntegerNoise(AdditiveNoise):
    """Integer-valued additive noise with an exact sampler; its parameter scalar or per cell.

    Cells that share a parameter value form a group: the exact sampler, the
    normalising constants and the inverse CDF work once per distinct value
    (real tables have few). Releases draw their bits from the operating
    system's CSPRNG when ``rng`` is None, and from the given seed or Generator
    otherwise (tests, research).
    """

    discrete = True

    # set by each family
    _param_name: str
    _log_norm: np.ndarray
    sensitivity: int | np.ndarray | None

    @staticmethod
    @abc.abstractmethod
    def _exact_sampler(params, size: int, source, cells, /) -> np.ndarray:
        """``size`` exact draws given the rational parameter of each group and a bit source."""

    @staticmethod
    @abc.abstractmethod
    def _rational(value: float) -> Fraction:
        """Return one group's parameter (a float) as the exact rational the sampler uses."""

    @staticmethod
    @abc.abstractmethod
    def _noise_quantile(u: np.ndarray, param: float, /) -> np.ndarray:
        """Return the noise at uniforms ``u`` for one group's parameter."""

    @property
    @abc.abstractmethod
    def _param(self) -> np.ndarray:
        """The noise parameter per cell, of the event shape."""

    def _init_groups(self) -> None:
        values, cells = np.unique(self._param.reshape(-1), return_inverse=True)
        self._distinct = values.tolist()
        self._cells = cells.astype(np.int64).reshape(-1)

    def _at_cells(self, cells):
        out = super()._at_cells(cells)
        out._init_groups()  # the groups of the gathered cells
        return out

    def _per_group(self, fn) -> np.ndarray:
        """``fn(value)`` for each distinct parameter, spread over the cells (event-shaped)."""
        per_group = np.array([fn(v) for v in self._distinct], dtype=float)
        return per_group[self._cells].reshape(self.event_shape)

    def _noise_source(self, rng):
        return word_source(rng)

    def _sample(self, value, source):
        # ``source`` is the word source that _noise_source made of the caller's rng
        rationals = [self._rational(v) for v in self._distinct]
        noise = type(self)._exact_sampler(rationals, value.size, source, self._cells)
        return checked_add("value", value, noise.reshape(value.shape))

    def _quantile(self, value, u):
        return checked_add("value", value, self._by_group(self._noise_quantile, u))

    @property
    def _noise_scale(self):
        return self._param

    def _by_group(self, fn, x: np.ndarray) -> np.ndarray:
        """``fn(x_cells, parameter)`` on the cells of each distinct parameter value.

        ``x`` has the shape ``(*batch, *event_shape)``; the result is int64.
        """
        if len(self._distinct) == 1:
            return fn(x, self._distinct[0])
        flat = x.reshape(-1, self._cells.size)
        out = np.empty(flat.shape, dtype=np.int64)
        for g, param in enumerate(self._distinct):
            cols = np.flatnonzero(self._cells == g)
            out[:, cols] = fn(flat[:, cols], param)
        return out.reshape(x.shape)

    @property
    def log_max_density(self) -> float:
        """``log sup eta(s_dp | s)``: the pmf at zero noise in every coordinate."""
        return float(np.sum(self._log_norm))

    def _repr_params(self):
        return {self._param_name: compact(self._param), "sensitivity": _tolist(self.sensitivity)}


class DiscreteLaplace(_IntegerNoise):
    r"""Two-sided geometric noise on the integers.

    Parameters
    ----------
    scale : float or array_like
        ``t > 0``, scalar or one per cell; ``P(x) = tanh(1/(2t)) exp(-|x|/t)``.
        At most ``2**53``: larger noise can leave the int64 range of the releases.
    sensitivity : int or array_like of int, optional
        Declared sensitivity: a scalar bounds the l1 norm of the whole change;
        an array bounds each cell. Needed only for :attr:`privacy`.
    event_shape : tuple of int, optional
        Shape of a release; defaults to the shape of ``scale``.

    Notes
    -----
    For neighbours with :math:`\|s - s'\|_1 \le \Delta` the log-ratio of the
    pmfs is at most :math:`\sum_j |s_j - s'_j| / t_j \le \Delta / \min_j t_j`;
    with per-cell bounds :math:`|s_j - s'_j| \le \Delta_j` it is at most
    :math:`\sum_j \Delta_j / t_j` (pure DP either way). Releases are drawn by
    the exact rational algorithm of Canonne, Kamath & Steinke (2020, Algorithm 2)
    on each float ``scale`` read as the rational it is, without floating-point
    arithmetic, compiled (millions of releases per second), one group of cells
    per distinct scale. With ``rng=None`` every random bit comes from the
    operating system's cryptographic generator.

    Examples
    --------
    >>> import dpinfer as dp
    >>> mech = dp.DiscreteLaplace.from_privacy(epsilon=0.5, sensitivity=1)
    >>> float(mech.scale), mech.privacy.epsilon
    (2.0, 0.5)
    >>> int(mech.release(40, rng=1)) - 40  # an integer offset  # doctest: +SKIP
    -1
    >>> table = dp.DiscreteLaplace([30.0, 30.0, 300.0], sensitivity=[1, 1, 1])
    >>> round(table.privacy.epsilon, 6)
    0.07
    """

    _exact_sampler = staticmethod(_exact.sample_discrete_laplace)
    _param_name = "scale"
    _cell_params = ("scale", "_log_norm", "_log1p_p")

    def __init__(
        self,
        scale: ArrayLike,
        *,
        sensitivity: ArrayLike | None = None,
        event_shape: int | tuple[int, ...] | None = None,
    ) -> None:
        self.scale, self.event_shape = noise_array("scale", scale, event_shape)
        check_range(
            "scale",
            self.scale,
            0.0,
            INTEGER_SCALE_MAX,
            why_high="draws of larger noise can leave the int64 range of the releases",
        )
        self.sensitivity = scalar_or_cells(
            sensitivity_array(sensitivity, self.event_shape, integer=True)
        )
        self._init_groups()
        # log((1 - p) / (1 + p)) with p = exp(-1/t), i.e. log tanh(1/(2t)); for a tiny t,
        # -1/t is -inf and the normaliser log 1 = 0
        self._log_norm = self._per_group(
            lambda t: math.log(-math.expm1(-1 / t)) - math.log1p(math.exp(-1 / t))
        )
        self._log1p_p = self._per_group(lambda t: math.log1p(math.exp(-1 / t)))

    @classmethod
    def from_privacy(
        cls,
        *,
        epsilon: ArrayLike,
        sensitivity: ArrayLike,
        event_shape: int | tuple[int, ...] | None = None,
    ) -> DiscreteLaplace:
        """Calibrate ``scale = sensitivity / epsilon``, cell by cell.

        ``sensitivity`` (the l1 sensitivity, an integer, or one per cell) is
        required, as in every ``from_privacy``: the guarantee is only as true as
        the declared sensitivity, so it is never assumed (a sum of bounded values
        is not a count). ``epsilon`` may be per cell, as in
        :meth:`Laplace.from_privacy`.
        """
        eps, sens, shape = budget_per_cell(
            "epsilon", epsilon, sensitivity, event_shape, integer=True
        )
        with np.errstate(over="ignore"):
            scale = sens / eps
        targets = f"epsilon={epsilon!r} and sensitivity={sensitivity!r}"
        return calibrated(cls, "scale", scale, targets, sensitivity=sens, event_shape=shape)

    @property
    def _param(self) -> np.ndarray:
        return self.scale

    @staticmethod
    def _rational(value: float) -> Fraction:
        return Fraction(value)

    @staticmethod
    def _noise_quantile(u, scale):
        return discrete_laplace_quantile(u, scale)

    def _log_density(self, xp, released, value):
        return self._log_norm - xp.abs(scaled_difference(xp, released, value, self.scale))

    def _log_noise_cdf(self, xp, x):
        return discrete_laplace_log_cdf(xp, xp.floor(x), self.scale, self._log1p_p)

    def _cell_form(self, released):
        return cells.build(
            cells.DISCRETE_LAPLACE,
            released,
            scale=self.scale,
            log_norm=self._log_norm,
            log1p_p=self._log1p_p,
        )

    @property
    def privacy(self) -> Privacy:
        """The guarantee for the declared sensitivity (see Notes)."""
        sens = require_sensitivity(self)
        with np.errstate(over="ignore"):  # a tiny scale: epsilon inf, no guarantee
            if np.ndim(sens):
                eps = fsum_or_inf((sens / self.scale).ravel())
            else:
                eps = float(sens) / float(np.min(self.scale))
        text = neighbouring(sens, values="integer values", norm="l1")
        return Privacy(epsilon=eps, neighbouring=text)


class DiscreteGaussian(_IntegerNoise):
    r"""Discrete Gaussian noise on the integers (Canonne, Kamath & Steinke 2020).

    Parameters
    ----------
    sigma : float or array_like
        Scale, scalar or one per cell: ``P(x) ∝ exp(-x^2 / (2 sigma^2))`` on the
        integers; from 1.5e-154 (``sigma**2`` a normal float64) to ``2**53``
        (draws fit int64).
    sensitivity : int or array_like of int, optional
        Declared sensitivity: a scalar bounds the l2 norm of the whole change;
        an array bounds each cell. Needed only for :attr:`privacy`.
    delta, event_shape
        As in :class:`~dpinfer.Gaussian`.

    Notes
    -----
    The mechanism is :math:`\rho`-zCDP (CKS 2020, Theorem 4) with
    :math:`\rho = \Delta^2 / (2 \min_j \sigma_j^2)` for a scalar sensitivity
    (the whole change may fall on the least noisy cell) and
    :math:`\rho = \sum_j \Delta_j^2 / (2\sigma_j^2)` for per-cell bounds. With
    ``delta``, a one-cell release reports the exact
    :math:`\delta = P[Y > \varepsilon\sigma^2/\Delta - \Delta/2]
    - e^\varepsilon P[Y > \varepsilon\sigma^2/\Delta + \Delta/2]`,
    :math:`Y \sim N_{\mathbb Z}(0, \sigma^2)` (CKS 2020, Theorem 7), solved for
    epsilon; a release of several cells reports the zCDP guarantee converted
    to :math:`(\varepsilon, \delta)` (Bun & Steinke 2016, Proposition 1.3),
    a valid but looser bound (the one-dimensional Theorem 7 does not apply to
    vectors). Releases use the exact rational sampler (CKS Algorithm 3) with
    :math:`\sigma^2` the rational value of the float ``sigma**2`` (which
    :meth:`logpdf`'s ``(x / sigma)^2`` matches to rounding), compiled, one
    group of cells per distinct sigma; with ``rng=None`` every random bit comes
    from the operating system's cryptographic generator.

    Examples
    --------
    >>> import dpinfer as dp
    >>> mech = dp.DiscreteGaussian.from_privacy(epsilon=1.0, delta=1e-6, sensitivity=1)
    >>> mech.privacy.epsilon, mech.privacy.delta
    (1.0, 1e-06)

    Wikimedia's pageviews by country: rho-zCDP by country risk tier, l2
    sensitivity sqrt(10) (a device-day counts up to 10 distinct pageviews):

    >>> import math
    >>> tiers = dp.DiscreteGaussian.from_zcdp(
    ...     rho=[0.015, 6.166e-4, 1.546e-4], sensitivity=math.sqrt(10)
    ... )
    >>> tiers.sigma.round(1), str(tiers.privacy)
    (array([ 18.3,  90. , 179.8]), '0.015-zCDP')
    >>> print(tiers.privacy.to_approx(1e-7))
    (0.998405, 1e-07)-DP, 0.015-zCDP
    """

    _exact_sampler = staticmethod(_exact.sample_discrete_gaussian)
    _param_name = "sigma"
    _cell_params = ("sigma", "_log_norm")

    def __init__(
        self,
        sigma: ArrayLike,
        *,
        sensitivity: ArrayLike | None = None,
        delta: float | None = None,
        event_shape: int | tuple[int, ...] | None = None,
    ) -> None:
        self.sigma, self.event_shape = noise_array("sigma", sigma, event_shape)
        check_sigma(self.sigma)
        self.sensitivity = scalar_or_cells(
            sensitivity_array(sensitivity, self.event_shape, integer=True, l2=True)
        )
        self.delta = None if delta is None else _validate.probability_open("delta", delta)
        self._init_groups()
        self._log_norm = self._per_group(lambda s: -discrete_gaussian_log_normaliser(s))
        self._calibrated_epsilon = None

    @classmethod
    def from_privacy(
        cls,
        *,
        epsilon: float,
        delta: float,
        sensitivity: int,
        event_shape: int | tuple[int, ...] | None = (),
    ) -> DiscreteGaussian:
        """Smallest sigma whose exact delta(epsilon) is at most ``delta`` (scalar releases).

        ``sensitivity`` (the l2 sensitivity, an integer) is required, as in every
        ``from_privacy``.
        """
        eps = _validate.positive_finite("epsilon", epsilon)
        dlt = _validate.probability_open("delta", delta)
        sens = _integer_sensitivity(sensitivity)
        mech = calibrated(
            cls,
            "sigma",
            discrete_gaussian_sigma(eps, dlt, sens, math.prod(as_shape(event_shape))),
            f"epsilon={epsilon!r}, delta={delta!r} and sensitivity={sensitivity!r}",
            sensitivity=sens,
            delta=dlt,
            event_shape=event_shape,
        )
        mech._calibrated_epsilon = eps
        return mech

    @classmethod
    def from_zcdp(
        cls,
        *,
        rho: ArrayLike,
        sensitivity: ArrayLike,
        event_shape: int | tuple[int, ...] | None = None,
    ) -> DiscreteGaussian:
        """Calibrate ``sigma = sensitivity / sqrt(2 rho)``, cell by cell, for rho-zCDP.

        As :meth:`Gaussian.from_zcdp`, with integer sensitivities (a scalar, or
        one per cell with ``rho`` per cell too); :attr:`privacy` states rho-zCDP
        (``privacy.to_approx(delta)`` converts).
        """
        rho_cells, sens, shape = budget_per_cell(
            "rho", rho, sensitivity, event_shape, integer=True, l2=True
        )
        with np.errstate(over="ignore"):
            sigma = sens / np.sqrt(2 * rho_cells)
        targets = f"rho={rho!r} and sensitivity={sensitivity!r}"
        return calibrated(cls, "sigma", sigma, targets, sensitivity=sens, event_shape=shape)

    @property
    def _param(self) -> np.ndarray:
        return self.sigma

    @staticmethod
    def _rational(value: float) -> Fraction:
        return Fraction(value**2)

    @staticmethod
    def _noise_quantile(u, sigma):
        return discrete_gaussian_quantile(u, sigma)

    def _log_density(self, xp, released, value):
        # z = d / sigma first: d^2 overflows (in int64 from 3.04e9 on) long before the density
        z = scaled_difference(xp, released, value, self.sigma)
        return self._log_norm - (0.5 * z) * z

    def _log_noise_cdf(self, xp, x):
        return xp.discrete_gaussian_log_cdf(x, self.sigma)

    def _cell_form(self, released):
        return cells.build(
            cells.DISCRETE_GAUSSIAN, released, scale=self.sigma, log_norm=self._log_norm
        )

    @property
    def privacy(self) -> Privacy:
        """The guarantee for the declared sensitivity (see Notes)."""
        return gaussian_privacy(self, values="integer values")

    def _epsilon_at_delta(self, rho: float, sens, delta: float) -> float:
        if self._dimension == 1:
            one_sigma, one_sens = float(self.sigma.ravel()[0]), int(np.ravel(sens)[0])
            return discrete_gaussian_epsilon(one_sigma, delta, one_sens, 1)
        return accounting.zcdp_to_approx(rho, delta)

    @property
    def _dimension(self) -> int:
        return max(1, math.prod(self.event_shape))

    def _repr_params(self):
        return {**super()._repr_params(), "delta": self.delta}


def _tolist(arr):
    return arr.tolist() if isinstance(arr, np.ndarray) else arr
