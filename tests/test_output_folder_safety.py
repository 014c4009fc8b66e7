"""Output folders never touch what is not theirs: links, other tools' manifests, user files.

Each test plants one attack (or one innocent user file) and checks that no path outside
the folder, and no file that dpinfer did not write, is opened for writing, truncated,
renamed or removed, through the library and through ``dpinfer run``.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from dpinfer import cli
from dpinfer.outputs import (
    FORMAT,
    IncompleteOutputError,
    OutputFolder,
    OutputPathError,
    read_manifest,
)

TINY = ["covid-polynomial", "--proposals", "300", "--seed", "5", "--no-progress"]
KEEP = "the user's own words\n"


def _run(folder, **options):
    with OutputFolder(folder, info={"example": "demo"}, **options) as out:
        out.write_text("a.txt", "x")
        out.write_text("summary.csv", "mean\n1\n")
        return out.complete()


@pytest.fixture
def keep(tmp_path):
    path = tmp_path / "keep.txt"
    path.write_text(KEEP)
    return path


def _entries(folder: Path) -> set[str]:
    return set(os.listdir(folder))


def _refused_until_overwrite(folder, *, manifest_error: str, run_error: str):
    """The folder's manifest is not trusted, a run is refused, and one with overwrite passes."""
    with pytest.raises(IncompleteOutputError, match=manifest_error):
        read_manifest(folder)
    with pytest.raises(OutputPathError, match=run_error):
        _run(folder)
    _run(folder, overwrite=True)


# --- the lock -------------------------------------------------------------------------


@pytest.mark.parametrize("dangling", [False, True])
def test_a_linked_lock_name_is_never_opened(tmp_path, keep, dangling):
    folder = tmp_path / "out"
    folder.mkdir()
    target = tmp_path / "created-through-the-link.txt" if dangling else keep
    os.symlink(os.path.relpath(target, folder), folder / ".dpinfer.lock")
    _run(folder)
    assert keep.read_text() == KEEP
    assert not (tmp_path / "created-through-the-link.txt").exists()
    assert read_manifest(folder)["complete"]


def test_no_lock_file_is_left_behind(tmp_path):
    folder = tmp_path / "out"
    _run(folder)
    assert _entries(folder) == {"a.txt", "summary.csv", "manifest.json"}


def test_companion_a_lock_opened_through_links_is_caught(tmp_path, keep, monkeypatch):
    # Planted bug: the old lock, a file opened without O_NOFOLLOW and stamped with the pid.
    from dpinfer import outputs

    def old_lock(dir_fd, path, **options):
        fd = os.open(path / ".dpinfer.lock", os.O_RDWR | os.O_CREAT, 0o644)
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)

    monkeypatch.setattr(outputs, "_lock", old_lock)
    folder = tmp_path / "out"
    folder.mkdir()
    os.symlink("../keep.txt", folder / ".dpinfer.lock")
    _run(folder)
    assert keep.read_text() != KEEP  # the attack works on the old code: the check can fail


# --- manifests that are not dpinfer's own -----------------------------------------------


def test_another_tools_manifest_deletes_nothing(tmp_path):
    folder = tmp_path / "thesis"
    folder.mkdir()
    (folder / "thesis.tex").write_text(KEEP)
    other = {"name": "another tool", "files": {"thesis.tex": {}}}
    (folder / "manifest.json").write_text(json.dumps(other))
    with pytest.raises(OutputPathError, match="did not write.*'manifest.json'.*--overwrite"):
        _run(folder)
    assert (folder / "thesis.tex").read_text() == KEEP
    assert json.loads((folder / "manifest.json").read_text()) == other
    with pytest.raises(IncompleteOutputError, match="of dpinfer's own"):
        read_manifest(folder)
    # with overwrite, dpinfer writes its files and still removes nothing it did not write
    _run(folder, overwrite=True)
    assert (folder / "thesis.tex").read_text() == KEEP
    assert read_manifest(folder)["complete"]


def test_a_dpinfer_format_manifest_listing_a_path_outside_is_not_ours(tmp_path, keep):
    folder = tmp_path / "out"
    _run(folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["files"]["../keep.txt"] = {"bytes": len(KEEP), "sha256": "0" * 64}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    _refused_until_overwrite(folder, manifest_error="of dpinfer's own", run_error="did not write")
    assert keep.read_text() == KEEP


def test_a_symlinked_manifest_is_not_read_and_its_list_not_removed(tmp_path, keep):
    folder = tmp_path / "out"
    elsewhere = tmp_path / "elsewhere"
    _run(elsewhere)  # a genuine dpinfer manifest, outside the folder
    folder.mkdir()
    os.symlink("../elsewhere/manifest.json", folder / "manifest.json")
    _refused_until_overwrite(folder, manifest_error="of dpinfer's own", run_error="did not write")
    assert read_manifest(elsewhere)["complete"]  # its files were neither removed nor changed
    assert not (folder / "manifest.json").is_symlink()


def test_listed_files_that_became_links_are_not_followed(tmp_path, keep):
    folder = tmp_path / "out"
    _run(folder)
    (folder / "a.txt").unlink()
    os.symlink("../keep.txt", folder / "a.txt")
    _refused_until_overwrite(folder, manifest_error="missing", run_error="'a.txt'")
    assert keep.read_text() == KEEP
    assert not (folder / "a.txt").is_symlink() and (folder / "a.txt").read_text() == "x"


def test_the_output_folder_itself_may_not_be_a_link(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    os.symlink("real", tmp_path / "link")
    with pytest.raises(OutputPathError, match="symbolic link"):
        _run(tmp_path / "link")
    assert not os.listdir(real)


# --- the user's own files ---------------------------------------------------------------


def test_a_folder_with_the_users_files_is_refused_unless_overwrite(tmp_path):
    folder = tmp_path / "mydata"
    folder.mkdir()
    (folder / "summary.csv").write_text(KEEP)
    (folder / "notes.txt").write_text(KEEP)
    with pytest.raises(OutputPathError, match=r"holds 2 file\(s\).*'notes.txt', 'summary.csv'"):
        _run(folder)
    assert (folder / "summary.csv").read_text() == KEEP
    assert _entries(folder) == {"summary.csv", "notes.txt"}
    _run(folder, overwrite=True)
    assert (folder / "summary.csv").read_text() == "mean\n1\n"  # replaced, as asked
    assert (folder / "notes.txt").read_text() == KEEP  # never touched


def test_a_changed_output_file_is_the_users_now(tmp_path):
    folder = tmp_path / "out"
    _run(folder)
    (folder / "summary.csv").write_text(KEEP)  # the user edited dpinfer's summary
    with pytest.raises(OutputPathError, match="changed since"):
        _run(folder)
    assert (folder / "summary.csv").read_text() == KEEP


def test_a_second_run_into_its_own_folder_needs_no_option(tmp_path):
    folder = tmp_path / "out"
    _run(folder)
    first = read_manifest(folder)
    _run(folder)
    assert read_manifest(folder)["started"] >= first["started"]


def test_options_are_flags(tmp_path):
    for name in ("wait", "overwrite"):
        with pytest.raises(TypeError, match=f"{name} must be a bool"):
            OutputFolder(tmp_path / "x", **{name: "no"})
    with pytest.raises(TypeError, match="verify must be a bool"):
        read_manifest(tmp_path, verify="yes")


def test_a_writer_that_leaves_a_link_is_refused(tmp_path, keep):
    folder = tmp_path / "out"
    with pytest.raises(OutputPathError, match="regular file"):
        with OutputFolder(folder) as out:
            out.write("a.txt", lambda p: os.symlink(str(keep), p))
    assert keep.read_text() == KEEP
    assert not any(name.startswith(".dpinfer-tmp-") for name in os.listdir(folder))


def test_temporaries_are_listed_in_the_manifest_before_they_exist(tmp_path, monkeypatch):
    # each temporary is listed by the SHA-256 of its name, in the manifest on disk when it
    # is created (the first manifest of a run has no manifest before it)
    folder = tmp_path / "out"
    listed = []

    def check(name):
        if (folder / "manifest.json").exists():
            manifest = json.loads((folder / "manifest.json").read_text())
            digest = hashlib.sha256(os.fspath(name).encode()).hexdigest()
            listed.append(digest in manifest["temporary"] and name not in manifest["temporary"])

    create, link = os.open, os.link

    def spy_open(path, flags, *args, **kwargs):
        if kwargs.get("dir_fd") is not None and flags & os.O_CREAT:
            check(path)
        return create(path, flags, *args, **kwargs)

    def spy_link(src, dst, **kwargs):
        check(dst)
        return link(src, dst, **kwargs)

    monkeypatch.setattr(os, "open", spy_open)
    monkeypatch.setattr(os, "link", spy_link)
    with OutputFolder(folder) as out:
        out.write("a.txt", lambda path: Path(path).write_text("x"))
        out.write_text("b.txt", "y")
        out.complete()
    monkeypatch.undo()
    assert len(listed) >= 4 and all(listed)  # two files, and the manifests between them
    assert json.loads((folder / "manifest.json").read_text())["format"] == FORMAT


# --- the command line -------------------------------------------------------------------


def test_cli_refuses_the_users_folder_then_overwrites_when_asked(tmp_path, capsys):
    folder = tmp_path / "mydata"
    folder.mkdir()
    (folder / "summary.csv").write_text(KEEP)
    assert cli.main(["run", *TINY, "--out", str(folder)]) == 1
    err = capsys.readouterr().err
    assert "did not write" in err and "--overwrite" in err
    assert (folder / "summary.csv").read_text() == KEEP
    assert cli.main(["run", *TINY, "--out", str(folder), "--overwrite"]) == 0
    assert (folder / "summary.csv").read_text() != KEEP
    assert read_manifest(folder)["complete"]


def test_cli_with_a_linked_lock_name_leaves_the_target_alone(tmp_path, keep):
    folder = tmp_path / "out"
    folder.mkdir()
    os.symlink("../keep.txt", folder / ".dpinfer.lock")
    assert cli.main(["run", *TINY, "--out", str(folder)]) == 0
    assert keep.read_text() == KEEP


def _another_tools_manifest(folder: Path, tmp_path: Path) -> None:
    (folder / "manifest.json").write_text(json.dumps({"files": {"thesis.tex": {}}}))


def _linked_manifest(folder: Path, tmp_path: Path) -> None:
    _run(tmp_path / "elsewhere")
    os.symlink("../elsewhere/manifest.json", folder / "manifest.json")


@pytest.mark.parametrize("plant", [_another_tools_manifest, _linked_manifest])
def test_cli_never_removes_what_a_foreign_manifest_lists(tmp_path, capsys, plant):
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "thesis.tex").write_text(KEEP)
    plant(folder, tmp_path)
    assert cli.main(["run", *TINY, "--out", str(folder)]) == 1
    assert "did not write" in capsys.readouterr().err
    assert cli.main(["run", *TINY, "--out", str(folder), "--overwrite"]) == 0
    assert (folder / "thesis.tex").read_text() == KEEP
    if (tmp_path / "elsewhere").exists():
        assert read_manifest(tmp_path / "elsewhere")["complete"]


def test_a_run_stopped_while_removing_the_previous_files_leaves_a_folder_still_ours(
    tmp_path, monkeypatch
):
    from dpinfer import outputs

    folder = tmp_path / "out"
    _run(folder)

    def stop(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(outputs, "_unlink_regular", stop)
    with pytest.raises(KeyboardInterrupt):
        _run(folder)
    monkeypatch.undo()
    _run(folder)  # no overwrite needed: every file left behind is listed as dpinfer's
    assert read_manifest(folder)["complete"]
    assert _entries(folder) == {"a.txt", "summary.csv", "manifest.json"}
