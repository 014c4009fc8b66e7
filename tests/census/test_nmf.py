"""The Census Bureau's noisy measurement file layout: reading it, and writing synthetic files.

Two kinds of fixture: files written by ``write_nmf`` (a round trip), and files
written row by row with pyarrow the way the published Parquet files are
described (Hive ``State=<id>`` partitions, Spark part names and a ``_SUCCESS``
marker, the axes' binning columns, float32 variances, query names that list
their axes out of the histogram's order, and constraint rows the release cannot
hold), so that the reader is not checked against its own writer only.
"""

import os
import warnings

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpinfer.census import (
    read_nmf,
    release_tables,
    synthetic_release,
    synthetic_state,
    write_nmf,
)
from dpinfer.census._synthetic import pl94_variances
from dpinfer.outputs import OutputPathError

AXES = {"votingage": 2, "hispanic": 2}
STATE, COUNTIES, BLOCKS = "050", ["050001", "050002"], ["050001001", "050001002", "050002001"]


def write(root, level, kind, rows, *, name="part-00000-1a2b.snappy.parquet", schema=None):
    folder = root / f"{level}.parquet" / kind / "State=050"
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), folder / name)
    (folder / "_SUCCESS").write_text("")


def dpq(geocode, name, shape, value, variance, votingage="*", hispanic="*"):
    return {
        "geocode": geocode,
        "query_name": name,
        "votingage": votingage,
        "hispanic": hispanic,
        "query_shape": shape,
        "value": value,
        "variance": variance,
    }


def con(geocode, name, shape, value, sign="="):
    return {
        "geocode": geocode,
        "query_name": name,
        "sign": sign,
        "votingage": "*",
        "hispanic": "*",
        "query_shape": shape,
        "value": value,
        "variance": 0.0,
    }


DPQ_SCHEMA = pa.schema(
    [
        ("geocode", pa.string()),
        ("query_name", pa.string()),
        ("votingage", pa.string()),
        ("hispanic", pa.string()),
        ("query_shape", pa.list_(pa.int32())),
        ("value", pa.list_(pa.int64())),
        ("variance", pa.float32()),
    ]
)
CON_SCHEMA = pa.schema([*DPQ_SCHEMA, ("sign", pa.string())])


@pytest.fixture
def published(tmp_path):
    """A small state in the published layout, with rows a release cannot hold."""
    root = tmp_path / "US_Person_PL_PROD"
    state_rows = [
        dpq(STATE, "total_dpq", [1, 1], [61], 1.21),
        # the axes named out of the histogram's order; the values follow query_shape
        dpq(
            STATE, "hispanic * votingage_dpq", [2, 2], [9, 20, 12, 22], 4.0, "detailed", "detailed"
        ),
        # a grouping of hispanic's values: not a marginal
        dpq(STATE, "hispanicgroups_dpq", [1, 1], [61], 9.0, "*", "hispanicgroups"),
    ]
    write(root, "State", "DPQuery", state_rows, schema=DPQ_SCHEMA)
    write(
        root,
        "State",
        "Constraint",
        [
            con(STATE, "total_con", [1, 1], [60]),
            con(STATE, "votingage_total_lb_con", [2, 1], [10, 0], sign=">="),
            # an exact value of a part of the histogram that is not a whole query
            con(STATE, "nonvoting_hispanic_0_con", [1, 1], [0]),
        ],
        schema=CON_SCHEMA,
    )
    write(
        root,
        "County",
        "DPQuery",
        [dpq(c, "total_dpq", [1, 1], [v], 4.84) for c, v in zip(COUNTIES, [41, 18], strict=True)],
        schema=DPQ_SCHEMA,
    )
    blocks = [[3, 5, 1, 30], [0, 1, 0, 2], [5, 2, 6, 7]]
    write(
        root,
        "Block",
        "DPQuery",
        [
            dpq(b, "detailed_dpq", [2, 2], v, 10.1124, "detailed", "detailed")
            for b, v in zip(BLOCKS, blocks, strict=True)
        ],
        schema=DPQ_SCHEMA,
    )
    return root


def test_published_layout_is_read_with_whole_queries_and_equalities_only(published):
    with pytest.warns(UserWarning, match="nonvoting_hispanic_0_con' \\(1 rows\\)") as caught:
        release = read_nmf(published, axes=AXES, unsupported="skip")
    message = str(caught[0].message)
    assert "'hispanicgroups_dpq' (1 rows)" in message
    assert "'votingage_total_lb_con' (1 rows)" in message
    assert release.units.geocodes.tolist() == [STATE, *COUNTIES, *BLOCKS]
    assert [q.name for q in release.queries] == ["total", "votingage * hispanic"]
    detailed = release.measurements["votingage * hispanic"]
    # "hispanic * votingage_dpq" is the votingage x hispanic query, values row-major over
    # query_shape (votingage first); the blocks' detailed cells in file order
    assert detailed.units.tolist() == [0, 3, 4, 5]
    assert detailed.values.tolist() == [[9, 20, 12, 22], [3, 5, 1, 30], [0, 1, 0, 2], [5, 2, 6, 7]]
    assert detailed.variance[0].tolist() == [4.0] * 4
    # float32 as published: the variance is read as stored, not rounded further
    assert detailed.variance[1, 0] == pytest.approx(10.1124, rel=1e-7)
    total = release.measurements["total"]
    assert total.units.tolist() == [0, 1, 2] and total.values.ravel().tolist() == [61, 41, 18]
    assert release.invariants["total"].units.tolist() == [0]
    assert release.invariants["total"].values.tolist() == [[60]]


def test_rows_a_release_cannot_hold_are_refused_by_default_naming_file_and_row(published):
    with pytest.raises(
        ValueError,
        match=r"State.parquet/DPQuery/State=050/part-00000-1a2b.snappy.parquet row 2 "
        r"\(query_name 'hispanicgroups_dpq'\): .* is not a marginal .*unsupported='skip'",
    ):
        read_nmf(published, axes=AXES)


def test_a_release_round_trips_through_the_layout(tmp_path):
    truth = synthetic_state(AXES, shape=(2, 2, 2, 3), mean_block=8.0, rng=1)
    release = synthetic_release(
        truth, pl94_variances(AXES), invariants=[("total", 0), ("votingage", 1)], rng=2
    )
    files = write_nmf(release, tmp_path / "product")
    assert "Block.parquet/DPQuery/State=01/part-0.parquet" in files
    assert "County.parquet/Constraint/State=01/part-0.parquet" in files
    back = read_nmf(tmp_path / "product", axes=AXES)
    for a, b in zip(release_tables(release), release_tables(back), strict=True):
        key = ["geocode", "query", "cell"]
        pd.testing.assert_frame_equal(
            a.sort_values(key).reset_index(drop=True),
            b.sort_values(key).reset_index(drop=True),
            check_dtype=False,
        )
    with pytest.raises(OutputPathError, match="exists"):
        write_nmf(release, tmp_path / "product")


def test_the_writer_refuses_cells_of_one_row_with_different_variances(tmp_path):
    truth = synthetic_state(AXES, shape=(2, 2), mean_block=8.0, rng=1)
    release = synthetic_release(truth, pl94_variances(AXES, levels=4)[-3:], rng=2)
    release.measurements["votingage"].variance[1, 0] *= 2
    with pytest.raises(ValueError, match="'votingage' cells at geocode '01000' have different"):
        write_nmf(release, tmp_path / "p")
    assert not (tmp_path / "p").exists()
    assert os.listdir(tmp_path) == []  # its private folder is gone too


def one_file(tmp_path, rows, schema=DPQ_SCHEMA, kind="DPQuery"):
    root = tmp_path / "nmf"
    write(root, "Block", kind, rows, name="part-0.parquet", schema=schema)
    return root


GOOD = dpq("050001001", "detailed_dpq", [2, 2], [1, 2, 3, 4], 10.0, "detailed", "detailed")
WHERE = r"Block.parquet/DPQuery/State=050/part-0.parquet row 1 \(query_name "


@pytest.mark.parametrize(
    "row, message",
    [
        ({"query_shape": [2, 1]}, r"query_shape \[2, 1\] does not match the query's axes"),
        ({"query_shape": [2, 2, 1]}, "query_shape must hold 2 numbers"),
        ({"value": [1, 2, 3]}, r"value must hold 4 numbers \(the product of query_shape\)"),
        ({"variance": 0.0}, "variance must be one positive finite number, got 0.0"),
        ({"variance": float("nan")}, "variance must be one positive finite number"),
        ({"votingage": "*"}, "column 'votingage' is '\\*', but the query name keeps that axis"),
        ({"query_name": "sex * hispanic_dpq"}, "is not a marginal of the axes"),
        ({"geocode": "050001001"}, "has its 'votingage \\* hispanic' DPQuery row twice"),
    ],
)
def test_bad_rows_are_refused_naming_the_file_and_row(tmp_path, row, message):
    root = one_file(tmp_path, [GOOD, {**GOOD, "geocode": "050001002", **row}])
    with pytest.raises(ValueError, match=WHERE + ".*" + message):
        read_nmf(root, axes=AXES)


def test_non_integer_values_unknown_signs_and_numeric_geocodes_are_refused(tmp_path):
    floats = pa.schema([*DPQ_SCHEMA][:5] + [("value", pa.list_(pa.float64())), DPQ_SCHEMA[6]])
    root = one_file(tmp_path, [GOOD, {**GOOD, "geocode": "050001002", "value": [1, 2.5, 3, 4]}],
                    schema=floats)  # fmt: skip
    with pytest.raises(ValueError, match=WHERE + ".*value must hold integers; entry 1 is 2.5"):
        read_nmf(root, axes=AXES)
    bad_sign = con("050001001", "total_con", [1, 1], [3], sign="~")
    root = one_file(tmp_path / "c", [bad_sign], schema=CON_SCHEMA, kind="Constraint")
    write(root, "Block", "DPQuery", [GOOD], schema=DPQ_SCHEMA)
    with pytest.raises(ValueError, match="Constraint/State=050/part-0.parquet row 0 .*sign"):
        read_nmf(root, axes=AXES)
    numeric = pa.schema([("geocode", pa.int64()), *[*DPQ_SCHEMA][1:]])
    root = one_file(tmp_path / "n", [{**GOOD, "geocode": 50001001}], schema=numeric)
    with pytest.raises(ValueError, match="geocode must be text .*got int64"):
        read_nmf(root, axes=AXES)


def test_missing_columns_partitions_and_links_are_refused(tmp_path, published):
    root = one_file(tmp_path, [{k: v for k, v in GOOD.items() if k != "variance"}],
                    schema=pa.schema([f for f in DPQ_SCHEMA if f.name != "variance"]))  # fmt: skip
    with pytest.raises(ValueError, match=r"missing column\(s\) \['variance'\]"):
        read_nmf(root, axes=AXES)
    with pytest.raises(ValueError, match=r"no State=001 partition .*found \['050'\]"):
        read_nmf(published, axes=AXES, state="001")
    write(published, "Block", "DPQuery", [GOOD], schema=DPQ_SCHEMA)
    other = published / "Block.parquet" / "DPQuery" / "State=150"
    other.mkdir()
    with pytest.raises(ValueError, match=r"found 2 \(\['050', '150'\]\)"):
        read_nmf(published, axes=AXES)
    os.symlink(published, tmp_path / "link")
    with pytest.raises(ValueError, match="symbolic link"):
        read_nmf(tmp_path / "link", axes=AXES, state="050")
    with pytest.raises(ValueError, match="unsupported must be one of"):
        read_nmf(published, axes=AXES, state="050", unsupported="ignore")


def test_contradicting_equality_constraints_are_refused(published):
    write(
        published,
        "County",
        "Constraint",
        [con(c, "total_con", [1, 1], [v]) for c, v in zip(COUNTIES, [40, 21], strict=True)],
        schema=CON_SCHEMA,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with pytest.raises(ValueError, match="'050' is \\[60\\], but the sum of its children"):
            read_nmf(published, axes=AXES, unsupported="skip")
