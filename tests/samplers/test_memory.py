"""rejection_abc streams fixed-size chunks: its memory does not grow with the proposals.

Peak traced memory (tracemalloc, which sees numpy's buffers) is compared
between runs that differ tenfold or more in the number of proposals, at a
fixed batch size. No wall-clock time is measured.
"""

from __future__ import annotations

import math
import tracemalloc

import pytest
import scipy.stats as st

import dpinfer as dp
from dpinfer.results import _arviz

BATCH = 10_000
MECH = dp.Gaussian(1.0)
# With theta ~ N(0, 1), s ~ N(theta, 1) and sigma = 1: P(accept) = exp(-x^2 / 6) / sqrt(3),
# 0.577 at x = 0 and 0.00143 at x = 6 (400 times less).
HIGH, LOW = 0.0, 6.0


def _model(leak=None):
    def simulate(p, rng):
        s = p["theta"] + rng.standard_normal(p["theta"].shape)
        if leak is not None:
            leak.append(s)  # the planted bug: keeps every simulated batch alive
        return s

    return dp.Model(prior={"theta": st.norm(0.0, 1.0)}, simulate=simulate)


def _peak(fn) -> int:
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        start, _ = tracemalloc.get_traced_memory()
        fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak - start


@pytest.fixture(scope="module", autouse=True)
def _warm():
    # Imports and first-call caches are allocated once, outside the traced runs.
    _arviz()
    dp.rejection_abc(_model(), MECH, HIGH, draws=16, rng=0, batch_size=BATCH, progressbar=False)


# The acceptance rate at LOW; a run for ``draws`` takes about ``draws / P_LOW`` proposals.
P_LOW = math.exp(-(LOW**2) / 6) / math.sqrt(3)


def _run_for(model, n_proposals, used):
    # A run that completes after about n_proposals proposals. (A run stopped by
    # max_simulations would not do: rejection_abc now stops as soon as its first chunk
    # predicts that the budget cannot suffice, whatever the budget.)
    def run():
        idata = dp.rejection_abc(
            model,
            MECH,
            LOW,
            draws=round(n_proposals * P_LOW),
            rng=1,
            batch_size=BATCH,
            progressbar=False,
        )
        used.append(idata.posterior.attrs["n_simulations"])

    return run


def check_flat_in_proposals(make_model):
    used = []
    small = _peak(_run_for(make_model(), 20_000, used))
    large = _peak(_run_for(make_model(), 200_000, used))
    assert used[1] >= 5 * used[0], f"proposals {used}: the runs do not differ enough"
    # One chunk of 10^4 proposals is a few hundred kB; ten times the proposals may add the
    # (few hundred) accepted draws and list overhead, nothing proportional to the proposals.
    assert large < 1.5 * small, f"peak {large} B for 2e5 proposals vs {small} B for 2e4"


def test_peak_memory_does_not_grow_with_proposals():
    check_flat_in_proposals(_model)


def test_planted_leak_fails_the_memory_check():
    with pytest.raises(AssertionError, match="peak"):
        check_flat_in_proposals(lambda: _model(leak=[]))


def check_flat_in_acceptance(make_model):
    draws = 300
    proposals, peaks = {}, {}
    for release in (HIGH, LOW):
        out = {}

        def run(release=release, out=out):
            out["idata"] = dp.rejection_abc(
                make_model(), MECH, release, draws=draws, rng=2, batch_size=BATCH,
                progressbar=False,
            )  # fmt: skip

        peaks[release] = _peak(run)
        proposals[release] = out["idata"].posterior.attrs["n_simulations"]
    assert proposals[HIGH] == BATCH  # one chunk suffices
    assert proposals[LOW] >= 10 * proposals[HIGH]  # about 21 chunks
    assert peaks[LOW] < 1.5 * peaks[HIGH], f"peak {peaks[LOW]} B vs {peaks[HIGH]} B"


def test_same_draws_at_low_acceptance_need_no_more_memory():
    check_flat_in_acceptance(_model)


def test_planted_leak_fails_the_acceptance_memory_check():
    with pytest.raises(AssertionError, match="peak"):
        check_flat_in_acceptance(lambda: _model(leak=[]))
