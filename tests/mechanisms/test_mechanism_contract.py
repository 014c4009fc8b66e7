"""The mechanism contract, one generic test per property, walking the registry.

Every row of ``_mechanism_registry.CASES`` must pass every test here. Statistical
checks use fixed seeds; each states its false-failure rate (under a random seed)
and has a companion that plants a bug and must fail.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.integrate as si
import scipy.stats as st
from _mechanism_registry import (
    CASES,
    case_shape_ids,
    case_shapes,
    oracle_quantile,
    suppresses,
    with_planted_quantile,
    with_planted_sampler,
)
from scipy.special import logsumexp

import dpinfer as dp


def _unit_shape(case):
    """The smallest event shape of the row with one coordinate, or None."""
    for es in case.event_shapes:
        if int(np.prod(es)) == 1:
            return es
    return None


# normalisation and goodness of fit work on one coordinate's law: rows with a
# one-coordinate event shape, and per-cell rows (each cell's law, from the vector
# release); other vector-only rows are covered by their scalar family
LAW_CASES = [c for c in CASES if _unit_shape(c) is not None or c.per_cell]
by_unit_case = pytest.mark.parametrize("case", LAW_CASES, ids=lambda c: c.name)
by_case_shape = pytest.mark.parametrize(
    ("case", "event_shape"), case_shapes(), ids=case_shape_ids()
)

# A goodness-of-fit test rejects when p < GOF_LEVEL: its false-failure rate under a
# random seed is GOF_LEVEL (the seeds below are fixed, so the outcome is deterministic).
GOF_LEVEL = 1e-3


def _event_axes(event_shape):
    return tuple(range(-len(event_shape), 0))


def _with_wrong_normaliser(mech, offset=1e-3):
    class Planted(type(mech)):
        def _log_density(self, xp, released, value):
            return super()._log_density(xp, released, value) + offset

    planted = type(mech).__new__(Planted)
    planted.__dict__.update(mech.__dict__)
    return planted


# --- logpdf against an independent oracle ----------------------------------------------


def _oracle_logpdf(case, mech, released, values):
    terms = case.oracle(mech, released, values)
    return np.sum(terms, axis=_event_axes(mech.event_shape)) if mech.event_shape else terms


@by_case_shape
def test_logpdf_matches_oracle(case, event_shape):
    mech = case.make(event_shape)
    rng = np.random.default_rng(1)
    values = case.draw_values(rng, (25, *event_shape))
    for released in (mech.release(values[0], rng=rng), mech.release(values[-1], rng=rng)):
        np.testing.assert_allclose(
            mech.logpdf(released, values),
            _oracle_logpdf(case, mech, released, values),
            rtol=1e-12,
            atol=1e-12,
        )


@by_case_shape
def test_logpdf_oracle_companion_detects_wrong_parameter(case, event_shape):
    # The same comparison against the oracle of a 2%-off noise parameter must fail.
    mech = case.make(event_shape)
    rng = np.random.default_rng(1)
    values = case.draw_values(rng, (25, *event_shape))
    released = mech.release(values[0], rng=rng)
    wrong = _oracle_logpdf(case, case.perturb(mech, 1.02), released, values)
    assert not np.allclose(mech.logpdf(released, values), wrong, rtol=1e-6, atol=1e-6)


# --- normalisation ---------------------------------------------------------------------


def _log_suppressed(case, mech, value):
    """``log P(suppressed | value)``: the mass of the outcome NaN (-inf for other rows)."""
    if not suppresses(case):
        return -np.inf
    return float(mech.logpdf(np.full(mech.event_shape, np.nan), value))


def _log_total_mass(case, mech, value):
    """``log`` of the integral (sum) of ``exp(logpdf(., value))`` over one coordinate.

    A thresholded row's outcomes are the published values and the suppressed state.
    """
    if mech.discrete:
        lo, hi = case.normalisation_range
        shift = int(np.ravel(value)[0]) if case.translation else 0
        logs = [mech.logpdf(np.full(mech.event_shape, k + shift), value) for k in range(lo, hi)]
        return float(logsumexp([*logs, _log_suppressed(case, mech, value)]))
    v = float(value)
    peak = mech.log_max_density

    def density(x):
        return np.exp(float(mech.logpdf(x, v)) - peak)

    # Split at the mode (the Laplace kink) and at a threshold (a jump); the infinite
    # ranges are mapped by quad.
    cuts = sorted({v, *([float(mech.threshold)] if suppresses(case) else [])})
    ends = [-np.inf, *cuts, np.inf]
    mass = sum(
        si.quad(density, a, b, epsabs=1e-13, epsrel=1e-12, limit=200)[0]
        for a, b in zip(ends[:-1], ends[1:], strict=True)
    )
    return float(np.logaddexp(np.log(mass) + peak, _log_suppressed(case, mech, value)))


def _normalisation_case(case):
    """The row's mechanism and a confidential value of its law-test event shape."""
    es = _unit_shape(case) or case.event_shapes[0]
    mech = case.make(es)
    value = np.broadcast_to(case.gof_value, es).copy()
    return mech, value


def _cell_laws(mech, value):
    """``(one-cell mechanism, its value)`` per cell: the law of each coordinate."""
    k = int(np.prod(mech.event_shape))
    if k == 1:
        return [(mech, value)]
    return [(mech._at_cells(np.array([j])), value.reshape(-1)[[j]]) for j in range(k)]


@by_unit_case
def test_density_is_normalised(case):
    mech, value = _normalisation_case(case)
    for law, v in _cell_laws(mech, value):
        assert abs(_log_total_mass(case, law, v)) < 1e-9


@by_unit_case
def test_normalisation_companion_detects_wrong_constant(case):
    mech, value = _normalisation_case(case)
    planted = _with_wrong_normaliser(mech)
    for law, v in _cell_laws(planted, value):
        assert abs(_log_total_mass(case, law, v)) > 5e-4


# --- releases against logpdf: goodness of fit ------------------------------------------


def _cdf_from_logpdf(mech, value, lo, hi, size=20_001):
    """CDF on a grid, by the trapezoid rule on ``exp(logpdf)``; the mode is a grid node."""
    grid = np.union1d(np.linspace(lo, hi, size), [value])
    dens = np.exp([float(mech.logpdf(x, value)) for x in grid])
    cdf = np.concatenate([[0.0], np.cumsum(np.diff(grid) * (dens[1:] + dens[:-1]) / 2)])
    return grid, cdf / cdf[-1]


def _gof_pvalue(case, mech, sampler, seed):
    """The smallest p-value, over the cells, of the releases of ``sampler`` against ``logpdf``.

    Each cell's releases are tested against its own law; with ``k`` cells the
    smallest p-value is multiplied by ``k`` (Bonferroni), so a correct sampler
    falls below a level at most at that level's rate.
    """
    es = mech.event_shape
    value = np.broadcast_to(case.gof_value, es)
    n = case.gof_size
    draws = sampler.release(np.broadcast_to(value, (n, *es)).copy(), rng=seed).reshape(n, -1)
    laws = _cell_laws(mech, value)
    pvalues = [_gof_one(case, law, draws[:, j], v) for j, (law, v) in enumerate(laws)]
    return min(1.0, len(laws) * min(pvalues))


def _gof_one(case, mech, draws, value):
    """p-value of one coordinate's draws against the one-cell ``mech`` at ``value``.

    KS against the CDF integrated from ``logpdf`` for continuous families; Pearson's
    chi-square on integer bins (expected count >= 5, tails pooled) for discrete ones.
    A thresholded row's suppressed draws (NaN) are one more bin (its published ones, if
    continuous, are binned at 20 quantiles of their law).
    """
    es = mech.event_shape
    n = draws.size
    v = np.ravel(value)[0]
    value = np.broadcast_to(value, es)
    if suppresses(case) and not mech.discrete:
        return _gof_thresholded_continuous(case, mech, draws, float(v))
    if not mech.discrete:
        span = draws.max() - draws.min()
        grid, cdf = _cdf_from_logpdf(mech, float(v), draws.min() - span, draws.max() + span)
        return st.kstest(draws, lambda x: np.interp(x, grid, cdf)).pvalue
    lo, hi = case.normalisation_range
    shift = int(v) if case.translation else 0
    support = np.arange(lo, hi) + shift
    pmf = np.exp([float(mech.logpdf(np.full(es, k), value)) for k in support])
    suppressed = np.isnan(draws)
    n_suppressed, expect_suppressed = (
        suppressed.sum(),
        n * np.exp(_log_suppressed(case, mech, value)),
    )
    draws = draws[~suppressed].astype(np.int64)
    expected = n * pmf
    core = np.flatnonzero(expected >= 5)
    k_lo, k_hi = support[core[0]], support[core[-1]]
    inner = (support >= k_lo) & (support <= k_hi)
    observed = np.concatenate(
        [
            [n_suppressed, np.count_nonzero(draws < k_lo)],
            np.bincount(draws[(draws >= k_lo) & (draws <= k_hi)] - k_lo, minlength=core.size),
            [np.count_nonzero(draws > k_hi)],
        ]
    )
    exp_bins = np.concatenate(
        [
            [expect_suppressed, expected[support < k_lo].sum()],
            expected[inner],
            [expected[support > k_hi].sum()],
        ]
    )
    keep = exp_bins > 0
    assert observed[~keep].sum() == 0
    observed, exp_bins = observed[keep], exp_bins[keep]
    exp_bins *= n / exp_bins.sum()  # the pmf outside the range is below 1e-30
    return st.chisquare(observed, exp_bins).pvalue


def _gof_thresholded_continuous(case, mech, draws, value):
    """Chi-square: the suppressed count, and the published draws at 20 quantile bins."""
    threshold = float(mech.threshold)
    published = draws[~np.isnan(draws)]
    top = max(published.max(), threshold) + 40 * float(np.ravel(mech.mechanism.scale)[0])
    grid, cdf = _cdf_from_logpdf(mech, value, threshold, top)
    edges = np.interp(np.linspace(0, 1, 21)[1:-1], cdf, grid)
    observed = np.concatenate(
        [
            [draws.size - published.size],
            np.bincount(np.searchsorted(edges, published), minlength=20),
        ]
    )
    p_suppressed = np.exp(_log_suppressed(case, mech, np.array(value)))
    expected = draws.size * np.concatenate([[p_suppressed], np.full(20, (1 - p_suppressed) / 20)])
    return st.chisquare(observed, expected).pvalue


@by_unit_case
def test_release_matches_logpdf(case):
    # False-failure rate GOF_LEVEL = 1e-3 under a random seed (seed fixed here; per-cell
    # rows: the Bonferroni-corrected smallest p-value over cells, same rate).
    mech, _ = _normalisation_case(case)
    assert _gof_pvalue(case, mech, mech, seed=20240601) > GOF_LEVEL


@by_unit_case
def test_goodness_of_fit_companion_rejects_wrong_noise(case):
    # A sampler whose noise parameter is 15% too small must be rejected.
    mech, _ = _normalisation_case(case)
    planted = with_planted_sampler(case, mech, 0.85)
    assert _gof_pvalue(case, mech, planted, seed=20240601) < GOF_LEVEL


# --- PyMC ------------------------------------------------------------------------------


@by_case_shape
def test_to_pymc_matches_logpdf(case, event_shape):
    pm = pytest.importorskip("pymc")
    mech = case.make(event_shape)
    rng = np.random.default_rng(3)
    value = case.draw_values(rng, event_shape)
    released = mech.release(value, rng=rng)
    expected = float(mech.logpdf(released, value))
    # the value PyMC scores: a suppressed cell's number is ignored (its term is the mask's)
    scored = np.where(np.isnan(released), 0, released) if suppresses(case) else released

    with pm.Model():  # the confidential value as a constant
        obs = mech.to_pymc("s_dp", value, observed=released)
        got = pm.logp(obs, scored).sum().eval(mode="FAST_COMPILE")
    np.testing.assert_allclose(got, expected, rtol=1e-10)

    with pm.Model():  # the confidential value as a random variable of the model
        if mech.discrete:
            theta = pm.DiscreteUniform("theta", -100, 100, shape=event_shape)
        else:
            theta = pm.Normal("theta", 0.0, 10.0, shape=event_shape)
        obs = mech.to_pymc("s_dp", theta, observed=released)
        got = pm.logp(obs, scored).sum().eval({theta: value}, mode="FAST_COMPILE")
    np.testing.assert_allclose(got, expected, rtol=1e-10)


# --- shapes and broadcasting -----------------------------------------------------------


def _release_kind(case, mech):
    """Integers for discrete families; floats otherwise and for thresholded rows (NaN)."""
    return "i" if mech.discrete and not suppresses(case) else "f"


@by_case_shape
def test_release_shapes(case, event_shape):
    mech = case.make(event_shape)
    assert mech.event_shape == event_shape
    rng = np.random.default_rng(4)
    for batch in ((), (4,), (2, 3)):
        value = case.draw_values(rng, (*batch, *event_shape))
        out = mech.release(value, rng=rng)
        assert out.shape == (*batch, *event_shape)
        assert out.dtype.kind == _release_kind(case, mech)


@by_case_shape
def test_logpdf_shapes_and_broadcasting(case, event_shape):
    mech = case.make(event_shape)
    rng = np.random.default_rng(5)
    values = case.draw_values(rng, (2, 5, *event_shape))
    released = mech.release(values[0, 0], rng=rng)
    batched = mech.logpdf(released, values)
    assert batched.shape == (2, 5)
    loop = np.array([[mech.logpdf(released, v) for v in row] for row in values])
    np.testing.assert_array_equal(batched, loop)
    single = mech.logpdf(released, values[1, 2])
    assert np.shape(single) == ()
    assert mech.logpdf(released, values[0]).shape == (5,)
    # released given as a list / Python scalar
    np.testing.assert_array_equal(mech.logpdf(released.tolist(), values), batched)


@by_case_shape
def test_wrong_shapes_raise(case, event_shape):
    mech = case.make(event_shape)
    rng = np.random.default_rng(6)
    values = case.draw_values(rng, (5, *event_shape))
    released = mech.release(values[0], rng=rng)
    bad_released = np.concatenate([np.ravel(released), np.ravel(released)])
    with pytest.raises(ValueError, match=r"released must have shape .*got shape \(\d+,\)"):
        mech.logpdf(bad_released, values)
    if event_shape:
        bad_values = values[..., :-1]
        with pytest.raises(ValueError, match=r"value must have shape .*got shape \(5, \d+\)"):
            mech.logpdf(released, bad_values)
        with pytest.raises(ValueError, match=r"value must have shape .*got shape \(5, \d+\)"):
            mech.release(bad_values, rng=rng)
        with pytest.raises(ValueError, match=r"value must have shape .*got shape \(\)"):
            mech.release(values.reshape(-1)[0], rng=rng)
    if not suppresses(case):  # NaN is a suppressed cell of a thresholded release
        with pytest.raises(
            ValueError, match=r"released must hold numbers, not NaN.*dp\.Thresholded"
        ):
            mech.logpdf(np.full(event_shape, np.nan), values)
    with pytest.raises(
        ValueError, match=r"released must be finite( or NaN \(a suppressed cell\))?, got .*inf"
    ):
        mech.logpdf(np.full(event_shape, np.inf), values)
    with pytest.raises(ValueError, match="value must be finite"):
        mech.release(np.full(event_shape, np.inf), rng=rng)
    if mech.discrete:
        with pytest.raises(ValueError, match=r"released must hold integers(, got .*0\.5| or NaN)"):
            mech.logpdf(np.full(event_shape, 0.5), values)
        # the value is confidential: its count, shape and positions, not 1.5
        with pytest.raises(ValueError, match=r"value must hold integers: .* (is|are) not") as err:
            mech.logpdf(released, np.full(event_shape, 1.5))
        assert "1.5" not in str(err.value)


# --- the supremum ----------------------------------------------------------------------


@by_case_shape
def test_log_max_density_is_the_supremum(case, event_shape):
    mech = case.make(event_shape)
    rng = np.random.default_rng(7)
    values = case.draw_values(rng, (6, *event_shape))
    top = mech.log_max_density
    for released in mech.release(values, rng=rng):
        grid = case.value_grid(released)
        lp = mech.logpdf(released, grid)
        at = mech.log_max_density_at(released)
        # never exceeded on the grid ...
        assert lp.max() <= top + 1e-12
        assert lp.max() <= at + 1e-12
        assert at <= top + 1e-12
        # ... and the per-release supremum is attained on it (the grid holds the maximiser)
        np.testing.assert_allclose(lp.max(), at, rtol=1e-13, atol=1e-12)
        # random confidential values never beat it either
        assert mech.logpdf(released, case.draw_values(rng, (500, *event_shape))).max() <= at


@by_case_shape
def test_log_max_density_is_attained(case, event_shape):
    # the supremum over releases of log_max_density_at is log_max_density
    mech = case.make(event_shape)
    if case.translation:
        rng = np.random.default_rng(8)
        for released in mech.release(case.draw_values(rng, (5, *event_shape)), rng=rng):
            assert mech.logpdf(released, released) == pytest.approx(
                mech.log_max_density, abs=1e-12
            )
            assert mech.log_max_density_at(released) == mech.log_max_density
        return
    best = max(mech.log_max_density_at(r) for r in case.release_candidates(mech))
    assert best == pytest.approx(mech.log_max_density, abs=1e-11)


# --- privacy object --------------------------------------------------------------------


@by_case_shape
def test_privacy_is_a_privacy(case, event_shape):
    priv = case.make(event_shape).privacy
    assert isinstance(priv, dp.Privacy)
    if priv.notion == "zCDP":  # stated in rho only; an (epsilon, delta) pair on request
        assert priv.rho > 0 and np.isfinite(priv.rho)
        assert priv.to_approx(1e-6).epsilon > priv.rho
    else:
        assert priv.epsilon > 0 and np.isfinite(priv.epsilon)
    assert 0 <= priv.delta < 1
    assert priv.neighbouring


# --- the third face: releases from uniforms (inverse CDF) -------------------------------


class _FromUniform:
    """A sampler that releases through ``release_from_uniform`` at i.i.d. uniforms."""

    def __init__(self, mech):
        self.mech = mech

    def release(self, value, *, rng):
        u = np.random.default_rng(rng).random(np.shape(value))
        return self.mech.release_from_uniform(value, u)


@by_unit_case
def test_release_from_uniform_matches_logpdf(case):
    # With u ~ U(0, 1) the inverse CDF has the law of release: the goodness-of-fit test
    # of test_release_matches_logpdf, false-failure rate GOF_LEVEL = 1e-3 (seed fixed).
    mech, _ = _normalisation_case(case)
    assert _gof_pvalue(case, mech, _FromUniform(mech), seed=20240602) > GOF_LEVEL


@by_unit_case
def test_release_from_uniform_companion_rejects_wrong_inverse(case):
    # An inverse CDF whose noise parameter is 15% too small must be rejected.
    mech, _ = _normalisation_case(case)
    planted = with_planted_quantile(case, mech, 0.85)
    assert _gof_pvalue(case, mech, _FromUniform(planted), seed=20240602) < GOF_LEVEL


def _uniform_inputs(case, event_shape):
    """A mechanism, values ``(4, 1, *event)`` and uniforms ``(4, 6, *event)``, seeded."""
    rng = np.random.default_rng(9)
    values = case.draw_values(rng, (4, 1, *event_shape))
    return case.make(event_shape), values, rng.uniform(1e-9, 1 - 1e-9, (4, 6, *event_shape))


@by_case_shape
def test_release_from_uniform_matches_oracle_quantile(case, event_shape):
    # Exact for discrete families (a brute-force CDF from the oracle pmf), to rounding for
    # continuous ones (scipy's ppf); the u are kept where the brute-force sum is exact.
    mech, values, u = _uniform_inputs(case, event_shape)
    u[0, 0] = 0.5
    got = mech.release_from_uniform(values, u)
    expected = oracle_quantile(case, mech, values, u)
    if mech.discrete:
        np.testing.assert_array_equal(got, expected)
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    if suppresses(case):  # the two kinds of outcome both appear
        assert np.isnan(got).any() and not np.isnan(got).all()


@by_case_shape
def test_release_from_uniform_oracle_companion_detects_wrong_inverse(case, event_shape):
    mech, values, u = _uniform_inputs(case, event_shape)
    planted = with_planted_quantile(case, mech, 0.85)
    assert not np.allclose(
        planted.release_from_uniform(values, u), oracle_quantile(case, mech, values, u)
    )


@by_case_shape
def test_release_from_uniform_shapes_and_monotonicity(case, event_shape):
    mech = case.make(event_shape)
    rng = np.random.default_rng(10)
    values = case.draw_values(rng, (5, 1, *event_shape))
    u = np.sort(rng.random((5, 7, *event_shape)), axis=1)
    out = mech.release_from_uniform(values, u)
    assert out.shape == (5, 7, *event_shape)
    assert out.dtype.kind == _release_kind(case, mech)
    # an inverse CDF is non-decreasing in u, coordinate by coordinate (suppressed: lowest)
    ranked = np.where(np.isnan(out), -np.inf, out)
    assert np.all(ranked[:, 1:] >= ranked[:, :-1])
    single = mech.release_from_uniform(values[2, 0], u[2, 3])
    np.testing.assert_array_equal(single, out[2, 3])


@by_case_shape
def test_release_from_uniform_rejects_bad_uniforms(case, event_shape):
    mech = case.make(event_shape)
    value = case.draw_values(np.random.default_rng(11), event_shape)
    for bad in (0.0, 1.0, -0.1, 1.5, np.nan):
        with pytest.raises(ValueError, match=r"u must (lie in the open interval|be finite)"):
            mech.release_from_uniform(value, np.full(event_shape, bad))
    if event_shape:
        with pytest.raises(ValueError, match=r"u must have shape .*got shape \(2, \d+\)"):
            mech.release_from_uniform(value, np.full((2, event_shape[0] + 1), 0.5))
    with pytest.raises(ValueError, match="do not broadcast together"):
        mech.release_from_uniform(
            np.broadcast_to(value, (3, *event_shape)), np.full((2, *event_shape), 0.5)
        )
