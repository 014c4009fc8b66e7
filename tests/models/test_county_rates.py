"""County rates from a discrete Gaussian table: the example's report, and its wiring.

The marginal kernel itself is checked against brute-force sums and quadrature in
``tests/marginal``; here the example's exact model (:func:`county_rates.pymc_model`) is checked
to be wired to it correctly: its log-likelihood at a point equals ``sum_i log sum_s Poisson(s |
pop_i r_i) eta(y_i | s)`` summed by brute force with SciPy, near the data and far from it. Two
planted-bug companions (the naive model, and the exact model built with the wrong noise scale)
must fail the same check. The end-to-end run is small (20 counties, 100 draws per chain) and
is ``tests/test_cli_run.py``'s command-line run of the example, made once, here.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats as st
from scipy.special import logsumexp

from dpinfer.models import county_rates as cr
from dpinfer.results import from_netcdf

# --- the example end to end, small -----------------------------------------------------------


COUNTIES = 20


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """The command-line run of ``tests/test_cli_run.py`` (its checks included), made once here.

    Returns the saved summary and the output folder.
    """
    from test_cli_run import RUN_ELSEWHERE, SEED, TINY, check_end_to_end  # tests/ is on the path

    assert "county-rates" in RUN_ELSEWHERE and SEED["county-rates"] == 3
    tiny = ["--counties", "20", "--draws", "100", "--tune", "100", "--rho", "0.125"]
    assert TINY["county-rates"] == tiny
    out = tmp_path_factory.mktemp("county-rates")
    summary = check_end_to_end("county-rates", out)
    return summary, out / "out"


def test_report_has_hyperparameters_counties_and_privacy(small):
    summary, out = small
    rows = summary["rows"]
    params = list(dict.fromkeys(r["parameter"] for r in rows))
    assert params[:2] == ["mu", "tau"] and len(params) == 2 + cr.SHOWN
    assert all(p.startswith("rate[") for p in params[2:])
    for p in params:
        assert {r["role"] for r in rows if r["parameter"] == p} == {"naive", "exact", "truth"}
    d = summary["diagnostics"]
    assert d["privacy_rho"] == pytest.approx(0.125, rel=1e-12)
    assert d["privacy_epsilon"] == pytest.approx(0.125 + 2 * math.sqrt(0.125 * math.log(1e6)))
    for key in ("naive", "exact"):
        for name in ("mu", "tau"):
            assert math.isfinite(d[f"{key}_{name}_rhat"]) and d[f"{key}_{name}_ess"] > 0
            assert d[f"{key}_{name}_ess_per_second"] > 0
        assert d[f"{key}_wall_seconds"] > 0 and math.isfinite(d[f"{key}_rhat_max"])
    assert from_netcdf(out / "posterior.nc").posterior["rate"].shape == (2, 100, COUNTIES)
    assert from_netcdf(out / "naive.nc").attrs["likelihood"] == "releases as counts (naive)"


def test_most_different_counties_come_first(small):
    summary, out = small
    rates = [
        np.asarray(from_netcdf(out / name).posterior["rate"])
        for name in ("naive.nc", "posterior.nc")
    ]
    gaps = cr.differences(*(r.reshape(-1, COUNTIES) for r in rates))
    params = list(dict.fromkeys(r["parameter"] for r in summary["rows"]))[2:]
    shown = [int(p.removeprefix("rate[").removesuffix("]")) for p in params]
    assert gaps[shown].tolist() == sorted(gaps, reverse=True)[: cr.SHOWN]


def test_figure_is_written(small):
    _, out = small
    assert (out / "county_rates.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rho": 0.0}, "rho must be from 0.0001 to 100, got 0.0: a positive zCDP budget"),
        ({"rho": 1e3}, "rho must be from 0.0001 to 100"),
        ({"counties": 0}, "counties"),
    ],
)
def test_bad_settings_are_refused_by_name(kwargs, message):
    with pytest.raises(ValueError, match=message):
        cr.simulate(**kwargs)


def test_the_table_is_fixed_and_the_noise_follows_rho():
    a, b = cr.simulate(counties=50), cr.simulate(counties=50, rho=0.01)
    assert np.array_equal(a["count"], b["count"]) and not np.array_equal(
        a["released"], b["released"]
    )
    assert np.array_equal(cr.simulate(counties=10)["population"], a["population"][:10])


# --- the exact model's wiring: its log-likelihood against brute-force sums -------------------

POPULATION = np.array([800, 2500, 12_000, 400])
RELEASED = np.array([-4, 9, 3, 14])
RHO = 0.02  # sigma = 5: noise as large as the counts
#: (mu, tau, z): near the data, and far from it on both sides (NUTS warm-up goes there)
POINTS = [
    (-8.0, 0.5, [0.3, -0.2, 1.0, 0.0]),
    (-3.0, 2.0, [1.5, 0.5, -1.0, 2.0]),  # rates up to 0.9 per person: counts in the thousands
    (-16.0, 0.1, [0.0, -1.0, 1.0, 0.5]),  # about 1e-7 per person: counts of 0
]


def _brute_force_loglik(mu, tau, z, sigma):
    """``sum_i log sum_s Poisson(s | pop_i r_i) eta(y_i | s)``, the counts s from 0 to 20,000.

    The largest Poisson mean here is about 11,000 (sd 105): the counts left out carry less
    than e^-2000 of its mass; the discrete Gaussian's normaliser is summed over |k| <= 60 sigma.
    """
    lam = POPULATION * np.exp(mu + tau * np.asarray(z))
    s = np.arange(20_001)
    k = np.arange(-60 * sigma, 60 * sigma + 1)
    log_norm = logsumexp(-(k**2) / (2 * sigma**2))
    log_eta = -((RELEASED[:, None] - s[None, :]) ** 2) / (2 * sigma**2) - log_norm
    log_pmf = st.poisson.logpmf(s[None, :], lam[:, None])
    return float(logsumexp(log_pmf + log_eta, axis=1).sum())


def _matches_brute_force(model):
    """Whether the log-density of ``cases`` alone is the brute-force sum at every point."""
    logp = model.compile_logp(vars=[model["cases"]], jacobian=False)
    found = [
        float(logp({"mu": m, "tau_log__": math.log(t), "z": np.array(z)})) for m, t, z in POINTS
    ]
    sigma = round(float(cr.mechanism(RHO).sigma))
    expected = [_brute_force_loglik(*p, sigma) for p in POINTS]
    return np.allclose(found, expected, rtol=1e-9, atol=1e-8), found, expected


def test_exact_model_log_likelihood_is_the_brute_force_sum():
    assert cr.mechanism(RHO).sigma == 5.0
    ok, found, expected = _matches_brute_force(
        cr.pymc_model(POPULATION, RELEASED, cr.mechanism(RHO))
    )
    assert ok, (found, expected)


@pytest.mark.parametrize(
    "planted",
    [
        {"naive": True},  # the releases taken as the counts
        {"mech": cr.mechanism(2 * RHO)},  # the model built with another noise scale
    ],
    ids=["naive", "wrong-rho"],
)
def test_planted_bug_fails_the_brute_force_check(planted):
    mech = planted.get("mech", cr.mechanism(RHO))
    model = cr.pymc_model(POPULATION, RELEASED, mech, naive=planted.get("naive", False))
    assert not _matches_brute_force(model)[0]
