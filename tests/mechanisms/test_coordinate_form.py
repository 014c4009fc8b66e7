"""Every mechanism's per-coordinate form (scored in numba) equals its logpdf, for every row.

The compiled record updates of ``da_mcmc`` evaluate the mechanism density through
``Mechanism._coordinate_form``; a form that drifts from the family's formula would bias
them silently, so each registry row is checked against the independent oracle, and a
planted wrong form must fail the same check.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from _mechanism_registry import CASES, case_shape_ids, case_shapes

from dpinfer.mechanisms._coordinate import BINOMIAL
from dpinfer.samplers.da._da_kernels import density_with


def _form_logpdf(form, values):
    flat = np.ascontiguousarray(np.reshape(values, (len(values), -1)), dtype=float)
    return density_with(form, flat)


def _oracle(case, mech, released, values):
    terms = case.oracle(mech, released, values)
    return terms.reshape(len(values), -1).sum(axis=1)


def _setup(case, event_shape):
    """A mechanism of the row, 40 confidential values, a release and its form."""
    mech = case.make(event_shape)
    rng = np.random.default_rng(3)
    values = case.draw_values(rng, (40, *event_shape))
    released = mech.release(values[0], rng=rng)
    return mech, values, released, mech._coordinate_form(released)


@pytest.mark.parametrize(("case", "event_shape"), case_shapes(), ids=case_shape_ids())
def test_coordinate_form_matches_the_oracle(case, event_shape):
    mech, values, released, form = _setup(case, event_shape)
    assert form is not None, f"{case.name} has no coordinate form"
    got = _form_logpdf(form, values)
    np.testing.assert_allclose(got, _oracle(case, mech, released, values), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got, mech.logpdf(released, values), rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize(("case", "event_shape"), case_shapes(), ids=case_shape_ids())
def test_planted_wrong_form_fails_the_check(case, event_shape):
    # A form with a 2%-off first coefficient (scale, variance or pseudo-count).
    mech, values, released, form = _setup(case, event_shape)
    coef = form.coefficients.copy()
    coef[:, 0] *= 1.02
    wrong = dataclasses.replace(form, coefficients=coef)
    assert not np.allclose(
        _form_logpdf(wrong, values),
        _oracle(case, mech, released, values),
        rtol=1e-6,
        atol=1e-6,
    )


def test_values_outside_the_support_have_zero_density():
    binomial = next(c for c in CASES if c.name == "BinomialRelease").make((3,))
    form = binomial._coordinate_form(np.array([10, 20, 30]))
    values = np.array([[0.0, 5.0, binomial.population], [-1.0, 5.0, 5.0], [1.0, 5.0, 21.0]])
    out = _form_logpdf(form, values)
    assert np.isfinite(out[0]) and np.all(out[1:] == -np.inf)
    assert form.kind == BINOMIAL
