"""Sizes that cannot fit are refused before any simulation, naming the parameter.

``sppe(rounds=2**70)`` (and ``draws=``, ``chains=``) and ``sple(rounds=2**70)`` used to
start and run past 60 s. The bad-input sweep (``tests/sweep``) covers every size of
``dpinfer.neural``; these are the reproductions, with a simulator that counts its calls.
"""

from __future__ import annotations

import pytest
import scipy.stats as st

import dpinfer as dp
from dpinfer.neural import MCMC, SplineFlow, Training, sple, sppe

from . import _toy

CALLS = []


def counting(p, rng):
    CALLS.append(len(p["theta"]))
    return p["theta"] + rng.standard_normal(len(p["theta"]))


TINY = _toy.tiny_settings(
    simulations=40,
    draws=8,
    flow=SplineFlow(transforms=1, hidden_features=4, residual_blocks=1, bins=2),
    training=Training(max_epochs=1, batch_size=20),
    rng=0,
)
RUNS = {
    "sppe": lambda **kw: sppe(*ARGS, **{**TINY, **kw}),
    "sple": lambda **kw: sple(
        *ARGS, **{**TINY, "mcmc": MCMC(warmup=5, thin=1, proposal_chains=2), **kw}
    ),
}
ARGS = (dp.Model(prior={"theta": st.norm()}, simulate=counting), dp.Laplace(1.0), 0.3)


@pytest.mark.parametrize(
    ("run", "name"),
    [
        ("sppe", "rounds"),
        ("sppe", "draws"),
        ("sppe", "chains"),
        ("sppe", "simulations"),
        ("sppe", "atoms"),
        ("sple", "rounds"),
        ("sple", "draws"),
        ("sple", "chains"),
    ],
)
def test_a_size_of_2_to_the_70_is_refused_before_simulating(run, name):
    CALLS.clear()
    with pytest.raises(ValueError, match=f"{name} must be at most 1,099,511,627,776"):
        RUNS[run](**{name: 2**70})
    assert CALLS == []


def test_rounds_times_simulations_times_copies_must_fit():
    CALLS.clear()
    with pytest.raises(
        ValueError, match="rounds x simulations x noise_copies = .* training pairs"
    ):
        RUNS["sppe"](rounds=2**20, simulations=2**20, noise_copies=2)
    assert CALLS == []


def test_companion_the_tiny_run_goes_through():
    CALLS.clear()
    idata, _ = RUNS["sppe"]()
    assert idata.posterior["theta"].size == 8 and sum(CALLS) == 40


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: SplineFlow(hidden_features=2**20), "make about .* weights, more than"),
        (lambda: SplineFlow(bins=2**70), "bins must be at most"),
        (lambda: Training(max_epochs=2**70), "max_epochs must be at most"),
        (lambda: Training(patience=2**70), "patience must be at most"),
        (lambda: Training(threads=5000), "threads must be at most 4096"),
        (lambda: MCMC(warmup=2**70), "warmup must be at most"),
    ],
)
def test_settings_that_cannot_fit_are_refused(make, message):
    with pytest.raises(ValueError, match=message):
        make()
