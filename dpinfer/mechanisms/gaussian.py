"""The Gaussian mechanism with analytic or classical calibration."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import ndtri

from .. import _validate, accounting
from ..noise import form as cells
from ._additive import AdditiveNoise
from ._numerics import scaled_difference
from ._params import (
    budget_per_cell,
    calibrated,
    check_float_scale,
    gaussian_privacy,
    noise_array,
    scalar_or_cells,
    sensitivity_array,
)
from .base import Privacy

__all__ = ["Gaussian"]

_CALIBRATIONS = ("analytic", "classical")


class Gaussian(AdditiveNoise):
    r"""Additive Gaussian noise: ``s_dp = s + N(0, sigma^2)`` coordinate-wise.

    Parameters
    ----------
    sigma : float or array_like
        Noise standard deviation, scalar or one per coordinate: a normal float64
        from 2.2e-308 to 1.8e305, as :class:`Laplace`'s scale.
    sensitivity : float or array_like, optional
        Declared sensitivity: a scalar bounds the l2 norm of the whole change;
        an array bounds each coordinate. Needed only for :attr:`privacy`.
    delta : float, optional
        The delta at which :attr:`privacy` reports epsilon; without it
        :attr:`privacy` states rho-zCDP only (``privacy.to_approx(delta)``
        converts).
    event_shape : tuple of int, optional
        Shape of a release; defaults to the shape of ``sigma``.

    Notes
    -----
    A shift :math:`d` of the confidential value moves the privacy loss by
    :math:`\|d / \sigma\|_2`; its largest value :math:`\mu` is
    :math:`\Delta / \min_j \sigma_j` for a scalar sensitivity (the whole
    change on the least noisy coordinate) and
    :math:`(\sum_j \Delta_j^2 / \sigma_j^2)^{1/2}` for per-coordinate bounds.
    The mechanism is :math:`\rho = \mu^2/2`-zCDP (Bun & Steinke 2016) and
    :math:`(\varepsilon, \delta(\varepsilon))`-DP with the exact curve
    :math:`\delta(\varepsilon) = \Phi(\mu/2 - \varepsilon/\mu)
    - e^\varepsilon \Phi(-\mu/2 - \varepsilon/\mu)` (Balle & Wang 2018).
    :meth:`from_privacy` calibrates sigma on that curve by default, or with the
    classical ``sqrt(2 log(1.25/delta)) Delta / epsilon``, valid only for
    ``epsilon < 1``.

    Releases are computed in floating point; Mironov (2012) showed that the
    low-order bits of such releases can leak the confidential value. For a
    hardened curator-side release use :class:`DiscreteGaussian`. With ``rng=None``
    the noise comes from a PCG64 seeded afresh from OS entropy for each
    release, a fast statistical generator, not a cryptographic one; the
    discrete mechanisms draw every bit from the OS cryptographic generator.

    References
    ----------
    .. [1] Balle and Wang (2018). Improving the Gaussian mechanism for
       differential privacy. ICML.
    .. [2] Dwork and Roth (2014). The algorithmic foundations of differential
       privacy, Theorem A.1.
    .. [3] Bun and Steinke (2016). Concentrated differential privacy:
       simplifications, extensions, and lower bounds. TCC.

    Examples
    --------
    >>> import dpinfer as dp
    >>> mech = dp.Gaussian.from_privacy(epsilon=1.0, delta=1e-5, sensitivity=1.0)
    >>> round(float(mech.sigma), 4)
    3.7306
    >>> mech.privacy.epsilon, mech.privacy.delta
    (1.0, 1e-05)
    """

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
        check_float_scale("sigma", self.sigma)
        # log(1 / sqrt(2 pi sigma^2)) without squaring sigma, which under- or overflows
        self._log_norm = -(np.log(self.sigma) + 0.5 * np.log(2 * np.pi))
        self.sensitivity = scalar_or_cells(sensitivity_array(sensitivity, self.event_shape))
        self.delta = None if delta is None else _validate.probability_open("delta", delta)
        self._calibrated_epsilon = None

    @classmethod
    def from_privacy(
        cls,
        *,
        epsilon: float,
        delta: float,
        sensitivity: float,
        calibration: str = "analytic",
        event_shape: int | tuple[int, ...] | None = (),
    ) -> Gaussian:
        """Calibrate sigma for ``(epsilon, delta)``-DP at l2 ``sensitivity``.

        Parameters
        ----------
        epsilon, delta, sensitivity : float
            The target guarantee and the l2 sensitivity.
        calibration : {'analytic', 'classical'}
            Balle & Wang's exact calibration (default) or the classical one,
            which is refused for ``epsilon >= 1``.
        event_shape : tuple of int
            Shape of a release.
        """
        calibration = _validate.choice("calibration", calibration, _CALIBRATIONS)
        solve = (
            accounting.gaussian_sigma_analytic
            if calibration == "analytic"
            else accounting.gaussian_sigma_classical
        )
        sigma = solve(epsilon, delta, sensitivity)
        mech = calibrated(
            cls,
            "sigma",
            sigma,
            f"epsilon={epsilon!r}, delta={delta!r} and sensitivity={sensitivity!r}",
            sensitivity=sensitivity,
            delta=delta,
            event_shape=event_shape,
        )
        mech._calibrated_epsilon = float(epsilon)
        mech.calibration = calibration
        return mech

    @classmethod
    def from_zcdp(
        cls,
        *,
        rho: ArrayLike,
        sensitivity: ArrayLike,
        event_shape: int | tuple[int, ...] | None = None,
    ) -> Gaussian:
        r"""Calibrate ``sigma = sensitivity / sqrt(2 rho)``, cell by cell, for rho-zCDP.

        Parameters
        ----------
        rho : float or array_like
            The zCDP budget: a scalar, or one per cell.
        sensitivity : float or array_like
            A scalar bounds the l2 norm of the whole change; an array bounds
            each cell (then ``rho`` must be per cell too).
        event_shape : tuple of int, optional
            Shape of a release; defaults to the broadcast shape of ``rho`` and
            ``sensitivity``.

        Notes
        -----
        :attr:`privacy` states rho-zCDP (``privacy.to_approx(delta)`` converts):
        :math:`\sum_j \rho_j` with per-cell bounds, and
        :math:`\Delta^2 / (2 \min_j \sigma_j^2) = \max_j \rho_j` with a scalar
        one (the whole change may fall on one cell).

        Examples
        --------
        >>> import dpinfer as dp
        >>> mech = dp.Gaussian.from_zcdp(rho=0.5, sensitivity=1.0)
        >>> float(mech.sigma), str(mech.privacy)
        (1.0, '0.5-zCDP')
        """
        rho_cells, sens, shape = budget_per_cell("rho", rho, sensitivity, event_shape)
        with np.errstate(over="ignore"):
            sigma = sens / np.sqrt(2 * rho_cells)
        targets = f"rho={rho!r} and sensitivity={sensitivity!r}"
        return calibrated(cls, "sigma", sigma, targets, sensitivity=sens, event_shape=shape)

    def _log_density(self, xp, released, value):
        # z = d / sigma first: (d^2) overflows long before the log-density does
        z = scaled_difference(xp, released, value, self.sigma)
        return self._log_norm - (0.5 * z) * z

    @property
    def _noise_scale(self):
        return self.sigma

    def _log_noise_cdf(self, xp, x):
        return xp.log_ndtr(x / self.sigma)

    def _cell_form(self, released):
        return cells.build(cells.GAUSSIAN, released, scale=self.sigma, log_norm=self._log_norm)

    def _sample(self, value, rng):
        return value + rng.standard_normal(size=value.shape) * self.sigma

    def _quantile(self, value, u):
        return value + ndtri(u) * self.sigma

    @property
    def log_max_density(self) -> float:
        """``log sup eta(s_dp | s)`` over releases and confidential values."""
        return float(np.sum(self._log_norm))

    @property
    def privacy(self) -> Privacy:
        """The guarantee for the declared sensitivity (see Notes).

        rho-zCDP only without ``delta``; with it, the exact epsilon at that delta.
        """
        return gaussian_privacy(self, values="confidential values")

    def _epsilon_at_delta(self, rho: float, sens, delta: float) -> float:
        if not math.isfinite(rho):
            return math.inf  # rho beyond the float64 range: no guarantee
        if np.ndim(sens):
            exact = accounting.gaussian_epsilon(delta, 1.0, math.sqrt(2 * rho))
        else:
            exact = accounting.gaussian_epsilon(delta, float(np.min(self.sigma)), sens)
        # 0 when delta alone covers the mechanism; Privacy needs epsilon > 0, and any
        # larger epsilon also holds, so report 1e-12 as DiscreteGaussian does.
        return max(exact, 1e-12)

    def _repr_params(self):
        sens = self.sensitivity
        return {
            "sigma": self.sigma.tolist(),
            "sensitivity": sens.tolist() if np.ndim(sens) else sens,
            "delta": self.delta,
        }
