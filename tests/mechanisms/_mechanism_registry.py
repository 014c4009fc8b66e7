"""The mechanism registry: one row per mechanism, walked by every generic contract test.

A new mechanism joins the whole contract suite (oracle, normalisation, goodness
of fit, PyMC, shapes, supremum, empirical audit, global random state) by adding
one ``Case`` to ``CASES``.

Each row gives

- ``make(event_shape)``: a calibrated instance for an event shape in ``event_shapes``;
- ``oracle(mech, released, value)``: the elementwise log-density computed
  independently of dpinfer (scipy.stats, or a brute-force formula);
- ``perturb(mech, factor)``: the same family with its noise parameter scaled by
  ``factor``, used to plant bugs (a sampler with the wrong noise, a wrong oracle);
- ``draw_values(rng, shape)``: valid confidential values;
- ``value_grid(released)``: a batch of confidential values on which the supremum of
  ``logpdf(released, .)`` is attained (checked against ``log_max_density_at``);
- ``translation``: whether ``eta(s_dp | s)`` depends on ``s_dp - s`` only; otherwise
  ``release_candidates(mech)`` lists releases among which ``log_max_density`` is attained;
- ``audit``: the worst-case neighbours and sample sizes for the empirical audit;
- ``ppf(mech, value, u)``: for continuous families, the inverse CDF from scipy.stats
  (discrete families are inverted by brute force from ``oracle``, see
  :func:`oracle_quantile`);
- ``exact(mech, j, released_j, value_j)``: coordinate ``j`` of the log-density for
  Python int or float inputs of any size, computed in exact rationals
  (:class:`fractions.Fraction`) up to one rounding, and the sum of the magnitudes of
  the terms it adds (the scale of a rounding error), as ``(term, magnitude)``;
- ``inner``: for a :class:`~dpinfer.Thresholded` row, the row of the noise it wraps (its
  releases hold NaN at suppressed cells, a second kind of outcome beside the values).
"""

from __future__ import annotations

import copy
import functools
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

import numpy as np
import scipy.stats as st
from scipy.special import logsumexp

import dpinfer as dp


@dataclass(frozen=True)
class AuditSetup:
    """Neighbouring inputs ``a`` and ``b`` that expose a mechanism's worst case.

    ``make()`` builds the audited instance; ``code`` maps a batch of releases
    ``(n, *event_shape)`` to one scalar outcome per release (post-processing,
    so it cannot raise the true epsilon).
    """

    make: Callable[[], dp.Mechanism]
    a: Any
    b: Any
    n_select: int
    n_test: int
    code: Callable[[np.ndarray], np.ndarray] = lambda x: x
    planted_factor: float = 0.5
    delta: float | None = None  # where a guarantee stated in zCDP is audited


@dataclass(frozen=True)
class Case:
    name: str
    make: Callable[[tuple], dp.Mechanism]
    oracle: Callable[[dp.Mechanism, np.ndarray, np.ndarray], np.ndarray]
    perturb: Callable[[dp.Mechanism, float], dp.Mechanism]
    draw_values: Callable[[np.random.Generator, tuple], np.ndarray]
    value_grid: Callable[[np.ndarray], np.ndarray]
    audit: AuditSetup
    event_shapes: tuple = ((), (3,))
    gof_size: int = 200_000
    gof_value: Any = 0.0
    normalisation_range: tuple[int, int] = (-400, 401)
    translation: bool = True
    release_candidates: Callable[[dp.Mechanism], list] | None = None
    ppf: Callable[[dp.Mechanism, np.ndarray, np.ndarray], np.ndarray] | None = None
    exact: Callable[[dp.Mechanism, int, Any, Any], tuple[float, float]] | None = None
    per_cell: bool = False  # a vector row whose cells have laws of their own
    inner: Case | None = None  # a Thresholded row: the row of the noise it wraps

    def __str__(self) -> str:
        return self.name


# --- oracles: independent of dpinfer ---------------------------------------------------


def _laplace_oracle(mech, released, value):
    return st.laplace.logpdf(released, loc=value, scale=mech.scale)


def _gaussian_oracle(mech, released, value):
    return st.norm.logpdf(released, loc=value, scale=mech.sigma)


def _dlaplace_oracle(mech, released, value):
    # scipy's dlaplace has pmf tanh(a/2) exp(-a |k|), so a = 1 / scale.
    return st.dlaplace.logpmf(np.asarray(released) - value, a=1.0 / mech.scale)


def discrete_gaussian_logpmf_bruteforce(k, sigma: float) -> np.ndarray:
    """``log exp(-k^2 / (2 sigma^2)) / sum_j exp(-j^2 / (2 sigma^2))`` by a direct sum."""
    j = np.arange(-int(60 * sigma) - 60, int(60 * sigma) + 61, dtype=float)
    log_z = logsumexp(-(j**2) / (2 * sigma**2))
    return -(np.asarray(k, dtype=float) ** 2) / (2 * sigma**2) - log_z


def _dgaussian_oracle(mech, released, value):
    # one brute-force normaliser per cell (the sigmas may differ from cell to cell)
    sigma = np.broadcast_to(mech.sigma, mech.event_shape)
    log_z = np.vectorize(lambda s: -discrete_gaussian_logpmf_bruteforce(0, s))(sigma)
    return -((np.asarray(released) - value) ** 2) / (2 * sigma**2) - log_z


def _binomial_oracle(mech, released, value):
    p = (np.asarray(value, dtype=float) + mech.m) / (mech.population + 2 * mech.m)
    return st.binom.logpmf(released, mech.n, p)


# --- exact references: rationals for the part that depends on the inputs -----------------


def _rounded(x: Fraction) -> float:
    """``x`` rounded to float64 (once), or an infinity beyond the float64 range."""
    try:
        return float(x)
    except OverflowError:
        return math.inf if x > 0 else -math.inf


def _coordinate(mech, name: str, j: int) -> float:
    return float(np.broadcast_to(getattr(mech, name), mech.event_shape).reshape(-1)[j])


def _with_constant(term: float, constant: float) -> tuple[float, float]:
    return term + constant, abs(term) + abs(constant)


def _exact_laplace(mech, j, r, s):
    b = _coordinate(mech, "scale", j)
    term = -_rounded(abs(Fraction(r) - Fraction(s)) / Fraction(b))
    return _with_constant(term, -(math.log(2) + math.log(b)))


def _exact_gaussian(mech, j, r, s):
    sigma = _coordinate(mech, "sigma", j)
    z = (Fraction(r) - Fraction(s)) / Fraction(sigma)
    return _with_constant(-_rounded(z * z / 2), -(0.5 * math.log(2 * math.pi) + math.log(sigma)))


def _exact_dlaplace(mech, j, r, s):
    t = _coordinate(mech, "scale", j)
    term = -_rounded(abs(Fraction(r) - Fraction(s)) / Fraction(t))
    return _with_constant(term, math.log(math.tanh(0.5 / t)))


def _exact_dgaussian(mech, j, r, s):
    sigma = _coordinate(mech, "sigma", j)
    z = (Fraction(r) - Fraction(s)) / Fraction(sigma)
    return _with_constant(-_rounded(z * z / 2), _dgaussian_log_pmf_at_zero(sigma))


@functools.lru_cache(maxsize=8)
def _dgaussian_log_pmf_at_zero(sigma: float) -> float:
    """``-log(normaliser)`` by the brute-force sum."""
    return float(discrete_gaussian_logpmf_bruteforce(0, sigma))


def _exact_binomial(mech, j, r, s):
    r, s = int(r), int(s)
    total = mech.population + 2 * Fraction(mech.m)
    p, q = (s + Fraction(mech.m)) / total, (mech.population - s + Fraction(mech.m)) / total

    def log(x: Fraction, other: Fraction) -> float:  # log x, accurate also for x near 1
        return math.log(float(x)) if x <= Fraction(1, 2) else math.log1p(-float(other))

    terms = [
        math.lgamma(mech.n + 1),
        -math.lgamma(r + 1),
        -math.lgamma(mech.n - r + 1),
        r * log(p, q) if r else 0.0,
        (mech.n - r) * log(q, p) if mech.n - r else 0.0,
    ]
    return math.fsum(terms), math.fsum(abs(t) for t in terms)


# --- perturbations (planted bugs) ------------------------------------------------------


def _perturb_laplace(mech, f):
    return dp.Laplace(mech.scale * f, sensitivity=mech.sensitivity, event_shape=mech.event_shape)


def _perturb_gaussian(mech, f):
    return dp.Gaussian(
        mech.sigma * f,
        sensitivity=mech.sensitivity,
        delta=mech.delta,
        event_shape=mech.event_shape,
    )


def _perturb_dlaplace(mech, f):
    return dp.DiscreteLaplace(
        mech.scale * f, sensitivity=mech.sensitivity, event_shape=mech.event_shape
    )


def _perturb_dgaussian(mech, f):
    return dp.DiscreteGaussian(
        mech.sigma * f,
        sensitivity=mech.sensitivity,
        delta=mech.delta,
        event_shape=mech.event_shape,
    )


def _perturb_binomial(mech, f):
    return dp.BinomialRelease(
        n=mech.n, m=mech.m * f, population=mech.population, length=mech.event_shape[0]
    )


def suppresses(case: Case) -> bool:
    """Whether the row's releases have suppressed cells (NaN) beside published values."""
    return case.inner is not None


def with_planted_quantile(case: Case, mech: dp.Mechanism, factor: float) -> dp.Mechanism:
    """A copy of ``mech`` whose inverse CDF uses the noise parameter times ``factor``."""
    wrong = case.perturb(mech, factor)

    class Planted(type(mech)):
        def _quantile(self, value, u):
            return wrong._quantile(value, u)

    planted = copy.copy(mech)
    planted.__class__ = Planted
    return planted


def oracle_quantile(case: Case, mech: dp.Mechanism, value, u) -> np.ndarray:
    """The release at uniforms ``u``, independently of ``release_from_uniform``.

    Continuous rows use scipy's ``ppf``; discrete rows sum the oracle pmf over
    ``normalisation_range`` (around the value for translation families) and
    take the smallest support point whose CDF reaches ``u``, coordinate by
    coordinate. Keep ``u`` within ``[1e-9, 1 - 1e-9]``: the cumulative sum is
    accurate to about 1e-15.
    """
    value, u = np.broadcast_arrays(np.asarray(value), np.asarray(u, dtype=float))
    if suppresses(case):  # the inner noise's quantile, suppressed below the threshold
        inner = oracle_quantile(case.inner, mech.mechanism, value, u).astype(float)
        keep = inner > mech.threshold if mech.publish == "above" else inner >= mech.threshold
        return np.where(keep, inner, np.nan)
    if not mech.discrete:
        return case.ppf(mech, value, u)
    lo, hi = case.normalisation_range
    es = mech.event_shape
    out = np.empty(u.shape, dtype=np.int64)
    for idx in np.ndindex(u.shape):
        v = int(value[idx])
        support = np.arange(lo, hi) + (v if case.translation else 0)
        # the support in every cell at once; the pmf of this entry's own cell is kept
        grid = np.broadcast_to(support.reshape(-1, *[1] * len(es)), (support.size, *es))
        log_pmf = case.oracle(mech, grid, np.full(grid.shape, v))
        pmf = np.exp(log_pmf[(slice(None), *idx[u.ndim - len(es) :])])
        out[idx] = support[np.searchsorted(np.cumsum(pmf), u[idx], side="left")]
    return out


def with_planted_sampler(case: Case, mech: dp.Mechanism, factor: float) -> dp.Mechanism:
    """A copy of ``mech`` whose sampler uses the noise parameter times ``factor``.

    Everything else (logpdf, privacy claim) is untouched: this is the bug a
    goodness-of-fit test or an audit must catch.
    """
    wrong = case.perturb(mech, factor)

    class Planted(type(mech)):
        def _sample(self, value, rng):
            return wrong._sample(value, rng)

    planted = copy.copy(mech)
    planted.__class__ = Planted
    return planted


class MaxSigmaDiscreteGaussian(dp.DiscreteGaussian):
    """Planted: a per-cell discrete Gaussian whose rho uses the largest sigma, not the smallest.

    Its releases are right; its claim understates the loss of a change that falls
    on the least noisy cell. The closed-form check and the audit must both flag it.
    """

    @property
    def privacy(self):
        sens = float(self.sensitivity)
        return dp.Privacy(rho=sens**2 / (2 * float(np.max(self.sigma)) ** 2))


# --- valid confidential values ---------------------------------------------------------


def _real_values(rng, shape):
    return rng.normal(0.0, 3.0, size=shape)


def _integer_values(rng, shape):
    return rng.integers(-20, 21, size=shape)


def _binomial_values(population):
    return lambda rng, shape: rng.integers(0, population + 1, size=shape)


# --- value grids for the supremum checks ------------------------------------------------


def _translation_grid(offsets):
    """``released + t`` for every offset ``t`` (one of which is exactly 0: the maximiser)."""
    offsets = np.union1d(offsets, [0])

    def grid(released):
        return released + offsets.reshape(-1, *([1] * released.ndim))

    return grid


def _all_counts(population):
    """Every curve in ``{0, ..., K}^L``: brute force over the whole value space."""

    def grid(released):
        combos = itertools.product(range(population + 1), repeat=released.shape[0])
        return np.array(list(combos), dtype=np.int64)

    return grid


_REAL_GRID = _translation_grid(np.linspace(-30.0, 30.0, 2001))
_INTEGER_GRID = _translation_grid(np.arange(-60, 61))

# --- the registry ----------------------------------------------------------------------


def _privacy_loss_code(x):
    """``sum_j (|x_j| - |x_j - D_j|) / b_j`` for the per-coordinate Laplace row, rounded.

    Without the rounding the audit "refutes" epsilon = 1 with a bound near 5: the
    last bits of the statistic differ between releases centred at 0 and at D (the
    floating-point leak of Mironov 2012, which the Laplace docstring warns about).
    Rounding to 1e-9 audits the mathematical claim, which is the one stated.
    """
    stat = (np.abs(x) - np.abs(x - [0.25, 0.25, 0.5])) @ (1 / np.array([0.5, 1.0, 2.0]))
    return np.round(stat, 9)


def _discrete_loss_code(x):
    """``sum_j (|x_j| - |x_j - D_j|) / t_j`` for the per-cell discrete Laplace row.

    The privacy-loss statistic of the neighbours 0 and D (exact in floating point:
    the scales are powers of two, so it takes few distinct values).
    """
    return (np.abs(x) - np.abs(x - [1, 1, 2])) @ (1 / np.array([1.0, 2.0, 4.0]))


# Binomial audit: the worst-case ratio (1 + 1/m)^n is attained at I = 0 vs 1 with every
# count at n, which has probability ((1 + m) / (K + 2m))^n under I = 1; a tiny population
# and n = m = 5 make that event frequent enough to be seen (p = 6/12 per coordinate).
_BINOMIAL_AUDIT = dict(n=5, m=5, population=2, length=2)

_LAPLACE = Case(
    name="Laplace",
    make=lambda es: dp.Laplace.from_privacy(epsilon=0.7, sensitivity=2.0, event_shape=es),
    oracle=_laplace_oracle,
    perturb=_perturb_laplace,
    draw_values=_real_values,
    value_grid=_REAL_GRID,
    audit=AuditSetup(
        make=lambda: dp.Laplace.from_privacy(epsilon=1.0, sensitivity=1.0),
        a=0.0,
        b=1.0,
        n_select=100_000,
        n_test=200_000,
    ),
    gof_value=1.5,
    ppf=lambda mech, value, u: st.laplace.ppf(u, loc=value, scale=mech.scale),
    exact=_exact_laplace,
)
_DISCRETE_LAPLACE = Case(
    name="DiscreteLaplace",
    make=lambda es: dp.DiscreteLaplace.from_privacy(epsilon=0.6, sensitivity=1, event_shape=es),
    oracle=_dlaplace_oracle,
    perturb=_perturb_dlaplace,
    draw_values=_integer_values,
    value_grid=_INTEGER_GRID,
    audit=AuditSetup(
        make=lambda: dp.DiscreteLaplace.from_privacy(epsilon=1.0, sensitivity=1),
        a=0,
        b=1,
        n_select=20_000,
        n_test=30_000,
    ),
    gof_size=20_000,
    gof_value=7,
    exact=_exact_dlaplace,
)
_DISCRETE_GAUSSIAN = Case(
    name="DiscreteGaussian",
    make=lambda es: dp.DiscreteGaussian.from_privacy(
        epsilon=1.0, delta=1e-6, sensitivity=2, event_shape=es
    ),
    oracle=_dgaussian_oracle,
    perturb=_perturb_dgaussian,
    draw_values=_integer_values,
    value_grid=_INTEGER_GRID,
    audit=AuditSetup(
        make=lambda: dp.DiscreteGaussian.from_privacy(epsilon=1.0, delta=1e-5, sensitivity=1),
        a=0,
        b=1,
        n_select=15_000,
        n_test=25_000,
        planted_factor=0.25,
    ),
    gof_size=20_000,
    gof_value=-3,
    normalisation_range=(-300, 301),
    exact=_exact_dgaussian,
)


# --- thresholded rows: the inner law above the threshold, its log-CDF at the cut below ---


def _dgaussian_log_cdf(sigma: float, x) -> np.ndarray:
    """``log P(X <= x)`` for ``X ~ N_Z(0, sigma^2)``, by a brute-force cumulative sum."""
    half = int(60 * sigma) + 60
    support = np.arange(-half, half + 1)
    log_cdf = np.logaddexp.accumulate(discrete_gaussian_logpmf_bruteforce(support, sigma))
    at = np.clip(np.floor(np.asarray(x, dtype=float)).astype(np.int64) + half, -1, support.size)
    return np.where(at < 0, -np.inf, log_cdf[np.clip(at, 0, support.size - 1)])


def _thresholded(inner: Case, *, threshold: float, publish: str, log_cdf, **row) -> Case:
    """A row of ``Thresholded(inner row's mechanism, threshold, publish)`` (scalar noise)."""

    def make(event_shape):
        return dp.Thresholded(inner.make(event_shape), threshold=threshold, publish=publish)

    def cut(mech):
        if not mech.discrete:
            return threshold
        return math.floor(threshold) if publish == "above" else math.ceil(threshold) - 1

    def oracle(mech, released, value):
        released, value = np.broadcast_arrays(np.asarray(released, dtype=float), value)
        suppressed = np.isnan(released)
        shown = np.where(suppressed, threshold + 1, released)
        if mech.discrete:
            shown = shown.astype(np.int64)
        published = inner.oracle(mech.mechanism, shown, value)
        ok = shown > threshold if publish == "above" else shown >= threshold
        below = log_cdf(mech.mechanism, cut(mech) - np.asarray(value, dtype=float))
        return np.where(suppressed, below, np.where(ok, published, -np.inf))

    def grid(released):
        # the published cells at their releases, the suppressed ones far below (probability 1)
        far = np.where(np.isnan(released), threshold - 10_000, released)
        return inner.value_grid(far.astype(np.int64) if inner.make(()).discrete else far)

    def candidates(mech):
        return [np.full(mech.event_shape, np.nan), np.full(mech.event_shape, threshold + 1.0)]

    return Case(
        make=make,
        oracle=oracle,
        perturb=lambda mech, f: dp.Thresholded(
            inner.perturb(mech.mechanism, f), threshold=threshold, publish=publish
        ),
        draw_values=inner.draw_values,
        value_grid=grid,
        translation=False,
        release_candidates=candidates,
        inner=inner,
        **row,
    )


def _nan_code(x):
    """A release as a number an audit can count: suppressed cells as -10^6."""
    return np.where(np.isnan(x), -1e6, x)


def _vector_row(family: Case, **row) -> Case:
    """A row of vectors whose cells have their own scales: ``family``'s references, row's rest."""
    return replace(family, event_shapes=((3,),), **row)


_THRESHOLDED_DISCRETE_GAUSSIAN = _thresholded(
    _DISCRETE_GAUSSIAN,
    name="Thresholded-DiscreteGaussian",
    threshold=3,
    publish="at_least",
    log_cdf=lambda inner, x: _dgaussian_log_cdf(float(np.ravel(inner.sigma)[0]), x),
    audit=AuditSetup(
        make=lambda: dp.Thresholded(
            dp.DiscreteGaussian.from_privacy(epsilon=1.0, delta=1e-5, sensitivity=1),
            threshold=3,
        ),
        a=0,
        b=1,
        n_select=15_000,
        n_test=25_000,
        code=_nan_code,
        planted_factor=0.25,
    ),
    gof_size=20_000,
    gof_value=0,
    normalisation_range=(-300, 301),
)
_THRESHOLDED_LAPLACE = _thresholded(
    _LAPLACE,
    name="Thresholded-Laplace",
    threshold=1.0,
    publish="above",
    log_cdf=lambda inner, x: st.laplace.logcdf(x, scale=float(np.ravel(inner.scale)[0])),
    audit=AuditSetup(
        make=lambda: dp.Thresholded(
            dp.Laplace.from_privacy(epsilon=1.0, sensitivity=1.0), threshold=1.0
        ),
        a=0.0,
        b=1.0,
        n_select=100_000,
        n_test=200_000,
        code=_nan_code,
    ),
    gof_value=0.5,
)

CASES: list[Case] = [
    _LAPLACE,
    _vector_row(
        _LAPLACE,
        name="Laplace-per-coordinate",
        make=lambda es: dp.Laplace([0.5, 1.0, 2.0], sensitivity=[0.25, 0.25, 0.5]),
        audit=AuditSetup(
            # epsilon = sum_j Delta_j / b_j = 0.5 + 0.25 + 0.25 = 1; the outcome is the
            # privacy-loss statistic, rounded (see _privacy_loss_code).
            make=lambda: dp.Laplace([0.5, 1.0, 2.0], sensitivity=[0.25, 0.25, 0.5]),
            a=np.zeros(3),
            b=np.array([0.25, 0.25, 0.5]),
            n_select=100_000,
            n_test=200_000,
            code=_privacy_loss_code,
        ),
        gof_value=0.0,
    ),
    Case(
        name="Gaussian",
        make=lambda es: dp.Gaussian.from_privacy(
            epsilon=0.8, delta=1e-6, sensitivity=1.5, event_shape=es
        ),
        oracle=_gaussian_oracle,
        perturb=_perturb_gaussian,
        draw_values=_real_values,
        value_grid=_REAL_GRID,
        audit=AuditSetup(
            make=lambda: dp.Gaussian.from_privacy(epsilon=1.0, delta=1e-5, sensitivity=1.0),
            a=0.0,
            b=1.0,
            n_select=100_000,
            n_test=200_000,
            # at delta = 1e-5 the loss of sigma / 2 hides in rare tails; sigma / 4 shows
            planted_factor=0.25,
        ),
        gof_value=-2.0,
        ppf=lambda mech, value, u: st.norm.ppf(u, loc=value, scale=mech.sigma),
        exact=_exact_gaussian,
    ),
    _DISCRETE_LAPLACE,
    _DISCRETE_GAUSSIAN,
    _vector_row(
        # rho per cell (0.5, 0.02, 0.02): sigma 1, 5, 5, two groups for the exact sampler;
        # the scalar l2 bound puts the whole change on the least noisy cell: rho = 0.5
        _DISCRETE_GAUSSIAN,
        name="DiscreteGaussian-per-cell",
        make=lambda es: dp.DiscreteGaussian.from_zcdp(rho=[0.5, 0.02, 0.02], sensitivity=1),
        per_cell=True,
        audit=AuditSetup(
            # the change on the least noisy cell, the only coordinate it moves
            make=lambda: dp.DiscreteGaussian.from_zcdp(rho=[0.05, 0.005, 0.002], sensitivity=1),
            a=np.zeros(3, dtype=np.int64),
            b=np.array([1, 0, 0]),
            n_select=15_000,
            n_test=25_000,
            code=lambda x: x[:, 0],
            planted_factor=0.25,
            delta=1e-5,
        ),
    ),
    _vector_row(
        # per-cell scales and per-cell bounds: epsilon = 1/1 + 1/2 + 2/4 = 2
        _DISCRETE_LAPLACE,
        name="DiscreteLaplace-per-cell",
        make=lambda es: dp.DiscreteLaplace([1.0, 2.0, 4.0], sensitivity=[1, 1, 2]),
        per_cell=True,
        audit=AuditSetup(
            # the full change in every cell; the outcome is the privacy-loss statistic
            make=lambda: dp.DiscreteLaplace([1.0, 2.0, 4.0], sensitivity=[1, 1, 2]),
            a=np.zeros(3, dtype=np.int64),
            b=np.array([1, 1, 2]),
            n_select=20_000,
            n_test=30_000,
            code=_discrete_loss_code,
        ),
    ),
    Case(
        name="BinomialRelease",
        make=lambda es: dp.BinomialRelease(n=50, m=50, population=20, length=es[0]),
        oracle=_binomial_oracle,
        perturb=_perturb_binomial,
        draw_values=_binomial_values(20),
        value_grid=_all_counts(20),
        event_shapes=((1,), (3,)),
        audit=AuditSetup(
            make=lambda: dp.BinomialRelease(**_BINOMIAL_AUDIT),
            a=np.array([0, 0]),
            b=np.array([1, 1]),
            n_select=100_000,
            n_test=200_000,
            code=lambda x: x[:, 0] * (_BINOMIAL_AUDIT["n"] + 1) + x[:, 1],
        ),
        gof_size=100_000,
        gof_value=np.array([4]),
        normalisation_range=(0, 51),
        exact=_exact_binomial,
        translation=False,
        # the supremum over releases is a product of identical per-coordinate suprema,
        # so it is attained on the diagonal releases (r, ..., r)
        release_candidates=lambda mech: [np.full(mech.event_shape, r) for r in range(mech.n + 1)],
    ),
    _THRESHOLDED_DISCRETE_GAUSSIAN,
    _THRESHOLDED_LAPLACE,
]

IDS = [c.name for c in CASES]


def scalar_cases() -> list[Case]:
    """Rows whose families have a scalar event shape."""
    return [c for c in CASES if () in c.event_shapes]


def case_shapes() -> list[tuple[Case, tuple]]:
    """Every (row, event shape) pair, for the shape-generic tests."""
    return [(c, es) for c in CASES for es in c.event_shapes]


def case_shape_ids() -> list[str]:
    return [f"{c.name}-{es}" for c, es in case_shapes()]


def dimension(event_shape) -> int:
    return max(1, math.prod(event_shape))
