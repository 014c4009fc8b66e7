"""The arXiv variants: Gaussian rejection ABCDP (Theorem 3.1) and soft ABCDP (Theorems 3.2-3.3).

Accounting is checked against the closed forms written beside each test (to the last
digits) and by round trips; the mechanisms are audited empirically on neighbouring
datasets whose distances move by exactly the sensitivity. ``audit_epsilon`` errs with
probability at most ALPHA = 1e-3 (the false-failure rate of each "passes" test under a
random seed); each audit has a planted calibration bug that it must refute.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats as st

import dpinfer as dp
from dpinfer import accounting
from dpinfer.audit import audit_epsilon

from ._helpers import MeanDistance, neighbours

ALPHA = 1e-3
SEED = 31
N = 10
DELTA = 1.0 / N  # MeanDistance sensitivity


# --- Theorem 3.1: h and its inverse ------------------------------------------------------


def _h(sigma, sens, bound, eps_abc):
    """Theorem 3.1 as printed: min(1, D / sqrt(2 pi sigma^2)) / Phi(min(e - B, -e) / sigma)."""
    return min(1.0, sens / math.sqrt(2 * math.pi * sigma**2)) / st.norm.cdf(
        min(eps_abc - bound, -eps_abc) / sigma
    )


GAUSSIAN_GRID = [
    (sens, bound, eps_abc)
    for sens in (2 / 5000, 2 / 18, 0.1)
    for bound in (1.0, 2.0)
    for eps_abc in (0.0, 0.05, 0.5)
]


@pytest.mark.parametrize(("sens", "bound", "eps_abc"), GAUSSIAN_GRID)
def test_gaussian_h_is_theorem_3_1_and_its_inverse_round_trips(sens, bound, eps_abc):
    kw = dict(sensitivity=sens, distance_bound=bound, epsilon_abc=eps_abc)
    for sigma in np.geomspace(0.05, 20, 15):
        with np.errstate(divide="ignore"):
            expected = _h(sigma, sens, bound, eps_abc)  # inf beyond the float range
        assert accounting.abcdp_gaussian_epsilon(sigma, **kw) == pytest.approx(expected, rel=1e-9)
    eps_grid = np.geomspace(1e-4, 5.0, 25)
    sigmas = [accounting.abcdp_gaussian_sigma(e, **kw) for e in eps_grid]
    assert np.all(np.diff(sigmas) < 0)  # h decreases, so its inverse does too
    for eps, sigma in zip(eps_grid, sigmas, strict=True):
        assert accounting.abcdp_gaussian_epsilon(sigma, **kw) == pytest.approx(eps, rel=1e-9)


# --- Theorems 3.2-3.3: Renyi DP of soft ABCDP and its conversion --------------------------


def test_soft_rdp_is_theorem_3_3():
    alpha = np.array([1.5, 2.0, 10.0, 64.0])
    got = accounting.soft_abcdp_rdp(alpha, 0.7, sensitivity=0.02, epsilon_abc=0.3, steps=1000)
    np.testing.assert_allclose(got, alpha * 0.02**2 * 1000 / (2 * 0.7**2 * 0.3**2), rtol=1e-15)


SOFT_GRID = [
    (eps, delta, sens, eps_abc, steps)
    for eps in (0.1, 1.0, 4.0, 30.0)
    for delta in (1e-3, 1e-5, 1e-9)
    for sens, eps_abc, steps in ((2 / 5000, 0.01, 10_000), (2 / 18, 0.1, 1), (0.1, 1.0, 50))
]


@pytest.mark.parametrize(("eps", "delta", "sens", "eps_abc", "steps"), SOFT_GRID)
def test_soft_sigma_round_trips_and_matches_a_fine_grid_of_orders(
    eps, delta, sens, eps_abc, steps
):
    kw = dict(sensitivity=sens, epsilon_abc=eps_abc, steps=steps)
    sigma = accounting.soft_abcdp_sigma(eps, delta, **kw)
    assert accounting.soft_abcdp_epsilon(sigma, delta, **kw) == pytest.approx(eps, rel=1e-10)
    # the closed-form optimum over alpha against Mironov's conversion on a fine grid
    orders = 1 + np.geomspace(1e-6, 1e6, 400_001)
    rdp = accounting.soft_abcdp_rdp(orders, sigma, **kw)
    on_grid = accounting.rdp_to_approx(orders, rdp, delta)
    assert on_grid >= eps * (1 - 1e-12)  # the closed form is the exact minimum
    assert on_grid == pytest.approx(eps, rel=1e-6)


def test_a_wrong_conversion_is_caught_by_the_grid_check():
    """Planted bug: dropping the factor 2 of K + 2 sqrt(K log(1/delta))."""
    kw = dict(sensitivity=0.1, epsilon_abc=1.0, steps=50)
    sigma, delta = 3.0, 1e-5
    k = float(accounting.soft_abcdp_rdp(1.0, sigma, **kw))
    wrong = k + math.sqrt(k * math.log(1 / delta))
    orders = 1 + np.geomspace(1e-6, 1e6, 400_001)
    on_grid = accounting.rdp_to_approx(
        orders, accounting.soft_abcdp_rdp(orders, sigma, **kw), delta
    )
    assert not on_grid == pytest.approx(wrong, rel=1e-6)
    assert on_grid == pytest.approx(accounting.soft_abcdp_epsilon(sigma, delta, **kw), rel=1e-6)


# --- Gaussian rejection ABCDP: clipping, attributes, per-step audit -----------------------


def _gaussian_run(observed, z, *, eps_step, privacy_rng, bound=1.0, eps_abc=0.5):
    t = len(z)
    return dp.rejection_abcdp_gaussian(
        observed,
        MeanDistance(),
        params={"i": np.arange(t)},
        pseudo_data=z,
        epsilon_total=eps_step * t,
        epsilon_abc=eps_abc,
        distance_bound=bound,
        privacy_rng=privacy_rng,
        progressbar=False,
    )


def _accepted(out, t):
    ind = np.zeros(t, dtype=np.int64)
    ind[out.sample_stats["query_index"].values.ravel()] = 1
    return ind


def test_gaussian_rejection_attributes_and_clipping():
    y, _ = neighbours(N)
    out = _gaussian_run(y, np.full(40, 0.55), eps_step=0.5, privacy_rng=1)
    attrs = out.posterior.attrs
    assert attrs["epsilon_step"] == 0.5 and attrs["epsilon"] == 20.0
    assert attrs["sigma"] == accounting.abcdp_gaussian_sigma(
        0.5, sensitivity=DELTA, distance_bound=1.0, epsilon_abc=0.5
    )
    # distances above the bound B are clipped to it before the noise (Theorem 3.1 needs rho <= B)
    far = _gaussian_run(y, np.full(400, 5.0), eps_step=0.5, privacy_rng=2)
    at_bound = _gaussian_run(y, np.full(400, 1.0), eps_step=0.5, privacy_rng=2)
    np.testing.assert_array_equal(_accepted(far, 400), _accepted(at_bound, 400))
    assert _accepted(far, 400).sum() > 0


def _no_phi_sigma(epsilon, *, sensitivity, distance_bound, epsilon_abc):
    """Planted bug: h without its 1/Phi factor, sigma = D / (sqrt(2 pi) eps)."""
    return sensitivity / (math.sqrt(2 * math.pi) * epsilon)


@pytest.mark.parametrize(("bug", "refute"), [(None, False), (_no_phi_sigma, True)])
def test_audit_of_one_gaussian_rejection_step(monkeypatch, bug, refute):
    """Each proposal is one independent run of the per-step mechanism (Definition 3.1).

    ``epsilon_total = T * eps_step`` makes the per-step budget eps_step for any T, so one
    call with T identical proposals gives T draws of the one-step indicator.
    """
    if bug is not None:
        monkeypatch.setattr(accounting, "abcdp_gaussian_sigma", bug)
    eps_step = 1.0
    y, y_prime = neighbours(N)  # rho = 0.55 on Y, 0.45 on Y' (sensitivity 1/N), around 0.5

    def sampler(observed):
        def sample(n, rng):
            return _accepted(
                _gaussian_run(observed, np.full(n, 0.55), eps_step=eps_step, privacy_rng=rng), n
            )

        return sample

    res = audit_epsilon(
        sampler(y), sampler(y_prime), n_select=15_000, n_test=40_000, alpha=ALPHA, rng=SEED
    )
    print(f"gaussian rejection step, bug={bug is not None}: claimed {eps_step}, {res}")
    assert res.refutes(eps_step) is refute, str(res)


# --- soft ABCDP: audit of the weights of two proposals -----------------------------------

EPS_ABC = 0.1
SIGMA_SOFT = 2.83  # per-step noise on rho / eps_abc (Definition 3.2)
PAIRS = 5000  # proposals per call: 2 * PAIRS, so sigma does not depend on the sample size
DELTA_AUDIT = 1e-3


def _soft_budget():
    """(epsilon_total, delta_total) of 2 * PAIRS steps that make sigma = SIGMA_SOFT."""
    delta_total = 1e-5
    eps = accounting.soft_abcdp_epsilon(
        SIGMA_SOFT, delta_total, sensitivity=DELTA, epsilon_abc=EPS_ABC, steps=2 * PAIRS
    )
    return eps, delta_total


def _soft_run(observed, z, *, draws, privacy_rng):
    """``soft_abcdp`` of the public distances ``z`` at the budget of ``_soft_budget``."""
    eps, delta = _soft_budget()
    return dp.soft_abcdp(
        observed,
        MeanDistance(),
        params={"i": np.arange(z.size)},
        pseudo_data=z,
        epsilon_total=eps,
        delta_total=delta,
        epsilon_abc=EPS_ABC,
        draws=draws,
        privacy_rng=privacy_rng,
        progressbar=False,
    )


def _soft_pairs(observed, rng, n):
    """``n`` draws of ``log w_down - log w_up``: the normaliser cancels in each difference."""
    # "down" proposals (z = 1.5) are DELTA closer to Y', "up" ones (z = -1.5) DELTA farther;
    # rho / eps_abc = 15 is five noise deviations above 0, so the projection at 0 is rare
    z = np.tile([1.5, -1.5], PAIRS)
    out = []
    for _ in range(n // PAIRS):
        res = _soft_run(observed, z, draws=1, privacy_rng=rng)
        log_w = res.prior["log_weight"].values.ravel()
        out.append(log_w[0::2] - log_w[1::2])
    return np.concatenate(out)


_SOFT_SIGMA = accounting.soft_abcdp_sigma


def _ignore_eps_abc(epsilon, delta, *, sensitivity, epsilon_abc, steps):
    """Planted bug: calibrates as if the noisy quantity were rho, not rho / eps_abc."""
    return _SOFT_SIGMA(epsilon, delta, sensitivity=sensitivity, epsilon_abc=1.0, steps=steps)


def test_soft_calibration_round_trips_through_the_sampler():
    y, _ = neighbours(N)
    eps, delta = _soft_budget()
    res = _soft_run(y, np.zeros(2 * PAIRS), draws=10, privacy_rng=0)
    assert res.posterior.attrs["sigma"] == pytest.approx(SIGMA_SOFT, rel=1e-10)
    assert res.posterior.attrs["epsilon"] == eps and res.posterior.attrs["delta"] == delta
    assert res.posterior["i"].size == 10


@pytest.mark.parametrize(("bug", "refute"), [(None, False), (_ignore_eps_abc, True)])
def test_audit_of_soft_abcdp_weights(monkeypatch, bug, refute):
    """Two steps of soft ABCDP: Renyi DP 2 alpha D^2 / (2 sigma^2 eps_abc^2), converted."""
    if bug is not None:
        monkeypatch.setattr(accounting, "soft_abcdp_sigma", bug)
    claimed = accounting.soft_abcdp_epsilon(
        SIGMA_SOFT, DELTA_AUDIT, sensitivity=DELTA, epsilon_abc=EPS_ABC, steps=2
    )
    # the exact Gaussian curve of the pair (l2 sensitivity sqrt(2) D / eps_abc) is tighter
    exact = accounting.gaussian_epsilon(DELTA_AUDIT, SIGMA_SOFT, math.sqrt(2) * DELTA / EPS_ABC)
    assert exact < claimed
    y, y_prime = neighbours(N)
    res = audit_epsilon(
        lambda n, rng: _soft_pairs(y, rng, n),
        lambda n, rng: _soft_pairs(y_prime, rng, n),
        n_select=15_000,
        n_test=40_000,
        delta=DELTA_AUDIT,
        alpha=ALPHA,
        rng=SEED,
    )
    print(f"soft pair, bug={bug is not None}: claimed {claimed:.3f} (exact {exact:.3f}), {res}")
    assert res.refutes(claimed) is refute, str(res)
