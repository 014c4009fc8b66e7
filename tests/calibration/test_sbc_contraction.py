"""``dp.sbc`` warns about degenerate draws and reports each parameter's contraction.

A sampler that returns one constant for every release passed the rank test (p = 0.66
at 200 replicates on the Poisson-Gamma problem: the constant is near the prior median),
and one that returns the prior passes it too: SBC's known blind spot. The result now
carries ``contraction = 1 - mean posterior variance / prior variance`` beside the
p-values, and ``sbc`` warns (``dp.DegenerateDrawsWarning``) when draws have no spread.

Statistical checks (fixed seeds, so deterministic). Normal-normal problem: theta ~
N(0, 4), s ~ N(theta, 1), Gaussian noise of scale 1, so every posterior has variance
v = 1 / (1/4 + 1/2) = 4/3 and the exact contraction is 1 - v / 4 = 2/3. Its Monte
Carlo error: 100 replicates of 200 draws estimate v to a relative 0.010 (sqrt(2/199/100))
and 20,000 prior draws estimate 4 to 0.010, so the contraction's standard error is
about (v / 4) x 0.014 = 0.005; the check allows 0.025 (5 s.e., false failure below
1e-6). A sampler returning the prior (Gamma(4) on the Poisson problem, 200 draws each)
has contraction 0 with standard error about 0.016 (the Gamma's kurtosis added); the
check allows 0.08 (5 s.e.). The planted companions (posteriors twice as wide, the
prior) must miss the closed form by far more.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.stats as st

import dpinfer as dp

from . import _poisson

TAU2, NOISE2 = 4.0, 2.0  # prior variance; variance of s_dp given theta (1 + 1)
V = 1 / (1 / TAU2 + 1 / NOISE2)
EXACT_CONTRACTION = 1 - V / TAU2  # 2/3


def _normal_model():
    return dp.Model(
        prior={"theta": st.norm(0.0, np.sqrt(TAU2))},
        simulate=lambda p, rng: p["theta"] + rng.standard_normal(p["theta"].shape),
    )


def _normal_posterior(widen: float = 1.0):
    def sample(released, rng):
        mean = V * float(released) / NOISE2
        draws = mean + widen * np.sqrt(V) * rng.standard_normal(200)
        return _poisson.posterior(draws)

    return sample


def _run(sample, model=None, mech=None, replicates=100, seed=5):
    model = model or _poisson.model()
    mech = mech or _poisson.mechanism()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = dp.sbc(sample, model, mech, replicates=replicates, rng=seed, progressbar=False)
    degenerate = [w for w in caught if issubclass(w.category, dp.DegenerateDrawsWarning)]
    return result, degenerate


def _constant(draws):
    def sample(released, rng):
        return _poisson.posterior(np.full(draws, 9.0), chains=1)

    return sample


@pytest.mark.parametrize("draws", [1, 100])
def test_a_sampler_returning_one_constant_warns(draws):
    result, degenerate = _run(_constant(draws), replicates=200, seed=11)
    if draws == 1:
        assert result.p_values["theta"] > 0.05  # the rank test alone passes it (0.66)
    assert len(degenerate) == 1
    assert "theta (one value in every replicate)" in str(degenerate[0].message)
    assert degenerate[0].filename == __file__


def test_a_sampler_whose_draws_repeat_a_few_values_warns():
    def few(released, rng):
        exact = np.asarray(_poisson.exact(released, rng).posterior["theta"]).ravel()
        return _poisson.posterior(np.round(exact[:3], 1).repeat(len(exact) // 3 + 1)[:200])

    _, degenerate = _run(few)
    assert len(degenerate) == 1 and "too few distinct values in 100 of 100" in str(
        degenerate[0].message
    )


def test_companion_the_exact_sampler_does_not_warn():
    _, degenerate = _run(_poisson.exact)
    assert degenerate == []


def test_a_sampler_returning_the_prior_shows_no_contraction():
    def prior(released, rng):
        return _poisson.posterior(st.gamma(4.0, scale=2.5).rvs(size=200, random_state=rng))

    result, degenerate = _run(prior, replicates=200)
    assert result.p_values["theta"] > 1e-3  # SBC's blind spot: the ranks are uniform
    assert abs(result.contraction["theta"]) < 0.08
    assert degenerate == []
    exact, _ = _run(_poisson.exact, replicates=200)
    assert exact.contraction["theta"] > 0.3  # the release says something: 0.42


def test_an_exact_sampler_has_the_closed_form_contraction():
    mech = dp.Gaussian(1.0)
    result, _ = _run(_normal_posterior(), _normal_model(), mech)
    assert result.contraction["theta"] == pytest.approx(EXACT_CONTRACTION, abs=0.025)
    np.testing.assert_allclose(result.prior_variances, [TAU2], rtol=0.05)
    assert np.mean(result.posterior_variances) == pytest.approx(V, rel=0.05)


@pytest.mark.parametrize("widen", [np.sqrt(2.0), 0.5])
def test_companion_a_posterior_of_the_wrong_width_misses_the_closed_form(widen):
    result, _ = _run(_normal_posterior(widen), _normal_model(), dp.Gaussian(1.0))
    # contraction 1 - widen^2 v / 4: 1/3 for twice the variance, 5/6 for a quarter
    assert abs(result.contraction["theta"] - EXACT_CONTRACTION) > 0.1


def test_the_contraction_is_shown_beside_the_p_values_and_exported(tmp_path):
    result, _ = _run(_poisson.exact, replicates=20)
    assert f"contraction = {result.contraction['theta']:.3g}" in repr(result)
    path = tmp_path / "sbc.nc"
    result.to_inference_data().to_netcdf(path)
    back = dp.SBCResult.from_inference_data(dp.results.from_netcdf(path))
    assert back.contraction == pytest.approx(result.contraction)
    np.testing.assert_allclose(back.posterior_variances, result.posterior_variances)
