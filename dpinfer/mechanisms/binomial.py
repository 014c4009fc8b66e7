"""The binomial release of an epidemic curve (Xiong, Ju & Zhang 2023, Proposition 4)."""

from __future__ import annotations

import math

import numpy as np
import scipy.special as sc
import scipy.stats as st
from numpy.typing import ArrayLike

from .. import _validate, accounting
from ..noise import form as cells
from ._namespaces import NUMPY
from .base import Mechanism, Privacy

__all__ = ["BinomialRelease"]


class BinomialRelease(Mechanism):
    r"""Release counts ``s_i ~ Binomial(n, (I_i + m) / (K + 2m))`` at ``L`` time points.

    Parameters
    ----------
    n : int
        Number of binomial trials per time point.
    m : float
        Pseudo-count added to both ends; larger ``m`` means more privacy.
    population : int
        Population size ``K``; confidential values lie in ``{0, ..., K}``.
    length : int
        Number of time points ``L`` (the event shape is ``(L,)``).

    Notes
    -----
    *Neighbouring relation*: two epidemic curves are neighbours when one
    individual's infection status differs, so ``|I(t) - I'(t)| <= 1`` at every
    time ``t``. Each coordinate's likelihood ratio is then at most
    :math:`(1 + 1/m)^n \le e^{n/m}`, and the ``L`` coordinates compose to
    :math:`\varepsilon = nL/m` (Proposition 4), which :attr:`privacy` reports.
    The tight value :math:`nL\log(1 + 1/m)` is :attr:`tight_epsilon`.

    Releases are integer counts; Xiong et al. report ``s_i / n``.

    References
    ----------
    .. [1] Xiong, Ju and Zhang (2023). Simulation-based inference from
       privacy-protected data, Proposition 4.

    Examples
    --------
    >>> import dpinfer as dp
    >>> mech = dp.BinomialRelease(n=1000, m=1000, population=10**6, length=10)
    >>> mech.privacy.epsilon
    10.0
    """

    discrete = True

    def __init__(self, *, n: int, m: float, population: int, length: int) -> None:
        # n trials per coordinate are drawn by NumPy's binomial (int64), so sizes are bounded
        self.n = _validate.size("n", n)
        self.m = _validate.positive_finite("m", m)
        self.population = _validate.size("population", population)
        self.event_shape = (_validate.size("length", length),)

    @classmethod
    def from_privacy(
        cls, *, epsilon: float, n: int, population: int, length: int
    ) -> BinomialRelease:
        """Choose ``m = n L / epsilon`` so that Proposition 4 gives ``epsilon``."""
        eps = _validate.positive_finite("epsilon", epsilon)
        n = _validate.size("n", n)
        length = _validate.size("length", length)
        return cls(n=n, m=n * length / eps, population=population, length=length)

    def success_probability(self, value: ArrayLike) -> np.ndarray:
        """``(I + m) / (K + 2m)`` for confidential counts ``I``."""
        return (np.asarray(value) + self.m) / (self.population + 2 * self.m)

    def _log_density(self, xp, released, value):
        total = self.population + 2 * self.m
        log_p = xp.log(value + self.m) - math.log(total)
        log_q = xp.log(self.population - value + self.m) - math.log(total)
        log_choose = (
            math.lgamma(self.n + 1) - xp.gammaln(released + 1) - xp.gammaln(self.n - released + 1)
        )
        return log_choose + released * log_p + (self.n - released) * log_q

    def _cell_form(self, released):
        r = np.asarray(released, dtype=float)
        log_choose = math.lgamma(self.n + 1) - sc.gammaln(r + 1) - sc.gammaln(self.n - r + 1)
        log_total = math.log(self.population + 2 * self.m)
        return cells.build(
            cells.BINOMIAL,
            r,
            log_norm=log_choose - self.n * log_total,
            trials=self.n,
            pseudo_count=self.m,
            population=self.population,
        )

    def _sample(self, value, rng):
        return rng.binomial(self.n, self.success_probability(value))

    def _quantile(self, value, u):
        return st.binom.ppf(u, self.n, self.success_probability(value)).astype(np.int64)

    def _check_value(self, value):
        arr = super()._check_value(value)
        outside = (arr < 0) | (arr > self.population)
        if np.any(outside):
            raise ValueError(
                _validate.bad_entries(
                    "value", outside, f"be counts in [0, population={self.population}]"
                )
            )
        return arr

    def _check_released(self, released, name: str = "released", *, rows: bool = False):
        arr = super()._check_released(released, name, rows=rows)
        if np.any((arr < 0) | (arr > self.n)):
            raise ValueError(f"{name} must be counts in [0, n={self.n}], got {arr}")
        return arr

    @property
    def log_max_density(self) -> float:
        """``log sup eta(s_dp | s)`` over releases and confidential values."""
        # The largest binomial pmf over p in [p_min, 1 - p_min] is at the mode of the
        # most extreme success probability.
        p_min = self.m / (self.population + 2 * self.m)
        mode = math.floor((self.n + 1) * p_min)
        return self.event_shape[0] * float(st.binom.logpmf(mode, self.n, p_min))

    def log_max_density_at(self, released: ArrayLike) -> float:
        """``log max_I eta(released | I)``: per coordinate, I nearest to ``s (K + 2m)/n - m``."""
        s = self._check_released(released)
        best = s / self.n * (self.population + 2 * self.m) - self.m
        candidates = np.clip(np.stack([np.floor(best), np.ceil(best)]), 0, self.population).astype(
            np.int64
        )
        per_coord = self._log_density(NUMPY, s, candidates).max(axis=0)
        return float(per_coord.sum())

    @property
    def privacy(self) -> Privacy:
        """The guarantee of Proposition 4 (see Notes)."""
        return Privacy(
            epsilon=accounting.binomial_release_epsilon(self.n, self.m, self.event_shape[0]),
            neighbouring="curves differing by at most 1 at every time (one individual changed)",
        )

    @property
    def tight_epsilon(self) -> float:
        """The exact worst-case log-ratio ``n L log(1 + 1/m)``."""
        return self.n * self.event_shape[0] * math.log1p(1 / self.m)

    def _repr_params(self):
        return {
            "n": self.n,
            "m": self.m,
            "population": self.population,
            "length": self.event_shape[0],
        }
