"""Grouped forms: each cell's released number, the groups' records once, a group number a cell.

The marginal Op holds a table's form grouped (``dpinfer.noise.form.grouped``) and packed in two
vectors (``dpinfer.marginal._forms.packed``); these check that nothing is lost on the way.
"""

from __future__ import annotations

import numpy as np

import dpinfer as dp
from dpinfer.marginal._forms import joined_form, packed, release_form, unpacked
from dpinfer.noise.form import as_matrix, expanded, grouped


def _same(got, want):
    return np.array_equal(as_matrix(got), as_matrix(want), equal_nan=True)


def test_cells_that_share_their_fields_make_one_group_and_no_numbers():
    form = dp.DiscreteGaussian(2.0, event_shape=(5,)).cell_form([4, 9, 6, -3, 0])
    cells = grouped(form)
    assert cells.groups.size == 1 and cells.group.size == 0
    assert np.isnan(cells.groups["released"]).all()
    assert _same(expanded(cells), form)


def test_cells_with_their_own_scales_or_suppression_keep_a_group_number_each():
    sigma = np.array([1.0, 2.0, 1.0, 3.0, 2.0, 1.0])
    inner = dp.DiscreteGaussian(sigma, event_shape=(6,))
    mech = dp.Thresholded(inner, threshold=np.full(6, 5.0), publish="at_least")
    released = np.array([7.0, np.nan, 9.0, np.nan, 12.0, np.nan])
    form, table = joined_form([release_form(mech, released, latent_discrete=True)])
    cells = grouped(form)
    # sigma 1, 2, 3 published or suppressed: the groups that occur, each once
    assert cells.groups.size == 5 and cells.group.dtype == np.int32
    assert _same(expanded(cells), form)
    back, tables = unpacked(*packed(form, table))
    assert _same(expanded(back), form) and np.array_equal(tables, table)


def test_a_field_that_is_nan_in_every_cell_does_not_split_the_cells():
    # the binomial release's scale is NaN: compared as bytes, one group
    mech = dp.BinomialRelease(n=20, m=5.0, population=100, length=3)
    form = mech.cell_form([7, 7, 7])  # its log_norm, log C(n, r), is the same then
    cells = grouped(form)
    assert cells.groups.size == 1 and _same(expanded(cells), form)
