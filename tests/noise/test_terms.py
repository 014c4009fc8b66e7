"""The compiled per-cell terms against the families' own formulas, kind by kind.

``dpinfer.noise.terms`` writes each noise kind's term, log-ratio, mode and lower tail
once, compiled; the families write their log-density and log-CDF over an array
namespace (NumPy and PyTensor). The two must agree: the term with ``logpdf`` cell by
cell (published and suppressed cells), the lower tail with ``_cell_log_cdf`` (itself
checked against mpmath in tests/mechanisms/test_noise_log_cdf.py), the log-ratio with
the difference of two terms, the mode with the largest term. The discrete Gaussian's
tables give the numbers of the compiled log-CDF; a table read one entry off must fail.
"""

from __future__ import annotations

import numpy as np
import pytest

import dpinfer as dp
from dpinfer.noise.form import NO_TABLE, log_cdf_tables
from dpinfer.noise.terms import log_below, log_ratio, log_terms, mode, term

NOISES = {
    "laplace": dp.Laplace([0.3, 2.0, 40.0]),
    "gaussian": dp.Gaussian([0.3, 2.0, 40.0]),
    "discrete laplace": dp.DiscreteLaplace([0.3, 2.0, 40.0]),
    "discrete gaussian": dp.DiscreteGaussian([0.3, 2.0, 60.0]),
}


def _suppressed_form(mech, cut):
    """The form of a thresholded release of ``mech`` whose every cell is suppressed at ``cut``."""
    threshold = np.asarray(cut, dtype=float) + (1 if mech.discrete else 0)
    thresholded = dp.Thresholded(mech, threshold=threshold)
    return thresholded.cell_form(np.full(mech.event_shape, np.nan))


def _compiled_log_below(form, table, k):
    """``log_below`` of every cell at every row of ``k`` (shape ``(rows, cells)``)."""
    return np.array([[log_below(form, table, j, x) for j, x in enumerate(row)] for row in k])


@pytest.mark.parametrize("noise", NOISES)
def test_compiled_lower_tail_is_the_familys_log_cdf(noise):
    mech = NOISES[noise]
    scale = np.asarray(getattr(mech, "sigma", getattr(mech, "scale", None)))
    reach = np.outer([-800.0, -40.0, -3.0, -1.0, 0.0, 1.0, 3.0, 9.0, 40.0], scale)
    k = np.round(reach) if mech.discrete else reach
    form = _suppressed_form(mech, np.zeros(3))
    expected = mech._cell_log_cdf(k, np.zeros_like(k, dtype=np.int64 if mech.discrete else float))
    got = _compiled_log_below(form, NO_TABLE, k)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-300)
    if noise == "discrete gaussian":  # the tables hold the same numbers
        tabled, table = log_cdf_tables(form)
        np.testing.assert_array_equal(_compiled_log_below(tabled, table, k), got)


def test_companion_a_table_read_one_entry_off_fails():
    mech = NOISES["discrete gaussian"]
    form, table = log_cdf_tables(_suppressed_form(mech, np.zeros(3)))
    k = np.array([[-3.0, -3.0, -30.0], [2.0, 2.0, 20.0]])
    off = form.copy()
    off["table_start"] += 1
    expected = _compiled_log_below(form, table, k)
    assert not np.allclose(_compiled_log_below(off, table, k), expected, rtol=1e-6)


def _forms(mech, released):
    """The form of ``released`` (published), and of a release of its cells all suppressed."""
    return [mech.cell_form(released), _suppressed_form(mech, released)]


@pytest.mark.parametrize("noise", [*NOISES, "binomial"])
def test_terms_are_the_logpdf_and_ratios_their_differences(noise):
    if noise == "binomial":
        mech = dp.BinomialRelease(n=200, m=50, population=1000, length=3)
        released, s = np.array([9, 100, 190]), np.arange(0, 1000, 37.0)
        forms = [mech.cell_form(released)]
    else:
        mech = NOISES[noise]
        released = np.array([3, -7, 40]) if mech.discrete else np.array([3.2, -7.5, 40.1])
        s = np.arange(-60.0, 61.0, 3.0)
        forms = _forms(mech, released)
    values = np.broadcast_to(s[:, None], (s.size, 3))
    for form, shown in zip(forms, (released, np.full(3, np.nan)), strict=False):
        got = log_terms(form, NO_TABLE, np.ascontiguousarray(values.T)).T
        if np.isnan(shown).any():
            expected = dp.Thresholded(mech, threshold=released + (1 if mech.discrete else 0))
            expected = expected._cell_log_density(shown, values)
        else:
            expected = mech._cell_log_density(released, values)
        np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-13)
        step = np.array([[log_ratio(form, NO_TABLE, j, x) for j in range(3)] for x in s[:-1]])
        finite = np.isfinite(got[1:]) & np.isfinite(got[:-1])
        differences = np.array(
            [[term(form, NO_TABLE, j, x + 1.0) - term(form, NO_TABLE, j, x) for j in range(3)]
             for x in s[:-1]]
        )  # fmt: skip
        np.testing.assert_allclose(step[finite], differences[finite], rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("noise", [*NOISES, "binomial"])
def test_the_mode_is_where_the_published_term_peaks(noise):
    if noise == "binomial":
        mech = dp.BinomialRelease(n=200, m=50, population=1000, length=3)
        released = np.array([9, 100, 190])
    else:
        mech = NOISES[noise]
        released = np.array([3, -7, 40]) if mech.discrete else np.array([3.2, -7.5, 40.1])
    form = mech.cell_form(released)
    for j in range(3):
        peak = mode(form, j)
        best = round(peak) if mech.discrete else peak
        around = [term(form, NO_TABLE, j, best + d) for d in (-2.0, -1.0, 1.0, 2.0)]
        nearest = max(term(form, NO_TABLE, j, x) for x in (np.floor(peak), np.ceil(peak)))
        assert max(around) <= nearest + 1e-12
    suppressed = _suppressed_form(NOISES["gaussian"], np.zeros(3))
    assert mode(suppressed, 0) == -np.inf
