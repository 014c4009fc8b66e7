"""The SIR example: simulators, release and inputs (Xiong, Ju & Zhang 2023, Section 4.1).

Statistical checks are functions that assert; each has a companion test that
plants a bug and requires the same check to fail. Seeds are fixed, so the
outcomes are deterministic; the quoted false-failure rates are those of the
checks under a random seed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats as st

import dpinfer as dp
from dpinfer.models import sir

BETA, GAMMA = math.exp(sir.TRUTH["log_beta"]), math.exp(sir.TRUTH["log_gamma"])
SIMULATORS = {"exact": sir.simulate_exact, "approx": sir.simulate_approx}
Z_MAX = 4.5  # two-sided normal tail 6.8e-6 per comparison

# The approximate simulator's documented error (its docstring): every summary of I(t)
# (mean, 10/50/90% quantiles) within APPROX_ERROR * K of the exact one.
APPROX_ERROR = 0.002
AGREEMENT_K = 20_000  # population of the agreement test (cheap exact curves)


# --- invariants --------------------------------------------------------------------

# (beta, gamma): the truth, a fast large epidemic, one that dies out, no infection,
# no recovery, nothing at all.
RATE_CASES = [(BETA, GAMMA), (3.0, 0.3), (0.1, 0.5), (0.0, 0.2), (0.8, 0.0), (0.0, 0.0)]


@pytest.mark.parametrize("name", sorted(SIMULATORS))
@pytest.mark.parametrize("population", [1, 7, 3000, 200_000])
def test_compartments_are_consistent(name, population):
    beta, gamma = np.array(RATE_CASES).T
    beta, gamma = np.repeat(beta, 4), np.repeat(gamma, 4)
    times = np.array([0.0, 0.5, 3.0, 17.0, 40.0, 90.0, 153.0])
    out = SIMULATORS[name](beta, gamma, population=population, times=times, rng=7, full=True)
    assert out.shape == (beta.size, 3, times.size) and out.dtype == np.int64
    s, i, r = out[:, 0], out[:, 1], out[:, 2]
    np.testing.assert_array_equal(s + i + r, population)
    assert (s >= 0).all() and (i >= 0).all() and (r >= 0).all()
    assert (np.diff(s, axis=1) <= 0).all(), "S must not increase"
    assert (np.diff(r, axis=1) >= 0).all(), "R must not decrease"
    np.testing.assert_array_equal(out[:, :, 0], [[population - 1, 1, 0]] * beta.size)
    # once I = 0 nothing changes any more
    dead = np.cumsum(i == 0, axis=1) > 0
    np.testing.assert_array_equal(np.where(dead, i, 0), 0)
    frozen = dead[:, 1:] & dead[:, :-1]
    assert (np.diff(s, axis=1)[frozen] == 0).all() and (np.diff(r, axis=1)[frozen] == 0).all()


@pytest.mark.parametrize("name", sorted(SIMULATORS))
def test_degenerate_rates(name):
    simulate = SIMULATORS[name]
    times = np.array([1.0, 50.0])
    # nothing can happen: the initial state forever
    np.testing.assert_array_equal(simulate(0.0, 0.0, population=100, times=times, rng=1), [1, 1])
    # no recovery and beta > 0: everyone ends up infected
    np.testing.assert_array_equal(
        simulate(2.0, 0.0, population=50, times=[1000.0], rng=1, full=True)[:, 0], [0, 50, 0]
    )
    # a population of one can only recover
    one = simulate(np.full(500, 5.0), 1.0, population=1, times=[0.0, 1.0], rng=2)
    assert one[:, 0].tolist() == [1] * 500 and set(one[:, 1].tolist()) <= {0, 1}


@pytest.mark.parametrize("name", sorted(SIMULATORS))
def test_shapes_broadcast(name):
    simulate = SIMULATORS[name]
    assert simulate(0.5, 0.1, population=100, rng=1).shape == (10,)
    assert simulate([0.5, 0.6], 0.1, population=100, rng=1).shape == (2, 10)
    assert simulate(np.ones((2, 3)), [0.1, 0.2, 0.3], population=100, rng=1).shape == (2, 3, 10)
    assert simulate(np.ones((2, 3)), 0.1, population=100, rng=1, full=True).shape == (2, 3, 3, 10)
    assert simulate(np.empty(0), 0.1, population=100, rng=1).shape == (0, 10)
    assert simulate(0.5, 0.1, population=100, times=[3.0], rng=1).shape == (1,)


# --- reproducibility ---------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SIMULATORS))
def test_same_rng_same_curves(name):
    simulate = SIMULATORS[name]
    before = np.random.get_state()  # noqa: NPY002 - checked untouched below
    beta, gamma = np.full(20, BETA), np.full(20, GAMMA)
    first = simulate(beta, gamma, population=5000, rng=11)
    np.testing.assert_array_equal(first, simulate(beta, gamma, population=5000, rng=11))
    np.testing.assert_array_equal(
        first, simulate(beta, gamma, population=5000, rng=np.random.default_rng(11))
    )
    assert not np.array_equal(first, simulate(beta, gamma, population=5000, rng=12))
    gen = np.random.default_rng(3)  # a generator is consumed: two calls differ
    assert not np.array_equal(
        simulate(beta, gamma, population=5000, rng=gen),
        simulate(beta, gamma, population=5000, rng=gen),
    )
    after = np.random.get_state()  # noqa: NPY002 - the global state is untouched
    np.testing.assert_array_equal(before[1], after[1])
    assert before[2:] == after[2:]


def test_model_simulate_is_reproducible():
    model = sir.model(simulator="approx", population=5000)
    params = model.prior.sample(50, np.random.default_rng(0))
    a = model.simulate(params, np.random.default_rng(1))
    b = model.simulate(params, np.random.default_rng(1))
    np.testing.assert_array_equal(a, b)


# --- early extinction, exactly -----------------------------------------------------


def minor_outbreak_probability(beta, gamma, population, cap):
    """P(I hits 0 with at most ``cap`` infections after the first), by the jump chain.

    ``f(k, i)`` is the probability from ``k`` infections so far and ``i``
    infectives; an infection has probability ``beta S / (beta S + gamma K)``.
    """
    f_next = np.zeros(cap + 3)  # f(k + 1, .); f(cap + 1, .) = 0
    for k in range(cap, -1, -1):
        s = population - 1 - k
        p = beta * s / (beta * s + gamma * population)
        f = np.zeros(cap + 3)
        f[0] = 1.0
        for i in range(1, k + 2):
            f[i] = p * f_next[i + 1] + (1 - p) * f[i - 1]
        f_next = f
    return f_next[1]


def check_minor_outbreaks(curves, probability):
    """Fraction of curves with ``I = 0`` and few recovered at the end vs ``probability``.

    Binomial z-test at |z| <= 4.5: false-failure rate 7e-6.
    """
    minor = (curves[:, 1, -1] == 0) & (curves[:, 2, -1] <= MINOR_CAP + 1)
    se = math.sqrt(probability * (1 - probability) / len(curves))
    z = (minor.mean() - probability) / se
    assert abs(z) <= Z_MAX, f"minor-outbreak fraction {minor.mean():.4f} vs {probability:.4f}"


MINOR_CAP = 60
MINOR_CASE = {"beta": 1.0, "gamma": 0.5, "population": 2000}  # R0 = 2, final size ~ 80%


@pytest.fixture(scope="module")
def minor_probability():
    p = minor_outbreak_probability(**MINOR_CASE, cap=MINOR_CAP)
    assert 0.45 < p < 0.55  # about gamma / beta = 0.5 for a large population
    return p


def _minor_curves(simulate, gamma_factor=1.0):
    n = 6000
    beta = np.full(n, MINOR_CASE["beta"])
    gamma = np.full(n, MINOR_CASE["gamma"] * gamma_factor)
    pop = MINOR_CASE["population"]
    return simulate(beta, gamma, population=pop, times=[0.0, 400.0], rng=99, full=True)


@pytest.mark.parametrize("name", sorted(SIMULATORS))
def test_early_extinction_probability(name, minor_probability):
    curves = _minor_curves(SIMULATORS[name])
    # the other outcome is a major outbreak, far above the cap
    r_end = curves[:, 2, -1]
    assert ((r_end <= MINOR_CAP + 1) | (r_end > 10 * MINOR_CAP)).mean() > 0.999
    check_minor_outbreaks(curves, minor_probability)


def test_early_extinction_check_flags_wrong_recovery_rate(minor_probability):
    curves = _minor_curves(sir.simulate_exact, gamma_factor=1.2)
    with pytest.raises(AssertionError, match="minor-outbreak fraction"):
        check_minor_outbreaks(curves, minor_probability)


# --- the approximate simulator against the exact one --------------------------------


def _summaries(curves):
    return np.vstack([curves.mean(axis=0), np.quantile(curves, [0.1, 0.5, 0.9], axis=0)])


def _bootstrap_se(curves, rng, reps=200):
    n = len(curves)
    return np.std([_summaries(curves[rng.integers(0, n, n)]) for _ in range(reps)], axis=0)


def check_agreement(exact, approx, population):
    """Mean and 10/50/90% quantiles of I(t) agree within the documented error.

    At each time t > 0 and for each summary: |approx - exact| <= APPROX_ERROR K
    + 4.5 SE, SE the bootstrap standard error of the difference. With no bias,
    the false-failure rate is at most 36 x 7e-6 = 3e-4 (Bonferroni, normal
    approximation).
    """
    boot = np.random.default_rng(0)
    se = np.sqrt(_bootstrap_se(exact, boot) ** 2 + _bootstrap_se(approx, boot, reps=100) ** 2)
    diff = (_summaries(approx) - _summaries(exact))[:, 1:]
    allowed = APPROX_ERROR * population + Z_MAX * se[:, 1:]
    bad = np.argwhere(np.abs(diff) > allowed)
    assert bad.size == 0, (
        "approximate and exact curves disagree at (summary, time index) "
        f"{bad.tolist()}: differences {diff[tuple(bad.T)]}, allowed {allowed[tuple(bad.T)]}"
    )


@pytest.fixture(scope="module")
def exact_curves():
    n = 2000
    return sir.simulate_exact(
        np.full(n, BETA), np.full(n, GAMMA), population=AGREEMENT_K, rng=20240601
    )


def _approx_curves(beta_factor=1.0, gamma_factor=1.0):
    n = 20_000
    return sir.simulate_approx(
        np.full(n, BETA * beta_factor),
        np.full(n, GAMMA * gamma_factor),
        population=AGREEMENT_K,
        rng=20240602,
    )


def test_approx_agrees_with_exact(exact_curves):
    check_agreement(exact_curves, _approx_curves(), AGREEMENT_K)


@pytest.mark.parametrize(
    ("beta_factor", "gamma_factor"), [(1.0, 2.0), (1.1, 1.0)], ids=["gamma x2", "beta x1.1"]
)
def test_agreement_check_flags_wrong_rates(exact_curves, beta_factor, gamma_factor):
    with pytest.raises(AssertionError, match="disagree"):
        check_agreement(exact_curves, _approx_curves(beta_factor, gamma_factor), AGREEMENT_K)


# --- the release -------------------------------------------------------------------


def test_constants():
    np.testing.assert_array_equal(sir.RELEASED, np.round(sir.RELEASED_FRACTIONS * sir.N_TRIALS))
    np.testing.assert_array_equal(sir.TIMES, [0, 17, 34, 51, 68, 85, 102, 119, 136, 153])
    assert sir.TIMES.size * sir.N_TRIALS / sir.M == sir.EPSILON == 10.0
    p = sir.prior()
    assert set(p) == {"log_beta", "log_gamma"}
    assert p["log_beta"].mean() == pytest.approx(math.log(0.4))
    assert p["log_beta"].var() == pytest.approx(0.5)
    assert p["log_gamma"].mean() == pytest.approx(math.log(0.125))
    assert p["log_gamma"].var() == pytest.approx(0.2)


def test_mechanism_is_propositon_4():
    mech = sir.mechanism()
    assert isinstance(mech, dp.BinomialRelease)
    assert (mech.n, mech.m, mech.population, mech.event_shape) == (1000, 1000.0, 10**6, (10,))
    assert mech.privacy.epsilon == 10.0
    other = sir.mechanism(2.5, n=200, population=5000, length=4)
    assert other.m == pytest.approx(200 * 4 / 2.5) and other.privacy.epsilon == pytest.approx(2.5)


def test_release_logpmf_matches_scipy():
    mech = sir.mechanism()
    curves = sir.simulate_approx(
        np.exp(np.array([-0.5, -0.3, -1.0])), np.exp(np.array([-3.0, -2.5, -2.0])), rng=4
    )
    curves = np.vstack([curves, np.zeros(10, np.int64), np.full(10, sir.POPULATION)])
    p = (curves + mech.m) / (mech.population + 2 * mech.m)
    expected = st.binom.logpmf(sir.RELEASED, mech.n, p).sum(axis=1)
    np.testing.assert_allclose(mech.logpdf(sir.RELEASED, curves), expected, rtol=1e-12)


def test_simulate_release_draws_binomials_of_the_curve():
    theta = {"log_beta": np.array([-0.5, -0.7]), "log_gamma": np.array([-3.0, -2.0])}
    kwargs = {"population": 10_000, "times": [0.0, 10.0, 30.0], "n": 300}
    for simulator, simulate in SIMULATORS.items():
        got = sir.simulate_release(theta, epsilon=2.0, simulator=simulator, rng=8, **kwargs)
        gen = np.random.default_rng(8)
        curves = simulate(
            np.exp(theta["log_beta"]),
            np.exp(theta["log_gamma"]),
            population=10_000,
            times=kwargs["times"],
            rng=gen,
        )
        m = 300 * 3 / 2.0
        expected = gen.binomial(300, (curves + m) / (10_000 + 2 * m))
        np.testing.assert_array_equal(got, expected)
    by_m = sir.simulate_release(theta, m=450.0, rng=8, **kwargs)
    by_eps = sir.simulate_release(theta, epsilon=2.0, rng=8, **kwargs)
    np.testing.assert_array_equal(by_m, by_eps)
    array_theta = np.stack([theta["log_beta"], theta["log_gamma"]], axis=-1)
    np.testing.assert_array_equal(
        sir.simulate_release(array_theta, epsilon=2.0, rng=8, **kwargs), by_eps
    )


def test_model_feeds_the_mechanism():
    model = sir.model(simulator="approx", population=10_000, times=[0.0, 20.0, 40.0])
    assert model.prior.names == ("log_beta", "log_gamma")
    mech = sir.mechanism(n=100, population=10_000, length=3)
    rng = np.random.default_rng(2)
    params = model.prior.sample(30, rng)
    s = model.simulate_checked(params, rng, event_shape=mech.event_shape)
    assert s.dtype == np.int64 and (s >= 0).all() and (s <= 10_000).all()
    assert mech.logpdf(np.array([5, 50, 20]), s).shape == (30,)
    exact = sir.model(population=500)
    assert exact.simulate(exact.prior.sample(5, rng), rng).shape == (5, 10)


# --- validation --------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SIMULATORS))
@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"beta": -0.1}, r"beta must hold finite non-negative rates, got -0\.1"),
        ({"beta": [0.5, math.nan]}, r"beta must hold finite non-negative rates, got nan"),
        ({"gamma": math.inf}, r"gamma must hold finite non-negative rates, got inf"),
        ({"population": 0}, r"population must be a positive integer, got 0"),
        ({"population": 10.5}, r"population must be a positive integer, got 10\.5"),
        (
            {"times": [0.0, 17.0, 5.0]},
            r"times must be strictly increasing, got \[ 0\. 17\.  5\.\]",
        ),
        ({"times": [3.0, 3.0]}, r"times must be strictly increasing"),
        ({"times": [-1.0, 2.0]}, r"times must be finite and non-negative, got \[-1\.  2\.\]"),
        ({"times": [0.0, math.nan]}, r"times must be finite and non-negative"),
        ({"times": []}, r"times must be a non-empty 1-d array, got shape \(0,\)"),
        ({"times": [[1.0, 2.0]]}, r"times must be a non-empty 1-d array, got shape \(1, 2\)"),
        ({"beta": [0.5, 0.6], "gamma": [0.1, 0.2, 0.3]}, r"beta and gamma must broadcast"),
    ],
)
def test_bad_inputs_raise_value_error(name, kwargs, match):
    args = {"beta": 0.5, "gamma": 0.1, "population": 100, **kwargs}
    beta, gamma = args.pop("beta"), args.pop("gamma")
    with pytest.raises(ValueError, match=match):
        SIMULATORS[name](beta, gamma, rng=0, **args)


@pytest.mark.parametrize("dt", [0.0, -1.0, math.nan, math.inf])
def test_bad_dt(dt):
    with pytest.raises(ValueError, match=r"dt must be a positive finite number, got"):
        sir.simulate_approx(0.5, 0.1, population=100, dt=dt, rng=0)
    with pytest.raises(ValueError, match=r"dt must be a positive finite number, got"):
        sir.model(simulator="approx", dt=dt)


def test_bad_types_raise_type_error():
    with pytest.raises(TypeError, match=r"population must be a positive integer, got True"):
        sir.simulate_exact(0.5, 0.1, population=True)
    with pytest.raises(TypeError, match=r"full must be True or False, got 1"):
        sir.simulate_exact(0.5, 0.1, population=10, full=1)
    with pytest.raises(TypeError, match=r"beta must be an array of real rates, got 'fast'"):
        sir.simulate_exact("fast", 0.1, population=10)


def test_bad_model_and_release_options():
    with pytest.raises(ValueError, match=r"simulator must be one of 'exact', 'approx', got 'ode'"):
        sir.model(simulator="ode")
    with pytest.raises(ValueError, match=r"simulator must be one of 'exact', 'approx', got 'ode'"):
        sir.simulate_release(sir.TRUTH, simulator="ode", rng=0)
    with pytest.raises(ValueError, match=r"give epsilon or m, not both.*epsilon=1\.0, m=5\.0"):
        sir.simulate_release(sir.TRUTH, epsilon=1.0, m=5.0, rng=0)
    with pytest.raises(ValueError, match=r"theta must have keys .*missing \['log_gamma'\]"):
        sir.simulate_release({"log_beta": 0.1}, rng=0)
    with pytest.raises(ValueError, match=r"last axis holds \(log beta, log gamma\).*\(3,\)"):
        sir.simulate_release([0.1, 0.2, 0.3], rng=0)
    with pytest.raises(ValueError, match=r"theta\['log_gamma'\] must be finite, got nan"):
        sir.simulate_release({"log_beta": 0.1, "log_gamma": math.nan}, rng=0)
    with pytest.raises(ValueError, match=r"epsilon must be a positive finite number, got -1"):
        sir.simulate_release(sir.TRUTH, epsilon=-1, rng=0)
    with pytest.raises(ValueError, match=r"n must be a positive integer, got 0"):
        sir.simulate_release(sir.TRUTH, n=0, rng=0)
    with pytest.raises(ValueError, match=r"m must be a positive finite number, got 0"):
        sir.simulate_release(sir.TRUTH, m=0, rng=0)
