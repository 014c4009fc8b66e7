"""``dpinfer run census-blocks`` on a user's release folder and on the synthetic state."""

import subprocess
import sys

import pandas as pd

from dpinfer.census import write_release
from dpinfer.models import census_blocks


def test_run_on_a_release_folder_writes_one_row_per_unit_query_cell_and_method(tmp_path):
    _, release = census_blocks.synthetic(3)
    write_release(release, tmp_path / "release")
    out = tmp_path / "out"
    command = [
        sys.executable,
        "-m",
        "dpinfer.cli",
        "run",
        "census-blocks",
        "--release-dir",
        str(tmp_path / "release"),
        "--methods",
        "naive,gls",
        "--out",
        str(out),
        "--seed",
        "1",
        "--no-progress",
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    table = pd.read_csv(out / "summary.csv", dtype={"geocode": str})
    assert list(table.columns) == census_blocks._run.COLUMNS
    assert set(table["method"]) == {"naive", "gls"}
    gls_rows = table[table["method"] == "gls"]
    cells = sum(q.cells for q in release.queries) * len(release.units)
    assert len(gls_rows) == cells
    state = gls_rows[(gls_rows["geocode"] == "01") & (gls_rows["query"] == "total")]
    assert abs(state["estimate"].iloc[0] - release.invariants["total"].values[0, 0]) < 1e-6
    assert (out / "manifest.json").exists() and (out / "census_blocks.png").exists()


def test_bad_methods_are_refused_before_anything_runs(tmp_path):
    command = [
        sys.executable,
        "-m",
        "dpinfer.cli",
        "run",
        "census-blocks",
        "--methods",
        "gls,mcmc",
        "--out",
        str(tmp_path / "o"),
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    assert done.returncode != 0 and "comma-separated subset" in done.stderr
