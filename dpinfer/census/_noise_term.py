r"""The measured cells' noise, as the lattice sampler reads it: a few laws, each a line.

A release's measured cells share a few noise laws (in the Bureau's releases one
discrete Gaussian per level and query). :class:`NoiseLaws` numbers the distinct
ones as the parts of a release are laid out and keeps their per-cell form:
record ``k - 1`` is law ``k``'s :class:`dpinfer.DiscreteGaussian` at a release of
0 (:meth:`~dpinfer.Mechanism.cell_form`); number 0 is "not measured". The
formulas are the shared ones of :mod:`dpinfer.noise.terms`:

* the log-likelihood of a chain's state (:func:`log_likelihood`) sums
  :func:`~dpinfer.noise.terms.published_term` over the measured cells;
* a move scores each cell it changes by ``log p(y | s + step) - log p(y | s)``,
  ``step = +-1``, as a function of the residual ``g = y - s`` that the sampler
  keeps. It evaluates about thirty of them per move, where the shared
  :func:`~dpinfer.noise.terms.log_ratio` divides by sigma twice in each (a fifth
  of the sampler's time, measured), so it reads each law's line instead
  (:func:`~dpinfer.noise.terms.gaussian_line`: ``log_ratio(s) = A - B s`` at a
  release of 0). The term depends on ``|y - s|`` only, so the line vanishes at
  ``s = -1/2`` (``B = -2 A``) and is ``A (1 - 2 g)`` at the residual ``g``; a
  step down from ``s`` is the step up from ``s - 1`` reversed, which makes
  ``A (1 - 2 step g)`` for either step (:func:`step_log_ratio`): integer
  arithmetic, then one product.
"""

from __future__ import annotations

import numba
import numpy as np

from ..mechanisms import DiscreteGaussian
from ..noise.form import CELL
from ..noise.terms import gaussian_line, published_term

__all__ = ["NoiseLaws", "log_likelihood", "step_log_ratio"]


class NoiseLaws:
    """The distinct discrete Gaussian laws of a release's measured cells, numbered from 1."""

    def __init__(self) -> None:
        self._numbers: dict[float, int] = {}
        self.form = np.zeros(0, dtype=CELL)
        #: ``intercepts[k]``: law ``k``'s line's ``A`` at a release of 0 (0 for law 0).
        self.intercepts = np.zeros(1)

    def number(self, variance: np.ndarray) -> np.ndarray:
        """Return the law number of each cell of ``variance`` (0 where it is inf: unmeasured)."""
        measured = np.isfinite(variance)
        values, where = np.unique(variance[measured], return_inverse=True)
        new = [v for v in values.tolist() if v not in self._numbers]
        if new:
            for v in new:
                self._numbers[v] = len(self._numbers) + 1
            form = DiscreteGaussian(np.sqrt(new)).cell_form(np.zeros(len(new)))
            self.form = np.concatenate([self.form, form])
            self.intercepts = np.concatenate([self.intercepts, _intercepts(form)])
        numbers = np.array([self._numbers[v] for v in values.tolist()], dtype=np.int32)
        out = np.zeros(variance.shape, dtype=np.int32)
        out[measured] = numbers[where]
        return out


@numba.njit(cache=True)
def _intercepts(form):
    out = np.empty(form.size)
    for k in range(form.size):
        out[k] = gaussian_line(form, k)[0]
    return out


@numba.njit(cache=True, inline="always", _nrt=False)
def step_log_ratio(intercept, gap, step):
    """``log p(y | s + step) - log p(y | s)``, ``step = +-1``, for the residual ``gap = y - s``.

    ``intercept`` is the law's :attr:`NoiseLaws.intercepts` entry (0: not measured).
    """
    return intercept * (1 - 2 * step * gap)


@numba.njit(cache=True)
def log_likelihood(r, law, column, form):
    """Return the log-likelihood of an arena's residuals ``r`` (``(units, query cells)``).

    ``law[u, column[i]]`` is the law number of unit ``u``'s query cell ``i``.
    """
    total = 0.0
    for u in range(r.shape[0]):
        for i in range(r.shape[1]):
            k = law[u, column[i]]
            if k > 0:
                total += published_term(form, k - 1, -float(r[u, i]))
    return total
