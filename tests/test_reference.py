"""PyMC reference models: the three likelihood paths, metadata, and accuracy against quadrature."""

from __future__ import annotations

import math

import numpy as np
import pymc as pm
import pytest
import scipy.stats as st
from samplers.test_diagnostics import check_clean_summary  # tests/ is on the path
from scipy.integrate import quad
from scipy.special import logsumexp

import dpinfer as dp
from dpinfer.reference import reference_model, sample_nuts, sample_reference

# A normal location model released through Laplace noise:
# mu ~ N(0, PRIOR_SD), s | mu ~ N(mu, 1), s_dp = s + Lap(B).
PRIOR_SD, B, RELEASE = 3.0, 2.0, 4.1


def _build_normal():
    mu = pm.Normal("mu", 0.0, PRIOR_SD)
    return pm.Normal("s", mu, 1.0)


def _log_marginal(mu):
    """log p(s_dp | mu): the N(mu, 1) * Laplace(B) convolution in closed form."""
    d = RELEASE - np.asarray(mu, dtype=float)
    a = -d / B + st.norm.logcdf(d - 1 / B)
    b = d / B + st.norm.logcdf(-d - 1 / B)
    return -math.log(2 * B) + 1 / (2 * B**2) + np.logaddexp(a, b)


def _exact_posterior_grid():
    grid = np.linspace(-12, 16, 20_001)
    logp = st.norm.logpdf(grid, 0, PRIOR_SD) + _log_marginal(grid)
    w = np.exp(logp - logp.max())
    w /= np.trapezoid(w, grid)
    cdf = np.concatenate([[0], np.cumsum((w[1:] + w[:-1]) / 2 * np.diff(grid))])
    return grid, w, cdf


def test_closed_form_marginal_matches_quadrature():
    for mu in (-1.0, 2.0, 4.1, 7.5):
        by_quad, _ = quad(
            lambda s, m=mu: st.norm.pdf(s, m, 1) * st.laplace.pdf(RELEASE, s, B),
            -30,
            30,
            points=[RELEASE],
        )
        assert math.exp(_log_marginal(mu)) == pytest.approx(by_quad, rel=1e-9)


@pytest.mark.slow
def test_latent_path_matches_quadrature_posterior():
    idata = sample_reference(
        _build_normal, dp.Laplace(B, sensitivity=1.0), RELEASE, draws=1000, rng=5
    )
    attrs = idata.posterior.attrs
    assert attrs["method"] == "pymc_nuts"
    assert float(attrs["rhat_max"]) < 1.01
    draws, ess = np.asarray(idata.posterior["mu"]).ravel(), float(attrs["ess"])
    grid, pdf, cdf = _exact_posterior_grid()
    mean = np.trapezoid(grid * pdf, grid)
    sd = math.sqrt(np.trapezoid((grid - mean) ** 2 * pdf, grid))
    naive_mean = RELEASE * PRIOR_SD**2 / (PRIOR_SD**2 + 1)  # s_dp taken as s (planted bug)
    z, z_naive = [(draws.mean() - mean) / (sd / math.sqrt(ess))], []
    z_naive.append((draws.mean() - naive_mean) / (sd / math.sqrt(ess)))
    for q in (0.05, 0.5, 0.95):
        xq = np.interp(q, cdf, grid)
        se = math.sqrt(q * (1 - q) / ess) / np.interp(xq, grid, pdf)
        z.append((np.quantile(draws, q) - xq) / se)
    # 4 scores at |z| < 4 with the chains' bulk ESS: false-failure rate about 2.5e-4
    assert max(abs(v) for v in z) < 4, z
    # Planted bug: the naive posterior mean (release taken as s) is far outside the error
    assert abs(z_naive[0]) > 4, z_naive
    assert idata.observed_data["s_dp"].item() == RELEASE
    assert "s" in idata.posterior  # the latent statistic is kept


def _potential_fn(model):
    """The potential ``s_dp`` as a function of the model's (transformed) value variables."""
    (graph,) = model.replace_rvs_by_values([model.potentials[0]])
    return model.compile_fn(graph, inputs=model.value_vars, point_fn=False)


def test_support_path_is_the_marginal_likelihood():
    mech = dp.Laplace(5.0, sensitivity=1.0)
    support = np.arange(0, 160)

    def build():
        return pm.Poisson.dist(pm.Gamma("theta", 25.0, 1.0))

    model = reference_model(build, mech, 37.4, support=support)
    value = _potential_fn(model)
    theta = 31.7
    brute = logsumexp(st.poisson.logpmf(support, theta) + mech.logpdf(37.4, support))
    assert float(value(np.log(theta))) == pytest.approx(brute, rel=1e-12)

    # the custom-likelihood path with the same expression gives the same value
    def loglik(dist, released):
        terms = pm.logp(dist, support) + mech.logpdf(released, support)
        return pm.math.logsumexp(terms)

    custom = reference_model(build, mech, 37.4, loglik=loglik)
    value2 = _potential_fn(custom)
    assert float(value2(np.log(theta))) == pytest.approx(brute, rel=1e-12)


def test_latent_path_uses_the_mechanism_density():
    mech = dp.Laplace(B, sensitivity=1.0)
    model = reference_model(_build_normal, mech, RELEASE)
    logp = model.compile_logp(vars=[model["s_dp"]])
    point = {"mu": 0.3, "s": 2.5}
    assert float(logp(point)) == pytest.approx(float(mech.logpdf(RELEASE, [2.5])[0]))


def test_argument_errors():
    mech = dp.Laplace(B, sensitivity=1.0)
    with pytest.raises(ValueError, match="at most one"):
        reference_model(_build_normal, mech, RELEASE, support=[0, 1], loglik=lambda *a: 0)
    with pytest.raises(ValueError, match="support"):
        reference_model(_build_normal, mech, RELEASE, support=[[0, 1]])
    with pytest.raises(TypeError, match="loglik"):
        reference_model(_build_normal, mech, RELEASE, loglik=3)
    with pytest.raises(ValueError, match="released"):
        reference_model(_build_normal, mech, [1.0, 2.0])
    with pm.Model() as m:
        pm.Normal("x")
    with pytest.raises(ValueError, match="tune"):
        sample_nuts(m, tune=-1)
    with pytest.raises(ValueError, match="draws"):
        sample_nuts(m, draws=0)


def test_metadata_and_diagnostics():
    # the same seed giving the same draws: over the sampler registry, in
    # samplers/test_executors.py
    mech = dp.Laplace(B, sensitivity=1.0)
    a = sample_reference(_build_normal, mech, RELEASE, rng=9, draws=100, tune=100, chains=2)
    attrs = a.posterior.attrs
    assert a.posterior["mu"].shape == (2, 100)
    check_clean_summary(a)  # finite R-hat and ESS, no warning from az.summary
    assert attrs["seed"] == "9" and attrs["epsilon"] == 0.5
    assert isinstance(attrs["divergences"], int) and attrs["divergences"] >= 0
    assert math.isfinite(attrs["rhat_max"]) and math.isfinite(attrs["ess"])
    assert "diverging" in a.sample_stats


# --- one PyMC model for ABC, MCEM and the reference ---------------------------------------------


def _normal_from_pymc():
    with pm.Model() as pymc_model:
        mu = pm.Normal("mu", 0.0, PRIOR_SD)
        pm.Normal("s", mu, 1.0)
    return dp.Model.from_pymc(pymc_model, statistic="s")


def _poisson_from_pymc():
    with pm.Model() as pymc_model:
        theta = pm.Gamma("theta", 25.0, 1.0)
        pm.Poisson("s", theta)
    return dp.Model.from_pymc(pymc_model, statistic="s")


def check_same_log_density(a, b, points):
    """The two PyMC models have the same joint log density at every point."""
    fa, fb = a.compile_logp(), b.compile_logp()
    for point in points:
        assert float(fa(point)) == pytest.approx(float(fb(point)), rel=1e-12), point


LATENT_POINTS = [{"mu": m, "s": s} for m, s in ((0.3, 2.5), (-1.0, 4.1), (5.0, -2.0))]


def test_model_from_pymc_gives_the_latent_reference_of_the_build_path():
    mech = dp.Laplace(B, sensitivity=1.0)
    from_model = reference_model(_normal_from_pymc(), mech, RELEASE)
    from_build = reference_model(_build_normal, mech, RELEASE)
    assert [v.name for v in from_model.free_RVs] == ["mu", "s"]
    check_same_log_density(from_model, from_build, LATENT_POINTS)


def test_planted_wrong_scale_fails_the_same_density_check():
    from_model = reference_model(_normal_from_pymc(), dp.Laplace(2 * B), RELEASE)
    from_build = reference_model(_build_normal, dp.Laplace(B), RELEASE)
    with pytest.raises(AssertionError):
        check_same_log_density(from_model, from_build, LATENT_POINTS)


def test_model_from_pymc_sums_a_discrete_statistic_out():
    mech = dp.Laplace(5.0, sensitivity=1.0)
    support = np.arange(0, 160)
    model = _poisson_from_pymc()
    from_model = reference_model(model, mech, 37.4, support=support)
    from_build = reference_model(
        lambda: pm.Poisson.dist(pm.Gamma("theta", 25.0, 1.0)), mech, 37.4, support=support
    )
    assert [v.name for v in from_model.free_RVs] == ["theta"]  # the count is summed out
    points = [{"theta_log__": np.log(t)} for t in (20.0, 31.7, 45.0)]
    check_same_log_density(from_model, from_build, points)
    # and the source model is left as it was, for ABC and MCEM
    assert [v.name for v in model.pymc_model.free_RVs] == ["theta", "s"]
    assert not model.pymc_model.potentials


def test_without_support_a_discrete_statistic_is_summed_out_with_its_own_windows():
    # the windows dpinfer.to_pymc chooses give the density of a hand-picked wide support
    mech = dp.Laplace(5.0, sensitivity=1.0)
    model = _poisson_from_pymc()
    automatic = reference_model(model, mech, 37.4)
    by_support = reference_model(model, mech, 37.4, support=np.arange(0, 400))
    fa, fb = automatic.compile_logp(), by_support.compile_logp()
    for theta in (20.0, 31.7, 45.0, 150.0):  # the last one far from the release
        point = {"theta_log__": np.log(theta)}
        assert float(fa(point)) == pytest.approx(float(fb(point)), abs=1e-9)


def test_model_from_pymc_argument_errors():
    mech = dp.Laplace(B, sensitivity=1.0)
    with pytest.raises(ValueError, match="is continuous.*leave support out"):
        reference_model(_normal_from_pymc(), mech, RELEASE, support=[0.0, 1.0])
    with pytest.raises(ValueError, match="loglik= is for build callables"):
        reference_model(_normal_from_pymc(), mech, RELEASE, loglik=lambda *a: 0.0)
    plain = dp.Model(prior={"mu": st.norm()}, simulate=lambda p, rng: p["mu"])
    with pytest.raises(ValueError, match="needs a Model built by Model.from_pymc"):
        reference_model(plain, mech, RELEASE)
    with pytest.raises(TypeError, match="model must be a dpinfer.Model .* or a build callable"):
        reference_model("mu ~ N(0, 3)", mech, RELEASE)
    assert dp.sample_reference is sample_reference
