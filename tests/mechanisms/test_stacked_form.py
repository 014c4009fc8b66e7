"""A table's form made in one vectorised pass equals the form made release by release.

``to_pymc`` forms a table of releases ``(*rows, *event_shape)`` with one call,
``cell_form(released, rows=True)``, and tables the joined form in place. The reference is
the construction it replaces: one ``cell_form`` call per release, the forms concatenated,
and the log-CDF tables' starts written one distinct sigma at a time. Every registry row is
checked record for record (NaN where the reference has NaN); planted vectorisations (a
per-cell parameter repeated along the rows instead of tiled, every table start at the
first sigma's) must fail the same comparison.
"""

from __future__ import annotations

import numpy as np
import pytest
from _mechanism_registry import case_shape_ids, case_shapes

import dpinfer as dp
import dpinfer.marginal._forms as forms_module
import dpinfer.noise.form as form_module
from dpinfer.marginal._forms import joined_form, release_form
from dpinfer.noise.discrete_gaussian import discrete_gaussian_log_cdf
from dpinfer.noise.form import CELL, DISCRETE_GAUSSIAN, as_matrix, table_range

ROWS = 4
_ORIGINAL_TABLES = form_module.log_cdf_tables


def _stacked_release(case, event_shape, seed=5):
    """``ROWS`` releases of ``case``'s mechanism, stacked; a third of a thresholded one NaN."""
    mech = case.make(event_shape)
    rng = np.random.default_rng(seed)
    values = case.draw_values(rng, (ROWS, *event_shape))
    released = np.stack([mech.release(v, rng=rng) for v in values])
    if isinstance(mech, dp.Thresholded):
        released = released.astype(float)
        released.reshape(-1)[::3] = np.nan
    return mech, released


def _release_by_release(mech, released) -> np.ndarray:
    """The construction replaced: one ``cell_form`` call per release, then concatenated."""
    rows = np.reshape(released, (-1, *mech.event_shape))
    return np.concatenate([mech.cell_form(row) for row in rows])


def _tabled_by_sigma(form):
    """The table starts as they were written: one masked pass per distinct sigma."""
    form = form.copy()
    at = (form["suppressed"] != 0) & (form["kind"] == DISCRETE_GAUSSIAN)
    offset = 0
    for sigma in np.unique(form["scale"][at]):
        low, high = (int(v) for v in table_range(sigma))
        form["table_start"][at & (form["scale"] == sigma)] = offset
        offset += 2 * (high - low + 1)
    return form


def _same(got: np.ndarray, want: np.ndarray) -> bool:
    return got.dtype == want.dtype and np.array_equal(
        as_matrix(got), as_matrix(want), equal_nan=True
    )


@pytest.mark.parametrize(("case", "event_shape"), case_shapes(), ids=case_shape_ids())
def test_a_stacked_release_is_formed_as_release_by_release(case, event_shape):
    mech, released = _stacked_release(case, event_shape)
    want = _release_by_release(mech, released)
    got = release_form(mech, released, latent_discrete=True)
    assert _same(got, want)
    # tabled in place (to_pymc's path) as the reference's starts, one sigma at a time
    tabled, _ = joined_form([got], copy=False)
    assert tabled is got and _same(tabled, _tabled_by_sigma(want))


def _two_sigma_table():
    """Two releases of cells with two sigmas, thresholded, a third of the cells suppressed."""
    mech = dp.Thresholded(dp.DiscreteGaussian([1.5, 2.5, 1.5, 4.0]), threshold=5)
    released = np.array([[np.nan, 7.0, 9.0, np.nan], [6.0, np.nan, np.nan, 12.0]])
    return mech, released


def test_several_releases_join_with_their_tables_as_before():
    mech, released = _two_sigma_table()
    pairs = [release_form(mech, row, latent_discrete=True) for row in released]
    form, table = joined_form(pairs)
    assert _same(form, _tabled_by_sigma(np.concatenate(pairs)))
    # each suppressed cell's table holds its own sigma's log-CDF from the table's low end
    for record in form[form["suppressed"] != 0]:
        low = table_range(record["scale"])[0]
        start = int(record["table_start"])
        k = low + np.arange(5)
        want = discrete_gaussian_log_cdf(k, record["scale"])
        np.testing.assert_allclose(table[start : start + 5], want, rtol=1e-15)


def _repeating_build(kind, released, *, scale=np.nan, log_norm, **params):
    """Planted: a per-cell parameter repeated along the rows (C order broken), not tiled."""
    values = np.asarray(released)
    form = np.zeros(values.size, dtype=CELL)
    form["kind"], form["released"], form["table_start"] = kind, values.reshape(-1), -1.0
    for name, value in {"scale": scale, "log_norm": log_norm, **params}.items():
        flat = np.ravel(value)
        form[name] = np.resize(np.repeat(flat, max(1, values.size // flat.size)), values.size)
    return form


def test_planted_repeated_parameters_fail_the_comparison(monkeypatch):
    case, event_shape = next(
        (c, es) for c, es in case_shapes() if c.name == "DiscreteGaussian-per-cell"
    )
    mech, released = _stacked_release(case, event_shape)
    want = _release_by_release(mech, released)
    monkeypatch.setattr(form_module, "build", _repeating_build)
    assert _same(_release_by_release(mech, released), want)  # one release: no rows to break
    assert not _same(release_form(mech, released, latent_discrete=True), want)


def _first_sigma_tables(form, *, copy=True):
    """Planted: every suppressed cell's table start at the first sigma's table."""
    form, table = _ORIGINAL_TABLES(form, copy=copy)
    at = form["suppressed"] != 0
    form["table_start"][at] = form["table_start"][at].min()
    return form, table


def test_planted_first_sigma_tables_fail_the_comparison(monkeypatch):
    mech, released = _two_sigma_table()
    pairs = [release_form(mech, row, latent_discrete=True) for row in released]
    want = _tabled_by_sigma(np.concatenate(pairs))
    monkeypatch.setattr(forms_module, "log_cdf_tables", _first_sigma_tables)
    form, _ = joined_form(pairs)
    assert not _same(form, want)


def test_a_stack_must_end_in_the_event_shape_and_one_release_must_be_it():
    mech = dp.Laplace([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"observed must have shape \(\*batch, 3\).*\(2, 4\)"):
        mech.cell_form(np.zeros((2, 4)), rows=True, name="observed")
    with pytest.raises(ValueError, match=r"released must have shape \(3,\).*\(2, 3\)"):
        mech.cell_form(np.zeros((2, 3)))
    assert mech.cell_form(np.zeros((2, 3)), rows=True).size == 6
