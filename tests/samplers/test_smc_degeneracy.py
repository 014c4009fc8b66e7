"""SMC refuses too few particles and warns when a population degenerates."""

import warnings

import numpy as np
import pytest
import scipy.stats as st

import dpinfer as dp
from dpinfer.samplers.smc._particles import (
    MIN_DISTINCT_FRACTION,
    MIN_PARTICLES_PER_CHAIN,
    warn_if_degenerate,
)

from ._sampler_registry import family


def _model():
    return dp.Model(
        prior={"theta": st.norm(0, 1)},
        simulate=lambda p, rng: p["theta"] + rng.standard_normal(len(p["theta"])),
    )


@pytest.mark.parametrize("case", family("smc"), ids=str)
@pytest.mark.parametrize(
    ("particles", "chains"), [(2, 4), (1, 1), (76, 4), (MIN_PARTICLES_PER_CHAIN - 1, 1)]
)
def test_too_few_particles_per_chain_is_refused(case, particles, chains):
    # smc_abc(particles=2) used to return a badly biased posterior without a word.
    with pytest.raises(ValueError, match=f"{case} needs at least 20 particles per chain") as info:
        case.function(_model(), dp.Gaussian(1.0), 0.5, particles=particles, chains=chains)
    assert f"particles={particles} over chains={chains}" in str(info.value)
    assert f"particles >= {20 * chains}" in str(info.value)


def test_the_minimum_itself_is_accepted():
    idata = dp.smc_abc(
        _model(), dp.Gaussian(1.0), 0.5, particles=40, chains=2, rng=1, progressbar=False
    )
    assert idata.posterior["theta"].shape == (2, MIN_PARTICLES_PER_CHAIN)


def test_tiny_noise_collapses_the_population_and_is_flagged():
    # With mechanism noise 1e-3 against a confidential statistic of sd 1, a fresh simulation
    # almost never beats a particle's lucky one: the moves stop accepting.
    mech = dp.Gaussian(1e-3)
    with pytest.warns(RuntimeWarning, match="final population is degenerate"):
        idata = dp.smc_abc(_model(), mech, 0.5, particles=300, chains=2, rng=2, progressbar=False)
    assert np.any(idata.posterior.attrs["chain_n_distinct"] < MIN_DISTINCT_FRACTION * 150)


def test_ordinary_noise_is_not_flagged():
    mech = dp.Gaussian(1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        idata = dp.smc_abc(_model(), mech, 0.5, particles=300, chains=2, rng=2, progressbar=False)
    assert np.all(idata.posterior.attrs["chain_n_distinct"] > 0.5 * 150)
    assert np.all(idata.posterior.attrs["stage_n_distinct"] > 0.5 * 150)


def _attrs(final, last_acceptance, stages, stage_chain):
    return {
        "chain_n_distinct": np.array(final),
        "chain_last_acceptance_rate": np.array(last_acceptance),
        "stage_n_distinct": np.array(stages, dtype=float),
        "stage_chain": np.array(stage_chain),
    }


@pytest.mark.parametrize(
    ("attrs", "match"),
    [
        # chain 1's final population: 10 distinct of 100
        (_attrs([90, 10], [0.5, 0.5], [90, 90, 90, 10], [0, 0, 1, 1]), "final population"),
        # chain 0's last moves accept 0.1% of proposals
        (_attrs([90, 90], [0.001, 0.5], [90, 90, 90, 90], [0, 0, 1, 1]), "final population"),
        # an intermediate stage of chain 1 (its first) kept 20 distinct of 100
        (_attrs([90, 90], [0.5, 0.5], [90, 90, 20, 90], [0, 0, 1, 1]), "chain 1 stage 1: 20"),
        (_attrs([90, 90], [0.5, 0.5], [90, 90, 90, 90], [0, 0, 1, 1]), None),
        (_attrs([25, 25], [0.5, 0.5], [25, 25, 25, 25], [0, 0, 1, 1]), None),  # 25%: no warning
    ],
)
def test_thresholds(attrs, match):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warn_if_degenerate("smc_abc", attrs, 100)
    if match is None:
        assert not caught
    else:
        assert len(caught) == 1 and match in str(caught[0].message)


def test_tolerance_smc_ignores_its_low_stopping_acceptance():
    # tolerance_smc_abc stops by design once acceptance falls below min_acceptance.
    attrs = _attrs([90, 90], [0.001, 0.001], [90, 90, 90, 90], [0, 0, 1, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_if_degenerate("tolerance_smc_abc", attrs, 100, check_acceptance=False)
