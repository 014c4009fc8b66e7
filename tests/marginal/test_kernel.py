"""The compiled marginal sums against brute-force sums, everywhere the parameters can go.

Each case is one cell: a latent family with its parameters (near the release and far
from it, as NUTS warm-up goes), one or two mechanisms and their releases. The kernel must
agree with an independent wide-window sum (``_brute``) within its stated bound ``tol``
(relative, so within ``tol`` in the log), and its scores with central finite differences
of the brute-force log-likelihood.
"""

from __future__ import annotations

import numpy as np
import pytest

import dpinfer as dp
from dpinfer.marginal import _families as F
from dpinfer.marginal import _fourier as fourier
from dpinfer.marginal._forms import joined_form, kernel_form, release_form
from dpinfer.marginal._poisson import STATE
from dpinfer.marginal._sweep import sweep_cells

from ._brute import log_marginal

TOL = 1e-10
FAMILIES = {
    "poisson": F.POISSON,
    "binomial": F.BINOMIAL,
    "negative_binomial": F.NEGATIVE_BINOMIAL,
    "geometric": F.GEOMETRIC,
    "discrete_uniform": F.DISCRETE_UNIFORM,
}
MECHANISMS = {
    "discrete gaussian": (dp.DiscreteGaussian(3.0), 37),
    "discrete laplace": (dp.DiscreteLaplace(4.0), 37),
    "laplace": (dp.Laplace(5.0), 37.4),
    "gaussian": (dp.Gaussian(0.7), 37.4),
    "binomial release": (dp.BinomialRelease(n=200, m=50, population=1000, length=1), 9),
}
PARAMETERS = {
    "poisson": [(0.3, 0), (37.0, 0), (900.0, 0), (4e5, 0), (1e-8, 0)],
    "binomial": [(60, 0.5), (1000, 0.002), (1000, 0.9), (5000, 0.01)],
    "negative_binomial": [(0.3, 0.01), (0.8, 0.5), (5.0, 0.1), (40.0, 0.9)],
    "geometric": [(0.02, 0), (0.5, 0), (0.999, 0)],
    "discrete_uniform": [(0, 100), (30, 45), (500, 700)],
}


def kernel(family, a, b, pairs, tol=TOL):
    """The kernel on one cell: (log-likelihood, score a, score b, terms)."""
    form, table = joined_form(
        [release_form(m, np.reshape(r, m.event_shape), latent_discrete=True) for m, r in pairs]
    )
    out = [np.empty(1) for _ in range(3)]
    terms = np.empty(1, dtype=np.int64)
    sweep_cells(
        FAMILIES[family],
        np.array([float(a)]),
        np.array([float(b)]),
        *kernel_form(form, table),
        tol,
        np.full((1, STATE), np.nan),
        *out,
        terms,
        0,
        1,
    )
    return out[0][0], out[1][0], out[2][0], int(terms[0])


CASES = [
    (family, a, b, mech)
    for family, params in PARAMETERS.items()
    for a, b in params
    for mech in MECHANISMS
]


@pytest.mark.parametrize(("family", "a", "b", "mech"), CASES, ids=lambda v: str(v))
def test_log_likelihood_matches_a_wide_brute_force_sum(family, a, b, mech):
    mechanism, r = MECHANISMS[mech]
    reference = log_marginal(family, a, b, [(mechanism, r)])
    logp, *_ = kernel(family, a, b, [(mechanism, r)])
    if np.isneginf(reference):
        assert np.isneginf(logp)
    else:
        assert abs(logp - reference) <= 2 * TOL + 1e-12 * abs(reference)


@pytest.mark.parametrize(
    ("family", "a", "b"),
    [
        ("poisson", 37.0, 0),
        ("poisson", 900.0, 0),
        ("binomial", 1000, 0.03),
        ("negative_binomial", 5.0, 0.1),
        ("negative_binomial", 0.8, 0.02),
        ("geometric", 0.05, 0),
    ],
)
@pytest.mark.parametrize("mech", ["discrete gaussian", "laplace", "gaussian"])
def test_scores_are_the_gradient_of_the_exact_log_likelihood(family, a, b, mech):
    mechanism, r = MECHANISMS[mech]
    _, score_a, score_b, _ = kernel(family, a, b, [(mechanism, r)])
    pairs = [(mechanism, r)]
    if family != "binomial":
        h = 1e-5 * a
        fd = (log_marginal(family, a + h, b, pairs) - log_marginal(family, a - h, b, pairs)) / (
            2 * h
        )
        assert score_a == pytest.approx(fd, rel=1e-5, abs=1e-7)
    if family in ("binomial", "negative_binomial"):
        h = 1e-6 * min(b, 1 - b)
        fd = (log_marginal(family, a, b + h, pairs) - log_marginal(family, a, b - h, pairs)) / (
            2 * h
        )
        assert score_b == pytest.approx(fd, rel=1e-5, abs=1e-7)


def test_a_cell_measured_twice_is_summed_once_against_both_densities():
    pairs = [(dp.DiscreteGaussian(2.0), 41), (dp.DiscreteLaplace(6.0), 30)]
    for a in (3.0, 40.0, 2e4):
        reference = log_marginal("poisson", a, 0, pairs)
        assert kernel("poisson", a, 0, pairs)[0] == pytest.approx(reference, abs=2 * TOL)
    # not the product of two single-release marginals
    single = sum(kernel("poisson", 40.0, 0, [p])[0] for p in pairs)
    assert abs(single - kernel("poisson", 40.0, 0, pairs)[0]) > 0.1


def test_the_window_grows_with_the_noise_and_not_with_the_distance_to_the_data():
    # (terms summed: a cell this wide takes every other term of its window, ._poisson)
    small = kernel("poisson", 1e6, 0, [(dp.DiscreteGaussian(1.0), 37)])[3]
    wider = kernel("poisson", 1e6, 0, [(dp.DiscreteGaussian(5.0), 37)])[3]
    assert small < 20 < wider
    # wider still, the cell is a contour integral of a fixed number of nodes (._fourier)
    widest = kernel("poisson", 1e6, 0, [(dp.DiscreteGaussian(300.0), 37)])[3]
    assert widest == fourier.plan(TOL)[1] + 1 < wider


def test_invalid_parameters_give_minus_infinity_and_no_gradient():
    for family, a, b in [
        ("poisson", -1.0, 0),
        ("binomial", 10, 1.5),
        ("negative_binomial", 0.0, 0.5),
    ]:
        logp, score_a, score_b, _ = kernel(family, a, b, [MECHANISMS["laplace"]])
        assert np.isneginf(logp) and score_a == 0.0 and score_b == 0.0


def test_companion_a_fixed_window_is_caught():
    # Planted bug: a window of +-3 around the release instead of the bounded expansion. Far
    # from the data the brute-force comparison above must catch it.
    from scipy.special import logsumexp

    mechanism, r = MECHANISMS["laplace"]
    s = np.arange(r - 3, r + 4).round()
    import scipy.stats as st

    truncated = logsumexp(st.poisson(900.0).logpmf(s) + mechanism.logpdf(r, s))
    assert abs(truncated - log_marginal("poisson", 900.0, 0, [(mechanism, r)])) > 2 * TOL
