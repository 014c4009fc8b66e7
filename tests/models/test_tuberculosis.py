"""The tuberculosis outbreak model (Park et al. 2021, Section 6.3; Lintusaari et al. 2019).

The simulator is checked against its own theory (equilibrium means of the case counts and
of the observations), the prior against two independent quadratures, and the summary
statistics against the San Francisco numbers and an independent numpy implementation.
Seeds are fixed, so outcomes are deterministic; each statistical check states its
false-failure rate under a random seed and has a companion that plants a bug it must catch.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import scipy.integrate as si
import scipy.stats as st

from dpinfer.models import tuberculosis as tb
from dpinfer.models.tuberculosis._simulator import _simulate

Z_MAX = 4.5  # two-sided normal tail 6.8e-6 per comparison
KS_LEVEL = 1e-3  # a correct sampler fails one KS test with probability 0.1%

# --- the San Francisco data and the statistics ----------------------------------------------


def test_san_francisco_statistics_are_the_published_numbers():
    assert tb.SF_CLUSTER_SIZES.sum() == 473 and tb.SF_CLUSTER_SIZES.size == 326
    assert tb.SF_LARGEST_MONTHS.size == 30 == tb.SF_CLUSTER_SIZES.max()
    expected = [473, 326, 30, 20 / 3, 282 / 473, 20 / 473, 24, 17]
    np.testing.assert_allclose(tb.sf_statistics(), expected, rtol=1e-15)


def test_distance_on_the_san_francisco_record_is_the_weighted_norm():
    sf = tb.sf_statistics()
    dist = tb.distance()
    other = sf + np.array([10.0, -5.0, 3.0, 1.0, 0.0, 0.0, -2.0, 1.0])
    other[4] = sf[4] * 1.1  # 10% more singletons per observation: relative error 0.1
    other[5] = sf[5] * 0.5  # half the pairs: relative error -0.5
    by_hand = (
        math.sqrt(
            10**2 + 5**2 + (2 * 3) ** 2 + (10 * 1) ** 2 + (100 * 0.1) ** 2 + (100 * 0.5) ** 2
        )
        + 0.0
    )
    by_hand = math.sqrt(by_hand**2 + (10 * 2) ** 2 + (10 * 1) ** 2)
    pseudo = np.stack([sf, other])[:, None, :]
    np.testing.assert_allclose(dist.pairwise(sf[None], pseudo)[:, 0], [0.0, by_hand], rtol=1e-12)
    assert dist(sf[None], pseudo)[1] == pytest.approx(min(by_hand, tb.CLIP), rel=1e-12)
    # a run without observations is infinitely far, hence at the clip bound
    empty = tb.summary_statistics([], [])
    assert np.isnan(empty[4]) and empty[0] == 0
    assert dist.pairwise(sf[None], empty[None, None])[0, 0] == math.inf
    assert dist(sf[None], empty[None, None])[0] == tb.CLIP
    assert dist.sensitivity(100) == tb.CLIP / 100 == 2.0


def test_summary_statistics_edge_cases():
    # fewer than four clusters: missing sizes count as 0
    np.testing.assert_array_equal(
        tb.summary_statistics([2, 2], [7]), [4, 2, 2, 2 / 3, 0, 0.5, 1, 1]
    )
    with pytest.raises(ValueError, match="cluster_sizes"):
        tb.summary_statistics([3, 0], [1])
    with pytest.raises(ValueError, match="largest_months"):
        tb.summary_statistics([3], [24])
    with pytest.raises(ValueError, match="cluster_sizes"):
        tb.summary_statistics([1.5], [1])


SMALL = {"R1": 1.5, "t1": 0.2, "R2": 0.1, "beta": 0.5}  # about one observation in 2 years


@pytest.mark.parametrize("params", [tb.TRUTH, SMALL], ids=["truth", "small"])
def test_compiled_statistics_match_the_numpy_ones_on_the_raw_record(params):
    """The same generator state gives the same run through both compiled loops."""
    n_empty = 0
    for seed in range(12):
        stats = tb.simulate(params, rng=seed)
        record = tb.simulate_outbreak(params, rng=seed)
        np.testing.assert_array_equal(stats, record.statistics())
        assert record.cluster_sizes.sum() == record.observation_time.size == stats[0]
        times = record.observation_time
        assert np.all(np.diff(times) >= 0) and np.all((times >= 0) & (times < tb.T_OBS))
        np.testing.assert_array_equal(
            np.bincount(record.observation_cluster, minlength=record.cluster_sizes.size),
            record.cluster_sizes,
        )
        assert record.warmup >= tb.MIN_WARMUP
        n_empty += stats[0] == 0
    if params is SMALL:
        assert n_empty >= 1  # the no-observation branch was exercised


# --- the simulator against its theory -----------------------------------------------------

# Points with fast relaxation towards equilibrium: the slowest eigenvalue of the mean
# dynamics is at least 0.75 a year, so after the warm-up (>= 15 years) and the window the
# bias of the means is far below their standard errors.
THEORY_POINTS = {
    "truth": tb.TRUTH,
    "compliant-heavy": {"R1": 2.0, "t1": 1.0, "R2": 0.5, "beta": 150.0},
    "fast-noncompliant": {"R1": 10.0, "t1": 20.0, "R2": 0.05, "beta": 150.0},
}
N_THEORY = 1000
# The planted bug, compliance inherited from the source, makes the non-compliant cases
# grow at rate t1 without bound; at this point (t1 = 0.2) they stay within the simulator's
# reach during the run.
BUG_POINT = {"R1": 1.5, "t1": 0.2, "R2": 0.5, "beta": 200.0}


def slowest_relaxation(params) -> float:
    beta, a_c, d_c, a_nc, d_nc = tb.rates(params)
    p = tb.P_COMPLIANCE
    jacobian = np.array([[p * a_c - d_c, p * a_nc], [(1 - p) * a_c, (1 - p) * a_nc - d_nc]])
    return float(-np.max(np.linalg.eigvals(jacobian).real))


def check_equilibrium(params, *, n_runs, seed, inherit_compliance=False):
    """Mean observations a year and mean case counts at the end against the equilibrium.

    Three z-tests at |z| <= 4.5 (standard errors from the sample): false-failure rate
    2e-5 per call under a random seed.
    """
    batch = {k: np.full(n_runs, v) for k, v in params.items()}
    stats, diag = _simulate(
        batch, np.random.default_rng(seed), diagnostics=True, inherit_compliance=inherit_compliance
    )
    eq = tb.equilibrium(params)
    for name, values, expected in (
        ("observations a year", stats[:, 0] / tb.T_OBS, eq["observations_per_year"]),
        ("compliant cases", diag["compliant"], eq["compliant"]),
        ("non-compliant cases", diag["noncompliant"], eq["noncompliant"]),
    ):
        z = (values.mean() - expected) / (values.std(ddof=1) / math.sqrt(n_runs))
        assert abs(z) <= Z_MAX, f"{name}: mean {values.mean():.3f} vs {float(expected):.3f}"


@pytest.mark.parametrize("name", sorted(THEORY_POINTS))
def test_simulator_matches_the_equilibrium(name):
    params = THEORY_POINTS[name]
    assert slowest_relaxation(params) >= 0.75
    check_equilibrium(params, n_runs=N_THEORY, seed=sorted(THEORY_POINTS).index(name))


def test_equilibrium_check_flags_inherited_compliance():
    check_equilibrium(BUG_POINT, n_runs=200, seed=7)  # the correct simulator passes here
    with pytest.raises(AssertionError, match="observations a year"):
        check_equilibrium(BUG_POINT, n_runs=200, seed=7, inherit_compliance=True)


def test_warmup_follows_the_rule():
    _, diag = tb.simulate(
        {k: np.full(300, v) for k, v in tb.TRUTH.items()}, rng=3, diagnostics=True
    )
    warm = diag["warmup"]
    # max(2y, 15) with y whole years, at most 2 * 150
    assert np.all(warm >= tb.MIN_WARMUP) and np.all(warm <= 2 * tb.MAX_WARMUP_YEARS)
    assert np.all((warm == tb.MIN_WARMUP) | (warm % 2 == 0))
    assert diag["events"].min() > 0


# --- the prior ---------------------------------------------------------------------------


def _beta_density(x, beta_sd):
    """Unnormalised marginal density of beta: its normal density times P(truncation | beta).

    Given R1 and beta > 0 the truncation holds for a fraction of R2's uniform fraction u in
    closed form (1 - 0.95 R2 - 0.05 R1 = 0.95 B (1 - u)), and of t1 in closed form; R1 is
    integrated by the trapezoid rule on a fine grid.
    """
    x = np.asarray(x, dtype=float)[:, None]
    r1 = np.linspace(*tb.R1_BOUNDS, 4001)[None, :]
    bound = (1 - 0.05 * r1) / 0.95
    lo_u, hi_u = tb.R2_FRACTION_BOUNDS
    with np.errstate(divide="ignore", invalid="ignore"):  # B = 0 at R1 = 20
        u_max = 1 - x * tb.P_OBSERVED / (tb.MEAN_OBS_BOUNDS[1] * 0.95 * bound)
    p_u = np.clip((u_max - lo_u) / (hi_u - lo_u), 0.0, 1.0)
    t1_max = tb.ALPHA1_BOUND * (r1 - 1) / r1
    p_t1 = np.clip((t1_max - tb.T1_BOUNDS[0]) / np.ptp(tb.T1_BOUNDS), 0.0, 1.0)
    given_beta = si.trapezoid(p_u * p_t1, r1, axis=1) / np.ptp(tb.R1_BOUNDS)
    return np.where(x[:, 0] > 0, st.norm.pdf(x[:, 0], tb.BETA_MEAN, beta_sd) * given_beta, 0.0)


@pytest.fixture(scope="module")
def beta_marginal():
    """CDF of beta's prior marginal on a grid, and its total mass (= Z)."""
    grid = np.linspace(0.0, 450.0, 901)
    cdf = si.cumulative_trapezoid(_beta_density(grid, tb.BETA_SD), grid, initial=0.0)
    return grid, cdf / cdf[-1], cdf[-1]


def test_normalising_constant_agrees_with_an_independent_quadrature(beta_marginal):
    _, _, mass = beta_marginal
    assert tb.JointPrior().normalising_constant == pytest.approx(mass, rel=1e-5)


def check_acceptance_rate(prior, *, n=200_000, seed=0):
    """Fraction of product draws inside the truncation vs Z: |z| <= 4.5 (rate 6.8e-6)."""
    inside = prior.inside(prior.candidates(n, np.random.default_rng(seed)))
    z_value = prior.normalising_constant
    z = (inside.mean() - z_value) / math.sqrt(z_value * (1 - z_value) / n)
    assert abs(z) <= Z_MAX, f"acceptance {inside.mean():.5f} vs Z = {z_value:.5f}"


class WithoutAlphaBound(tb.JointPrior):
    """Planted bug: the truncation forgets alpha_1 < 40."""

    def inside(self, params):
        m = 0.8 * params["beta"] / (1 - 0.95 * params["R2"] - 0.05 * params["R1"])
        return (m > 0) & (m < 350)


def test_truncation_matches_the_normalising_constant():
    check_acceptance_rate(tb.JointPrior())
    check_acceptance_rate(tb.JointPrior(beta_sd=tb.BETA_SD_ABCDP_CODE), seed=1)
    with pytest.raises(AssertionError, match="acceptance"):
        check_acceptance_rate(WithoutAlphaBound())


def check_beta_marginal(draws, beta_marginal):
    """KS test of the sampled beta against its quadrature marginal (rate 1e-3)."""
    grid, cdf, _ = beta_marginal
    p = st.kstest(draws, lambda x: np.interp(x, grid, cdf)).pvalue
    assert p > KS_LEVEL, f"beta's marginal: KS p-value {p:.2g}"


def beta_first(n, rng, sd=tb.BETA_SD):
    """Planted bug: the ABCDP code's order (beta first, the others rejected given beta)."""
    prior = tb.JointPrior(beta_sd=sd)
    beta = rng.normal(tb.BETA_MEAN, sd, size=n)
    beta = beta[(beta > 0) & (beta < 400)]  # where the others can satisfy the truncation
    pending = np.arange(beta.size)
    while pending.size:
        cand = prior.candidates(pending.size, rng)
        cand["beta"] = beta[pending]
        pending = pending[~prior.inside(cand)]
    return beta


def test_prior_samples_beta_with_its_joint_marginal(beta_marginal):
    draws = tb.prior().sample(20_000, np.random.default_rng(11))
    check_beta_marginal(draws["beta"], beta_marginal)
    with pytest.raises(AssertionError, match="marginal"):
        check_beta_marginal(beta_first(20_000, np.random.default_rng(11)), beta_marginal)


def test_prior_density_is_the_truncated_product():
    prior = tb.JointPrior()
    rng = np.random.default_rng(2)
    draws = prior.sample(500, rng)
    bound = (1 - 0.05 * draws["R1"]) / 0.95
    expected = (
        -math.log(18.99 * 29.99)
        - np.log(0.99 * bound)
        + st.norm.logpdf(draws["beta"], 200.0, 30.0)
        - math.log(prior.normalising_constant)
    )
    np.testing.assert_allclose(prior.logpdf(draws), expected, rtol=1e-12)
    np.testing.assert_allclose(tb.prior().logpdf(draws), expected, rtol=1e-12)
    outside = {k: v[:4].copy() for k, v in draws.items()}
    outside["R2"][0] = 1.01 * bound[0]  # R2 above B
    outside["t1"][1] = 39.9 * (outside["R1"][1] - 1) / outside["R1"][1] + 1.0  # alpha_1 > 40
    outside["beta"][2] = -1.0
    outside["R1"][3] = 20.5
    assert np.all(prior.logpdf(outside) == -np.inf)
    assert np.all(prior.inside(draws))


# --- shapes, reproducibility and arguments -------------------------------------------------


def test_shapes_and_reproducibility():
    before = np.random.get_state()  # noqa: NPY002 - checked untouched below
    params = {"R1": [[5.88], [3.0]], "t1": 6.74, "R2": [0.09, 0.1, 0.2], "beta": 192.0}
    first = tb.simulate(params, rng=5)
    assert first.shape == (2, 3, 8)
    np.testing.assert_array_equal(first, tb.simulate(params, rng=5))
    assert not np.array_equal(first, tb.simulate(params, rng=6))
    model = tb.model(n_records=4)
    rng = np.random.default_rng(0)
    pseudo = model.simulate(model.prior.sample(3, rng), rng)
    assert pseudo.shape == (3, 4, 8) and np.all(np.isfinite(pseudo))
    assert tb.confidential_records(5, rng=1).shape == (5, 8)
    np.testing.assert_array_equal(
        tb.confidential_records(5, rng=1), tb.confidential_records(5, rng=1)
    )
    after = np.random.get_state()  # noqa: NPY002
    np.testing.assert_array_equal(before[1], after[1])


@pytest.mark.parametrize(
    ("params", "error", "match"),
    [
        ({"R1": 1.0, "t1": 1.0, "R2": 0.1, "beta": 100.0}, ValueError, "R1"),
        ({"R1": 3.0, "t1": -1.0, "R2": 0.1, "beta": 100.0}, ValueError, "t1"),
        ({"R1": 3.0, "t1": 1.0, "R2": -0.1, "beta": 100.0}, ValueError, "R2"),
        ({"R1": 3.0, "t1": 1.0, "R2": 0.1, "beta": 0.0}, ValueError, "beta"),
        ({"R1": 3.0, "t1": math.nan, "R2": 0.1, "beta": 100.0}, ValueError, "t1"),
        ({"R1": 3.0, "t1": 1.0, "R2": 0.99, "beta": 100.0}, ValueError, "subcritical"),
        ({"R1": 3.0, "t1": 1.0, "R2": 0.1}, ValueError, "beta"),
        ({"R1": 1.001, "t1": 1e-4, "R2": 0.9, "beta": 1e5}, ValueError, "equilibrium"),
        ([5.88, 6.74, 0.09, 192], TypeError, "params"),
    ],
)
def test_invalid_parameters_are_refused_by_name(params, error, match):
    with pytest.raises(error, match=match):
        tb.simulate(params, rng=0)


def test_invalid_options_are_refused_by_name():
    with pytest.raises(TypeError, match="diagnostics"):
        tb.simulate(tb.TRUTH, rng=0, diagnostics="yes")
    with pytest.raises(ValueError, match="beta_sd"):
        tb.prior(beta_sd=0.0)
    with pytest.raises(ValueError, match="beta_sd"):
        tb.prior(beta_sd=math.nan)
    with pytest.raises(TypeError, match="n_records"):
        tb.model(n_records="10")
    with pytest.raises(ValueError, match="n_records"):
        tb.confidential_records(0)
    with pytest.raises(ValueError, match="one parameter set"):
        tb.simulate_outbreak({"R1": [3.0, 4.0], "t1": 1.0, "R2": 0.1, "beta": 100.0})


# --- the example ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_runs():
    """Two runs of the example with the same public seed (a second each)."""
    options = dict(records=10, proposals=30, noise_repetitions=2, rng=3, progressbar=False)
    return tb.run(**options), tb.run(**options)


def test_run_reports_private_non_private_and_truth_and_says_it_is_reduced(small_runs):
    result, _ = small_runs
    report = result.report
    assert "REDUCED" in report.setting[1] and "n = 10 confidential records" in report.setting[1]
    assert "San Francisco statistics (Small et al. 1994): 473, 326, 30" in report.setting[2]
    assert {r.role for r in report.rows} == {"private", "non-private", "truth"}
    assert {r.parameter: r.mean for r in report.rows if r.role == "truth"} == tb.TRUTH
    assert any("simulation study, not one release" in note for note in report.notes)
    table = result.extra["errors"]
    assert table["abs_error"].shape == (1, 3, 1, 2, 4)
    accepted = table["n_accepted"]
    assert int(accepted.max()) <= tb.C
    # the noiseless run is seeded (5 accepted at seed 3); a private run's noise is OS
    # entropy, and at 30 proposals about 1 run in 60 accepts nothing: its mean is NaN
    assert int(accepted.sel(setting="non-private").min()) > 0
    no_draws = (accepted == 0).broadcast_like(table["posterior_mean"])
    assert (table["posterior_mean"].isnull() == no_draws).all()
    # the private rows and posterior.nc are the first noise repetition of the error table
    private = {r.parameter: r.mean for r in report.rows if r.role == "private"}
    first = table["posterior_mean"].sel(
        setting="without resampling", n_records=10, public=0, noise=0
    )
    for name in tb.PARAMETERS:
        draws = np.asarray(result.posterior.posterior[name]).ravel()
        mean = draws.mean() if draws.size else math.nan
        assert private[name] == pytest.approx(mean, rel=1e-12, nan_ok=True)
        assert float(first.sel(parameter=name)) == pytest.approx(mean, rel=1e-12, nan_ok=True)
    assert result.posterior.posterior.attrs["epsilon"] == tb.EPSILON_TOTAL
    assert result.extra["non_private_n10"].posterior.attrs["epsilon_total"] == math.inf


def test_run_takes_its_privacy_noise_from_os_entropy_not_from_the_seed(small_runs):
    first, again = small_runs
    assert first.posterior.posterior.attrs["privacy_noise"] == "os-entropy"
    # the public part (records, proposals, the noiseless run) is reproducible from the seed
    rows = [[r for r in run.report.rows if r.role == "non-private"] for run in small_runs]
    assert rows[0] == rows[1]
    np.testing.assert_array_equal(
        first.extra["errors"]["posterior_mean"].sel(setting="non-private"),
        again.extra["errors"]["posterior_mean"].sel(setting="non-private"),
    )


@pytest.mark.parametrize(
    ("options", "n_values", "proposals", "scope"),
    [
        ({}, (100,), tb.REDUCED_PROPOSALS, "a REDUCED setting"),
        ({"full": True}, (100, 1000), 1000, "the paper's setting"),
        ({"full": True, "records": 1000}, (1000,), 1000, "the paper's setting"),
        ({"full": True, "records": 50}, (50,), 1000, "not the paper's setting"),
        ({"proposals": 500}, (100,), 500, "a REDUCED setting"),
    ],
)
def test_run_resolves_the_reduced_and_the_paper_setting(options, n_values, proposals, scope):
    from dpinfer.models.tuberculosis._run import _setting, _setting_lines

    resolved = _setting(
        options.get("records"), options.get("proposals"), options.get("full", False)
    )
    assert resolved == (n_values, proposals)
    lines = _setting_lines(*resolved, tb.C, tb.EPSILON_ABC, tb.EPSILON_TOTAL)
    assert lines[1].startswith(scope)
    assert _setting_lines(*resolved, tb.C, 10.0, tb.EPSILON_TOTAL)[1].startswith(
        "a REDUCED" if proposals < 1000 else "not the paper's"
    )


def _table_without_warnings(**options):
    """A 10-record error table at 30 proposals and its summary, any warning an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        table = tb.error_table(10, n_proposals=30, rng=3, progressbar=False, **options)
        return table, tb.summarise_errors(table)


def _summary_fields(text, setting, *, part=0):
    """A summary row of ``setting`` after its name: of the runs' errors (part 0: runs, mean,
    s.e., sd, the quantiles, paper, rank) or per parameter (part 1: errors, accepted)."""
    rows = [line for line in text.splitlines() if f" {setting} " in f"{line} "]
    return rows[part].split()[1 + len(setting.split()) :]


def test_a_private_run_that_accepts_nothing_is_nan_in_the_table_without_warnings():
    # privacy seed 10 at 30 proposals: the first run with resampling accepts no draw
    table, text = _table_without_warnings(noise_repetitions=2, privacy_rng=10)
    accepted = table["n_accepted"].sel(n_records=10, public=0)
    assert accepted.sel(setting="with resampling").values.tolist() == [0, 10]
    means = table["posterior_mean"].sel(n_records=10, public=0, setting="with resampling")
    assert means.isel(noise=0).isnull().all() and means.isel(noise=1).notnull().all()
    fields = _summary_fields(text, "with resampling")
    assert fields[0] == "1" and fields[2] == "-"  # one finite run, so no s.e.
    assert float(_summary_fields(text, "with resampling", part=1)[-1]) == 5.0  # accepted


def test_a_public_repetition_whose_runs_accept_nothing_leaves_the_others_s_e():
    # privacy seed 13, one noise run per public repetition: the second public repetition's
    # run with resampling accepts nothing, so its s.e. has one value and is not shown
    table, text = _table_without_warnings(
        noise_repetitions=1, public_repetitions=2, privacy_rng=13
    )
    accepted = table["n_accepted"].sel(n_records=10, noise=0)
    assert accepted.sel(setting="with resampling").values.tolist() == [10, 0]
    assert _summary_fields(text, "with resampling")[2] == "-"
    mae = table["abs_error"].sel(n_records=10, noise=0).mean("parameter")
    for name in ("without resampling", "non-private"):
        se = np.std(mae.sel(setting=name).values, ddof=1) / math.sqrt(2)
        assert float(_summary_fields(text, name)[2]) == pytest.approx(se, abs=1e-3)


def _synthetic_table(public=4, noise=25, seed=0):
    """An error table of known errors: the runs' errors spread as single runs do."""
    import xarray as xr

    rng = np.random.default_rng(seed)
    n_values, k = [100, 1000], len(tb.PARAMETERS)
    shape = (2, len(tb.SETTINGS), public, noise)
    errors = rng.gamma(4.0, 0.8, (*shape, k)) / np.array([1, 1, 1, 2.0])[:k]
    errors[:, 2] = errors[:, 2, :, :1]  # the non-private run has no noise: one per public set
    dims = ("n_records", "setting", "public", "noise")
    return xr.Dataset(
        {
            "abs_error": ((*dims, "parameter"), errors),
            "n_accepted": (dims, np.full(shape, 10)),
        },
        coords={
            "n_records": n_values,
            "setting": list(tb.SETTINGS),
            "parameter": list(tb.PARAMETERS),
        },
    )


def test_the_summary_gives_the_spread_of_single_runs_beside_the_papers_single_runs():
    table = _synthetic_table()
    text = tb.summarise_errors(table)
    for n, setting, paper in ((1000, "without resampling", 2.10), (100, "with resampling", 4.71)):
        runs = table["abs_error"].sel(n_records=n, setting=setting).mean("parameter").values
        row = next(line for line in text.splitlines() if line.split()[:1] == [str(n)]
                   and f" {setting} " in line)  # fmt: skip
        fields = row.split()[1 + len(setting.split()) :]
        assert int(fields[0]) == runs.size == 100  # 4 public sets x 25 noise draws
        public_means = runs.mean(axis=1)
        se = np.std(public_means, ddof=1) / 2
        assert [float(f) for f in fields[1:4]] == pytest.approx(
            [runs.mean(), se, np.std(runs, ddof=1)], abs=6e-3
        )
        quantiles = np.quantile(runs, tb.QUANTILES)
        assert [float(f) for f in fields[4:9]] == pytest.approx(quantiles, abs=6e-3)
        assert float(fields[9]) == paper
        assert float(fields[10]) == pytest.approx(np.mean(runs <= paper), abs=6e-3)
    assert "ONE run of the authors' code with unseeded numpy randomness" in " ".join(text.split())


def test_the_non_private_row_counts_one_run_per_public_set_and_has_no_paper_number():
    text = tb.summarise_errors(_synthetic_table(public=3, noise=7))
    fields = _summary_fields(text, "non-private")
    assert fields[0] == "3" and fields[-2:] == ["-", "-"]
    assert "3 public set(s) x 7 noise draw(s)" in " ".join(text.split())
