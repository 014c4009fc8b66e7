"""Exact SMC-ABC on Gong's two examples: the Poisson count and the Lalonde NSW earnings.

``smc_abc`` targets the exact posterior given the release, like rejection ABC, at a
fraction of the simulations. Against the exact references of the example modules (the
Poisson count's exact posterior by summation and quadrature; for Lalonde, a long exact
rejection ABC run) it must agree within Monte Carlo error, and with a wrong mechanism
scale it must not. Seeds are fixed; quoted false-failure rates are those under a random
seed.

SMC draws are correlated (resampling, finite pseudo-marginal moves): every comparison
caps the SMC effective sample size at ``particles / 4`` (``posterior.attrs['ess']``, the
cap :func:`dpinfer.compare.compare_posteriors` honours). Over 20-100 seeds per problem the
variance of SMC posterior means and quantiles was at most 1.8 times the i.i.d. variance
(Lalonde, 12 seeds: 1.6 times), so the cap is conservative; see
``tests/samplers/test_smc.py``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats as st

import dpinfer as dp
from dpinfer.compare import compare_posteriors
from dpinfer.models import lalonde as ll
from dpinfer.models import poisson_count as pc

ESS_DIVISOR = 4
Z_LIMIT = 4.0  # per z-score, false-failure rate 6e-5 (normal approximation)
KS_LEVEL = 1e-3  # Kolmogorov p-value at the conservative ESS: 0.1% per KS check


def _smc(model, mechanism, released, *, particles, rng):
    idata = dp.smc_abc(model, mechanism, released, particles=particles, rng=rng, progressbar=False)
    idata.posterior.attrs["ess"] = particles / ESS_DIVISOR  # the conservative cap
    return idata


# --- Poisson count (Gong 2022, Section 5.1) ---------------------------------------------------

# (alpha, epsilon, released): Figure 1, the prior-data conflicts from below and above, an
# integer release and a negative one.
SETTINGS = [(25, 0.2, 37.4), (2, 0.2, 37.4), (75, 0.2, 37.4), (10, 1.0, 12.0), (5, 0.5, -2.3)]
IDS = [f"a{a}-e{e}-x{x}" for a, e, x in SETTINGS]
PARTICLES = 2000
# SD of one run's log evidence at 2000 particles, over 60-100 seeds per setting: from 0.015
# (alpha 2) to 0.038 (alpha 75, three stages); bounded by 0.05 for every setting.
SD_LOG_EVIDENCE = 0.05


def _exact_sample(post: pc.ExactPosterior, n=100_000, rng=0) -> np.ndarray:
    """I.i.d. draws from the exact posterior by inverting its CDF on a fine grid."""
    lo, hi = post.ppf(1e-9), post.ppf(1 - 1e-9)
    grid = np.linspace(lo, hi, 20_001)
    return np.interp(np.random.default_rng(rng).random(n), post.cdf(grid), grid)


def check_poisson_smc(alpha, eps, x, mechanism, *, rng):
    post = pc.ExactPosterior(alpha=alpha, epsilon=eps, released=x)
    idata = _smc(pc.model(alpha=alpha), mechanism, x, particles=PARTICLES, rng=rng)
    theta = idata.posterior["theta"].values.ravel()
    # KS against the exact CDF at ESS = particles / 4: 0.1%.
    d = st.kstest(theta, post.cdf).statistic
    pvalue = float(st.kstwobign.sf(d * math.sqrt(PARTICLES / ESS_DIVISOR)))
    assert pvalue > KS_LEVEL, f"KS p-value {pvalue:.2e}"
    # Mean and 5/50/95% quantiles against 100 000 exact draws: 4 z-scores, 2.5e-4.
    comparison = compare_posteriors(idata, {"theta": _exact_sample(post)})
    assert comparison.max_abs_z() < Z_LIMIT, str(comparison)
    # The evidence: 6e-5.
    log_z = idata.posterior.attrs["log_evidence"]
    z = (log_z - post.log_evidence) / SD_LOG_EVIDENCE
    assert abs(z) < Z_LIMIT, f"log evidence {log_z:.4f} vs exact {post.log_evidence:.4f}"
    return idata


@pytest.mark.parametrize(("alpha", "eps", "x"), SETTINGS, ids=IDS)
def test_smc_matches_the_exact_poisson_posterior(alpha, eps, x):
    check_poisson_smc(alpha, eps, x, pc.mechanism(epsilon=eps), rng=100 + alpha)


@pytest.mark.parametrize(("alpha", "eps", "x"), SETTINGS[:2], ids=IDS[:2])
def test_planted_wrong_mechanism_scale_fails_the_poisson_check(alpha, eps, x):
    # Inference assumes epsilon = 0.4 (Laplace scale 2.5) for a release made with 0.2.
    with pytest.raises(AssertionError, match="KS p-value|parameter|log evidence"):
        check_poisson_smc(alpha, eps, x, pc.mechanism(epsilon=2 * eps), rng=100 + alpha)


def test_smc_needs_far_fewer_simulations_than_rejection_abc_under_conflict():
    # alpha = 2: rejection ABC accepts pi(s_dp) / sup eta = 0.09% of its simulations (Gong's
    # Table 1), so 2000 draws cost about 2.2 million simulations; SMC used about 21 000.
    alpha, eps, x = SETTINGS[1]
    idata = _smc(pc.model(alpha=alpha), pc.mechanism(epsilon=eps), x, particles=2000, rng=1)
    rate = math.exp(pc.log_evidence(alpha=alpha) - pc.mechanism(epsilon=eps).log_max_density)
    rejection_cost = 2000 / rate
    assert rejection_cost > 2e6
    assert idata.posterior.attrs["n_simulations"] < rejection_cost / 50


# --- Lalonde NSW earnings (Gong 2022, Section 5.2) --------------------------------------------

PARAMS = list(ll.PARAMETERS)


@pytest.fixture(scope="module")
def lalonde():
    """One release, and the exact posterior by rejection ABC (4000 i.i.d. draws, ~9e6 sims)."""
    released = ll.release(rng=2022)
    reference = dp.rejection_abc(
        ll.model(), ll.mechanism(), released, draws=4000, rng=11, progressbar=False
    )
    return released, reference


def check_lalonde_smc(mechanism, released, reference, *, rng=12):
    idata = _smc(ll.model(), mechanism, released, particles=4000, rng=rng)
    # 4 parameters x (mean + 3 quantiles) = 16 z-scores: false-failure rate 1e-3.
    comparison = compare_posteriors(idata, reference, var_names=PARAMS)
    assert comparison.max_abs_z() < Z_LIMIT, str(comparison)
    return idata


@pytest.mark.slow
def test_smc_matches_exact_rejection_abc_on_lalonde(lalonde):
    released, reference = lalonde
    idata = check_lalonde_smc(ll.mechanism(), released, reference)
    # About 340 000 simulations against about 9 million for rejection ABC's 4000 draws.
    assert idata.posterior.attrs["n_simulations"] < reference.posterior.attrs["n_simulations"] / 10


@pytest.mark.slow
def test_planted_wrong_mechanism_scale_fails_the_lalonde_check(lalonde):
    released, reference = lalonde
    wrong = dp.Laplace([6.0, 6.0, 12.0, 12.0], sensitivity=list(ll.SENSITIVITIES))
    with pytest.raises(AssertionError, match="parameter"):
        check_lalonde_smc(wrong, released, reference)
