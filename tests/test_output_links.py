"""A run's files are never written through a link, whatever another user plants in the folder.

The attacker can write to the output folder and read everything in it (the manifest, the
listing): it plants symbolic links, pointing at a victim file outside the folder or at a
path that does not exist yet, at every name it can guess, from a second thread, for the
whole run, and replaces the run's own files by links as soon as it sees them. Whatever
it does, nothing outside the folder changes: a run completes, or fails with dpinfer's
error (:class:`~dpinfer.outputs.OutputWriteError` or
:class:`~dpinfer.outputs.OutputPathError`), and never writes elsewhere.

A static check reads the output code itself: every file it opens, creates, renames,
removes or inspects is reached through the folder's descriptor (``dir_fd``), or lies in
the run's private directory, and every ``os.open`` refuses a link (``O_NOFOLLOW``).
"""

from __future__ import annotations

import ast
import errno
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from dpinfer import cli, outputs
from dpinfer.outputs import (
    MANIFEST,
    OutputFolder,
    OutputPathError,
    OutputWriteError,
    read_manifest,
)

TINY = ["covid-polynomial", "--proposals", "300", "--seed", "5", "--no-progress"]
CLI_NAMES = (
    "posterior.nc",
    "non_private.nc",
    "summary.csv",
    "summary.json",
    "covid_polynomial.png",
)
NAMES = ("summary.csv", "summary.json", "posterior.nc", "figure.png")
VICTIM = "the victim's own words\n"


class Planter:
    """Another user with write access to the folder, planting links at every name it can guess.

    Its guesses: the names the run writes, the manifest, every name in the folder's
    listing and in the manifest's ``temporary`` list, and every name made of a seen
    name's prefix (a seen name minus a known name at its end) and a known name: a token
    shared by several temporaries is found this way. Each link points at the victim
    file or at a path outside that does not exist (which a write through it would
    create). It also replaces the run's files that it sees by such links: none of them
    (``replace="nothing"``), its outputs under their final names (``"outputs"``), or
    every regular file, temporaries and manifest included (``"everything"``).
    """

    def __init__(self, folder: Path, outside: Path, names, *, replace: str = "nothing"):
        self.folder, self.outside = folder, outside
        self.names = {*names, MANIFEST}
        self.outputs = set(names)
        self.replace = replace
        self.victim = outside / "victim.txt"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> Planter:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=60)
        assert not self._thread.is_alive()

    def _replaces(self, name: str) -> bool:
        return self.replace == "everything" or (self.replace == "outputs" and name in self.outputs)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.sweep()

    def guesses(self) -> set[str]:
        try:
            seen = set(os.listdir(self.folder))
        except OSError:
            seen = set()
        try:
            listed = json.loads((self.folder / MANIFEST).read_text())["temporary"]
            seen |= {name for name in listed if isinstance(name, str) and "/" not in name}
        except (OSError, ValueError, KeyError, TypeError):
            pass
        known = sorted(self.names, key=len, reverse=True)
        prefixes = {s[: -len(k)] for s in seen for k in known if s.endswith(k) and s != k}
        return self.names | seen | {p + k for p in prefixes for k in self.names}

    def sweep(self, only=lambda name: True) -> None:
        for i, name in enumerate(sorted(filter(only, self.guesses()))):
            path = self.folder / name
            target = self.victim if i % 2 == 0 else self.outside / f"created-{name}"
            try:
                if path.is_symlink() or (path.exists() and path.is_dir()):
                    continue
                if path.exists():
                    if not self._replaces(name):
                        continue
                    path.unlink()
                os.symlink(target, path)
            except OSError:
                pass  # the run got there first, or removed it: try again next sweep


def _snapshot(tmp_path: Path, folder: Path) -> dict:
    """Every path under ``tmp_path`` outside ``folder``: its contents and modification time."""
    state = {}
    for root, dirs, files in os.walk(tmp_path):
        if Path(root) == folder:
            dirs[:] = []
            continue
        for name in files:
            path = Path(root) / name
            if not path.is_symlink():
                state[str(path)] = (path.read_bytes(), path.stat().st_mtime_ns)
    return state


@pytest.fixture
def place(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_text(VICTIM)
    folder = tmp_path / "out"
    folder.mkdir()
    return folder, outside


@pytest.fixture(scope="module")
def idata():
    from dpinfer.results import to_inference_data

    draws = {"theta": np.random.default_rng(0).normal(size=200)}
    return to_inference_data(draws, attrs={"method": "demo"}, chains=2)


def _draw(path) -> None:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(2, 2), dpi=40)
    fig.add_subplot().plot([0, 1], [1, 0])
    fig.savefig(path, format="png")


def _after_a_sweep(planter: Planter, writer):
    """``writer``, called right after the attacker's sweep: the last moment before it writes."""

    def write(path):
        planter.sweep()
        writer(path)

    return write


def _every_writer(folder: Path, planter: Planter, idata) -> dict:
    with OutputFolder(folder, info={"example": "links"}, overwrite=True) as out:
        for _ in range(2):  # a report is written twice when its figure fails: names repeat
            out.write_text("summary.csv", "mean\n1\n")
            out.write_text("summary.json", json.dumps({"mean": 1.0}))
            out.write("posterior.nc", _after_a_sweep(planter, lambda p: idata.to_netcdf(str(p))))
            out.write("figure.png", _after_a_sweep(planter, _draw))
        return out.complete()


@pytest.fixture(params=["hard link", "copy"])
def move_in(request, monkeypatch):
    """How a path writer's file enters the folder: a hard link, or a copy (another file system)."""
    if request.param == "copy":

        def no_link(*args, **kwargs):
            raise OSError(errno.EXDEV, "Invalid cross-device link")

        monkeypatch.setattr(os, "link", no_link)
    return request.param


@pytest.mark.parametrize("replace", ["nothing", "outputs", "everything"])
def test_links_planted_during_the_whole_run_never_redirect_a_write(
    tmp_path, place, idata, move_in, replace
):
    folder, outside = place
    before = _snapshot(tmp_path, folder)
    with Planter(folder, outside, NAMES, replace=replace) as planter:
        try:
            outcome = _every_writer(folder, planter, idata)
        except (OutputWriteError, OutputPathError) as err:
            outcome = err
    assert _snapshot(tmp_path, folder) == before, "a file outside the folder changed"
    assert sorted(os.listdir(outside)) == ["victim.txt"], "a file was created outside"
    if replace == "nothing":
        # links at names the run does not hold harm nothing: the run completes intact
        assert isinstance(outcome, dict), outcome
        assert set(read_manifest(folder)["files"]) == set(NAMES)


def test_the_reported_link_at_a_temporary_name_is_never_written_through(tmp_path, place):
    # The reproduction: the attacker reads the manifest once the run has started
    # and plants a link at every name for a.txt it can derive, before the run writes a.txt.
    folder, outside = place
    planter = Planter(folder, outside, ["a.txt"])
    with OutputFolder(folder) as out:
        planter.sweep(only=lambda name: name.endswith("a.txt"))
        out.write_text("a.txt", "the run's output\n")
        out.complete()
    assert (outside / "victim.txt").read_text() == VICTIM
    assert sorted(os.listdir(outside)) == ["victim.txt"]
    assert (folder / "a.txt").read_text() == "the run's output\n"


def test_a_folder_swapped_for_a_link_after_entering_gets_nothing_written_outside(tmp_path, place):
    folder, outside = place
    with OutputFolder(folder) as out:
        folder.rename(tmp_path / "moved")
        os.symlink(outside, folder)
        out.write_text("a.txt", "x")
        out.write("b.png", _draw)
        out.complete()
    assert sorted(os.listdir(outside)) == ["victim.txt"]
    assert (outside / "victim.txt").read_text() == VICTIM
    assert set(read_manifest(tmp_path / "moved")["files"]) == {"a.txt", "b.png"}


def test_temporary_names_are_fresh_and_never_in_the_manifest(tmp_path):
    folder = tmp_path / "out"
    created, seen, manifests = [], [], []

    def manifest() -> str:
        return (folder / MANIFEST).read_text() if (folder / MANIFEST).exists() else ""

    def look(path):
        manifests.append(manifest())
        seen.extend(n for n in os.listdir(folder) if n.startswith(".dpinfer-tmp-"))
        Path(path).write_text("x")

    create = os.open

    def spy(path, flags, *args, **kwargs):
        if kwargs.get("dir_fd") is not None and flags & os.O_CREAT:
            created.append(os.fspath(path))
            manifests.append(manifest())
        return create(path, flags, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(os, "open", spy)
        with OutputFolder(folder) as out:
            for name in ("a.txt", "b.txt", "a.txt"):
                out.write(name, look)
                out.write_text(name, "y")
            out.complete()
    assert created and all(name.startswith(".dpinfer-tmp-") for name in created)
    assert len(set(created)) == len(created), "a temporary name was used twice"
    assert seen and not any(name in text for name in {*created, *seen} for text in manifests)
    assert not any(n.startswith(".dpinfer-tmp-") for n in os.listdir(folder))


# --- a killed run's leftovers are still removed by the next run ----------------------------

KILLED = """
import os, stat, sys
from dpinfer.outputs import OutputFolder

real_fsync = os.fsync

def fsync_then_die(fd):
    real_fsync(fd)
    if stat.S_ISREG(os.fstat(fd).st_mode) and os.fstat(fd).st_size == len(b"second"):
        os._exit(9)  # killed once b.txt's data is on disk, before it takes its name

with OutputFolder(sys.argv[1]) as out:
    out.write_text("a.txt", "first")
    os.fsync = fsync_then_die
    out.write_text("b.txt", "second")
"""


def test_a_killed_runs_temporary_is_removed_by_the_next_run(tmp_path):
    folder = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-c", KILLED, str(folder)], capture_output=True, timeout=300
    )
    assert proc.returncode == 9, proc.stderr.decode()
    # b.txt's temporary, and the space the run had reserved for its next manifest
    leftovers = [n for n in os.listdir(folder) if n.startswith(".dpinfer-tmp-")]
    assert "second" in [(folder / name).read_text() for name in leftovers]
    assert not any(name in (folder / MANIFEST).read_text() for name in leftovers)
    with OutputFolder(folder) as out:  # no overwrite needed: the leftovers are the run's own
        assert not {"a.txt", *leftovers} & set(os.listdir(folder))
        out.write_text("c.txt", "third")
        out.complete()
    assert set(read_manifest(folder)["files"]) == {"c.txt"}
    assert sorted(os.listdir(folder)) == ["c.txt", MANIFEST]


# --- the command line: an attacked write is an error, never a figure "not drawn" ----------


def test_cli_under_a_planting_attacker_writes_nothing_outside(tmp_path, place, capsys):
    folder, outside = place
    before = _snapshot(tmp_path, folder)
    with Planter(folder, outside, CLI_NAMES):
        status = cli.main(["run", *TINY, "--out", str(folder), "--overwrite"])
    captured = capsys.readouterr()
    assert _snapshot(tmp_path, folder) == before
    assert sorted(os.listdir(outside)) == ["victim.txt"]
    assert status == 0, captured.err
    assert "not drawn" not in captured.out + captured.err
    assert set(read_manifest(folder)["files"]) == set(CLI_NAMES)


def test_cli_reports_a_figure_replaced_while_written_as_an_error(tmp_path, place, capsys):
    # The attacker swaps the figure's temporary for a link just before it takes its name.
    folder, outside = place
    rename = os.replace

    def swap_then_rename(src, dst, **kwargs):
        if str(dst).endswith(".png") and kwargs.get("src_dir_fd") is not None:
            os.unlink(src, dir_fd=kwargs["src_dir_fd"])
            os.symlink(outside / "victim.txt", src, dir_fd=kwargs["src_dir_fd"])
        return rename(src, dst, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(os, "replace", swap_then_rename)
        status = cli.main(["run", *TINY, "--out", str(folder)])
    err = capsys.readouterr().err
    assert status == 1
    assert "covid_polynomial.png" in err and str(folder) in err and "not drawn" not in err
    assert (outside / "victim.txt").read_text() == VICTIM
    manifest = json.loads((folder / MANIFEST).read_text())
    assert manifest["state"] == "failed" and "covid_polynomial.png" in manifest["error"]


# --- the output code itself ---------------------------------------------------------------

SOURCES = [
    Path(outputs.__file__).with_name(name)
    for name in ("outputs.py", "_manifest.py", "_folder_files.py")
]
#: Calls that name a file: each must go through a folder descriptor.
PATH_CALLS = {
    "open", "os.open", "os.replace", "os.rename", "os.unlink", "os.remove", "os.rmdir",
    "os.mkdir", "os.makedirs", "os.stat", "os.lstat", "os.link", "os.symlink", "os.truncate",
    "os.chmod", "os.chown", "os.utime", "os.mkfifo", "os.listdir", "os.scandir", "os.access",
    "shutil.rmtree", "shutil.copyfile", "shutil.copy", "shutil.move", "tempfile.mkdtemp",
}  # fmt: skip
#: Path methods that touch a file (``Path.replace`` is left out: ``str.replace`` shares it).
PATH_METHODS = {
    "write_text", "write_bytes", "read_text", "read_bytes", "touch", "unlink", "mkdir",
    "rmdir", "rename", "symlink_to", "hardlink_to", "chmod", "open", "is_symlink", "exists",
    "is_dir", "is_file", "stat", "lstat", "iterdir", "glob",
}  # fmt: skip
#: Functions allowed to use paths, and why.
ALLOWED = {
    "check_output_path": "checks the path the user named before anything is opened",
    "OutputFolder._make_folder": "creates the folder the user named (and its parents)",
    "open_folder": "opens the output folder itself, refusing a link (O_NOFOLLOW)",
    "_open_folder": "turns open_folder's errors into messages about the path",
    "PrivateDir.__init__": "creates the run's private directory (mkdtemp, mode 0700)",
    "PrivateDir.close": "removes the run's private directory",
    "PrivateDir.clear": "removes an entry inside the private directory",
    "_check_private": "checks that no other user can rename the private directory's ancestors",
    "lock_holder": "reads the kernel's table of locks (/proc/locks)",
}


def _called_name(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return f"{func.value.id}.{func.attr}"
    return None


def _path_method(call: ast.Call) -> bool:
    """A call of a path method (``path.write_text()``), not of a module's function."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr not in PATH_METHODS:
        return False
    return not (isinstance(func.value, ast.Name) and func.value.id in {"os", "shutil"})


def _functions(tree: ast.Module):
    """(qualified name, node) of every function, methods as Class.method."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            yield node.name, node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    yield f"{node.name}.{item.name}", item


def _constants() -> dict[str, set[str]]:
    """The ``os.O_*`` names of every module-level flags constant of the output code."""
    names: dict[str, set[str]] = {}
    for source in SOURCES:
        for node in ast.parse(source.read_text()).body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                if isinstance(target, ast.Name):
                    names[target.id] = _flags(node.value, {})
    return names


def _flags(node: ast.AST, constants: dict[str, set[str]]) -> set[str]:
    found = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and sub.attr.startswith("O_"):
            found.add(sub.attr)
        elif isinstance(sub, ast.Name):
            found |= constants.get(sub.id, set())
        elif isinstance(sub, ast.Attribute) and sub.attr in constants:
            found |= constants[sub.attr]
    return found


def _violations(sources) -> list[str]:
    constants = _constants()
    found = []
    for source in sources:
        tree = ast.parse(source.read_text())
        for qualname, function in _functions(tree):
            if qualname in ALLOWED:
                continue
            for call in (n for n in ast.walk(function) if isinstance(n, ast.Call)):
                name = _called_name(call)
                keywords = {k.arg for k in call.keywords}
                where = f"{source.name}:{call.lineno} in {qualname}"
                if _path_method(call):
                    found.append(f"{where}: {ast.unparse(call.func)}() takes a path")
                    continue
                if name not in PATH_CALLS:
                    continue
                if name in {"os.scandir", "os.listdir"}:
                    arg = ast.unparse(call.args[0]) if call.args else ""
                    if not arg.endswith("fd"):
                        found.append(f"{where}: {name}({arg}) lists a path, not a descriptor")
                    continue
                two = name in {"os.replace", "os.rename", "os.link"}
                needed = {"src_dir_fd", "dst_dir_fd"} if two else {"dir_fd"}
                if not needed <= keywords:
                    found.append(f"{where}: {name}() without {sorted(needed - keywords)}")
                if name == "os.open":
                    flags = _flags(call.args[1] if len(call.args) > 1 else call, constants)
                    if "O_NOFOLLOW" not in flags:
                        found.append(f"{where}: os.open without O_NOFOLLOW")
                    if "O_CREAT" in flags and "O_EXCL" not in flags:
                        found.append(f"{where}: os.open creates without O_EXCL")
                    if "O_RDONLY" in flags and not {"O_NONBLOCK", "O_DIRECTORY"} & flags:
                        found.append(f"{where}: os.open reads without O_NONBLOCK")
    return found


def test_the_output_code_reaches_every_file_through_the_folder_descriptor():
    defined = {name for source in SOURCES for name, _ in _functions(ast.parse(source.read_text()))}
    assert set(ALLOWED) <= defined, "an allowed function no longer exists"
    assert _violations(SOURCES) == []


def test_companion_the_static_check_flags_a_path_open(tmp_path):
    # Planted bug: a writer handed a path in the folder, a read that could block on a FIFO,
    # and a rename by path. Each is reported.
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import os\n"
        "def write(folder, name, text):\n"
        "    (folder / name).write_text(text)\n"
        "    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=3)\n"
        "    os.replace(name, 'x')\n"
        "    os.open(name, os.O_WRONLY | os.O_CREAT, dir_fd=3)\n"
    )
    found = "\n".join(_violations([bad]))
    assert "write_text() takes a path" in found
    assert "reads without O_NONBLOCK" in found
    assert "os.replace() without ['dst_dir_fd', 'src_dir_fd']" in found
    assert "without O_NOFOLLOW" in found and "without O_EXCL" in found
