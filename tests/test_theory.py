"""ABCDP theory (Park et al. 2021): Lemma 2, Proposition 1 and Theorem 2 against simulation.

Each statistical check is a function that asserts; each has a companion test that plants
a bug (a wrong formula, the wrong noise, a bound computed with the wrong scale) and
requires the same check to fail. Seeds are fixed, so outcomes are deterministic; the
false-failure rates quoted are those of the checks under a random seed.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import scipy.integrate as si  # noqa: E402
import scipy.stats as st  # noqa: E402

import dpinfer as dp  # noqa: E402
from dpinfer import theory  # noqa: E402

Z_MAX = 4.5  # two-sided |z| threshold: false-failure rate 6.8e-6 per comparison
GOF_LEVEL = 1e-3  # chi-square rejection level = false-failure rate per test


def _noise_difference(b, n, rng):
    """Draws of ``Z = m - v``, ``m ~ Lap(b)``, ``v ~ Lap(2b)`` (Lemma 2)."""
    return rng.laplace(0.0, b, n) - rng.laplace(0.0, 2 * b, n)


# --- Lemma 2: the flip probability G_b and the density of Z --------------------------------


def check_tail(g, b, *, n=1_000_000, seed=1):
    """``P(Z > a)`` and ``P(Z < -a)`` of simulated Z against ``g(a, b)`` on 20 values of a.

    40 comparisons at |z| < 4.5: false-failure rate below 3e-4.
    """
    z = _noise_difference(b, n, np.random.default_rng(seed))
    a = np.linspace(0.0, 8 * b, 20)
    expected = g(a, b)
    for side in (z[None, :] > a[:, None], z[None, :] < -a[:, None]):
        freq = side.mean(axis=1)
        se = np.sqrt(expected * (1 - expected) / n)
        assert np.all(np.abs(freq - expected) < Z_MAX * se), np.max(np.abs(freq - expected) / se)


@pytest.mark.parametrize("b", [0.01, 1.0, 30.0])
def test_flip_probability_matches_simulation(b):
    check_tail(theory.flip_probability, b)


@pytest.mark.parametrize(
    "wrong",
    [
        lambda a, b: (4 * np.exp(-a / (2 * b)) - np.exp(-a / b)) / 5,  # wrong constant
        lambda a, b: 0.5 * np.exp(-a / b) * (1 + a / (2 * b)),  # Lap(b) - Lap(b)
        lambda a, b: (4 * np.exp(-a / b) - np.exp(-2 * a / b)) / 6,  # scales b/2 and b
    ],
)
def test_planted_wrong_flip_probability_is_caught(wrong):
    with pytest.raises(AssertionError):
        check_tail(wrong, 1.0)


def test_flip_probability_properties():
    b = 0.3
    a = np.linspace(0, 10, 1001)
    g = theory.flip_probability(a, b)
    assert g[0] == 0.5 and np.all(np.diff(g) < 0) and np.all(g > 0)
    with pytest.raises(ValueError, match="a = "):
        theory.flip_probability(-0.1, b)


def check_density(pdf, b, *, n=200_000, seed=2):
    """The density integrates to 1 and fits a histogram of Z (chi-square, level GOF_LEVEL)."""
    total, _ = si.quad(pdf, -np.inf, np.inf, args=(b,))
    assert total == pytest.approx(1.0, abs=1e-8)
    z = _noise_difference(b, n, np.random.default_rng(seed))
    edges = np.r_[-np.inf, np.linspace(-10 * b, 10 * b, 41), np.inf]
    probs = np.array([si.quad(pdf, lo, hi, args=(b,))[0] for lo, hi in zip(edges, edges[1:])])
    counts = np.histogram(z, bins=edges)[0]
    assert st.chisquare(counts, probs / probs.sum() * n).pvalue > GOF_LEVEL


@pytest.mark.parametrize("b", [0.05, 2.0])
def test_lemma_2_density_integrates_to_one_and_fits_a_histogram(b):
    check_density(theory.noise_difference_pdf, b)


def _lap_b_minus_lap_b_pdf(z, b):
    """Planted bug: the density of Lap(b) - Lap(b), normalised but the wrong law."""
    a = np.abs(z)
    return np.exp(-a / b) * (b + a) / (4 * b**2)


def test_planted_wrong_density_is_caught():
    with pytest.raises(AssertionError):
        check_density(_lap_b_minus_lap_b_pdf, 1.0)


def test_cdf_is_the_integral_of_the_density_and_continuous_at_zero():
    b = 0.7
    for a in (-5.0, -0.3, 0.0, 0.4, 6.0):
        # integrate on each side of the kink at 0
        integral = si.quad(theory.noise_difference_pdf, -np.inf, min(a, 0.0), args=(b,))[0]
        integral += si.quad(theory.noise_difference_pdf, 0.0, max(a, 0.0), args=(b,))[0]
        assert theory.noise_difference_cdf(a, b) == pytest.approx(integral, abs=1e-10)
    assert theory.noise_difference_cdf(0.0, b) == 0.5
    assert theory.noise_difference_cdf(-1e-12, b) == pytest.approx(0.5, abs=1e-10)
    grid = np.linspace(-20, 20, 2001)
    assert np.all(np.diff(theory.noise_difference_cdf(grid, b)) > 0)


# --- Proposition 1: flips of the sparse vector technique against ABC ----------------------


class HalfQueryNoise(dp.SparseVector):
    """Planted bug: query noise Lap(b) instead of Lap(2b)."""

    def _query_scale(self):
        return self.scale


def check_proposition_1(svt_class, *, runs=3000, seed=3):
    """Per-query flip frequencies of SVT runs against ``G_b(|rho - eps_abc|)``.

    One run (threshold drawn once) answers 13 distances around the threshold, 40 copies
    each, without halting (``c`` = stream length), so every query sees the unconditioned
    threshold noise. Flips within a run share that noise: the standard error is taken
    across runs. 13 comparisons at |z| < 4.5: false-failure rate below 1e-4 (normal
    approximation over 3000 runs).
    """
    b, eps_abc = 0.05, 0.2
    rho = eps_abc + np.linspace(-6 * b, 6 * b, 13)
    stream = np.repeat(rho, 40)
    abc = stream <= eps_abc
    svt = svt_class(eps_abc, scale=b, c=stream.size, sensitivity=1.0)
    rng = np.random.default_rng(seed)
    flips = np.empty((runs, rho.size))
    for r in range(runs):
        res = svt.run(stream, rng=rng)
        assert res.n_queries == stream.size
        flips[r] = (res.indicators != abc).reshape(rho.size, 40).mean(axis=1)
    expected = theory.flip_probability(np.abs(rho - eps_abc), b)
    se = flips.std(axis=0, ddof=1) / np.sqrt(runs)
    z = (flips.mean(axis=0) - expected) / se
    assert np.all(np.abs(z) < Z_MAX), z


def test_proposition_1_flip_probability_of_the_sparse_vector_runs():
    check_proposition_1(dp.SparseVector)


def test_planted_wrong_query_noise_breaks_proposition_1():
    with pytest.raises(AssertionError):
        check_proposition_1(HalfQueryNoise)


def _resampled_flips(*, only_fresh, runs=1000, seed=6):
    """Flip z-scores of RESAMPLE=True runs, per distance value, over a shuffled stream."""
    b, eps_abc = 0.05, 0.2
    rho = eps_abc + np.linspace(-6 * b, 6 * b, 13)
    rng = np.random.default_rng(seed)
    stream = rng.permutation(np.repeat(np.arange(rho.size), 10))
    svt = dp.SparseVector(eps_abc, scale=b, c=stream.size, sensitivity=1.0, resample=True)
    flips, counts = np.zeros(rho.size), np.zeros(rho.size)
    for _ in range(runs):
        ind = svt.run(rho[stream], rng=rng).indicators
        fresh = np.r_[True, ind[:-1]] if only_fresh else np.ones(ind.size, dtype=bool)
        flip = ind != (rho[stream] <= eps_abc)
        np.add.at(flips, stream[fresh], flip[fresh])
        np.add.at(counts, stream[fresh], 1)
    expected = theory.flip_probability(np.abs(rho - eps_abc), b)
    return (flips / counts - expected) / np.sqrt(expected * (1 - expected) / counts)


def test_proposition_1_with_resampling_holds_where_the_threshold_is_fresh():
    """With RESAMPLE the threshold in force at step t was selected by the rejections since
    the last redraw, so Proposition 1 holds for the first query after each redraw (and
    the first query), not for every query. Fresh positions are stopping times, so the
    flips there are Bernoulli(G_b); 13 comparisons at |z| < 4.5: false-failure rate
    below 1e-4.
    """
    z = _resampled_flips(only_fresh=True)
    assert np.all(np.abs(z) < Z_MAX), z
    # over all positions the marginal is visibly different (a documented limitation)
    assert np.max(np.abs(_resampled_flips(only_fresh=False))) > 10


# --- Theorem 2: error of posterior expectations ------------------------------------------

T2 = dict(eps_abc=0.3, b=0.02, T=500)


def _theorem2_setting():
    """Public proposals theta_t with rho_t = theta_t, and f = -1 inside / +1 outside the ABC set.

    f takes opposite values on the two sides of the threshold, so every flip moves the
    ABCDP mean away from the ABC mean: the bound is within a factor of about 2.
    """
    theta = np.random.default_rng(4).uniform(0, 1, T2["T"])
    rho = theta
    f = np.where(rho <= T2["eps_abc"], -1.0, 1.0)
    return rho, f


def _errors(rho, f, *, noise_b, resample, runs, seed):
    """``|mean_ABCDP f - mean_ABC f|`` over ``runs`` T-step runs (c = T: never halts)."""
    eps_abc = T2["eps_abc"]
    abc = rho <= eps_abc
    abc_mean = f[abc].mean()
    svt = dp.SparseVector(eps_abc, scale=noise_b, c=rho.size, sensitivity=1.0, resample=resample)
    rng = np.random.default_rng(seed)
    out = np.empty(runs)
    for r in range(runs):
        ind = svt.run(rho, rng=rng).indicators
        assert ind.size == rho.size and ind.any()
        out[r] = abs(f[ind].mean() - abc_mean)
    return out


def check_theorem_2(*, bound_b, noise_b, resample, runs=None, seed=5):
    """Mean error over runs <= Theorem 2 (1) bound, allowing 4.5 standard errors.

    A correct bound fails only if the sample mean exceeds E[error] by 4.5 standard
    errors: false-failure rate below 1e-5.
    """
    runs = (600 if resample else 2000) if runs is None else runs  # resampling runs are slower
    rho, f = _theorem2_setting()
    errors = _errors(rho, f, noise_b=noise_b, resample=resample, runs=runs, seed=seed)
    n_abc = int(np.sum(rho <= T2["eps_abc"]))
    bound = theory.theorem2_bound(rho, T2["eps_abc"], bound_b, f, n_abc)
    se = errors.std(ddof=1) / np.sqrt(runs)
    assert errors.mean() - Z_MAX * se <= bound, (errors.mean(), se, bound)
    return errors, bound


@pytest.mark.parametrize("resample", [False, True])
def test_theorem_2_bound_holds_on_simulated_runs(resample):
    b = T2["b"]
    errors, bound = check_theorem_2(bound_b=b, noise_b=b, resample=resample)
    # informative, not vacuous: within a factor of 3 of the simulated error
    assert errors.mean() > bound / 3
    # statement (3): P(error <= a) >= 1 - 4 K / (3 a c') sum exp(-|rho - eps|/(2b))
    rho, f = _theorem2_setting()
    n_abc = int(np.sum(rho <= T2["eps_abc"]))
    for a in (0.5, 1.0, 1.5):
        lower = theory.theorem2_tail_bound(rho, T2["eps_abc"], b, f, n_abc, a)
        freq = np.mean(errors <= a)
        assert freq + Z_MAX * np.sqrt(max(freq * (1 - freq), 1e-4) / errors.size) >= lower


@pytest.mark.parametrize("resample", [False, True])
def test_planted_bound_with_too_small_a_scale_is_violated(resample):
    b = T2["b"]
    with pytest.raises(AssertionError):
        check_theorem_2(bound_b=b / 4, noise_b=b, resample=resample)


def test_planted_mechanism_with_four_times_the_noise_violates_the_bound():
    b = T2["b"]
    with pytest.raises(AssertionError):
        check_theorem_2(bound_b=b, noise_b=4 * b, resample=False)


def test_theorem2_bound_closed_form():
    rho = np.array([0.1, 0.25, 0.5])
    f = np.array([[3.0, 4.0], [0.0, 1.0], [1.0, 1.0]])  # K_T = 5
    b = 0.1
    g = (4 * np.exp(-np.abs(rho - 0.2) / (2 * b)) - np.exp(-np.abs(rho - 0.2) / b)) / 6
    assert theory.theorem2_bound(rho, 0.2, b, f, 2) == pytest.approx(2 * 5 / 2 * g.sum())
    tail = 1 - 4 * 5 / (3 * 0.7 * 2) * np.exp(-np.abs(rho - 0.2) / (2 * b)).sum()
    assert theory.theorem2_tail_bound(rho, 0.2, b, f, 2, 0.7) == pytest.approx(tail)


# --- Figure 1 ------------------------------------------------------------------------------


def test_plot_flip_probability_draws_figure_1():
    import matplotlib.pyplot as plt

    fig = theory.plot_flip_probability(n_points=50)
    axes = fig.axes
    assert len(axes) == 9
    assert all(len(ax.lines) == 4 + 1 for ax in axes)  # 4 budgets + the eps_abc marker
    # bottom-left panel (N = 10, c = 1000, eps = 0.1): b is huge, flips close to 1/2
    y = axes[6].lines[0].get_ydata()
    assert np.all(y > 0.49)
    # top-right panel (N = 1000, c = 10, eps = 100): flips vanish away from eps_abc
    x, y = axes[2].lines[3].get_xdata(), axes[2].lines[3].get_ydata()
    assert np.all(y[np.abs(x - 0.2) > 0.05] < 1e-6)
    plt.close(fig)
