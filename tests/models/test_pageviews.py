"""Wikimedia pageviews by country (``dpinfer run pageviews``).

The three analyses' log-likelihoods are checked at a point against an independent brute-force
sum (deterministic; companions plant the two likely wiring bugs and must fail). One small run
through ``dpinfer run`` (shared by the tests below it) checks the report's contents and that
the exact analysis recovers the generating views better than the naive ones.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.special as sc
import scipy.stats as st

from dpinfer.models import pageviews as pv

DAYS = 14
POINT = {
    "log_views": np.log([1300.0, 100.0, 80.0, 2000.0, 600.0, 500.0, 5000.0, 1100.0, 900.0]),
    "weekly": np.array([0.04, 0.05, 0.06, 0.02, -0.01, -0.09, -0.07]),
    "trend": 0.2,
}


@pytest.fixture(scope="module")
def table():
    return pv.simulate(days=DAYS)


def _rate(days):
    return np.exp(pv._log_rate(POINT["log_views"], POINT["weekly"], POINT["trend"], days))


def _model_loglik(released, mech, analysis):
    """The observed term ``y`` of the PyMC model at ``POINT``, summed over the cells."""
    model = pv.pymc_model(released, mech, analysis=analysis)
    point = _free_point(model, pv.rough_fit(released, mech), POINT)
    outputs = model.replace_rvs_by_values([model[name] for name in POINT])
    parameters = model.compile_fn(outputs, inputs=model.value_vars)
    for got, (name, want) in zip(parameters(point), POINT.items(), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=name)
    logp = model.compile_logp(vars=[model["y"]], jacobian=False)
    return float(logp(point))


def _free_point(model, rough, point):
    """The values of the model's free variables (standardised) at ``point`` of its parameters."""
    import pytensor.tensor as pt

    transform = model.rvs_to_transforms[model["weekly_z"]]
    weekly_z = pt.as_tensor(point["weekly"] / rough["weekly_sd"])
    return {
        "log_views_z": (point["log_views"] - rough["log_views"]) / rough["log_views_sd"],
        "weekly_z_zerosum__": transform.forward(weekly_z).eval(),
        "trend_z": np.asarray(point["trend"] / rough["trend_sd"]),
    }


def _brute_exact(released, sigma, threshold, *, at_least=True, drop_suppressed=False):
    """Sum each cell's true count out by brute force: a wide window, a discrete Gaussian table."""
    lam = _rate(released.shape[1])
    total = 0.0
    for (c, t), y in np.ndenumerate(released):
        if np.isnan(y) and drop_suppressed:
            continue
        s = np.arange(0, int(lam[c, t] + 40 * math.sqrt(lam[c, t]) + 40 * sigma[c, t]) + 1)
        log_prior = st.poisson.logpmf(s, lam[c, t])
        k = np.arange(-int(60 * sigma[c, t]), int(60 * sigma[c, t]) + 1)
        log_pmf = -(k**2) / (2 * sigma[c, t] ** 2)
        log_pmf -= sc.logsumexp(log_pmf)
        if np.isnan(y):  # suppressed: the noisy count s + k is below the threshold
            cut = math.ceil(threshold[c, t]) - 1 if at_least else math.floor(threshold[c, t])
            log_cdf = np.logaddexp.accumulate(log_pmf)
            idx = np.clip(cut - s - k[0], -1, k.size - 1)
            log_eta = np.where(idx >= 0, log_cdf[np.maximum(idx, 0)], -np.inf)
        else:
            log_eta = np.interp(y - s, k, log_pmf, left=-np.inf, right=-np.inf)
        total += float(sc.logsumexp(log_prior + log_eta))
    return total


def _brute_naive(released, analysis):
    lam = _rate(released.shape[1])
    hidden = np.isnan(released)
    if analysis == "zero":
        return float(st.poisson.logpmf(np.where(hidden, 0, released), lam).sum())
    return float(st.poisson.logpmf(released[~hidden], lam[~hidden]).sum())


@pytest.mark.parametrize("publish", ["at_least", "above"])
def test_exact_loglik_matches_brute_force(table, publish):
    mech = pv.mechanism(days=DAYS, publish=publish)
    released = pv.simulate(days=DAYS, publish=publish)["released"]
    assert np.isnan(released).any() and not np.isnan(released).all()
    got = _model_loglik(released, mech, "exact")
    sigma, threshold = mech.mechanism.sigma, mech.threshold
    want = _brute_exact(released, sigma, threshold, at_least=publish == "at_least")
    assert got == pytest.approx(want, rel=1e-9, abs=1e-6)


def test_companion_wiring_bugs_are_caught(table):
    """Dropping the suppressed cells, or the wrong side of the threshold, fails the check."""
    mech = pv.mechanism(days=DAYS)
    released = table["released"]
    got = _model_loglik(released, mech, "exact")
    sigma, threshold = mech.mechanism.sigma, mech.threshold
    dropped = _brute_exact(released, sigma, threshold, drop_suppressed=True)
    other_side = _brute_exact(released, sigma, threshold, at_least=False)
    for wrong in (dropped, other_side):
        assert got != pytest.approx(wrong, rel=1e-9, abs=1e-6)


@pytest.mark.parametrize("analysis", ["zero", "published"])
def test_naive_logliks_match_scipy(table, analysis):
    mech = pv.mechanism(days=DAYS)
    got = _model_loglik(table["released"], mech, analysis)
    assert got == pytest.approx(_brute_naive(table["released"], analysis), rel=1e-12)
    other = "published" if analysis == "zero" else "zero"
    assert got != pytest.approx(_brute_naive(table["released"], other), rel=1e-6)


def test_release_follows_the_tiers_and_the_publish_rule():
    mech = pv.mechanism(days=DAYS)
    np.testing.assert_allclose(mech.mechanism.sigma[:, 0] ** 2, [10 / (2 * r) for r in _rhos()])
    assert mech.privacy.rho == pytest.approx(0.015, rel=1e-12)
    t = pv.simulate(days=DAYS)
    shown = ~np.isnan(t["released"])
    assert np.all(t["released"][shown] >= mech.threshold[shown])
    assert np.array_equal(t["released"][shown], np.round(t["released"][shown]))
    # at exactly the threshold: published under "at_least", suppressed under "above"
    on = np.full((len(pv.COUNTRIES), DAYS), np.nan)
    on[0, 0] = 90.0
    assert np.isfinite(mech.logpdf(on, t["views"])).all()
    assert np.isneginf(pv.mechanism(days=DAYS, publish="above").logpdf(on, t["views"])).all()


def _rhos():
    return [pv.TIERS[tier][0] for tier, _ in pv.COUNTRIES]


def test_bad_analysis_is_refused_by_name(table):
    message = "analysis must be one of 'published', 'zero', 'exact', got 'naive'"
    with pytest.raises(ValueError, match=message):
        pv.pymc_model(table["released"], pv.mechanism(days=DAYS), analysis="naive")


# --- one small run through the command line -------------------------------------------


@pytest.fixture(scope="module")
def summary(tmp_path_factory):
    """The command-line run of ``tests/test_cli_run.py`` (its checks included), made once here."""
    from test_cli_run import RUN_ELSEWHERE, SEED, TINY, check_end_to_end  # tests/ is on the path

    assert "pageviews" in RUN_ELSEWHERE and SEED["pageviews"] == 3
    assert TINY["pageviews"] == ["--days", "14", "--draws", "100", "--tune", "100"]
    out = tmp_path_factory.mktemp("pageviews")
    saved = check_end_to_end("pageviews", out)
    assert {"posterior.nc", "published.nc", "zero.nc", "pageviews.png"} <= {
        p.name for p in (out / "out").iterdir()
    }
    return saved


def test_report_has_three_analyses_truth_and_diagnostics(summary):
    rows = summary["rows"]
    params = [f"views[{c}]" for c in range(len(pv.COUNTRIES))]
    params += [f"weekly[{d}]" for d in range(7)] + ["trend"]
    for analysis in [*pv.ANALYSES.values(), "truth"]:
        assert [r["parameter"] for r in rows if r["analysis"] == analysis] == params
    truth = {r["parameter"]: r["mean"] for r in rows if r["role"] == "truth"}
    assert truth["views[2]"] == 70.0 and truth["trend"] == pytest.approx(math.log(1.25))
    diag = summary["diagnostics"]
    for key in pv.ANALYSES:
        assert diag[f"{key}_rhat_params"] >= 1.0 - 1e-3 and diag[f"{key}_ess_params"] > 0
    assert 0 < diag["suppressed_cells"] < len(pv.COUNTRIES) * 14
    assert diag["suppressed_lower"] > 0 and diag["suppressed_higher"] > 0
    text = " ".join(summary["setting"] + summary["notes"])
    for words in ("sigma 18.3, 90.0, 179.8", "at least 90, 550, 1000", "0.015-zCDP", "R-hat"):
        assert words in text


def _z_scores(summary, analysis):
    rows = {(r["analysis"], r["parameter"]): r for r in summary["rows"]}
    return np.array(
        [
            (rows[(pv.ANALYSES[analysis], f"views[{c}]")]["mean"] - views)
            / rows[(pv.ANALYSES[analysis], f"views[{c}]")]["sd"]
            for c, (_, views) in enumerate(pv.COUNTRIES)
        ]
    )


def test_exact_analysis_recovers_the_views_better_than_the_naive_ones(summary):
    # The exact posterior of each country's views covers the generating value: |z| < 4 for
    # each of the 9 countries fails with probability about 9 x 6.3e-5 = 6e-4 over random data
    # for a calibrated posterior (normal approximation; NUTS error is far smaller than the sd).
    assert np.all(np.abs(_z_scores(summary, "exact")) < 4)
    # Mean |log error| of the views: the suppressed-as-zero fit is biased by a factor of 2 to
    # 10 on the three mostly suppressed countries (0.80 on this table against 0.058 exact; the
    # exact error's sd over random data is about 0.02, so 3x fails with probability < 1e-6);
    # the published-only fit is biased up on the same countries (0.131 here: the exact error
    # exceeds it with probability about 1e-4).
    diag = summary["diagnostics"]
    exact = diag["exact_views_log_error"]
    assert diag["zero_views_log_error"] > 3 * exact
    assert diag["published_views_log_error"] > exact


def test_companion_suppressed_as_zero_fails_the_coverage_check(summary):
    """The zero fit mishandles exactly the suppressed cells; the same check must catch it."""
    assert not np.all(np.abs(_z_scores(summary, "zero")) < 4)
    assert not np.all(np.abs(_z_scores(summary, "published")) < 4)


# --- the standardised parameters give the posterior of the raw ones ---------------------

PARAMETERS = ("log_views", "weekly", "trend")
DRAWS = 400


def _raw_model(released, mech):
    """The model on its raw parameters (as first written), started at the rough fit."""
    import pymc as pm

    days = released.shape[1]
    with pm.Model() as model:
        start = pv.rough_fit(released, mech)["log_views"]
        log_views = pm.Normal("log_views", *pv.PRIOR_VIEWS, shape=len(start), initval=start)
        weekly = pm.ZeroSumNormal("weekly", sigma=pv.PRIOR_WEEKLY, shape=7)
        trend = pm.Normal("trend", 0.0, pv.PRIOR_TREND)
        lam = pm.math.exp(pv._log_rate(log_views, weekly, trend, days))
        mech.to_pymc("y", pm.Poisson.dist(mu=lam), observed=released)
    return model


def _draws(model, seed):
    """Draws of the parameters, each ``(chains, draws, n)``: 2 chains of 400 after 300 tuning."""
    import pymc as pm

    with model:
        idata = pm.sample(
            DRAWS,
            tune=300,
            chains=2,
            cores=1,
            random_seed=seed,
            init="adapt_diag",
            progressbar=False,
            compute_convergence_checks=False,
        )
    post = idata.posterior
    return {n: np.asarray(post[n]).reshape(2, DRAWS, -1) for n in PARAMETERS}


def _mean_z_scores(a, b):
    """``(mean_a - mean_b) / MCSE`` of every parameter component (ESS of the mean)."""
    from dpinfer.results import effective_sample_size

    z = []
    for name in PARAMETERS:
        for x, y in zip(np.moveaxis(a[name], -1, 0), np.moveaxis(b[name], -1, 0), strict=True):
            se2 = sum(v.var() / effective_sample_size(v, method="mean") for v in (x, y))
            z.append((x.mean() - y.mean()) / math.sqrt(se2))
    return np.array(z)


def _unscaled(name, centre, scale, mu, sigma):
    """A planted bug: the standardised prior keeps the sd of the raw one (not sd / scale)."""
    import pymc as pm

    centre, scale = np.asarray(centre, dtype=float), np.asarray(scale, dtype=float)
    z = pm.Normal(
        f"{name}_z", (mu - centre) / scale, sigma, shape=centre.shape, initval=0 * centre
    )
    return pm.Deterministic(name, centre + scale * z)


@pytest.fixture(scope="module")
def raw_draws(table):
    return _draws(_raw_model(table["released"], pv.mechanism(days=DAYS)), seed=11)


def test_standardised_posterior_is_the_raw_one(table, raw_draws):
    # 17 components (9 log views, 7 weekly, the trend): each difference of means over its
    # Monte Carlo standard error is about N(0, 1) when the posteriors agree, so max |z| > 4.5
    # fails with probability about 17 x 6.8e-6 = 1.2e-4 (ESS estimates add a little slack).
    new = _draws(pv.pymc_model(table["released"], pv.mechanism(days=DAYS)), seed=12)
    z = _mean_z_scores(new, raw_draws)
    assert z.size == 17 and np.all(np.abs(z) < 4.5), z.round(2)


def test_companion_unscaled_prior_fails_the_comparison(table, raw_draws, monkeypatch):
    monkeypatch.setattr(pv, "_standardised", _unscaled)
    wrong = _draws(pv.pymc_model(table["released"], pv.mechanism(days=DAYS)), seed=12)
    assert not np.all(np.abs(_mean_z_scores(wrong, raw_draws)) < 4.5)


def _map(model):
    import pymc as pm

    point = pm.find_MAP(model=model, progressbar=False)
    return np.concatenate([np.ravel(point[name]) for name in PARAMETERS])


@pytest.fixture(scope="module")
def raw_map(table):
    return _map(_raw_model(table["released"], pv.mechanism(days=DAYS)))


def test_map_is_the_raw_models(table, raw_map):
    """An affine change of variables with constant coefficients keeps the mode where it was."""
    new = _map(pv.pymc_model(table["released"], pv.mechanism(days=DAYS)))
    np.testing.assert_allclose(new, raw_map, rtol=0, atol=2e-3)  # L-BFGS stops within ~5e-4


def test_companion_unscaled_prior_moves_the_map(table, raw_map, monkeypatch):
    monkeypatch.setattr(pv, "_standardised", _unscaled)
    wrong = _map(pv.pymc_model(table["released"], pv.mechanism(days=DAYS)))
    assert np.max(np.abs(wrong - raw_map)) > 0.1
