"""Discrete Laplace and discrete Gaussian mechanisms: the hardened curator path."""

from __future__ import annotations

import abc
import math
from fractions import Fraction

import numpy as np

from .. import _validate, accounting
from .._validate import integer_sensitivity as _integer_sensitivity
from . import _exact
from ._bits import word_source
from ._coordinate import GAUSSIAN, LAPLACE, CoordinateForm
from ._discrete_gaussian import (
    check_sigma,
    discrete_gaussian_log_normaliser,
    discrete_gaussian_sf,
    epsilon_at,
    solve_sigma,
)
from ._discrete_quantiles import discrete_gaussian_quantile, discrete_laplace_quantile
from ._numerics import checked_add, scaled_difference
from ._params import (
    INTEGER_SCALE_MAX,
    as_shape,
    calibrated,
    check_range,
    noise_array,
    require_sensitivity,
    scale_for_epsilon,
)
from .base import Mechanism, Privacy

__all__ = ["DiscreteGaussian", "DiscreteLaplace", "discrete_gaussian_sf"]


class _IntegerNoise(Mechanism):
    """Integer-valued additive noise with an exact sampler; one parameter for all coordinates.

    Releases draw their bits from the operating system's CSPRNG when ``rng`` is
    None, and from the given seed or Generator otherwise (tests, research).
    """

    discrete = True

    @staticmethod
    @abc.abstractmethod
    def _exact_sampler(param: Fraction, size: int, source) -> np.ndarray:
        """``size`` exact draws of the noise given its rational parameter and a bit source."""

    @property
    @abc.abstractmethod
    def _rational(self) -> Fraction:
        """The noise parameter as an exact rational."""

    def _init_shape(self, event_shape) -> None:
        _, self.event_shape = noise_array("event_shape", 1.0, event_shape)

    def _noise_source(self, rng):
        return word_source(rng)

    def _sample(self, value, source):
        # ``source`` is the word source that _noise_source made of the caller's rng
        noise = type(self)._exact_sampler(self._rational, value.size, source)
        return checked_add("value", value, noise.reshape(value.shape))

    @property
    def log_max_density(self) -> float:
        """``log sup eta(s_dp | s)``: the pmf at zero noise in every coordinate."""
        return self._log_norm * max(1, math.prod(self.event_shape))


class DiscreteLaplace(_IntegerNoise):
    r"""Two-sided geometric noise on the integers.

    Parameters
    ----------
    scale : float
        ``t > 0``; ``P(x) = tanh(1/(2t)) exp(-|x|/t)``. At most ``2**53``: larger
        noise can leave the int64 range of the releases.
    sensitivity : int, optional
        Declared l1 sensitivity (an integer). Needed only for :attr:`privacy`.
    event_shape : tuple of int, default ()
        Shape of a release.

    Notes
    -----
    For neighbours with :math:`\|s - s'\|_1 \le \Delta` the log-ratio of the
    pmfs is at most :math:`\Delta / t`, so the mechanism is
    :math:`\Delta/t`-DP (pure). Releases are drawn by the exact rational
    algorithm of Canonne, Kamath & Steinke (2020, Algorithm 2) on the float
    ``scale`` read as the rational it is, without floating-point arithmetic,
    compiled (millions of releases per second). With ``rng=None`` every
    random bit comes from the operating system's cryptographic generator.

    Examples
    --------
    >>> import dpinfer as dp
    >>> mech = dp.DiscreteLaplace.from_privacy(epsilon=0.5, sensitivity=1)
    >>> mech.scale, mech.privacy.epsilon
    (2.0, 0.5)
    >>> int(mech.release(40, rng=1)) - 40  # an integer offset  # doctest: +SKIP
    -1
    """

    _exact_sampler = staticmethod(_exact.sample_discrete_laplace)

    def __init__(self, scale, *, sensitivity=None, event_shape=()):
        self.scale = _validate.positive_finite("scale", scale)
        check_range(
            "scale",
            self.scale,
            0.0,
            INTEGER_SCALE_MAX,
            why_low="",
            why_high="draws of larger noise can leave the int64 range of the releases",
        )
        self.sensitivity = None if sensitivity is None else _integer_sensitivity(sensitivity)
        self._init_shape(event_shape)
        # log((1 - p) / (1 + p)) with p = exp(-1/t), i.e. log tanh(1/(2t)); for a tiny t,
        # -1/t is -inf and the normaliser log 1 = 0
        self._log_norm = math.log(-math.expm1(-1 / self.scale)) - math.log1p(
            math.exp(-1 / self.scale)
        )

    @classmethod
    def from_privacy(cls, *, epsilon, sensitivity, event_shape=()) -> DiscreteLaplace:
        """Calibrate ``scale = sensitivity / epsilon``.

        ``sensitivity`` (the l1 sensitivity, an integer) is required, as in every
        ``from_privacy``: the guarantee is only as true as the declared
        sensitivity, so it is never assumed (a sum of bounded values is not a
        count).
        """
        eps = _validate.positive_finite("epsilon", epsilon)
        sens = _integer_sensitivity(sensitivity)
        return scale_for_epsilon(
            cls, epsilon, sensitivity, eps=eps, sens=sens, event_shape=event_shape
        )

    @property
    def _rational(self) -> Fraction:
        return Fraction(self.scale)

    def _log_density(self, xp, released, value):
        return self._log_norm - xp.abs(scaled_difference(xp, released, value, self.scale))

    @property
    def _noise_scale(self):
        return np.full(self.event_shape, self.scale)

    def _quantile(self, value, u):
        return checked_add("value", value, discrete_laplace_quantile(u, self.scale))

    def _coordinate_form(self, released):
        return CoordinateForm.build(LAPLACE, released, a=self.scale, c=self._log_norm)

    @property
    def privacy(self) -> Privacy:
        """The guarantee for the declared sensitivity (see Notes)."""
        sens = int(require_sensitivity(self))
        return Privacy(
            epsilon=sens / self.scale,
            neighbouring=f"integer values within l1 distance {sens}",
        )

    def _repr_params(self):
        return {"scale": self.scale, "sensitivity": self.sensitivity}


class DiscreteGaussian(_IntegerNoise):
    r"""Discrete Gaussian noise on the integers (Canonne, Kamath & Steinke 2020).

    Parameters
    ----------
    sigma : float
        Scale: ``P(x) ∝ exp(-x^2 / (2 sigma^2))`` on the integers; from 1.5e-154
        (``sigma**2`` a normal float64) to ``2**53`` (draws fit int64).
    sensitivity : int, optional
        Declared l2 sensitivity (an integer). Needed only for :attr:`privacy`.
    delta : float, optional
        The delta at which :attr:`privacy` reports epsilon.
    event_shape : tuple of int, default ()
        Shape of a release.

    Notes
    -----
    The mechanism is :math:`\Delta^2/(2\sigma^2)`-zCDP and, in one dimension,
    :math:`(\varepsilon, \delta)`-DP with the exact
    :math:`\delta = P[Y > \varepsilon\sigma^2/\Delta - \Delta/2]
    - e^\varepsilon P[Y > \varepsilon\sigma^2/\Delta + \Delta/2]`,
    :math:`Y \sim N_{\mathbb Z}(0, \sigma^2)` (CKS 2020, Theorem 7). For vector
    releases the reported guarantee is the zCDP one converted to
    :math:`(\varepsilon, \delta)` (Bun & Steinke 2016, Proposition 1.3).
    Releases use the exact rational sampler (CKS Algorithm 3) with
    :math:`\sigma^2` the rational value of the float ``sigma**2`` (which
    :meth:`logpdf`'s ``(x / sigma)^2`` matches to rounding), compiled; with
    ``rng=None`` every random bit comes from the operating system's
    cryptographic generator.

    Examples
    --------
    >>> import dpinfer as dp
    >>> mech = dp.DiscreteGaussian.from_privacy(epsilon=1.0, delta=1e-6, sensitivity=1)
    >>> mech.privacy.epsilon, mech.privacy.delta
    (1.0, 1e-06)
    """

    _exact_sampler = staticmethod(_exact.sample_discrete_gaussian)

    def __init__(self, sigma, *, sensitivity=None, delta=None, event_shape=()):
        self.sigma = check_sigma(_validate.positive_finite("sigma", sigma))
        self.sensitivity = None if sensitivity is None else _integer_sensitivity(sensitivity)
        self.delta = None if delta is None else _validate.probability_open("delta", delta)
        self._init_shape(event_shape)
        self._log_norm = -discrete_gaussian_log_normaliser(self.sigma)
        self._calibrated_epsilon = None

    @classmethod
    def from_privacy(cls, *, epsilon, delta, sensitivity, event_shape=()) -> DiscreteGaussian:
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
            solve_sigma(eps, dlt, sens, math.prod(as_shape(event_shape))),
            f"epsilon={epsilon!r}, delta={delta!r} and sensitivity={sensitivity!r}",
            sensitivity=sens,
            delta=dlt,
            event_shape=event_shape,
        )
        mech._calibrated_epsilon = eps
        return mech

    @property
    def _rational(self) -> Fraction:
        return Fraction(self.sigma**2)

    def _log_density(self, xp, released, value):
        # z = d / sigma first: d^2 overflows (in int64 from 3.04e9 on) long before the density
        z = scaled_difference(xp, released, value, self.sigma)
        return self._log_norm - (0.5 * z) * z

    @property
    def _noise_scale(self):
        return np.full(self.event_shape, self.sigma)

    def _quantile(self, value, u):
        return checked_add("value", value, discrete_gaussian_quantile(u, self.sigma))

    def _coordinate_form(self, released):
        return CoordinateForm.build(GAUSSIAN, released, a=self.sigma, c=self._log_norm)

    @property
    def privacy(self) -> Privacy:
        """The guarantee for the declared sensitivity (see Notes)."""
        sens = int(require_sensitivity(self))
        if self.delta is None:
            raise ValueError(
                "DiscreteGaussian needs delta=... to report an (epsilon, delta) guarantee"
            )
        eps = self._calibrated_epsilon
        if eps is None:
            eps = epsilon_at(self.sigma, self.delta, sens, self._dimension)
        return Privacy(
            epsilon=eps,
            delta=self.delta,
            rho=accounting.zcdp_gaussian(self.sigma, sens),
            neighbouring=f"integer values within l2 distance {sens}",
        )

    @property
    def _dimension(self) -> int:
        return max(1, math.prod(self.event_shape))

    def _repr_params(self):
        return {"sigma": self.sigma, "sensitivity": self.sensitivity, "delta": self.delta}
