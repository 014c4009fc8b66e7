"""The lattice sampler's noise terms equal the shared discrete Gaussian's, with a companion."""

import numpy as np
import pytest

import dpinfer as dp
from dpinfer.census._noise_term import NoiseLaws, log_likelihood, step_log_ratio
from dpinfer.noise.form import NO_TABLE
from dpinfer.noise.terms import term

VARIANCES = np.array([[0.3, 4.0], [8010.25, np.inf], [4.0, 1.21]])
GAPS = np.arange(-40, 41)


def shared_step(laws, number, gap, step):
    """``term(s + step) - term(s)`` of law ``number`` released at ``gap`` (so ``s = 0``)."""
    form = laws.form.copy()
    form["released"] = gap
    return term(form, NO_TABLE, number - 1, float(step)) - term(form, NO_TABLE, number - 1, 0.0)


def kernel_steps(intercepts, numbers):
    return np.array(
        [
            [step_log_ratio(intercepts[k], g, step) for g in GAPS for step in (1, -1)]
            for k in numbers
        ]
    )


def shared_steps(laws, numbers):
    return np.array(
        [[shared_step(laws, k, g, step) for g in GAPS for step in (1, -1)] for k in numbers]
    )


@pytest.fixture(scope="module")
def laws():
    laws = NoiseLaws()
    numbers = laws.number(VARIANCES)
    return laws, numbers


def test_laws_are_numbered_once_each_and_unmeasured_cells_are_zero():
    laws = NoiseLaws()
    numbers = laws.number(VARIANCES)
    assert numbers.tolist() == [[1, 3], [4, 0], [3, 2]]  # in sorted order of the variances
    assert laws.number(np.array([4.0, np.inf, 2.5])).tolist() == [3, 0, 5]
    np.testing.assert_allclose(laws.form["scale"] ** 2, [0.3, 1.21, 4.0, 8010.25, 2.5])


def test_a_step_scores_the_shared_terms_difference(laws):
    laws, _ = laws
    numbers = range(1, len(laws.form) + 1)
    np.testing.assert_allclose(
        kernel_steps(laws.intercepts, numbers), shared_steps(laws, numbers), rtol=1e-13,
        atol=1e-15,
    )  # fmt: skip
    assert step_log_ratio(laws.intercepts[0], 7, 1) == 0.0  # not measured


def test_companion_the_slope_for_the_intercept_fails(laws):
    laws, _ = laws
    numbers = range(1, len(laws.form) + 1)
    planted = -2 * laws.intercepts  # B where A belongs
    assert not np.allclose(kernel_steps(planted, numbers), shared_steps(laws, numbers))


def test_the_log_likelihood_is_the_mechanisms(laws):
    laws, numbers = laws
    rng = np.random.default_rng(3)
    r = rng.integers(-6, 7, size=(3, 2)).astype(np.int32)
    measured = np.isfinite(VARIANCES)
    sigma = np.sqrt(VARIANCES[measured])
    expected = dp.DiscreteGaussian(sigma).logpdf(r[measured], np.zeros(sigma.size))
    got = log_likelihood(r, numbers, np.arange(2), laws.form)
    np.testing.assert_allclose(got, np.sum(expected), rtol=1e-13)
    # one column per query: both cells of a unit read the law of column 0
    np.testing.assert_allclose(
        log_likelihood(r[:1], numbers[:1], np.zeros(2, dtype=np.int64), laws.form),
        np.sum(dp.DiscreteGaussian(np.sqrt(0.3), event_shape=2).logpdf(r[0], np.zeros(2))),
        rtol=1e-13,
    )
