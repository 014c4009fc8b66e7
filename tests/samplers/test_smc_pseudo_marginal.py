"""SMC-ABC with several simulations per particle (pseudo-marginal), at small mechanism noise.

``simulations_per_particle=8`` at epsilon = 100, and ``"auto"`` (chosen by a pilot).

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

``"auto"``: at epsilon = 100 the pilot's acceptance climbs from about 0.005 at
m = 1 past the target 0.142 only at m = 32 or 64 (on each of 50 seeds of the
benchmark; never at m = 1), and at epsilon = 1 it is about 0.3 at m = 1, twice
the target (m = 1 on each of 50 seeds), so the choices tested are far from a
boundary (no seed of 50 chose otherwise: a false-failure rate below about 6%
per seed at 95% confidence, and the seeds here are fixed). The auto run is
compared with the exact posterior by the same check (false-failure rate about
1e-4; over 50 seeds of the benchmark its real error was 0.91 to 1.06 times the
reported one). Its planted-bug companion ignores the pilot's acceptance
(always m = 1) and must fail the adaptation check.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.stats as st
from scipy.special import log_ndtr, logsumexp

import dpinfer as dp
from dpinfer.samplers.smc import _pilot, _pseudo_marginal

Z, RELEASE, SD_STAT, EPSILON, M = 4.0, 0.3, 0.1, 100.0, 8
MIN_ESS = 500  # a check resting on fewer draws could not see a wrong spread


def simulate_statistic(params, rng):
    return rng.normal(params["mu"], SD_STAT)


def model():
    # a module-level simulator, so that a spawned process pool can unpickle the model
    return dp.Model(prior={"mu": st.norm(0, 1)}, simulate=simulate_statistic)


def mechanism(epsilon=EPSILON):
    return dp.Laplace.from_privacy(epsilon=epsilon, sensitivity=SD_STAT)


def exact_posterior():
    b = mechanism().scale
    mu = np.linspace(RELEASE - 1, RELEASE + 1, 40001)
    x, a = RELEASE - mu, SD_STAT / b
    log_conv = np.logaddexp(-x / b + log_ndtr(x / SD_STAT - a), x / b + log_ndtr(-x / SD_STAT - a))
    log_post = st.norm.logpdf(mu) + log_conv
    p = np.exp(log_post - logsumexp(log_post))
    mean = p @ mu
    return mean, np.sqrt(p @ (mu - mean) ** 2)


def run(per_particle, seed=2, epsilon=EPSILON, particles=2000, executor=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # m = 1 warns of its stuck moves
        return dp.smc_abc(
            model(), mechanism(epsilon), RELEASE, particles=particles, rng=seed,
            progressbar=False, simulations_per_particle=per_particle, executor=executor,
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


@pytest.fixture(scope="module")
def auto():
    return run("auto")


def adapts_to_small_noise(idata) -> bool:
    """Did the pilot raise m from 1 until its acceptance reached the target, and use it?"""
    a = idata.attrs
    rates, target = a["pilot_acceptance_rate"], a["pilot_target_acceptance"]
    return bool(
        a["simulations_per_particle"] > 1
        and a["simulations_per_particle"] == a["pilot_simulations_per_particle"][-1]
        and rates[-1] >= target
        and np.all(rates[:-1] < target)
    )


def test_auto_keeps_one_simulation_when_the_noise_is_large():
    idata = run("auto", epsilon=1.0, particles=400)
    assert idata.attrs["simulations_per_particle"] == 1
    assert list(idata.attrs["pilot_simulations_per_particle"]) == [1]
    assert idata.attrs["pilot_acceptance_rate"][0] >= idata.attrs["pilot_target_acceptance"]


def test_auto_raises_the_count_when_the_noise_is_small(auto):
    assert adapts_to_small_noise(auto)


def test_auto_matches_the_exact_posterior(auto):
    assert matches_exact(auto)


def test_auto_is_the_fixed_count_run_plus_the_pilot(auto):
    fixed = run(int(auto.attrs["simulations_per_particle"]))
    np.testing.assert_array_equal(auto.posterior["mu"], fixed.posterior["mu"])
    assert auto.attrs["ess"] == fixed.attrs["ess"]
    pilot = auto.attrs["pilot_n_simulations"]
    assert pilot > 200 * auto.attrs["pilot_simulations_per_particle"].sum()
    assert auto.attrs["n_simulations"] == fixed.attrs["n_simulations"] + pilot


def test_auto_gives_the_same_run_on_an_executor(process_pool):
    serial = run("auto", epsilon=10.0, particles=400)
    pooled = run("auto", epsilon=10.0, particles=400, executor=process_pool)
    assert serial.attrs["simulations_per_particle"] > 1
    np.testing.assert_array_equal(serial.posterior["mu"], pooled.posterior["mu"])
    for key in ("n_simulations", "pilot_n_simulations", "simulations_per_particle"):
        assert serial.attrs[key] == pooled.attrs[key]
    np.testing.assert_array_equal(
        serial.attrs["pilot_acceptance_rate"], pooled.attrs["pilot_acceptance_rate"]
    )


def test_planted_bug_auto_ignoring_the_acceptance_fails(monkeypatch):
    choose = _pilot.choose_count

    def first_count_only(run_pilot, *, target, cap):
        return choose(run_pilot, target=0.0, cap=cap)._replace(target=target)

    monkeypatch.setattr(_pilot, "choose_count", first_count_only)
    assert not adapts_to_small_noise(run("auto"))


@pytest.mark.filterwarnings("ignore:smc_abc. the final population is degenerate")
def test_auto_warns_when_the_cap_is_reached(monkeypatch):
    monkeypatch.setattr(_pilot, "MAX_COUNT", 2)
    with pytest.warns(RuntimeWarning, match="the most the pilot tries"):
        dp.smc_abc(
            model(), mechanism(1000.0), RELEASE, particles=200, rng=0, progressbar=False,
            simulations_per_particle="auto",
        )  # fmt: skip


@pytest.mark.parametrize("bad", [0, -2, 1.5, "Auto", "fast", True])
def test_simulations_per_particle_is_validated(bad):
    with pytest.raises((ValueError, TypeError), match="simulations_per_particle"):
        dp.smc_abc(model(), mechanism(), RELEASE, simulations_per_particle=bad, progressbar=False)
