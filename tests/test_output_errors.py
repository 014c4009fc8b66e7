"""Errors of an output folder say what happened and where, and leave the run marked failed.

A full disk while the final manifest is written, a folder the user cannot write, a folder
standing where an output file should go: each raises dpinfer's error naming the output
folder and the system's cause (never a temporary's name), and the manifest says the run
failed (or, where nothing could be written, is left as it was).
"""

from __future__ import annotations

import errno
import json
import os
import stat

import pytest

from dpinfer import cli
from dpinfer.outputs import (
    MANIFEST,
    IncompleteOutputError,
    OutputFolder,
    OutputPathError,
    OutputWriteError,
    read_manifest,
)

TINY = ["covid-polynomial", "--proposals", "300", "--seed", "5", "--no-progress"]


class FullDisk:
    """``os.fsync`` of a regular file fails with ENOSPC once armed (as a full disk reports it)."""

    def __init__(self, monkeypatch, *, times: int = 1, size: int | None = None):
        self.armed, self.times, self.size = False, times, size
        self._fsync = os.fsync
        monkeypatch.setattr(os, "fsync", self)

    def __call__(self, fd):
        st = os.fstat(fd)
        hit = stat.S_ISREG(st.st_mode) and self.size in (None, st.st_size)
        if self.armed and self.times and hit:
            self.times -= 1
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return self._fsync(fd)


def _temporaries(folder) -> list[str]:
    return [n for n in os.listdir(folder) if n.startswith(".dpinfer-tmp-")]


def test_a_full_disk_at_the_final_manifest_is_reported_and_the_run_marked_failed(
    tmp_path, monkeypatch
):
    folder = tmp_path / "out"
    disk = FullDisk(monkeypatch)
    with pytest.raises(OSError) as err:
        with OutputFolder(folder) as out:
            out.write_text("a.txt", "x")
            disk.armed = True
            out.complete()
    assert isinstance(err.value, OutputWriteError) and err.value.errno == errno.ENOSPC
    message = str(err.value)
    assert str(folder) in message and "No space left on device" in message
    assert MANIFEST in message and ".dpinfer-tmp-" not in message
    manifest = json.loads((folder / MANIFEST).read_text())
    assert manifest["state"] == "failed" and "No space left on device" in manifest["error"]
    assert _temporaries(folder) == []
    with pytest.raises(IncompleteOutputError, match="state 'failed'.*No space left"):
        read_manifest(folder)


def test_a_disk_that_stays_full_keeps_the_first_error_and_says_the_manifest_is_stale(
    tmp_path, monkeypatch
):
    folder = tmp_path / "out"
    disk = FullDisk(monkeypatch, times=2)
    with pytest.raises(OutputWriteError) as err:
        with OutputFolder(folder) as out:
            out.write_text("a.txt", "x")
            disk.armed = True
            out.complete()
    assert err.value.errno == errno.ENOSPC
    assert any("could not be marked failed either" in note for note in err.value.__notes__)
    assert json.loads((folder / MANIFEST).read_text())["state"] == "running"
    assert _temporaries(folder) == []


def test_a_full_disk_while_a_file_is_written_is_reported_by_name(tmp_path, monkeypatch):
    folder = tmp_path / "out"
    disk = FullDisk(monkeypatch, size=1)  # a.txt's data, not the manifest's
    with pytest.raises(OutputWriteError, match=r"cannot write 'a.txt' in the output folder"):
        with OutputFolder(folder) as out:
            disk.armed = True
            out.write_text("a.txt", "x")
    assert json.loads((folder / MANIFEST).read_text())["state"] == "failed"
    assert _temporaries(folder) == [] and not (folder / "a.txt").exists()


def test_a_folder_the_user_cannot_write_is_named(tmp_path, monkeypatch):
    # As a user without write permission sees it (the tests may run as root, who may write
    # anywhere): every file created in the folder is refused with EACCES.
    folder = tmp_path / "readonly"
    folder.mkdir()
    real_open = os.open

    def refused(path, flags, *args, **kwargs):
        if flags & os.O_CREAT and kwargs.get("dir_fd") is not None:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refused)
    with pytest.raises(OutputWriteError) as err:
        with OutputFolder(folder):
            pass
    monkeypatch.undo()
    message = str(err.value)
    assert f"in the output folder {str(folder)!r}: Permission denied" in message
    assert ".dpinfer-tmp-" not in message and err.value.errno == errno.EACCES
    assert os.listdir(folder) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write to a read-only folder")
def test_a_read_only_folder_is_named(tmp_path):
    folder = tmp_path / "readonly"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        with pytest.raises(OutputWriteError, match=f"output folder {str(folder)!r}"):
            with OutputFolder(folder):
                pass
    finally:
        folder.chmod(0o755)


@pytest.mark.parametrize("overwrite", [False, True])
def test_a_folder_named_like_an_output_file_is_a_clear_error(tmp_path, overwrite):
    folder = tmp_path / "out"
    (folder / "summary.csv").mkdir(parents=True)
    (folder / "summary.csv" / "keep.txt").write_text("mine")
    if not overwrite:
        with pytest.raises(OutputPathError, match="'summary.csv'"):
            OutputFolder(folder).__enter__()
        return
    with pytest.raises(OutputWriteError) as err:
        with OutputFolder(folder, overwrite=True) as out:
            out.write_text("summary.csv", "mean\n1\n")
    assert "a folder of that name is in the way" in str(err.value)
    assert f"cannot write 'summary.csv' in the output folder {str(folder)!r}" in str(err.value)
    assert (folder / "summary.csv" / "keep.txt").read_text() == "mine"
    assert json.loads((folder / MANIFEST).read_text())["state"] == "failed"


def test_a_folder_named_manifest_json_is_a_clear_error(tmp_path):
    folder = tmp_path / "out"
    (folder / MANIFEST).mkdir(parents=True)
    with pytest.raises(OutputWriteError, match="'manifest.json'.*a folder of that name"):
        OutputFolder(folder, overwrite=True).__enter__()
    assert os.listdir(folder) == [MANIFEST]


def test_cli_reports_a_full_disk_as_an_error(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "out"
    disk = FullDisk(monkeypatch)
    from dpinfer.outputs import OutputFolder as Folder

    complete = Folder.complete

    def full_at_the_end(self):
        disk.armed = True
        return complete(self)

    monkeypatch.setattr(Folder, "complete", full_at_the_end)
    assert cli.main(["run", *TINY, "--out", str(folder)]) == 1
    err = capsys.readouterr().err
    assert "No space left on device" in err and str(folder) in err
    assert json.loads((folder / MANIFEST).read_text())["state"] == "failed"
