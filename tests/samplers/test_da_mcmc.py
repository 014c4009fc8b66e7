"""Record-level DA-MCMC against exact posteriors by summation, and its plumbing.

Counts written as ``n`` records (``_da_references``): the exact posterior is a finite
mixture of conjugate laws. Each statistical check compares the mean, the standard
deviation and the 5/50/95% quantiles (5 z-scores with ESS-based standard errors) at
|z| < 4: a false-failure rate of about 3e-4 per check under a random seed (Bonferroni on
the normal approximation; the seeds are fixed, so the outcomes are deterministic). The
planted bug, an acceptance ratio that scores ``T + t(x*)`` without removing the old
record's ``t(x_i)``, must fail the same check.
"""

from __future__ import annotations

import math

import numba
import numpy as np
import pytest
import scipy.stats as st

import dpinfer as dp
from dpinfer.noise.form import NO_TABLE
from dpinfer.noise.terms import term
from dpinfer.samplers.da import _da_kernels

from ._da_references import (
    Z_LIMIT,
    bernoulli_records_posterior,
    check_draws,
    max_abs_z,
    poisson_records_posterior,
)

N_BERNOULLI = 40
PRIOR_AB = (2.0, 2.0)
LAPLACE_SCALE = 0.6  # epsilon = 1.67 for a count
RELEASED_COUNT = 13.4


def bernoulli_model(*, with_update=True):
    """``n`` Bernoulli(p) records, ``p ~ Beta(2, 2)``; the statistic is the record itself."""
    a, b = PRIOR_AB

    def simulate(params, n, rng):
        return (rng.random((len(params["p"]), n)) < params["p"][:, None]).astype(np.int64)

    def update(records, rng):
        ones = records.sum(axis=1)
        return {"p": rng.beta(a + ones, b + records.shape[1] - ones)}

    def loglik(records, params):
        ones = records.sum(axis=1)
        p = params["p"]
        return ones * np.log(p) + (records.shape[1] - ones) * np.log1p(-p)

    return dp.RecordModel(
        prior={"p": st.beta(a, b)},
        simulate=simulate,
        statistic=lambda x: x,
        update=update if with_update else None,
        loglik=loglik,
    )


def laplace_log_eta(scale):
    return lambda released, s: st.laplace.logpdf(released, loc=s, scale=scale)


@pytest.fixture(scope="module")
def bernoulli_exact():
    return bernoulli_records_posterior(
        RELEASED_COUNT, laplace_log_eta(LAPLACE_SCALE), N_BERNOULLI, *PRIOR_AB
    )


def run_bernoulli(*, rng=11, draws=1000, tune=200, chains=4, **kwargs):
    model = kwargs.pop("model", None) or bernoulli_model()
    mechanism = kwargs.pop("mechanism", None) or dp.Laplace(LAPLACE_SCALE)
    released = kwargs.pop("released", RELEASED_COUNT)
    kwargs.setdefault("progressbar", False)
    return dp.da_mcmc(
        model,
        mechanism,
        released,
        n=N_BERNOULLI,
        draws=draws,
        tune=tune,
        chains=chains,
        rng=rng,
        **kwargs,
    )


@pytest.fixture(scope="module")
def bernoulli_run():
    return run_bernoulli()


# --- exactness -------------------------------------------------------------------------------


def test_bernoulli_records_match_the_exact_posterior(bernoulli_run, bernoulli_exact):
    z = check_draws(bernoulli_run.posterior["p"].values, bernoulli_exact)
    assert max_abs_z(z) < Z_LIMIT, z
    # the imputed count is the posterior of the confidential sum
    s = bernoulli_run.posterior["s_confidential"].values
    assert set(np.unique(s)) <= set(range(N_BERNOULLI + 1))


@numba.njit
def _sweep_without_old_record(stats, total, proposals, log_u, form):
    """The planted bug: the new sum is scored as ``T + t*``, the old record not removed."""
    n, k = stats.shape
    accepted = np.zeros(n, dtype=np.bool_)
    current = 0.0
    for j in range(k):
        current += term(form, NO_TABLE, j, total[j])
    for i in range(n):
        new = 0.0
        for j in range(k):
            wrong = total[j] + proposals[i, j]
            new += term(form, NO_TABLE, j, wrong)
        if log_u[i] < new - current:
            for j in range(k):
                total[j] += proposals[i, j] - stats[i, j]
                stats[i, j] = proposals[i, j]
            current = 0.0
            for j in range(k):
                current += term(form, NO_TABLE, j, total[j])
            accepted[i] = True
    return accepted, current


def test_planted_acceptance_without_the_old_record_fails(monkeypatch, bernoulli_exact):
    monkeypatch.setattr(_da_kernels, "record_sweep", _sweep_without_old_record)
    planted = run_bernoulli()
    assert max_abs_z(check_draws(planted.posterior["p"].values, bernoulli_exact)) > Z_LIMIT


def test_random_walk_theta_step_matches_the_exact_posterior(bernoulli_exact):
    # No update: three random-walk Metropolis steps of logit(p) per sweep, adapted in tuning.
    idata = run_bernoulli(model=bernoulli_model(with_update=False), draws=1500, tune=300, chains=2)
    assert "random-walk" in idata.attrs["theta_update"]
    rate = idata.sample_stats["theta_acceptance_rate"].values.mean()
    assert 0.15 < rate < 0.7  # the adapted scale moves theta (target 0.44 in one dimension)
    z = check_draws(idata.posterior["p"].values, bernoulli_exact)
    assert max_abs_z(z) < Z_LIMIT, z


POISSON_N, POISSON_PRIOR = 25, (3.0, 1.0)  # theta ~ Gamma(3, rate 1), 25 Poisson(theta) records


def poisson_model():
    alpha, beta = POISSON_PRIOR
    return dp.RecordModel(
        prior={"theta": st.gamma(alpha, scale=1 / beta)},
        simulate=lambda p, n, rng: rng.poisson(p["theta"][:, None], size=(len(p["theta"]), n)),
        statistic=lambda x: x,
        update=lambda x, rng: {"theta": rng.gamma(alpha + x.sum(1), 1 / (beta + x.shape[1]))},
    )


def check_poisson_records(model, mechanism, released, log_eta, **settings):
    """Run ``da_mcmc`` on ``POISSON_N`` records and compare with the exact posterior."""
    exact = poisson_records_posterior(released, log_eta, POISSON_N, *POISSON_PRIOR, s_max=400)
    idata = dp.da_mcmc(model, mechanism, released, n=POISSON_N, progressbar=False, **settings)
    z = check_draws(idata.posterior["theta"].values, exact)
    assert max_abs_z(z) < Z_LIMIT, z
    return idata


@pytest.mark.parametrize(
    ("mechanism", "released", "log_eta"),
    [
        # integer release, exact two-sided geometric noise at epsilon = 2
        (
            dp.DiscreteLaplace(0.5),
            61,
            lambda r, s: st.dlaplace.logpmf(r - s, 2.0),
        ),
        # Gaussian noise of sd 0.7: the other per-coordinate formula
        (dp.Gaussian(0.7), 58.3, lambda r, s: st.norm.logpdf(r, loc=s, scale=0.7)),
    ],
    ids=["discrete-laplace", "gaussian"],
)
def test_poisson_records_match_the_exact_posterior(mechanism, released, log_eta):
    idata = check_poisson_records(
        poisson_model(), mechanism, released, log_eta, draws=800, tune=200, rng=5
    )
    assert idata.attrs["record_kernel"] == "compiled"


# --- the two record kernels make the same decisions -------------------------------------------


def test_speculative_blocks_reproduce_the_compiled_kernel():
    # summary=lambda t: t is the identity, but not None: the generic (logpdf) route.
    base = bernoulli_model()
    generic = dp.RecordModel(
        base.prior, base.simulate, base.statistic, update=base.update, summary=lambda t: t
    )
    compiled = run_bernoulli(draws=200, tune=50, chains=2)
    speculative = run_bernoulli(model=generic, draws=200, tune=50, chains=2)
    assert compiled.attrs["record_kernel"] == "compiled"
    assert speculative.attrs["record_kernel"] == "speculative blocks"
    np.testing.assert_array_equal(
        compiled.posterior["p"].values, speculative.posterior["p"].values
    )
    np.testing.assert_array_equal(
        compiled.sample_stats["record_acceptance_rate"].values,
        speculative.sample_stats["record_acceptance_rate"].values,
    )


@pytest.mark.parametrize(
    "mechanism", [dp.Laplace([0.5, 1.0, 2.0]), dp.Gaussian(0.8, event_shape=(3,))]
)
def test_speculative_sweep_makes_the_kernel_decisions(mechanism):
    # Random sweeps over three-coordinate integer statistics (a third of the offers equal the
    # record they replace, so the sum does not move): same accepted records, same sum.
    from dpinfer.samplers.da._records import speculative_sweep

    rng = np.random.default_rng(6)
    released = np.array([30.5, 12.0, 61.2])
    form = mechanism.cell_form(released)
    for _ in range(20):
        stats = rng.integers(0, 3, size=(300, 3)).astype(float)
        proposals = np.where(rng.random((300, 1)) < 1 / 3, stats, rng.integers(0, 3, (300, 3)))
        total = stats.sum(axis=0) + rng.normal(0, 2, size=3)
        log_u = -rng.standard_exponential(300)
        a_stats, a_total = stats.copy(), total.copy()
        kernel = _da_kernels.record_sweep(a_stats, a_total, proposals, log_u, form)
        b_stats, b_total = stats.copy(), total.copy()
        blocks = speculative_sweep(
            lambda t: mechanism.logpdf(released, t), b_stats, b_total, proposals, log_u
        )
        np.testing.assert_array_equal(kernel[0], blocks[0])
        np.testing.assert_array_equal(a_stats, b_stats)
        np.testing.assert_allclose(a_total, b_total, rtol=1e-15)
        assert kernel[1] == pytest.approx(blocks[1], rel=1e-12)
        assert 0.05 < kernel[0].mean() < 0.95


def test_a_summary_maps_the_sum_to_the_release():
    # Releasing the proportion s / n with noise b / n is the same experiment as releasing s
    # with noise b: the density ratios agree, so the summary route (scored through
    # mechanism.logpdf in speculative blocks) makes the compiled kernel's decisions.
    base = bernoulli_model()
    proportion = dp.RecordModel(
        base.prior,
        base.simulate,
        base.statistic,
        update=base.update,
        summary=lambda total: total / N_BERNOULLI,
    )
    scaled = run_bernoulli(
        model=proportion,
        mechanism=dp.Laplace(LAPLACE_SCALE / N_BERNOULLI),
        released=RELEASED_COUNT / N_BERNOULLI,
        draws=200,
        tune=50,
        chains=2,
    )
    counted = run_bernoulli(draws=200, tune=50, chains=2)
    assert scaled.attrs["record_kernel"] == "speculative blocks"
    np.testing.assert_array_equal(scaled.posterior["p"].values, counted.posterior["p"].values)
    np.testing.assert_allclose(
        scaled.posterior["s_confidential"].values * N_BERNOULLI,
        counted.posterior["s_confidential"].values,
        rtol=1e-12,
    )


# --- results, reproducibility, executors ------------------------------------------------------


def test_result_layout(bernoulli_run):
    idata = bernoulli_run
    assert idata.posterior["p"].shape == (4, 1000)
    assert idata.posterior["s_confidential"].shape == (4, 1000)
    stats = idata.sample_stats
    assert set(stats.data_vars) == {
        "record_acceptance_rate",
        "theta_acceptance_rate",
        "log_mechanism_density",
    }
    rate = stats["record_acceptance_rate"].values
    assert np.all((rate >= 0) & (rate <= 1)) and 0.05 < rate.mean() < 0.95
    assert np.all(stats["theta_acceptance_rate"].values == 1.0)
    attrs = idata.attrs
    assert attrs["method"] == "da_mcmc" and attrs["n_records"] == N_BERNOULLI
    assert attrs["acceptance_rate"] == pytest.approx(rate.mean())
    assert attrs["n_simulations"] >= 4 * N_BERNOULLI * 1200
    assert attrs["rhat_max"] < 1.01 and attrs["ess"] > 1000
    # the log-density reported is the mechanism's at the imputed statistic
    s = idata.posterior["s_confidential"].values
    np.testing.assert_allclose(
        stats["log_mechanism_density"].values,
        dp.Laplace(LAPLACE_SCALE).logpdf(RELEASED_COUNT, s[..., None].astype(float).squeeze(-1)),
        rtol=1e-12,
    )


def test_arviz_summary_has_finite_rhat_without_warnings(bernoulli_run, recwarn):
    import arviz as az

    summary = az.summary(bernoulli_run, var_names=["p"])
    assert np.isfinite(summary["r_hat"]).all() and np.isfinite(summary["ess_bulk"]).all()
    assert not [w for w in recwarn if "arviz" in str(w.filename)]


# --- a model built from PyMC ------------------------------------------------------------------


def test_record_model_from_pymc_matches_the_exact_posterior():
    import pymc as pm

    alpha, beta = POISSON_PRIOR
    with pm.Model() as one_record:
        theta = pm.Gamma("theta", alpha=alpha, beta=beta)
        pm.Poisson("x", mu=theta)
    model = dp.RecordModel.from_pymc(one_record, record="x", statistic=lambda x: x)
    assert model.support == {"theta": (0.0, math.inf)}
    records = np.array([[0, 3, 1], [2, 2, 5]])
    params = {"theta": np.array([1.5, 2.5])}
    expected = st.poisson.logpmf(records, params["theta"][:, None]).sum(axis=1)
    np.testing.assert_allclose(model.loglik(records, params), expected, rtol=1e-10)

    released, mech = 58.3, dp.Gaussian(0.7)
    log_eta = lambda r, s: st.norm.logpdf(r, loc=s, scale=0.7)  # noqa: E731
    check_poisson_records(model, mech, released, log_eta, draws=600, tune=200, chains=2, rng=8)


def test_record_model_from_pymc_with_a_covariate():
    # A record (x, y): x ~ N(0, 1) depends on no parameter, y | x ~ N(theta x, 1). Every
    # record of every dataset draws its own x, and y uses that x.
    import pymc as pm

    with pm.Model() as one_record:
        theta = pm.Normal("theta", 0.0, 1.0)
        x = pm.Normal("x", 0.0, 1.0)
        pm.Normal("y", theta * x, 1.0)
    model = dp.RecordModel.from_pymc(one_record, record=["x", "y"], statistic=lambda r: r)
    params = {"theta": np.array([2.0, -1.0])}
    records = model.simulate_records(params, 5000, np.random.default_rng(0))
    assert records.shape == (2, 5000, 2)
    x, y = records[..., 0], records[..., 1]
    assert len(np.unique(x)) == x.size  # no draw shared across records or datasets
    slope = (x * y).sum(axis=1) / (x * x).sum(axis=1)
    np.testing.assert_allclose(slope, params["theta"], atol=4 / np.sqrt(5000))  # 4 se
    expected = st.norm.logpdf(x).sum(axis=1) + st.norm.logpdf(
        y, loc=params["theta"][:, None] * x
    ).sum(axis=1)
    np.testing.assert_allclose(model.loglik(records, params), expected, rtol=1e-10)
