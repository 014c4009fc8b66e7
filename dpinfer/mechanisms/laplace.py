"""The Laplace mechanism."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .._numbers import fsum_or_inf
from ..noise import form as cells
from ._additive import AdditiveNoise
from ._numerics import scaled_difference
from ._params import (
    budget_per_cell,
    calibrated,
    check_float_scale,
    neighbouring,
    noise_array,
    require_sensitivity,
    sensitivity_array,
)
from ._tails import laplace_log_cdf
from .base import Privacy

__all__ = ["Laplace"]


class Laplace(AdditiveNoise):
    r"""Additive Laplace noise: ``s_dp = s + Lap(scale)`` coordinate-wise.

    Parameters
    ----------
    scale : float or array_like
        Noise scale ``b > 0``, scalar or one per coordinate: a normal float64 from
        2.2e-308 to 1.8e305 (a subnormal scale has too few bits to draw or score
        its noise; a larger one overflows in its tails).
    sensitivity : float or array_like, optional
        Declared sensitivity: a scalar is the l1 sensitivity of the whole
        vector; an array bounds each coordinate separately. Needed only for
        :attr:`privacy`.
    event_shape : tuple of int, optional
        Shape of a release; defaults to the shape of ``scale``.

    Notes
    -----
    .. math:: \eta(s_{dp} \mid s) = \prod_j \frac{1}{2 b_j} e^{-|s_{dp,j} - s_j| / b_j}

    For neighbours with :math:`\|s - s'\|_1 \le \Delta` the log-ratio is at most
    :math:`\sum_j |s_j - s'_j| / b_j \le \Delta / \min_j b_j`; with per-coordinate
    bounds :math:`|s_j - s'_j| \le \Delta_j` it is at most :math:`\sum_j \Delta_j / b_j`.

    Releases are computed in floating point; Mironov (2012) showed that the
    low-order bits of such releases can leak the confidential value. For a
    hardened curator-side release use :class:`DiscreteLaplace`. With ``rng=None``
    the noise comes from a PCG64 seeded afresh from OS entropy for each
    release, a fast statistical generator, not a cryptographic one; the
    discrete mechanisms draw every bit from the OS cryptographic generator.

    References
    ----------
    .. [1] Dwork, McSherry, Nissim and Smith (2006). Calibrating noise to
       sensitivity in private data analysis. TCC.
    .. [2] Mironov (2012). On significance of the least significant bits for
       differential privacy. CCS.

    Examples
    --------
    >>> import dpinfer as dp
    >>> mech = dp.Laplace.from_privacy(epsilon=0.2, sensitivity=1.0)
    >>> mech.scale
    array(5.)
    >>> mech.privacy.epsilon
    0.2
    >>> mech.logpdf(37.4, [37.0, 30.0]).round(3)
    array([-2.383, -3.783])
    """

    def __init__(
        self,
        scale: ArrayLike,
        *,
        sensitivity: ArrayLike | None = None,
        event_shape: int | tuple[int, ...] | None = None,
    ) -> None:
        self.scale, self.event_shape = noise_array("scale", scale, event_shape)
        check_float_scale("scale", self.scale)
        self.sensitivity = sensitivity_array(sensitivity, self.event_shape)

    @classmethod
    def from_privacy(
        cls,
        *,
        epsilon: ArrayLike,
        sensitivity: ArrayLike,
        event_shape: int | tuple[int, ...] | None = None,
    ) -> Laplace:
        r"""Calibrate ``scale = sensitivity / epsilon``, cell by cell (l1 sensitivity).

        Parameters
        ----------
        epsilon : float or array_like
            The budget: a scalar, or one per cell to split a budget across
            statistics released together.
        sensitivity : float or array_like
            A scalar bounds the l1 norm of the whole change; an array bounds
            each cell (then ``epsilon`` must be per cell too).
        event_shape : tuple of int, optional
            Shape of a release; defaults to the broadcast shape of ``epsilon``
            and ``sensitivity``.

        Notes
        -----
        With per-cell bounds :math:`\Delta_j` the guarantee is
        :math:`\sum_j \Delta_j / b_j = \sum_j \varepsilon_j`. With a scalar
        :math:`\Delta` and per-cell :math:`\varepsilon_j` the whole change may
        fall on one cell, so the guarantee is
        :math:`\Delta / \min_j b_j = \max_j \varepsilon_j`.

        Examples
        --------
        >>> import dpinfer as dp
        >>> mech = dp.Laplace.from_privacy(epsilon=[0.5, 0.5], sensitivity=[0.4, 80])
        >>> mech.scale, mech.privacy.epsilon
        (array([  0.8, 160. ]), 1.0)
        """
        eps, sens, shape = budget_per_cell("epsilon", epsilon, sensitivity, event_shape)
        with np.errstate(over="ignore"):
            scale = sens / eps
        targets = f"epsilon={epsilon!r} and sensitivity={sensitivity!r}"
        return calibrated(cls, "scale", scale, targets, sensitivity=sens, event_shape=shape)

    _cell_params = ("scale",)

    def _log_density(self, xp, released, value):
        return -xp.abs(scaled_difference(xp, released, value, self.scale)) - np.log(2 * self.scale)

    @property
    def _noise_scale(self):
        return self.scale

    def _log_noise_cdf(self, xp, x):
        return laplace_log_cdf(xp, x / self.scale)

    def _cell_form(self, released):
        return cells.build(
            cells.LAPLACE, released, scale=self.scale, log_norm=-np.log(2 * self.scale)
        )

    def _sample(self, value, rng):
        return value + rng.laplace(0.0, 1.0, size=value.shape) * self.scale

    def _quantile(self, value, u):
        # b log(2u) below the median, -b log(2(1 - u)) above it, where 1 - u is exact
        lower = u < 0.5
        below = np.log(2 * np.where(lower, u, 0.5))
        above = -np.log(2 * (1 - np.where(lower, 0.5, u)))
        return value + np.where(lower, below, above) * self.scale

    @property
    def log_max_density(self) -> float:
        """``log sup eta(s_dp | s)`` over releases and confidential values."""
        return -float(np.sum(np.log(2 * self.scale)))

    @property
    def privacy(self) -> Privacy:
        """The guarantee for the declared sensitivity (see Notes)."""
        sens = require_sensitivity(self)
        with np.errstate(over="ignore"):  # a tiny scale: epsilon inf, no guarantee
            if sens.ndim == 0:
                eps = float(sens) / float(np.min(self.scale))
            else:
                eps = fsum_or_inf((sens / self.scale).ravel())
        text = neighbouring(
            float(sens) if sens.ndim == 0 else sens, values="confidential values", norm="l1"
        )
        return Privacy(epsilon=eps, neighbouring=text)

    def _repr_params(self):
        return {"scale": self.scale.tolist(), "sensitivity": _tolist(self.sensitivity)}


def _tolist(arr):
    return None if arr is None else arr.tolist()
