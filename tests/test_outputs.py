"""Output folders that cannot be half-written: atomic files, a lock, and a manifest written last.

The in-process tests look at the folder at every intermediate step of a run (inside each
writer, between files); the subprocess tests kill a real ``dpinfer run`` with SIGKILL right
after ``posterior.nc`` appears, and run two of them into one folder at once.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from dpinfer import cli, outputs
from dpinfer.outputs import (
    IncompleteOutputError,
    OutputBusyError,
    OutputFolder,
    OutputPathError,
    read_manifest,
)
from dpinfer.results import from_netcdf

# The cheapest example: ABCDP on 18 numbers with a few hundred public proposals.
TINY = ["covid-polynomial", "--proposals", "300", "--seed", "5", "--no-progress"]

# Run dpinfer's command line with every file commit slowed down, so that a kill after the
# first file lands while the others are still being written. Only the test slows it.
SLOW_WRITER = """
import sys, time
from dpinfer import cli, outputs
commit = outputs.OutputFolder._commit
def slow_commit(*args, **kwargs):
    commit(*args, **kwargs)
    time.sleep(float(sys.argv[1]))
outputs.OutputFolder._commit = slow_commit
sys.exit(cli.main(sys.argv[2:]))
"""


def _check_consistent(folder: Path) -> str:
    """Assert the folder is intact or recognisably incomplete; return which.

    Intact: the manifest says complete and every listed file has its recorded size and
    checksum and loads. Either way, a ``posterior.nc`` that exists is a whole file.
    """
    posterior = folder / "posterior.nc"
    if posterior.exists():
        from_netcdf(posterior)  # raises on a truncated file
    try:
        manifest = read_manifest(folder)
    except IncompleteOutputError:
        return "incomplete"
    for name in manifest["files"]:
        if name.endswith(".nc"):
            from_netcdf(folder / name)
        elif name.endswith(".json"):
            json.loads((folder / name).read_text())
    return "complete"


def _netcdf_writer(idata, check):
    """A writer that writes half of the file, lets ``check`` look, then finishes it."""

    def write(path):
        idata.to_netcdf(str(path))
        data = Path(path).read_bytes()
        Path(path).write_bytes(data[: len(data) // 2])
        check()
        Path(path).write_bytes(data)

    return write


@pytest.fixture
def idata():
    import numpy as np

    from dpinfer.results import to_inference_data

    return to_inference_data(
        {"theta": np.random.default_rng(0).normal(size=400)}, attrs={"method": "demo"}, chains=4
    )


def _run_steps(folder, idata, *, folder_class=OutputFolder):
    states = []

    def look():
        states.append(_check_consistent(folder))

    with folder_class(folder, info={"example": "demo", "seed": 1}) as out:
        look()
        out.write("posterior.nc", _netcdf_writer(idata, look))
        look()
        out.write_text("summary.json", json.dumps({"mean": 0.0}))
        look()
        out.complete()
    look()
    return states


def test_every_intermediate_state_is_incomplete_until_the_manifest(tmp_path, idata):
    folder = tmp_path / "run"
    states = _run_steps(folder, idata)
    assert states == ["incomplete"] * 4 + ["complete"]
    manifest = read_manifest(folder)
    assert manifest["complete"] and manifest["state"] == "complete"
    assert (manifest["example"], manifest["seed"]) == ("demo", 1)
    assert set(manifest["files"]) == {"posterior.nc", "summary.json"}
    assert not list(folder.glob(".dpinfer-tmp-*")), "temporary files must not survive"


class _InPlaceFolder(OutputFolder):
    """Planted bug: writes each file in place instead of to a temporary name."""

    def write(self, name, writer):
        writer(self.path / name)
        return self.path / name


def test_a_writer_without_rename_is_caught(tmp_path, idata):
    # The same step-by-step check fails on a folder that writes files in place: a reader
    # sees a truncated posterior.nc while it is being written.
    with pytest.raises(Exception) as err:
        _run_steps(tmp_path / "run", idata, folder_class=_InPlaceFolder)
    assert not isinstance(err.value, AssertionError | IncompleteOutputError)


def test_a_new_run_marks_the_old_one_stale_and_removes_its_files(tmp_path, idata):
    folder = tmp_path / "run"
    _run_steps(folder, idata)
    # a temporary that a killed writer left behind: the manifest listed it (by the SHA-256 of
    # its name) before it existed
    leftover = ".dpinfer-tmp-" + "5e" * 16
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["temporary"].append(hashlib.sha256(leftover.encode()).hexdigest())
    (folder / "manifest.json").write_text(json.dumps(manifest))
    (folder / leftover).write_bytes(b"left by a killed run")
    with pytest.raises(RuntimeError, match="boom"):
        with OutputFolder(folder, info={"example": "second"}):
            # the previous complete run is no longer claimed, and its files are gone
            with pytest.raises(IncompleteOutputError, match="state 'running'"):
                read_manifest(folder)
            assert not (folder / "posterior.nc").exists()
            assert not (folder / leftover).exists()
            raise RuntimeError("boom")
    with pytest.raises(IncompleteOutputError, match="state 'failed': RuntimeError: boom"):
        read_manifest(folder)
    assert os.listdir(folder) == ["manifest.json"]


def test_an_altered_file_is_refused(tmp_path, idata):
    folder = tmp_path / "run"
    _run_steps(folder, idata)
    (folder / "summary.json").write_text('{"mean": 1.0}')
    with pytest.raises(IncompleteOutputError, match="differs"):
        read_manifest(folder)
    (folder / "summary.json").unlink()
    with pytest.raises(IncompleteOutputError, match="missing"):
        read_manifest(folder)


def test_a_second_writer_is_refused_or_waits(tmp_path):
    folder = tmp_path / "run"
    with OutputFolder(folder):
        with pytest.raises(OutputBusyError, match=f"another dpinfer run \\(pid {os.getpid()}\\)"):
            OutputFolder(folder).__enter__()
    order = []
    first = OutputFolder(folder).__enter__()

    def second():
        with OutputFolder(folder, wait=True) as out:
            order.append("second")
            out.complete()

    thread = threading.Thread(target=second)
    thread.start()
    time.sleep(0.2)
    order.append("first")
    first.complete()
    first.__exit__(None, None, None)
    thread.join(timeout=30)
    assert order == ["first", "second"]
    assert read_manifest(folder)["complete"]


@pytest.mark.parametrize("bad", ["", "   "])
def test_an_empty_path_is_refused(bad):
    with pytest.raises(OutputPathError, match="non-empty path"):
        OutputFolder(bad)


def test_a_file_is_not_a_folder(tmp_path):
    target = tmp_path / "results.txt"
    target.write_text("x")
    for path in (target, target / "sub"):
        with pytest.raises(OutputPathError, match="existing file, not a folder"):
            OutputFolder(path)


def test_file_names_are_plain(tmp_path):
    with OutputFolder(tmp_path / "run") as out:
        for bad in ("../escape.txt", "sub/x.txt", outputs.MANIFEST, ""):
            with pytest.raises(ValueError, match="plain file name"):
                out.write_text(bad, "x")


# --- the real command line, in subprocesses ------------------------------------------------


def _start(folder: Path, delay: float, *extra: str) -> subprocess.Popen:
    """Start a run; its temporary files go beside ``folder`` (a killed run cannot remove them)."""
    argv = [sys.executable, "-c", SLOW_WRITER, str(delay), "run", *TINY, "--out", str(folder)]
    env = os.environ | {"TMPDIR": str(folder.parent)}
    return subprocess.Popen(
        [*argv, *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )


def _running_pid(folder: Path):
    """The pid that the folder's manifest names while a run is writing it, or None."""
    try:
        manifest = json.loads((folder / "manifest.json").read_text())
    except (OSError, ValueError):
        return None
    return manifest.get("pid") if manifest.get("state") == "running" else None


def _wait_for(predicate, proc, timeout=120.0):
    end = time.monotonic() + timeout
    while not predicate():
        if proc.poll() is not None:
            raise AssertionError(f"the run ended early: {proc.communicate()}")
        if time.monotonic() > end:
            proc.kill()
            raise AssertionError("timed out")
        time.sleep(0.01)


def test_a_run_killed_after_posterior_nc_appears_is_recognisably_incomplete(tmp_path, capsys):
    folder = tmp_path / "run"
    proc = _start(folder, 1.0)
    _wait_for((folder / "posterior.nc").exists, proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert _check_consistent(folder) == "incomplete"
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["state"] == "running" and manifest["complete"] is False
    # the lock died with its holder: a new run proceeds and completes
    assert cli.main(["run", *TINY, "--out", str(folder)]) == 0, capsys.readouterr().err
    assert _check_consistent(folder) == "complete"


def test_two_runs_into_one_folder_one_refuses_and_the_result_loads(tmp_path, capsys):
    folder = tmp_path / "run"
    first = _start(folder, 0.3)
    _wait_for(lambda: _running_pid(folder) == first.pid, first)
    assert cli.main(["run", *TINY, "--out", str(folder)]) == 1
    err = capsys.readouterr().err
    assert f"being written by another dpinfer run (pid {first.pid})" in err
    out, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    assert _check_consistent(folder) == "complete"
    assert read_manifest(folder)["pid"] == first.pid
