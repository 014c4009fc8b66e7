"""SMC-ABC with several simulations per particle (pseudo-marginal), at small mechanism noise.

``simulations_per_particle=8`` at epsilon = 100.

The Normal-mean example of ``benchmarks/small_noise_smc.py`` at epsilon = 100
(Laplace noise a hundredth of the statistic's spread): mu ~ N(0, 1),
s ~ N(mu, 0.1^2), release 0.3. The exact posterior comes from the closed-form
Normal-Laplace convolution by quadrature on 40001 points.

False-failure rates: the mean is compared within ``Z = 4`` reported errors
``sd / sqrt(ess)`` (the benchmark measured the reported error within 1.1x of
the real one here), about 6e-5; the standard deviation within 4 of its own
errors ``sd / sqrt(2 ess)`` (Normal posterior), about 6e-5. The planted-bug
companion averages the log densities instead of the densities (a biased
likelihood estimate: by Jensen's inequality it penalises the spread of the
simulations, so the target is no longer the posterior: sd 0.04 against 0.10,
ESS 8) and must fail; the check asks for an ESS above 500 (seed 2 gives
1645) so that a check resting on a handful of draws cannot pass.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.stats as st
from scipy.special import log_ndtr, logsumexp

import dpinfer as dp
from dpinfer.samplers import _pseudo_marginal

Z, RELEASE, SD_STAT, EPSILON, M = 4.0, 0.3, 0.1, 100.0, 8
MIN_ESS = 500  # a check resting on fewer draws could not see a wrong spread


def model():
    return dp.Model(
        prior={"mu": st.norm(0, 1)}, simulate=lambda p, rng: rng.normal(p["mu"], SD_STAT)
    )


def mechanism():
    return dp.Laplace.from_privacy(epsilon=EPSILON, sensitivity=SD_STAT)


def exact_posterior():
    b = mechanism().scale
    mu = np.linspace(RELEASE - 1, RELEASE + 1, 40001)
    x, a = RELEASE - mu, SD_STAT / b
    log_conv = np.logaddexp(-x / b + log_ndtr(x / SD_STAT - a), x / b + log_ndtr(-x / SD_STAT - a))
    log_post = st.norm.logpdf(mu) + log_conv
    p = np.exp(log_post - logsumexp(log_post))
    mean = p @ mu
    return mean, np.sqrt(p @ (mu - mean) ** 2)


def run(per_particle, seed=2):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # m = 1 warns of its stuck moves
        return dp.smc_abc(
            model(), mechanism(), RELEASE, particles=2000, rng=seed, progressbar=False,
            simulations_per_particle=per_particle,
        )  # fmt: skip


def matches_exact(idata) -> bool:
    mean, sd = exact_posterior()
    mu, ess = idata.posterior["mu"], idata.attrs["ess"]
    return bool(
        ess > MIN_ESS
        and abs(float(mu.mean()) - mean) < Z * sd / np.sqrt(ess)
        and abs(float(mu.std()) - sd) < Z * sd / np.sqrt(2 * ess)
    )


@pytest.fixture(scope="module")
def averaged():
    return run(M)


def test_several_simulations_match_the_exact_posterior(averaged):
    assert averaged.attrs["simulations_per_particle"] == M
    assert averaged.attrs["n_simulations"] > M * 2000
    assert matches_exact(averaged)


def test_several_simulations_keep_the_moves_accepting(averaged):
    single = run(1)
    last = averaged.attrs["chain_last_acceptance_rate"]
    assert np.all(last > single.attrs["chain_last_acceptance_rate"])
    assert averaged.attrs["ess"] > 2 * single.attrs["ess"]


def test_planted_bug_averaging_log_densities_fails(monkeypatch):
    def mean_of_logs(sim, params, m):
        n = len(next(iter(params.values())))
        repeated = {k: np.repeat(v, m, axis=0) for k, v in params.items()}
        return sim(repeated).reshape(n, m).mean(axis=1)

    monkeypatch.setattr(_pseudo_marginal, "averaged_log_density", mean_of_logs)
    assert not matches_exact(run(M))


@pytest.mark.parametrize("bad", [0, -2, 1.5, "auto", True])
def test_simulations_per_particle_is_validated(bad):
    with pytest.raises((ValueError, TypeError), match="simulations_per_particle"):
        dp.smc_abc(model(), mechanism(), RELEASE, simulations_per_particle=bad, progressbar=False)
