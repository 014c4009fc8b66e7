"""dpinfer.example, the shape every example shares: option checks, report rows, summary files,
figures."""

from __future__ import annotations

import json
import math
import re
import warnings

import numpy as np
import pytest
import scipy.stats as st

from dpinfer import example
from dpinfer.example import (
    Report,
    Row,
    choice,
    distribution_rows,
    draw_rows,
    finite,
    folder,
    integer,
    mle_rows,
    positive,
    subset,
    vector,
    yes_no,
)


@pytest.mark.parametrize(
    ("check", "value", "expected"),
    [
        (positive, "0.5", 0.5),
        (finite, "-3", -3.0),
        (integer(100), "250", 250),
        (vector(3), "1 2.5 -1", [1.0, 2.5, -1.0]),
        (vector(2, integer(0)), [3, 4], [3, 4]),
        (yes_no, "yes", True),
        (yes_no, False, False),
        (choice("a", "b"), "b", "b"),
        (subset("a", "b", "c"), "c, a,c", ("c", "a")),
        (subset("a", "b"), ["b"], ("b",)),
    ],
)
def test_option_checks_accept(check, value, expected):
    assert np.array_equal(check("x", value), expected)


@pytest.mark.parametrize(
    ("check", "value", "message"),
    [
        (positive, "0", "x must be a positive finite number"),
        (positive, "nan", "x must be a positive finite number"),
        (positive, "1e999", "x must be a positive finite number"),
        (positive, True, "x must be a real number"),
        (finite, "inf", "x must be a finite number"),
        (finite, "two", "x must be a number"),
        (integer(100), "99", "x must be an integer from 100"),
        (integer(100), "1e3", "x must be an integer, got '1e3'"),
        (integer(1), True, "x must be an integer, got True"),
        (integer(1), str(10**9), "x must be an integer from 1 to 100,000,000"),
        (vector(3), "1 2", "x must have 3 values, got 2"),
        (vector(2), "1 nan", "x[1] must be a finite number"),
        (yes_no, "maybe", "x must be yes or no"),
        (choice("a", "b"), "c", "x must be one of a, b; got 'c'"),
        (subset("a", "b"), "a,", "x must be a comma-separated subset of a,b, got 'a,'"),
        (subset("a", "b"), "", "x must be a comma-separated subset of a,b, got ''"),
        (folder("f", holding="f"), 3, "x must be a folder holding f, got int"),
    ],
)
def test_option_checks_refuse_by_name(check, value, message):
    with pytest.raises((ValueError, TypeError), match=re.escape(message)):
        check("x", value)


def test_a_folder_option_needs_a_real_folder_with_its_files(tmp_path):
    check = folder("meta.json", "table.csv|table.parquet", holding="meta.json and a table")
    release = tmp_path / "release"
    release.mkdir()
    (release / "meta.json").write_text("{}")
    with pytest.raises(ValueError, match=r"x must be a folder holding .* has no table.csv or"):
        check("x", release)
    (release / "table.parquet").write_bytes(b"")
    assert check("x", release) == str(release)
    (tmp_path / "link").symlink_to(release, target_is_directory=True)
    for path in (tmp_path / "link", release / "meta.json", tmp_path / "none", ""):
        with pytest.raises(ValueError, match="is not a folder"):
            check("x", path)
    (release / "table.parquet").unlink()
    (release / "table.csv").symlink_to(release / "meta.json")  # a link is not the file
    with pytest.raises(ValueError, match="has no table.csv or table.parquet"):
        check("x", release)


def test_vector_of_a_users_own_check_without_a_range():
    # range, bounds, size and choices are optional attributes of a check
    def odd(name, value):
        if int(value) % 2 != 1:
            raise ValueError(f"{name} must be odd, got {value!r}")
        return int(value)

    check = vector(2, odd)
    assert check("x", "3 5").tolist() == [3, 5]
    assert check.size == 2 and check.bounds is None
    with pytest.raises(ValueError, match=re.escape("x[1] must be odd, got '4'")):
        check("x", "3 4")


def test_rows_from_few_draws_are_nan_without_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        empty = draw_rows("a", "exact", {"w": np.empty((0, 3))})
        one = draw_rows("a", "exact", {"t": np.array([2.0])})
    assert [r.parameter for r in empty] == ["w[0]", "w[1]", "w[2]"]
    assert all(math.isnan(r.mean) for r in empty)
    assert one[0].mean == 2.0 and math.isnan(one[0].sd)


def test_rows_match_numpy_and_scipy():
    x = np.random.default_rng(1).normal(size=(1000, 2))
    rows = draw_rows("s", "exact", {"beta": x})
    assert rows[1].parameter == "beta[1]"
    assert rows[1].sd == pytest.approx(x[:, 1].std(ddof=1), rel=1e-12)
    assert rows[1].q95 == pytest.approx(np.quantile(x[:, 1], 0.95), rel=1e-12)
    (row,) = distribution_rows("n", "naive", {"t": st.norm(1.0, 2.0)})
    assert (row.mean, row.sd, row.q05) == pytest.approx((1.0, 2.0, 1.0 - 2.0 * 1.6448536269514722))


def test_a_role_outside_the_vocabulary_is_refused():
    with pytest.raises(ValueError, match="role must be one of"):
        Row("a", "exactish", "posterior", "t", 1.0)


def test_summary_files_leave_undefined_numbers_empty():
    rows = mle_rows("MLE", "exact", {"t": 1.5}, {"t": 0.25})
    report = Report("T", [], rows, ["note"], {"x": math.nan, "y": np.float64(2.0)})
    line = report.csv().splitlines()[1]
    assert line == "MLE,exact,mle,t,1.5,0.25,,,,"
    data = json.loads(json.dumps(report.to_dict()))
    assert data["rows"][0]["q05"] is None and data["diagnostics"] == {"x": None, "y": 2.0}
    assert "sd is the standard error" in report.table()


def test_interval_figure_draws_every_parameter(tmp_path):
    rows = draw_rows("s", "exact", {"beta": np.random.default_rng(0).normal(size=(200, 4))})
    rows += mle_rows("MLE", "exact", {"beta[0]": 0.1}, {"beta[0]": 0.3})
    path = tmp_path / "f.png"
    example.interval_figure(path, Report("T", [], rows))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    "values",
    [
        # poisson-count at release 1e6: the table printed "999.5259.98e+051.00e+06"
        (1.0e6, 999.5259, 9.98e5, 1.0e6, 1.0016e6),
        (-31622.777, 12345.678, 1.5e300, 0.0001234, -99999.99),
        (-999.999, 1e-300, -9.9e-12, 2.5, -123456789.0),
    ],
)
def test_table_cells_never_run_together(values):
    row = Row("exact (closed form)", "exact", "posterior", "theta", *values)
    line = Report("t", [], [row], []).table().splitlines()[3]
    cells = line.split()[-5:]
    assert line.split()[:4] == ["theta", "exact", "(closed", "form)"], line
    for cell, value in zip(cells, values, strict=True):
        assert len(cell) <= 8, line
        assert float(cell) == pytest.approx(value, rel=0.06, abs=1e-3), line


def test_mle_interval_notes_show_wald_and_profile_intervals():
    # a vector parameter of two Poisson rates; each note names one coordinate
    from samplers.test_mcem_collapse import rates_model  # tests/ is on the path

    import dpinfer as dp

    model = rates_model(2)
    fit = dp.mcem(
        model,
        dp.Laplace(np.array([5.0, 2.0])),
        np.array([37.4, 12.3]),
        start={"theta": np.array([30.0, 10.0])},
        rng=1,
        schedule=dp.AscentSchedule(information_size=20_000),
        progressbar=False,
    )
    notes, numbers = example.mle_interval_notes(fit, simulations=10_000)
    assert [n.split(":")[0] for n in notes] == [
        "MLE 95% intervals for theta[0]",
        "MLE 95% intervals for theta[1]",
    ]
    assert all("Wald [" in n and "profile likelihood [" in n for n in notes)
    wald = fit.wald_interval()["theta"]
    assert numbers["mle_wald_interval"]["theta[1]"] == pytest.approx([wald[0][1], wald[1][1]])
    lower, upper = numbers["mle_profile_interval"]["theta[0]"]
    assert lower < fit.estimate["theta"][0] < upper
    assert set(numbers["mle_profile_interval_mcse"]) == {"theta[0]", "theta[1]"}


_EXAMPLE_SOURCE = (
    "from dpinfer.example import Example\n"
    "EXAMPLE = Example(name={name!r}, title='t', paper='p', seconds=1, module=__name__)\n"
    "def run(**options):\n"
    "    return options\n"
)


def test_discover_finds_examples_in_packages_and_re_exported_from_private_modules(
    tmp_path, monkeypatch
):
    # an example may be a package, or a module re-exporting a private sibling's EXAMPLE;
    # a private module that defines an EXAMPLE is not itself an example
    root = tmp_path / "split_models"
    (root / "packaged").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "_impl.py").write_text(_EXAMPLE_SOURCE.format(name="private-impl"))
    (root / "flat.py").write_text("from ._impl import EXAMPLE, run\n")
    (root / "packaged" / "_run.py").write_text(_EXAMPLE_SOURCE.format(name="packaged"))
    (root / "packaged" / "__init__.py").write_text("from ._run import EXAMPLE, run\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    found = example.discover("split_models")
    assert sorted(found) == ["packaged", "private-impl"]
    assert found["packaged"].module == "split_models.packaged"
    assert found["private-impl"].module == "split_models.flat"
    assert found["packaged"].run(rng=1, progressbar=False) is not None
