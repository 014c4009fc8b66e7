"""Nothing in an output folder makes a run, or a reader, wait forever.

A FIFO where a manifest or a listed file should be is refused at once (it is never opened
to wait for a writer), a manifest too large to be dpinfer's is refused without being read,
and a process that holds the folder's lock (one that can only read the folder can) makes a
waiting writer give up after its ``wait_limit``, naming what holds the folder.

Each call that could hang runs in a thread that the test joins with a generous limit: a
hang is reported as one (and the FIFO is then opened for writing, so the thread ends),
instead of stopping the test run. The limit is a hang detector, not a speed requirement.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from dpinfer import cli
from dpinfer.outputs import (
    MANIFEST,
    MAX_MANIFEST_BYTES,
    WAIT_LIMIT,
    IncompleteOutputError,
    OutputBusyError,
    OutputFolder,
    OutputPathError,
    read_manifest,
)

HANG = 120.0  # seconds: far beyond any of these calls on a loaded machine
TINY = ["covid-polynomial", "--proposals", "300", "--seed", "5", "--no-progress"]


def _without_hanging(call, *fifos: Path, limit: float = HANG):
    """Return what ``call()`` returns or raises; fail if it does not return within ``limit``."""
    outcome = {}

    def target():
        try:
            outcome["value"] = call()
        except BaseException as err:  # handed to the test
            outcome["error"] = err

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(limit)
    if thread.is_alive():
        for fifo in fifos:  # give a blocked reader its end of file
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            os.close(fd)
        thread.join(HANG)
        pytest.fail(f"{call} hung")
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


def _run(folder, **options):
    with OutputFolder(folder, **options) as out:
        out.write_text("a.txt", "x")
        out.write_text("summary.csv", "mean\n1\n")
        return out.complete()


def test_a_fifo_named_manifest_json_is_refused_at_once(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    os.mkfifo(folder / MANIFEST)
    with pytest.raises(IncompleteOutputError, match="of dpinfer's own"):
        _without_hanging(lambda: read_manifest(folder), folder / MANIFEST)
    with pytest.raises(OutputPathError, match="'manifest.json'.*overwrite"):
        _without_hanging(lambda: _run(folder), folder / MANIFEST)
    _without_hanging(lambda: _run(folder, overwrite=True), folder / MANIFEST)
    assert read_manifest(folder)["complete"]


def test_a_fifo_where_a_listed_file_was_is_refused_at_once(tmp_path):
    folder = tmp_path / "out"
    _run(folder)
    (folder / "summary.csv").unlink()
    os.mkfifo(folder / "summary.csv")
    with pytest.raises(IncompleteOutputError, match="summary.csv.*not a regular file"):
        _without_hanging(lambda: read_manifest(folder), folder / "summary.csv")
    with pytest.raises(OutputPathError, match="'summary.csv'"):
        _without_hanging(lambda: _run(folder), folder / "summary.csv")
    _without_hanging(lambda: _run(folder, overwrite=True), folder / "summary.csv")
    assert (folder / "summary.csv").read_text() == "mean\n1\n"


def test_a_huge_sparse_manifest_is_refused_without_being_read(tmp_path):
    folder = tmp_path / "out"
    _run(folder)
    with open(folder / MANIFEST, "r+b") as fh:
        fh.truncate(8 * 2**30)  # 8 GiB, sparse: a read of it would need 8 GiB of memory
    with pytest.raises(IncompleteOutputError, match=r"at most 16,777,216 bytes; it has 8,589"):
        read_manifest(folder)
    with pytest.raises(OutputPathError, match="'manifest.json'"):
        _run(folder)
    _run(folder, overwrite=True)
    assert (folder / MANIFEST).stat().st_size < MAX_MANIFEST_BYTES


# --- a lock held by a process that only reads the folder ------------------------------------

HOLDER = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
fcntl.flock(fd, fcntl.LOCK_EX)
print("locked", flush=True)
sys.stdin.read()
"""


@pytest.fixture
def held(tmp_path):
    """A folder whose lock another process holds, having only opened it for reading."""
    folder = tmp_path / "out"
    folder.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(folder)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout.readline().strip() == "locked"
    yield folder, proc.pid
    proc.communicate("", timeout=60)


def _holder_named(message: str, pid: int) -> bool:
    if Path("/proc/locks").exists():
        return f"a process (pid {pid}) that holds the folder's lock" in message
    return "a process that holds the folder's lock" in message


def test_a_reader_holding_the_lock_is_named(held):
    folder, pid = held
    with pytest.raises(OutputBusyError) as err:
        _run(folder)
    assert _holder_named(str(err.value), pid), str(err.value)


def test_a_waiting_writer_gives_up_after_its_limit(held):
    folder, pid = held
    with pytest.raises(OutputBusyError) as err:
        _without_hanging(lambda: _run(folder, wait=True, wait_limit=0.3))
    assert _holder_named(str(err.value), pid) and "(waited 0.3 s)" in str(err.value)
    assert os.listdir(folder) == []  # nothing was written while it waited


def test_the_wait_limit_is_checked_and_documented():
    assert WAIT_LIMIT == 600.0
    assert "wait_limit : float, default :data:`WAIT_LIMIT` (600)" in OutputFolder.__doc__
    for bad in (0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="wait_limit"):
            OutputFolder("out", wait_limit=bad)
    with pytest.raises(TypeError, match="wait_limit"):
        OutputFolder("out", wait_limit="10")


def test_cli_wait_gives_up_after_the_seconds_given(held, capsys):
    folder, pid = held
    status = _without_hanging(
        lambda: cli.main(["run", *TINY, "--out", str(folder), "--wait", "0.3"])
    )
    err = capsys.readouterr().err
    assert status == 1
    assert _holder_named(err, pid) and "(waited 0.3 s)" in err


def test_cli_wait_without_seconds_waits_the_default_limit(monkeypatch, tmp_path):
    seen = {}

    def record(example, out, options, **kwargs):
        seen.update(kwargs)
        raise OutputBusyError("recorded")

    monkeypatch.setattr("dpinfer._run_command.save_run", record)
    assert cli.main(["run", *TINY, "--out", str(tmp_path / "o"), "--wait"]) == 1
    assert seen["wait"] is True and seen["wait_limit"] == WAIT_LIMIT
    assert cli.main(["run", *TINY, "--out", str(tmp_path / "o")]) == 1
    assert seen["wait"] is False
    with pytest.raises(SystemExit):
        cli.main(["run", *TINY, "--out", str(tmp_path / "o"), "--wait", "0"])


def test_companion_a_blocking_open_hangs_on_the_fifo(tmp_path):
    # Planted bug: the old reader opened the manifest without O_NONBLOCK; on a FIFO it waits
    # for a writer. The helper reports the hang (and then unblocks the thread).
    folder = tmp_path / "out"
    folder.mkdir()
    os.mkfifo(folder / MANIFEST)

    def blocking_read():
        fd = os.open(folder / MANIFEST, os.O_RDONLY)
        os.close(fd)

    with pytest.raises(pytest.fail.Exception, match="hung"):
        _without_hanging(blocking_read, folder / MANIFEST, limit=0.5)


def test_a_fifo_is_never_opened_for_reading(tmp_path, monkeypatch):
    # the regular-file check comes before the open: a FIFO or a device is never opened
    folder = tmp_path / "out"
    _run(folder)
    (folder / "a.txt").unlink()
    os.mkfifo(folder / "a.txt")
    opened = []
    real_open = os.open

    def spy(path, flags, *args, **kwargs):
        opened.append(os.fspath(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", spy)
    with pytest.raises(IncompleteOutputError):
        _without_hanging(lambda: read_manifest(folder), folder / "a.txt")
    monkeypatch.undo()
    assert "a.txt" not in opened
