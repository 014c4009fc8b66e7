"""The release object, its checks, and the folder layout (CSV and Parquet)."""

import json
import os

import numpy as np
import pandas as pd
import pytest

from dpinfer.census import Axes, CensusRelease, read_release, release_tables, write_release

AXES = {"votingage": 2, "hispanic": 2}


def rows(**changes):
    base = {
        "geocode": ["01", "01", "01001", "01001", "01003"],
        "query": ["total", "hispanic", "votingage * hispanic", "total", "votingage * hispanic"],
        "cell": [0, 1, 3, 0, 2],
        "value": [40, 11, -2, 17, 9],
        "variance": [4.0, 2.0, 9.0, 4.0, 9.0],
    }
    base.update(changes)
    return base


INVARIANTS = {"geocode": ["01"], "query": ["total"], "cell": [0], "value": [41]}


def test_units_nest_by_geocode_prefix_and_children_follow_their_parents():
    release = CensusRelease.from_rows(
        AXES, rows(geocode=["01", "0100101", "01001", "01003", "0100302"])
    )
    units = release.units
    assert units.geocodes.tolist() == ["01", "01001", "01003", "0100101", "0100302"]
    assert units.parent.tolist() == [-1, 0, 0, 1, 2]
    assert units.first_child.tolist()[:3] == [1, 3, 4]
    assert units.n_children.tolist() == [2, 1, 1, 0, 0]
    assert units.leaves.tolist() == [3, 4]


def test_measurements_are_stored_per_query_with_unmeasured_cells_at_infinite_variance():
    release = CensusRelease.from_rows(AXES, rows(), invariants=INVARIANTS)
    detailed = release.measurements["votingage * hispanic"]
    assert detailed.units.tolist() == [1, 2]
    assert detailed.values[0, 3] == -2 and detailed.variance[0, 3] == 9.0
    assert np.isinf(detailed.variance[0, :3]).all()
    assert [q.name for q in release.queries] == ["total", "hispanic", "votingage * hispanic"]
    assert release.invariants["total"].values.tolist() == [[41]]
    assert release.n_measurements == 5


@pytest.mark.parametrize(
    "change, message",
    [
        (
            {"geocode": ["01", "01", "01001", "01001", "02"]},
            r"no parent among the units.*\['02'\]",
        ),
        (
            {"query": ["total", "sex", "votingage * hispanic", "total", "votingage * hispanic"]},
            r"row 1 .*'sex' does not match the axes",
        ),
        (
            {
                "query": ["total", "hispanic", "hispanic * votingage", "total", "total"],
                "cell": [0, 1, 3, 0, 0],
            },
            "out of the histogram's order",
        ),
        ({"cell": [0, 2, 3, 0, 2]}, r"row 1 .*cell must be in 0..1"),
        (
            {"variance": [4.0, -2.0, 9.0, 4.0, 9.0]},
            r"row 1 .*variance must be positive and finite",
        ),
        (
            {"variance": [4.0, 2.0, np.nan, 4.0, 9.0]},
            r"row 2 .*variance must be positive and finite",
        ),
        ({"value": [40, 11, -2.5, 17, 9]}, r"row 2 .*value must be an integer, got -2.5"),
        (
            {"geocode": ["01", "01", "01001", "01001", "01001"], "cell": [0, 1, 3, 0, 3]},
            "given twice",
        ),
    ],
)
def test_bad_rows_are_refused_naming_the_row(change, message):
    with pytest.raises(ValueError, match=message):
        CensusRelease.from_rows(AXES, rows(**change))


def test_contradicting_invariants_are_refused():
    invariants = {
        "geocode": ["01", "01001", "01003"],
        "query": ["total"] * 3,
        "cell": [0] * 3,
        "value": [41, 20, 22],
    }
    with pytest.raises(
        ValueError,
        match="'01' is \\[41\\], but the sum of its children's invariants gives \\[42\\]",
    ):
        CensusRelease.from_rows(AXES, rows(), invariants=invariants)
    finer = {
        "geocode": ["01"] * 3,
        "query": ["total", "hispanic", "hispanic"],
        "cell": [0, 0, 1],
        "value": [41, 30, 10],
    }
    with pytest.raises(ValueError, match="its own 'hispanic' invariant gives \\[40\\]"):
        CensusRelease.from_rows(AXES, rows(), invariants=finer)
    consistent = {**finer, "value": [41, 30, 11]}
    assert CensusRelease.from_rows(AXES, rows(), invariants=consistent).invariants[
        "hispanic"
    ].values.tolist() == [[30, 11]]


def test_an_invariant_must_give_every_cell_of_its_query():
    partial = {"geocode": ["01"], "query": ["hispanic"], "cell": [0], "value": [3]}
    with pytest.raises(ValueError, match="gives 1 of its 2 cells"):
        CensusRelease.from_rows(AXES, rows(), invariants=partial)


def test_queries_and_axes():
    axes = Axes(AXES)
    q = axes.query("votingage * hispanic")
    assert (q.cells, q.shape, axes.query("total").cells) == (4, (2, 2), 1)
    detailed = np.arange(8).reshape(2, 4)
    assert axes.query("votingage").project(detailed).tolist() == [[1, 5], [9, 13]]
    assert q.coarsen(detailed, axes.query("hispanic")).tolist() == [[2, 4], [10, 12]]
    with pytest.raises(ValueError, match="'total' is the name of the total query"):
        Axes({"total": 2})


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_a_release_folder_round_trips(tmp_path, fmt):
    release = CensusRelease.from_rows(AXES, rows(), invariants=INVARIANTS)
    write_release(release, tmp_path / "r", format=fmt)
    assert (tmp_path / "r" / f"measurements.{fmt}").exists()
    back = read_release(tmp_path / "r")
    for a, b in zip(release_tables(release), release_tables(back), strict=True):
        pd.testing.assert_frame_equal(a, b, check_dtype=False)


def test_a_hand_written_csv_folder_with_leading_zero_geocodes_is_read(tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "release.json").write_text(json.dumps({"axes": AXES}))
    pd.DataFrame(rows()).to_csv(folder / "measurements.csv", index=False)
    pd.DataFrame(INVARIANTS).to_csv(folder / "invariants.csv", index=False)
    release = read_release(folder)
    assert release.units.geocodes.tolist() == ["01", "01001", "01003"]


def test_the_reader_refuses_links_and_a_missing_table(tmp_path):
    folder = tmp_path / "r"
    folder.mkdir()
    (folder / "release.json").write_text(json.dumps({"axes": AXES}))
    with pytest.raises(FileNotFoundError, match="no measurements.csv or measurements.parquet"):
        read_release(folder)
    target = tmp_path / "elsewhere.csv"
    pd.DataFrame(rows()).to_csv(target, index=False)
    os.symlink(target, folder / "measurements.csv")
    with pytest.raises(ValueError, match="symbolic link"):
        read_release(folder)
    os.symlink(folder, tmp_path / "link")
    with pytest.raises(ValueError, match="symbolic link"):
        read_release(tmp_path / "link")
