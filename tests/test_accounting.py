"""Privacy accounting: composition and conversions against their closed forms.

The per-mechanism calibrations (Laplace, Gaussian, discrete, binomial, SVT) are
tested in ``tests/mechanisms/test_mechanism_privacy.py``; this file covers the
accounting functions themselves, their inverses and their argument checks.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpinfer import Privacy, accounting

NAN, INF = math.nan, math.inf


# --- composition -------------------------------------------------------------------------


def test_compose_adds_epsilons_deltas_and_rhos():
    # Basic composition (Dwork & Roth 2014, Thm 3.16): (sum eps, sum delta); zCDP rhos add
    # (Bun & Steinke 2016, Lemma 2.3).
    a = Privacy(0.5, 1e-6, rho=0.1)
    b = Privacy(0.25, 2e-6, rho=0.05)
    c = accounting.compose(a, b)
    assert c.epsilon == 0.75
    assert c.delta == math.fsum([1e-6, 2e-6])
    assert c.rho == math.fsum([0.1, 0.05])
    assert accounting.compose(a, Privacy(1.0)).rho is None  # a pure-DP term has no rho here
    assert accounting.compose(a) == Privacy(0.5, 1e-6, rho=0.1)


def test_compose_is_exact_over_many_terms():
    many = [Privacy(0.1)] * 10
    assert accounting.compose(*many).epsilon == 1.0  # fsum: no drift from 0.1 + 0.1 + ...
    assert accounting.compose(*many).notion == "pure"


def test_compose_checks_its_arguments():
    with pytest.raises(ValueError, match="at least one Privacy, got none"):
        accounting.compose()
    with pytest.raises(TypeError, match=r"compose takes Privacy objects, got float: 0\.5"):
        accounting.compose(Privacy(1.0), 0.5)


def test_compose_refuses_deltas_adding_up_to_one_and_says_why():
    # issue 19: the refusal named a delta of 1.2 that the user never passed
    with pytest.raises(ValueError, match=r"deltas of the 2 guarantees add up to 1\.2, at least 1"):
        accounting.compose(Privacy(1.0, 0.6), Privacy(1.0, 0.6))
    with pytest.raises(ValueError, match=r"add up to 1, at least 1"):
        accounting.compose(Privacy(1.0, 0.5), Privacy(1.0, 0.5))
    assert accounting.compose(Privacy(1.0, 0.5), Privacy(1.0, 0.25)).delta == 0.75


def test_compose_beyond_the_float_range_is_no_guarantee():
    # issue 19: 1e308 + 1e308 raised OverflowError from math.fsum
    c = accounting.compose(Privacy(1e308, rho=1e308), Privacy(1e308, rho=1e308))
    assert c.epsilon == math.inf and c.rho == math.inf
    assert accounting.compose(Privacy(1e308), Privacy(math.inf)).epsilon == math.inf


# --- zCDP and Renyi DP ---------------------------------------------------------------------


@pytest.mark.parametrize(("rho", "delta"), [(0.5, 1e-5), (0.01, 1e-6), (2.0, 0.1)])
def test_zcdp_to_approx_is_bun_steinke_prop_1_3(rho, delta):
    # rho-zCDP => (rho + 2 sqrt(rho log(1/delta)), delta)-DP.
    assert accounting.zcdp_to_approx(rho, delta) == rho + 2 * math.sqrt(rho * math.log(1 / delta))


def test_zcdp_beyond_the_float_range_is_inf():
    # issue 19: zcdp_gaussian(1e-200) raised ZeroDivisionError (sigma**2 underflows to 0)
    assert accounting.zcdp_gaussian(1e-200, 1.0) == INF
    assert accounting.zcdp_gaussian(1e-154, 1.0) == pytest.approx(5e307)  # sigma**2 is subnormal
    assert accounting.zcdp_gaussian(1e200, 1e200) == 0.5  # the squares overflow, the ratio not
    assert accounting.zcdp_to_approx(INF, 1e-6) == INF


def test_zcdp_gaussian_is_d2_over_2sigma2():
    # D_alpha(N(0, s^2) || N(D, s^2)) = alpha D^2 / (2 s^2): rho = D^2 / (2 s^2).
    assert accounting.zcdp_gaussian(3.0, 1.5) == 1.5**2 / (2 * 3.0**2)


def test_rdp_to_approx_is_the_minimum_over_orders():
    # Mironov (2017), Prop. 3: eps = min_alpha rdp(alpha) + log(1/delta) / (alpha - 1).
    orders = np.array([1.5, 2.0, 4.0, 8.0, 16.0, 32.0])
    rdp = 0.3 * orders  # a Gaussian with rho = 0.3
    expected = min(r + math.log(1e5) / (a - 1) for a, r in zip(orders, rdp, strict=True))
    assert accounting.rdp_to_approx(orders, rdp, 1e-5) == expected


def test_rdp_of_a_gaussian_approaches_the_zcdp_conversion_from_above():
    # rho alpha + L / (alpha - 1) is minimised at alpha* = 1 + sqrt(L / rho), where it equals
    # rho + 2 sqrt(rho L) = zcdp_to_approx(rho, delta): a fine grid of orders gets there.
    rho, delta = 0.2, 1e-6
    orders = np.linspace(1.01, 200, 200_001)
    eps_rdp = accounting.rdp_to_approx(orders, rho * orders, delta)
    eps_zcdp = accounting.zcdp_to_approx(rho, delta)
    assert eps_zcdp <= eps_rdp <= eps_zcdp + 1e-8


def test_rdp_to_approx_checks_its_arguments():
    with pytest.raises(ValueError, match="orders must all exceed 1"):
        accounting.rdp_to_approx([1.0, 2.0], [0.1, 0.2], 1e-5)
    with pytest.raises(ValueError, match="equal length, got 2 and 3"):
        accounting.rdp_to_approx([2.0, 3.0], [0.1, 0.2, 0.3], 1e-5)
    with pytest.raises(ValueError, match="rdp_epsilons must be non-negative"):
        accounting.rdp_to_approx([2.0], [NAN], 1e-5)
    with pytest.raises(ValueError, match="orders must be finite"):
        accounting.rdp_to_approx([INF], [0.1], 1e-5)
    for bad in (0, 1, NAN):
        with pytest.raises(ValueError, match=rf"delta must lie in .*got {bad!r}"):
            accounting.rdp_to_approx([2.0], [0.1], bad)


# --- the Gaussian curve and its inverses ----------------------------------------------------


@pytest.mark.parametrize(("sigma", "sens"), [(1.0, 1.0), (4.0, 1.0), (0.3, 2.0), (50.0, 0.5)])
def test_gaussian_delta_and_epsilon_are_inverse(sigma, sens):
    for delta in (1e-3, 1e-6, 1e-9):
        eps = accounting.gaussian_epsilon(delta, sigma, sens)
        if eps > 0:
            assert accounting.gaussian_delta(eps, sigma, sens) == pytest.approx(delta, rel=1e-10)


def test_gaussian_delta_is_decreasing_in_epsilon_and_sigma():
    eps = np.linspace(0, 5, 51)
    deltas = [accounting.gaussian_delta(e, 2.0, 1.0) for e in eps]
    assert np.all(np.diff(deltas) < 0)
    sigmas = np.geomspace(0.5, 20, 30)
    assert np.all(np.diff([accounting.gaussian_delta(1.0, s, 1.0) for s in sigmas]) < 0)


def test_gaussian_delta_in_the_far_tail_does_not_underflow_to_garbage():
    tiny = accounting.gaussian_delta(50.0, 0.5, 1.0)
    assert 0.0 <= tiny < 1e-100


def test_discrete_gaussian_delta_is_below_the_continuous_one_for_large_sigma():
    # CKS (2020), Sec. 1: for sigma >> 1 the discrete and continuous curves agree closely.
    for eps in (0.5, 1.0, 2.0):
        d_cont = accounting.gaussian_delta(eps, 20.0, 1.0)
        d_disc = accounting.discrete_gaussian_delta(eps, 20.0, 1)
        assert d_disc == pytest.approx(d_cont, rel=1e-3)


# --- SVT and binomial ----------------------------------------------------------------------


@pytest.mark.parametrize("resample", [False, True])
@pytest.mark.parametrize("c", [1, 3, 10])
def test_svt_scale_inverts_svt_epsilon(c, resample):
    # Park et al. (2021), Thm 1: eps = (c + 1) D / b, or 2 c D / b with resampling.
    factor = 2 * c if resample else c + 1
    b = accounting.svt_scale(0.7, 0.05, c, resample=resample)
    assert b == factor * 0.05 / 0.7
    assert accounting.svt_epsilon(b, 0.05, c, resample=resample) == factor * 0.05 / b


def test_binomial_release_epsilon():
    assert accounting.binomial_release_epsilon(1000, 1000, 10) == 10.0
    assert accounting.binomial_release_epsilon(50, 7.5, 3) == 50 * 3 / 7.5


# --- argument checks ------------------------------------------------------------------------

CHECKS = [
    (accounting.laplace_epsilon, dict(scale=1.0, sensitivity=1.0)),
    (accounting.gaussian_sigma_classical, dict(epsilon=0.5, delta=1e-5, sensitivity=1.0)),
    (accounting.gaussian_sigma_analytic, dict(epsilon=0.5, delta=1e-5, sensitivity=1.0)),
    (accounting.gaussian_epsilon, dict(delta=1e-5, sigma=1.0, sensitivity=1.0)),
    (accounting.gaussian_delta, dict(epsilon=0.5, sigma=1.0, sensitivity=1.0)),
    (accounting.zcdp_gaussian, dict(sigma=1.0, sensitivity=1.0)),
    (accounting.zcdp_to_approx, dict(rho=0.5, delta=1e-5)),
    (accounting.discrete_gaussian_delta, dict(epsilon=0.5, sigma=1.0, sensitivity=1)),
    (accounting.svt_scale, dict(epsilon=1.0, sensitivity=1.0, c=2, resample=False)),
    (accounting.svt_epsilon, dict(scale=1.0, sensitivity=1.0, c=2, resample=False)),
    (accounting.binomial_release_epsilon, dict(n=10, m=5.0, length=2)),
]
BAD = {
    "epsilon": [0, -1, NAN, INF],
    "scale": [0, -1, NAN, INF],
    "sigma": [0, -1, NAN, INF],
    "sensitivity": [0, -1, NAN, INF],
    "rho": [0, -1, NAN, INF],
    "m": [0, -1, NAN, INF],
    "delta": [0, 1, -0.1, NAN],
    "c": [0, -1, 1.5],
    "n": [0, -1, 2.5],
    "length": [0, -1],
}


@pytest.mark.parametrize(
    ("fn", "kwargs", "name", "bad"),
    [
        pytest.param(fn, kwargs, name, bad, id=f"{fn.__name__}-{name}={bad!r}")
        for fn, kwargs in CHECKS
        for name in kwargs
        if name in BAD
        for bad in BAD[name]
        # epsilon = 0 is a valid point of the delta(epsilon) curves
        if not (bad == 0 and name == "epsilon" and fn.__name__.endswith("_delta"))
        # rho = inf (beyond the float range) is no guarantee, as epsilon = inf
        and not (bad == INF and name == "rho")
    ],
)
def test_accounting_arguments_are_checked(fn, kwargs, name, bad):
    fn(**kwargs)  # the valid call works
    with pytest.raises(ValueError, match=rf"\b{name}\b.*got {bad!r}"):
        fn(**{**kwargs, name: bad})
