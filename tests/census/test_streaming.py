"""A release folder read and sampled one county at a time gives the in-memory run's results."""

import os

import numpy as np
import pandas as pd
import pytest

from dpinfer import census
from dpinfer.census import StreamedRelease, stream_posterior
from dpinfer.census._parts import Partition, ReleaseParts
from dpinfer.census._units import Units

AXES = {"votingage": 2, "hispanic": 2}
OPTIONS = {"draws": 30, "tune": 5, "chains": 2, "progressbar": False}


@pytest.fixture(scope="module")
def release():
    truth = census.synthetic_state(AXES, shape=(3, 2, 2, 3), mean_block=12, rng=4)
    return census.synthetic_release(truth, census.pl94_variances(AXES), rng=5)


@pytest.fixture(scope="module", params=["csv", "parquet"])
def folder(request, release, tmp_path_factory):
    path = tmp_path_factory.mktemp(request.param) / "release"
    census.write_release(release, path, format=request.param)
    return path


def test_each_part_read_back_equals_the_part_cut_from_memory(folder):
    memory = ReleaseParts(census.read_release(folder))
    with StreamedRelease(folder, chunk_rows=37) as streamed:
        assert (streamed.query_names, streamed.uniform) == (memory.query_names, memory.uniform)
        assert len(streamed) == len(memory) == 3
        for a, b in [(memory.part(i), streamed.part(i)) for i in range(3)] + [
            (memory.top(), streamed.top())
        ]:
            np.testing.assert_array_equal(a.units.geocodes, b.units.geocodes)
            np.testing.assert_array_equal(a.units.parent, b.units.parent)
            assert list(a.measurements) == list(b.measurements)
            for name, meas in a.measurements.items():
                for field in ("units", "values", "variance"):
                    np.testing.assert_array_equal(
                        getattr(meas, field), getattr(b.measurements[name], field)
                    )
            assert list(a.invariants) == list(b.invariants)


def test_the_temporary_files_are_removed(folder):
    with StreamedRelease(folder) as streamed:
        spill = streamed.temporary_file("probe")
        assert os.listdir(os.path.dirname(spill))
    assert not os.path.exists(os.path.dirname(spill))


def test_stream_posterior_equals_the_in_memory_run_seed_for_seed(folder, release, tmp_path):
    traced = [release.units.geocodes[-1], release.units.geocodes[0]]
    memory = census.sample_posterior(census.read_release(folder), rng=9, trace=traced, **OPTIONS)
    streamed = stream_posterior(folder, tmp_path / "out", rng=9, trace=traced, chunk_rows=50,
                                **OPTIONS)  # fmt: skip
    keys = ["geocode", "query", "cell"]
    expected = memory.table().sort_values(keys, ignore_index=True)
    got = pd.read_csv(streamed.summary, dtype={"geocode": str}).sort_values(
        keys, ignore_index=True
    )
    pd.testing.assert_frame_equal(expected, got, check_dtype=False)
    for name in ("unit_total", "loglik", "unit_cells"):
        np.testing.assert_array_equal(memory.idata.posterior[name], streamed.idata.posterior[name])
    assert streamed.manifest["complete"] and streamed.clipped == memory.clipped
    # and a different seed gives a different run (the comparison can fail)
    other = stream_posterior(folder, tmp_path / "other", rng=10, **OPTIONS)
    assert not np.array_equal(other.idata.posterior["loglik"], streamed.idata.posterior["loglik"])


def test_a_bad_row_is_named_by_its_row_in_the_file(release, tmp_path):
    measurements, invariants = census.release_tables(release)
    measurements.loc[57, "variance"] = -1.0
    path = tmp_path / "bad"
    path.mkdir()
    (path / "release.json").write_text('{"axes": {"votingage": 2, "hispanic": 2}}')
    measurements.to_csv(path / "measurements.csv", index=False)
    invariants.to_csv(path / "invariants.csv", index=False)
    row = measurements.iloc[57]
    with pytest.raises(ValueError, match=rf"measurements row 57 \(geocode '{row['geocode']}'"):
        StreamedRelease(path, chunk_rows=20)


def test_each_part_tree_equals_the_tree_of_its_geocodes(release):
    partition = Partition.of(release.units)
    for i in [-1, *range(partition.roots.size)]:
        members = partition.top if i < 0 else partition.members[i]
        expected = Units.from_geocodes(release.units.geocodes[members])
        got = partition.tree(i)
        for field in ("geocodes", "parent", "depth", "level_start", "first_child", "n_children"):
            np.testing.assert_array_equal(getattr(got, field), getattr(expected, field))
