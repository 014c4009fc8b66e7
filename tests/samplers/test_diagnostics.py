"""ArviZ diagnoses every sampler's output: several chains, finite R-hat, no warning.

``az.summary`` warns (through Python warnings or ArviZ's logger) when a result has one
chain or fewer than four draws per chain, and then reports ``r_hat = NaN``. Each sampler
runs small here with its default number of chains; a one-chain result is the planted
companion that the same check must reject. The NUTS reference gets the same check in
``tests/test_reference.py``.
"""

from __future__ import annotations

import logging
import math
import warnings

import numpy as np
import pytest
import scipy.stats as st

import dpinfer as dp
from dpinfer.results import _arviz, to_inference_data

from ._oracles import normal_model

MECH = dp.Gaussian(1.0)
RELEASE = 1.3


class _Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.records = []

    def emit(self, record):
        self.records.append(record)


def check_clean_summary(idata):
    """Return ``az.summary(idata)``; fail on any warning or a non-finite R-hat or ESS."""
    az = _arviz()
    handler, logger = _Records(), logging.getLogger("arviz")
    logger.addHandler(handler)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            summary = az.summary(idata)
    finally:
        logger.removeHandler(handler)
    messages = [str(w.message) for w in caught] + [r.getMessage() for r in handler.records]
    assert not messages, f"az.summary warned: {messages}"
    for column in ("r_hat", "ess_bulk", "ess_tail"):
        values = summary[column].to_numpy(dtype=float)
        assert np.all(np.isfinite(values)), f"non-finite {column}: {values}"
    return summary


RUNS = {
    "rejection_abc": lambda **kw: dp.rejection_abc(
        normal_model(), MECH, RELEASE, draws=400, batch_size=2000, **kw
    ),
    "importance_abc": lambda **kw: dp.importance_abc(
        normal_model(), MECH, RELEASE, draws=400, **kw
    ),
    "smc_abc": lambda **kw: dp.smc_abc(normal_model(), MECH, RELEASE, particles=400, **kw),
    "tolerance_smc_abc": lambda **kw: dp.tolerance_smc_abc(
        normal_model(), MECH, RELEASE, particles=400, final_tolerance=0.5, **kw
    ),
}


@pytest.mark.parametrize("name", list(RUNS))
def test_summary_has_finite_rhat_and_no_warning(name):
    idata = RUNS[name](rng=3, progressbar=False)
    summary = check_clean_summary(idata)
    assert idata.posterior.sizes["chain"] >= 2
    # the attrs carry the same diagnostics, and the library's ESS is the conservative one
    attrs = idata.attrs
    assert attrs["chains"] == idata.posterior.sizes["chain"]
    assert attrs["rhat_max"] == pytest.approx(summary["r_hat"].max(), abs=0.01)
    assert attrs["ess"] <= attrs["ess_bulk"] + 1e-9
    assert math.isfinite(attrs["ess"]) and attrs["ess"] > 0


@pytest.mark.parametrize("name", ["rejection_abc", "smc_abc"])
def test_planted_single_chain_fails_the_summary_check(name):
    idata = RUNS[name](rng=3, progressbar=False, chains=1)
    with pytest.raises(AssertionError, match="az.summary warned|non-finite r_hat"):
        check_clean_summary(idata)


def test_rhat_flags_disagreeing_chains():
    # attrs['rhat_max'] is computed from the chains as returned: four chains from releases
    # -3 and four from +3 (a stand-in for chains stuck in different modes; posterior means
    # -1 and +1, sd 0.8) give a large R-hat; the chains of one run do not.
    a = dp.rejection_abc(normal_model(), MECH, -3.0, draws=400, rng=1, progressbar=False)
    b = dp.rejection_abc(normal_model(), MECH, 3.0, draws=400, rng=1, progressbar=False)
    mixed = np.concatenate([a.posterior["theta"].values, b.posterior["theta"].values])
    idata = to_inference_data({"theta": mixed.ravel()}, chains=8, attrs={})
    assert idata.attrs["rhat_max"] > 1.2
    assert a.attrs["rhat_max"] < 1.05


def test_conservative_ess_is_the_smaller_figure():
    idata = dp.importance_abc(
        normal_model(), dp.Gaussian(0.5), 2.5, draws=2000, rng=4, progressbar=False
    )
    attrs = idata.attrs
    assert attrs["ess"] == min(attrs["ess_sampler"], attrs["ess_bulk"])
    assert attrs["ess_kish"] == pytest.approx(attrs["chain_ess"].sum())
    assert attrs["ess"] < 2000


def test_prior_of_a_model_without_draws_is_fine():
    # A constant component (a degenerate prior) is skipped, not reported as NaN R-hat.
    model = dp.Model(
        prior={"theta": st.norm(0, 1), "c": st.uniform(0.5, 1e-300)},
        simulate=lambda p, rng: p["theta"] + rng.standard_normal(len(p["theta"])),
    )
    idata = dp.rejection_abc(model, MECH, RELEASE, draws=200, rng=2, progressbar=False)
    assert math.isfinite(idata.attrs["rhat_max"])
