"""Posterior predictive draws of a ``to_pymc`` variable are releases: latent plus noise.

``pm.draw`` of the observed variable draws what ``sample_posterior_predictive`` draws.
Marginalised (a Poisson(30) latent, discrete Gaussian noise of sigma 2): the draws'
variance is 30 + 4 (about 34, by the noise's own variance 3.9999...), not the latent's
30 nor the noise's 4. With 20,000 draws its standard error is about 34 x sqrt(2 / 20,000)
= 0.34 (the kurtosis of a Poisson(30) plus noise is close to a normal's), so the check
allows 1.5 (4.4 s.e.; false failure below 1e-5); the latent alone is 12 s.e. away. With a
tensor value (the value fixed at 10, Laplace noise of scale 2): mean 10 and variance 8
(2 b^2), standard errors 0.02 and 0.17 at 20,000 draws; the checks allow 0.1 and 0.8.
Seeds are fixed, so outcomes are deterministic.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest

import dpinfer as dp

DRAWS = 20_000


def _marginal_draws():
    mech = dp.DiscreteGaussian(2.0)
    with pm.Model():
        y = dp.to_pymc("y", pm.Poisson.dist(mu=30.0), observed=[(mech, np.array([31]))])
    return pm.draw(y, draws=DRAWS, random_seed=1).ravel(), mech


def test_draws_of_a_marginalised_variable_are_the_latent_plus_noise():
    draws, mech = _marginal_draws()
    noise_variance = float(np.var(mech.release(np.zeros(200_000, dtype=np.int64), rng=2)))
    assert draws.dtype.kind == "i"
    assert np.mean(draws) == pytest.approx(30.0, abs=0.2)
    assert np.var(draws) == pytest.approx(30.0 + noise_variance, abs=1.5)


def test_companion_the_variance_check_tells_releases_from_confidential_values():
    latent = np.random.default_rng(3).poisson(30.0, DRAWS)  # what the draws are not
    assert abs(np.var(latent) - 34.0) > 1.5


def test_draws_of_a_variable_observed_through_a_tensor_value_are_releases():
    mech = dp.Laplace(2.0, event_shape=(2,))
    with pm.Model():
        y = mech.to_pymc("y", pm.math.constant(np.array([10.0, -3.0])), observed=[9.5, -2.0])
    draws = pm.draw(y, draws=DRAWS, random_seed=4)
    assert draws.shape == (DRAWS, 2)
    np.testing.assert_allclose(draws.mean(axis=0), [10.0, -3.0], atol=0.1)
    np.testing.assert_allclose(draws.var(axis=0), [8.0, 8.0], atol=0.8)


def test_suppressed_cells_are_drawn_at_their_cut():
    mech = dp.Thresholded(dp.DiscreteGaussian(1.0), threshold=10)
    with pm.Model():
        y = mech.to_pymc("y", pm.math.constant(np.array(9)), observed=np.nan)
    draws = pm.draw(y, draws=2_000, random_seed=5)
    assert draws.dtype.kind == "i" and set(np.unique(draws[draws < 10])) == {9}
