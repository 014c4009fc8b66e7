"""Simulation-based calibration of DA-MCMC (Talts et al. 2018) on a small record model.

For each replication: draw ``p`` from its Beta(2, 2) prior, ``n = 20`` Bernoulli records,
and a Laplace release of their count; run one chain of DA-MCMC on the release and record
the rank of the true ``p`` among ``L = 19`` thinned draws. Exact posterior draws make the
rank uniform on ``0..L``; the 20 ranks are pooled into 5 bins of 4 and tested with a
chi-square test (4 degrees of freedom). It fails below p = 1e-3, its false-failure rate
for independent draws (thinning by 5 leaves the draws close to independent here: on a
long chain of this model the autocorrelation of ``p`` is 0.26 at lag 1 and -0.01 at lag
4). The seed is fixed, so the outcome is deterministic. The planted bug (the old record
left out of the acceptance ratio) must fail the same test.

The chains run through ``_run_chain`` of ``dpinfer.samplers.da``, the code every chain
of ``da_mcmc`` runs, to skip building an InferenceData per replication.
"""

from __future__ import annotations

import importlib

import numpy as np
import scipy.stats as st

import dpinfer as dp
from dpinfer.samplers.da import _da_kernels

from .test_da_mcmc import _sweep_without_old_record, bernoulli_model

# the module (the package exports the function of the same name)
da_module = importlib.import_module("dpinfer.samplers.da")

N_RECORDS = 20
SCALE = 1.0  # Laplace noise on the count: epsilon = 1
REPLICATIONS = 100
L_DRAWS, THIN, TUNE = 19, 5, 30
BINS = 5
P_LIMIT = 1e-3


def sbc_ranks(seed: int) -> np.ndarray:
    """Rank of the true p among L thinned posterior draws, per replication."""
    model, mech = bernoulli_model(), dp.Laplace(SCALE)
    settings = {
        "n": N_RECORDS,
        "draws": L_DRAWS * THIN,
        "tune": TUNE,
        "theta_steps": 1,
        "init_datasets": 50,
    }
    ranks = []
    for child in np.random.SeedSequence(seed).spawn(REPLICATIONS):
        truth_rng, chain_rng = (np.random.default_rng(s) for s in child.spawn(2))
        p = st.beta(2, 2).rvs(random_state=truth_rng)
        count = truth_rng.binomial(N_RECORDS, p)
        released = float(mech.release(count, rng=truth_rng))
        chain = da_module._run_chain(model, mech, np.asarray(released), settings, chain_rng)
        draws = chain["params"]["p"][THIN - 1 :: THIN]
        ranks.append(int(np.sum(draws < p)))
    return np.asarray(ranks)


def uniformity_pvalue(ranks: np.ndarray) -> float:
    counts = np.bincount(ranks, minlength=L_DRAWS + 1).reshape(BINS, -1).sum(axis=1)
    return float(st.chisquare(counts).pvalue)


def test_ranks_are_uniform():
    ranks = sbc_ranks(seed=314)
    assert ranks.min() >= 0 and ranks.max() <= L_DRAWS
    assert uniformity_pvalue(ranks) > P_LIMIT


def test_planted_acceptance_without_the_old_record_fails_calibration(monkeypatch):
    monkeypatch.setattr(_da_kernels, "record_sweep", _sweep_without_old_record)
    assert uniformity_pvalue(sbc_ranks(seed=314)) < P_LIMIT
