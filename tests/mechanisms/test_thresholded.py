"""Thresholded releases: suppressed cells against brute force, the release law, PyMC, bounds.

The log-density of a suppressed cell is ``log P(s + noise below T)``, computed by
dpinfer from closed forms and tail sums; here it is recomputed by brute force from
the rule itself (``y < T``, or ``y <= T`` with ``publish='above'``): summing the
inner pmf over the integers that the rule suppresses, or scipy's CDF for the
continuous families. Statistical checks use fixed seeds, state their false-failure
rate and have a planted-bug companion that must fail.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import scipy.integrate as si
import scipy.stats as st
from _mechanism_registry import discrete_gaussian_logpmf_bruteforce
from scipy.special import logsumexp

import dpinfer as dp

GOF_LEVEL = 1e-3  # chi-square rejection level: the false-failure rate of each GOF test
PUBLISH = ("at_least", "above")
NOISES = {
    "Laplace": lambda: dp.Laplace([1.5, 3.0, 3.0]),
    "Gaussian": lambda: dp.Gaussian([1.5, 3.0, 3.0]),
    "DiscreteLaplace": lambda: dp.DiscreteLaplace([1.5, 3.0, 3.0]),
    "DiscreteGaussian": lambda: dp.DiscreteGaussian([1.5, 3.0, 3.0]),
}
THRESHOLDS = [10, [9.5, 10.0, 12.0]]


# --- brute force, cell by cell -----------------------------------------------------------


def _inner_log_pmf(noise, j, x):
    """``log P(noise_j = x)`` (or the density) from scipy / a direct sum, not from dpinfer."""
    if isinstance(noise, dp.DiscreteGaussian):
        return discrete_gaussian_logpmf_bruteforce(x, float(noise.sigma[j]))
    if isinstance(noise, dp.DiscreteLaplace):
        return st.dlaplace.logpmf(x, a=1.0 / noise.scale[j])
    if isinstance(noise, dp.Gaussian):
        return st.norm.logpdf(x, scale=noise.sigma[j])
    return st.laplace.logpdf(x, scale=noise.scale[j])


def _suppressed(y, threshold, publish):
    return y <= threshold if publish == "above" else y < threshold


def _brute_cell(noise, j, threshold, publish, y, s):
    """The log-density of cell ``j`` by the rule: published value or suppression event."""
    if not np.isnan(y):
        return -np.inf if _suppressed(y, threshold, publish) else _inner_log_pmf(noise, j, y - s)
    if noise.discrete:
        ys = np.arange(s - 400, s + 401)
        below = ys[_suppressed(ys, threshold, publish)]
        return logsumexp(_inner_log_pmf(noise, j, below - s)) if below.size else -np.inf
    dist = st.norm if isinstance(noise, dp.Gaussian) else st.laplace
    scale = noise.sigma[j] if isinstance(noise, dp.Gaussian) else noise.scale[j]
    return dist.logcdf(threshold, loc=s, scale=scale)


def _brute_logpdf(mech, released, values):
    thresholds = np.broadcast_to(mech.threshold, mech.event_shape)
    return np.array(
        [
            math.fsum(
                _brute_cell(mech.mechanism, j, thresholds[j], mech.publish, released[j], v[j])
                for j in range(released.size)
            )
            for v in values
        ]
    )


def _cases():
    return [(n, t, p) for n in NOISES for t in THRESHOLDS for p in PUBLISH]


def _ids():
    return [f"{n}-T{np.size(t)}-{p}" for n, t, p in _cases()]


@pytest.mark.parametrize(("noise", "threshold", "publish"), _cases(), ids=_ids())
def test_logpdf_matches_brute_force(noise, threshold, publish):
    mech = dp.Thresholded(NOISES[noise](), threshold=threshold, publish=publish)
    rng = np.random.default_rng(1)
    values = rng.integers(0, 22, size=(12, 3))
    if not mech.discrete:
        values = values + rng.uniform(-0.5, 0.5, size=values.shape)
    # releases from the mechanism, and releases with cells exactly at the thresholds
    releases = [mech.release(v, rng=rng) for v in values[:4]]
    releases += [np.array([np.nan, 10.0, 12.0]), np.array([10.0, np.nan, np.nan])]
    for released in releases:
        got = mech.logpdf(released, values)
        want = _brute_logpdf(mech, released, values)
        np.testing.assert_array_equal(np.isneginf(got), np.isneginf(want))
        finite = np.isfinite(want)
        np.testing.assert_allclose(got[finite], want[finite], rtol=1e-11, atol=1e-11)


@pytest.mark.parametrize("noise", ["DiscreteLaplace", "DiscreteGaussian"])
def test_a_cell_at_the_threshold_is_published_only_when_at_least(noise):
    inner = NOISES[noise]()
    at_least = dp.Thresholded(inner, threshold=10)
    above = dp.Thresholded(inner, threshold=10, publish="above")
    released, value = np.array([10.0, 11.0, np.nan]), np.array([10, 10, 10])
    assert np.isfinite(at_least.logpdf(released, value))
    assert above.logpdf(released, value) == -np.inf  # 10 would have been suppressed
    # the suppressed cell: P(y < 10) against P(y <= 10), which differ by P(y = 10)
    gap = np.exp(above._cell_log_suppressed(value)) - np.exp(at_least._cell_log_suppressed(value))
    pmf_at_10 = np.exp([_inner_log_pmf(inner, j, 10 - value[j]) for j in range(3)])
    np.testing.assert_allclose(gap, pmf_at_10, rtol=1e-12)


def test_suppressed_cells_are_exact_for_huge_integer_values():
    # 2**60 + 5110 is not a float: the gap to the threshold (10) is computed in integers
    big = dp.Thresholded(dp.DiscreteGaussian(3.0), threshold=2**60 + 5120)
    small = dp.Thresholded(dp.DiscreteGaussian(3.0), threshold=10)
    got = big.logpdf(np.nan, np.array([2**60 + 5110]))
    assert got == small.logpdf(np.nan, np.array([0]))  # log P(X <= 9)
    # in floats the value rounds to 2**60 + 5120 and the cut to the threshold itself
    assert got != small.logpdf(np.nan, np.array([-1]))
    assert got != small.logpdf(np.nan, np.array([10]))


# --- normalisation: published values plus the suppressed state ------------------------------


def _log_total_mass(mech, value):
    """log of P(suppressed) + the sum (integral) of the density over published values."""
    suppressed = float(mech.logpdf(np.array([np.nan]), value))
    t = float(mech.threshold[0])
    if mech.discrete:
        ys = np.arange(math.floor(t) - 2, math.floor(t) + 400)
        logs = [float(mech.logpdf(np.array([y]), value)) for y in ys]
        return float(logsumexp([*logs, suppressed]))
    mass, _ = si.quad(
        lambda y: math.exp(float(mech.logpdf(np.array([y]), value))),
        t,
        np.inf,
        epsabs=1e-14,
        epsrel=1e-12,
        limit=200,
    )
    return math.log(mass + math.exp(suppressed))


def _one_cell(noise, publish, threshold=10.5):
    inner = {
        "Laplace": dp.Laplace(2.0, event_shape=(1,)),
        "Gaussian": dp.Gaussian(2.0, event_shape=(1,)),
        "DiscreteLaplace": dp.DiscreteLaplace(2.0, event_shape=(1,)),
        "DiscreteGaussian": dp.DiscreteGaussian(2.0, event_shape=(1,)),
    }[noise]
    t = threshold if not inner.discrete else math.floor(threshold)
    return dp.Thresholded(inner, threshold=t, publish=publish)


@pytest.mark.parametrize("publish", PUBLISH)
@pytest.mark.parametrize("noise", list(NOISES))
def test_density_is_normalised(noise, publish):
    mech = _one_cell(noise, publish)
    value = np.array([11]) if mech.discrete else np.array([11.3])
    assert abs(_log_total_mass(mech, value)) < 1e-9


class _OffByOne(dp.Thresholded):
    """Planted: the suppressed cells' probability counts the cut one integer too high."""

    def _largest_suppressed(self, threshold):
        return super()._largest_suppressed(threshold) + 1


@pytest.mark.parametrize("noise", ["DiscreteLaplace", "DiscreteGaussian"])
def test_normalisation_companion_detects_an_off_by_one_cut(noise):
    mech = _one_cell(noise, "at_least")
    planted = _OffByOne(mech.mechanism, threshold=mech.threshold, publish="at_least")
    assert abs(_log_total_mass(planted, np.array([11]))) > 1e-3


# --- the release law against logpdf ----------------------------------------------------------


def _category_probabilities(mech, value, edges):
    """P(suppressed), then P(published value in each bin ``[edges[i], edges[i+1])``)."""
    suppressed = math.exp(float(mech.logpdf(np.array([np.nan]), value)))
    if mech.discrete:
        probs = [
            math.fsum(math.exp(float(mech.logpdf(np.array([y]), value))) for y in range(a, b))
            for a, b in zip(edges[:-1], edges[1:], strict=True)
        ]
    else:
        probs = [
            si.quad(lambda y: math.exp(float(mech.logpdf(np.array([y]), value))), a, b)[0]
            for a, b in zip(edges[:-1], edges[1:], strict=True)
        ]
    probs = np.array([suppressed, *probs])
    return np.append(probs, max(0.0, 1 - probs.sum()))  # the rest: beyond the last edge


def _gof_pvalue(mech, releases, value) -> float:
    t = float(mech.threshold[0])
    edges = (np.arange(math.floor(t), math.floor(t) + 12)).tolist()
    expected = len(releases) * _category_probabilities(mech, value, edges)
    y = releases[:, 0]
    published = y[~np.isnan(y)]
    # category 0: suppressed; 1..11: [edges[i], edges[i+1]); 12: from edges[-1] on
    bins = np.searchsorted(edges, published, side="right")
    observed = np.bincount(bins, minlength=len(edges) + 1)
    observed[0] = np.isnan(y).sum()  # no published value lies below the first edge
    assert np.count_nonzero(published < edges[0]) == 0
    keep = expected > 0
    assert observed[~keep].sum() == 0  # e.g. a value at T published under 'above'
    return float(st.chisquare(observed[keep], expected[keep]).pvalue)


class _UniformReleases:
    def __init__(self, mech):
        self.mech = mech

    def release(self, value, *, rng):
        u = np.random.default_rng(rng).random(np.shape(value))
        return self.mech.release_from_uniform(value, u)


def _releases(sampler, value, n=20_000, seed=20240611):
    return sampler.release(np.broadcast_to(value, (n, 1)).copy(), rng=seed)


@pytest.mark.parametrize("face", ["release", "release_from_uniform"])
@pytest.mark.parametrize(
    ("noise", "publish"),
    [("DiscreteGaussian", "at_least"), ("DiscreteLaplace", "above"), ("Gaussian", "at_least")],
)
def test_releases_follow_logpdf(noise, publish, face):
    # Pearson chi-square over {suppressed, published bins}; false-failure rate GOF_LEVEL.
    mech = _one_cell(noise, publish)
    value = np.array([10]) if mech.discrete else np.array([10.0])
    sampler = mech if face == "release" else _UniformReleases(mech)
    releases = _releases(sampler, value)
    assert releases.dtype == float
    assert _gof_pvalue(mech, releases, value) > GOF_LEVEL


@pytest.mark.parametrize("face", ["release", "release_from_uniform"])
@pytest.mark.parametrize("noise", ["DiscreteGaussian", "DiscreteLaplace"])
def test_gof_companion_rejects_the_other_publishing_rule(noise, face):
    # releases made with 'above' scored against the 'at_least' density must be rejected
    mech = _one_cell(noise, "at_least")
    wrong = dp.Thresholded(mech.mechanism, threshold=mech.threshold, publish="above")
    sampler = wrong if face == "release" else _UniformReleases(wrong)
    assert _gof_pvalue(mech, _releases(sampler, np.array([10])), np.array([10])) < GOF_LEVEL


def test_gof_companion_rejects_a_shifted_continuous_threshold():
    mech = _one_cell("Gaussian", "at_least")
    wrong = dp.Thresholded(mech.mechanism, threshold=mech.threshold + 0.5)
    assert _gof_pvalue(mech, _releases(wrong, np.array([10.0])), np.array([10.0])) < GOF_LEVEL


def test_releases_are_float_with_nan_at_suppressed_cells():
    mech = dp.Thresholded(dp.DiscreteGaussian([2.0, 2.0, 50.0]), threshold=[0, 100, 10])
    out = mech.release(np.array([[50, 50, 10]] * 200), rng=3)
    assert out.dtype == float and out.shape == (200, 3)
    assert not np.isnan(out[:, 0]).any() and np.isnan(out[:, 1]).all()
    published = out[~np.isnan(out)]
    assert np.all(published == np.round(published))
    assert 0.3 < np.isnan(out[:, 2]).mean() < 0.7  # P(N_Z(0, 50^2) < 0) is about 0.5


# --- PyMC --------------------------------------------------------------------------------


def _pymc_function(mech, released):
    """``theta -> (logp of the release, its gradient)`` through ``to_pymc``, compiled once."""
    pm = pytest.importorskip("pymc")
    import pytensor

    with pm.Model() as model:
        if mech.discrete:
            theta = pm.DiscreteUniform("theta", -100, 100, shape=mech.event_shape)
        else:
            theta = pm.Flat("theta", shape=mech.event_shape)
        obs = mech.to_pymc("s_dp", theta, observed=released)
    value = model.rvs_to_values[theta]
    logp = model.logp(vars=[obs])
    outputs = [logp] if mech.discrete else [logp, pytensor.grad(logp, value)]
    return pytensor.function([value], outputs, mode="FAST_COMPILE")


@pytest.mark.parametrize("publish", PUBLISH)
@pytest.mark.parametrize("noise", list(NOISES))
def test_to_pymc_matches_logpdf(noise, publish):
    mech = dp.Thresholded(NOISES[noise](), threshold=[9.5, 10.0, 12.0], publish=publish)
    released = np.array([np.nan, 13.0, 14.0])
    function = _pymc_function(mech, released)
    rng = np.random.default_rng(5)
    for value in rng.integers(0, 25, size=(3, 3)):
        value = value if mech.discrete else value + rng.uniform(-0.5, 0.5, 3)
        out = function(value)
        np.testing.assert_allclose(out[0], mech.logpdf(released, value), rtol=1e-10)
        if not mech.discrete:  # the gradient NUTS uses, against central differences
            h = 1e-6
            fd = [
                (mech.logpdf(released, value + h * e) - mech.logpdf(released, value - h * e))
                / (2 * h)
                for e in np.eye(3)
            ]
            np.testing.assert_allclose(out[1], fd, rtol=1e-5, atol=1e-7)


def test_to_pymc_far_in_the_tails_is_finite():
    mech = dp.Thresholded(dp.Gaussian([1.0, 1.0]), threshold=0.0)
    released = np.array([np.nan, np.nan])
    value = np.array([40.0, -40.0])  # P(suppressed) about 1e-349 and 1 - 1e-349
    logp, grad = _pymc_function(mech, released)(value)
    np.testing.assert_allclose(logp, mech.logpdf(released, value), rtol=1e-12)
    assert np.all(np.isfinite(grad))


# --- suprema, privacy, the per-cell interface --------------------------------------------------


@pytest.mark.parametrize("noise", list(NOISES))
def test_log_max_density_at_is_the_supremum(noise):
    mech = dp.Thresholded(NOISES[noise](), threshold=[10, 10, 12])
    released = np.array([np.nan, 14.0, np.nan])
    bound = mech.log_max_density_at(released)
    rng = np.random.default_rng(2)
    values = rng.integers(-40, 60, size=(2000, 3))
    assert mech.logpdf(released, values).max() <= bound
    # approached: the published cell at its value, the suppressed ones far below
    near = np.array([[-200, 14, -200]])
    np.testing.assert_allclose(mech.logpdf(released, near), bound, rtol=0, atol=1e-12)
    assert bound <= mech.log_max_density


def test_log_max_density_takes_the_larger_of_density_and_suppression():
    # a Gaussian of sigma 0.1 has density above 1 at its mode: the published cell wins
    mech = dp.Thresholded(dp.Gaussian([0.1, 5.0]), threshold=0.0)
    top = -0.5 * math.log(2 * math.pi * 0.01)
    assert mech.log_max_density == pytest.approx(top + 0.0, abs=1e-14)
    assert dp.Thresholded(dp.DiscreteGaussian(3.0), threshold=0).log_max_density == 0.0


def test_an_impossible_release_has_density_zero_and_no_bound():
    mech = dp.Thresholded(dp.DiscreteGaussian([2.0, 2.0]), threshold=10)
    released = np.array([np.nan, 7.0])  # 7 < 10 cannot have been published
    assert np.all(mech.logpdf(released, [[5, 7], [9, 9]]) == -np.inf)
    with pytest.raises(ValueError, match=r"published cells below the threshold, .*\[\[1\]\]"):
        mech.log_max_density_at(released)


@pytest.mark.parametrize(
    "inner",
    [
        dp.Laplace([1.0, 2.0], sensitivity=1.0),
        dp.Gaussian.from_zcdp(rho=[0.5, 0.1], sensitivity=[1.0, 1.0]),
        dp.DiscreteLaplace.from_privacy(epsilon=[0.5, 0.1], sensitivity=[1, 1]),
        dp.DiscreteGaussian.from_zcdp(rho=0.015, sensitivity=math.sqrt(10), event_shape=(2,)),
        dp.DiscreteGaussian(3.0, sensitivity=1, delta=1e-6),
    ],
    ids=repr,
)
def test_privacy_is_the_inner_mechanisms(inner):
    # suppression is post-processing of the noisy release: the guarantee is unchanged
    mech = dp.Thresholded(inner, threshold=3)
    assert mech.privacy == inner.privacy


def test_cell_terms_sum_to_logpdf_and_gather_by_cell():
    mech = dp.Thresholded(dp.DiscreteGaussian([1.5, 3.0, 3.0]), threshold=[9.5, 10, 12])
    released = np.array([np.nan, 13.0, np.nan])
    s = np.random.default_rng(4).integers(0, 20, size=(7, 3))
    terms = mech._cell_log_density(released, s)
    np.testing.assert_allclose(terms.sum(axis=-1), mech.logpdf(released, s), rtol=1e-13)
    # ragged windows: flat cell indices and one candidate per entry
    cells = np.array([2, 0, 0, 1, 2])
    flat_s = s[np.arange(5), cells]
    np.testing.assert_array_equal(
        mech._cell_log_density(released, flat_s, cells=cells), terms[np.arange(5), cells]
    )
    # the suppressed-cell term as a function of s, whatever was released there
    supp = mech._cell_log_suppressed(s)
    np.testing.assert_array_equal(supp[:, [0, 2]], terms[:, [0, 2]])
    np.testing.assert_array_equal(
        mech._cell_log_suppressed(flat_s, cells=cells), supp[np.arange(5), cells]
    )


# --- bad input -------------------------------------------------------------------------------


def test_bad_arguments_are_refused_by_name():
    inner = dp.DiscreteGaussian([2.0, 2.0])
    with pytest.raises(TypeError, match="mechanism must be an additive noise mechanism"):
        dp.Thresholded(dp.BinomialRelease(n=5, m=5, population=3, length=2), threshold=1)
    with pytest.raises(TypeError, match="mechanism must be an additive noise mechanism"):
        dp.Thresholded(dp.Thresholded(inner, threshold=1), threshold=1)
    with pytest.raises(ValueError, match=r"publish must be one of .*got 'over'"):
        dp.Thresholded(inner, threshold=1, publish="over")
    with pytest.raises(ValueError, match="threshold must be finite"):
        dp.Thresholded(inner, threshold=np.nan)
    with pytest.raises(ValueError, match=r"threshold of shape \(3,\) does not broadcast"):
        dp.Thresholded(inner, threshold=[1, 2, 3])
    with pytest.raises(TypeError, match="threshold must be a number"):
        dp.Thresholded(inner, threshold="90")
    mech = dp.Thresholded(inner, threshold=1)
    with pytest.raises(ValueError, match=r"released must be finite or NaN .*inf at positions"):
        mech.logpdf([np.inf, 3.0], [[1, 1]])
    with pytest.raises(ValueError, match="released must hold integers or NaN"):
        mech.logpdf([2.5, np.nan], [[1, 1]])
    with pytest.raises(ValueError, match=r"released must have shape \(2,\)"):
        mech.logpdf([2.0], [[1, 1]])


def test_repr_and_copy():
    mech = dp.Thresholded(dp.DiscreteGaussian(2.0, event_shape=(3,)), threshold=90)
    assert repr(mech) == (
        "Thresholded(mechanism=DiscreteGaussian(sigma=2.0, sensitivity=None, delta=None), "
        "threshold=90.0, publish='at_least')"
    )
    assert repr(copy.deepcopy(mech)) == repr(mech)


@pytest.mark.parametrize("noise", list(NOISES))
def test_per_cell_interface_of_the_additive_families(noise):
    # what a cell-by-cell marginalisation calls: terms that sum to logpdf, gathered by cell
    mech = NOISES[noise]()
    rng = np.random.default_rng(6)
    released = mech.release(np.array([3, 8, 20]), rng=rng)
    s = rng.integers(0, 25, size=(9, 3))
    terms = mech._cell_log_density(released, s)
    assert terms.shape == (9, 3)
    np.testing.assert_allclose(terms.sum(axis=-1), mech.logpdf(released, s), rtol=1e-13)
    cells = np.array([1, 1, 0, 2])
    np.testing.assert_array_equal(
        mech._cell_log_density(released, s[:4, 0], cells=cells),
        mech._cell_log_density(released, np.broadcast_to(s[:4, :1], (4, 3)))[np.arange(4), cells],
    )
    # the supremum of each cell at zero noise
    np.testing.assert_allclose(mech._cell_log_max(), mech._cell_log_density(released, released))
    # symmetric noise: P(Y <= y | s) + P(Y <= 2s - y | s) = 1 (for integers, 2s - y - 1)
    mirror = 2 * s - released - (1 if mech.discrete else 0)
    total = np.exp(mech._cell_log_cdf(released, s)) + np.exp(mech._cell_log_cdf(mirror, s))
    np.testing.assert_allclose(total, 1.0, rtol=1e-13)
