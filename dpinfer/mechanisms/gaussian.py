"""The Gaussian mechanism with analytic or classical calibration."""

from __future__ import annotations

import numpy as np
from scipy.special import ndtri

from .. import _validate, accounting
from ._coordinate import GAUSSIAN, CoordinateForm
from ._numerics import scaled_difference
from ._params import calibrated, check_float_scale, noise_array, require_sensitivity
from .base import Mechanism, Privacy

__all__ = ["Gaussian"]

_CALIBRATIONS = ("analytic", "classical")


class Gaussian(Mechanism):
    r"""Additive Gaussian noise: ``s_dp = s + N(0, sigma^2)`` coordinate-wise.

    Parameters
    ----------
    sigma : float or array_like
        Noise standard deviation, scalar or one per coordinate: a normal float64
        from 2.2e-308 to 1.8e305, as :class:`Laplace`'s scale.
    sensitivity : float, optional
        Declared l2 sensitivity. Needed only for :attr:`privacy`.
    delta : float, optional
        The delta at which :attr:`privacy` reports epsilon. Needed only for
        :attr:`privacy`.
    event_shape : tuple of int, optional
        Shape of a release; defaults to the shape of ``sigma``.

    Notes
    -----
    With :math:`\mu = \Delta_2 / \min_j \sigma_j`, the mechanism is
    :math:`\mu^2/2`-zCDP (Bun & Steinke 2016) and
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

    Examples
    --------
    >>> import dpinfer as dp
    >>> mech = dp.Gaussian.from_privacy(epsilon=1.0, delta=1e-5, sensitivity=1.0)
    >>> round(float(mech.sigma), 4)
    3.7306
    >>> mech.privacy.epsilon, mech.privacy.delta
    (1.0, 1e-05)
    """

    def __init__(self, sigma, *, sensitivity=None, delta=None, event_shape=None):
        self.sigma, self.event_shape = noise_array("sigma", sigma, event_shape)
        check_float_scale("sigma", self.sigma)
        # log(1 / sqrt(2 pi sigma^2)) without squaring sigma, which under- or overflows
        self._log_norm = -(np.log(self.sigma) + 0.5 * np.log(2 * np.pi))
        self.sensitivity = (
            None if sensitivity is None else _validate.positive_finite("sensitivity", sensitivity)
        )
        self.delta = None if delta is None else _validate.probability_open("delta", delta)
        self._calibrated_epsilon = None

    @classmethod
    def from_privacy(
        cls, *, epsilon, delta, sensitivity, calibration="analytic", event_shape=()
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
        if calibration not in _CALIBRATIONS:
            raise ValueError(f"calibration must be one of {_CALIBRATIONS}, got {calibration!r}")
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

    def _log_density(self, xp, released, value):
        # z = d / sigma first: (d^2) overflows long before the log-density does
        z = scaled_difference(xp, released, value, self.sigma)
        return self._log_norm - (0.5 * z) * z

    @property
    def _noise_scale(self):
        return self.sigma

    def _coordinate_form(self, released):
        return CoordinateForm.build(GAUSSIAN, released, a=self.sigma, c=self._log_norm)

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
        """The guarantee for the declared sensitivity (see Notes)."""
        sens = float(require_sensitivity(self))
        if self.delta is None:
            raise ValueError("Gaussian needs delta=... to report an (epsilon, delta) guarantee")
        sigma = float(np.min(self.sigma))
        eps = self._calibrated_epsilon
        if eps is None:
            # 0 when delta alone covers the mechanism; Privacy needs epsilon > 0, and any
            # larger epsilon also holds, so report 1e-12 as DiscreteGaussian does.
            eps = max(accounting.gaussian_epsilon(self.delta, sigma, sens), 1e-12)
        return Privacy(
            epsilon=eps,
            delta=self.delta,
            rho=accounting.zcdp_gaussian(sigma, sens),
            neighbouring=f"confidential values within l2 distance {sens:g}",
        )

    def _repr_params(self):
        return {"sigma": self.sigma.tolist(), "sensitivity": self.sensitivity, "delta": self.delta}
