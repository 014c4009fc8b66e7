"""Additive noise: the base of the families a threshold can wrap."""

from __future__ import annotations

import abc

import numpy as np

from ._namespaces import NUMPY
from ._numerics import difference
from .base import Mechanism

__all__ = ["AdditiveNoise", "exact_gap"]


class AdditiveNoise(Mechanism):
    """Independent noise added to each cell: ``s_dp = s + X`` (the families a threshold can wrap).

    Such a family also writes ``_log_noise_cdf(xp, x)``: ``log P(X_j <= x_j)``
    elementwise over an array namespace, accurate in both tails. The density of
    a cell is largest at zero noise, so ``sup_s eta_j(y_j | s)`` is the density
    at ``s = y_j`` whatever ``y_j``.
    """

    @abc.abstractmethod
    def _log_noise_cdf(self, xp, x):
        """Elementwise ``log P(X_j <= x_j)``; ``xp`` is the numpy or PyTensor namespace."""

    def _cell_log_cdf(self, cut, s, cells=None) -> np.ndarray:
        """``log P(Y_j <= cut_j | s)`` elementwise, on numpy arrays (see the class Notes).

        ``cut`` has the event shape (or the shape of ``cells``); ``s`` as in
        :meth:`_cell_log_density`.
        """
        mech = self if cells is None else self._at_cells(cells)
        return np.asarray(mech._log_noise_cdf(NUMPY, exact_gap(cut, s)), dtype=float)

    def _cell_log_max(self) -> np.ndarray:
        """``sup_s log eta_j(y_j | s)`` per cell (the density at zero noise), event-shaped."""
        zero = np.zeros(self.event_shape)
        terms = self._log_density(NUMPY, zero, zero)
        return np.broadcast_to(np.asarray(terms, dtype=float), self.event_shape).copy()


def exact_gap(cut, s) -> np.ndarray:
    """``cut - s`` as floats, within 2 ulp of the exact value for int64 or float64 inputs.

    Neither wraps around in int64 nor drops the last digits of integers beyond
    2**53 (see :func:`._numerics.difference`).
    """
    return np.asarray(difference(NUMPY, np.asarray(cut), np.asarray(s)), dtype=float)
