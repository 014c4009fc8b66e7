"""Every mechanism's per-cell form (scored in numba) equals its logpdf, for every row.

The compiled record updates of ``da_mcmc``, the marginal likelihoods of ``to_pymc`` and
the quadrature of continuous latents score confidential values through
``Mechanism.cell_form`` and :func:`dpinfer.noise.terms.term`; a form that drifts from the
family's formula would bias them silently, so each registry row is checked against the
independent oracle, and a planted wrong form must fail the same check.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
from _mechanism_registry import CASES, case_shape_ids, case_shapes

import dpinfer as dp
from dpinfer.noise.form import BINOMIAL
from dpinfer.samplers.da._da_kernels import log_density


def _form_logpdf(form, values):
    flat = np.ascontiguousarray(np.reshape(values, (len(values), -1)), dtype=float)
    return log_density(form, flat)


def _oracle(case, mech, released, values):
    terms = case.oracle(mech, released, values)
    return terms.reshape(len(values), -1).sum(axis=1)


def _setup(case, event_shape):
    """A mechanism of the row, 40 confidential values, a release and its form."""
    mech = case.make(event_shape)
    rng = np.random.default_rng(3)
    values = case.draw_values(rng, (40, *event_shape))
    released = mech.release(values[0], rng=rng)
    return mech, values, released, mech.cell_form(released)


@pytest.mark.parametrize(("case", "event_shape"), case_shapes(), ids=case_shape_ids())
def test_cell_form_matches_the_oracle(case, event_shape):
    mech, values, released, form = _setup(case, event_shape)
    assert form is not None, f"{case.name} has no cell form"
    got = _form_logpdf(form, values)
    np.testing.assert_allclose(got, _oracle(case, mech, released, values), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got, mech.logpdf(released, values), rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize(("case", "event_shape"), case_shapes(), ids=case_shape_ids())
def test_planted_wrong_form_fails_the_check(case, event_shape):
    # A form with a 2%-off noise parameter (scale, sigma, or the binomial's pseudo-count).
    mech, values, released, form = _setup(case, event_shape)
    name = "pseudo_count" if np.all(form["kind"] == BINOMIAL) else "scale"
    wrong = form.copy()
    wrong[name] *= 1.02
    assert not np.allclose(
        _form_logpdf(wrong, values),
        _oracle(case, mech, released, values),
        rtol=1e-6,
        atol=1e-6,
    )


def test_values_outside_the_support_have_zero_density():
    binomial = next(c for c in CASES if c.name == "BinomialRelease").make((3,))
    form = binomial.cell_form(np.array([10, 20, 30]))
    values = np.array([[0.0, 5.0, binomial.population], [-1.0, 5.0, 5.0], [1.0, 5.0, 21.0]])
    out = _form_logpdf(form, values)
    assert np.isfinite(out[0]) and np.all(out[1:] == -np.inf)
    assert np.all(form["kind"] == BINOMIAL)


def test_a_subclass_that_rewrites_the_density_has_no_form():
    # Its parent's form would score it by the parent's formula: consumers fall back to logpdf.
    mech = dp.Laplace(2.0)

    class Shifted(dp.Laplace):
        def _log_density(self, xp, released, value):
            return super()._log_density(xp, released, value) + 1.0

    planted = copy.copy(mech)
    planted.__class__ = Shifted
    assert mech.cell_form(1.0) is not None
    assert planted.cell_form(1.0) is None
