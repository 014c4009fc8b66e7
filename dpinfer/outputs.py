"""Output folders that are never half-written and never touch what is not theirs.

A run that writes results to a folder (``dpinfer run ... --out DIR``) goes
through :class:`OutputFolder`:

1. the folder is opened once, refusing a symbolic link, and every later
   operation goes through that open folder with plain file names and
   ``O_NOFOLLOW``: nothing is opened, removed or renamed through a symbolic
   link or outside the folder;
2. the folder is **locked** (``fcntl.flock`` on the folder itself, so no lock
   file is left behind): a second writer is refused with
   :class:`OutputBusyError` naming the holder's process id, or waits for it with
   ``wait=True``. The kernel releases the lock when its holder exits, however
   it exits (a killed process holds nothing);
3. a folder holding anything that dpinfer did not write (a file that its own
   manifest does not list, a listed file that was changed since, another
   tool's ``manifest.json``, a symbolic link) is refused unless
   ``overwrite=True``, which allows dpinfer's output files to replace
   same-named files and leaves every other file alone;
4. ``manifest.json`` is rewritten at once with ``"complete": false``, and the
   files of the previous run are removed: only those that the folder's own
   dpinfer manifest lists, under plain names, as regular files, so nothing
   stale survives next to a fresh manifest;
5. every file is written to a temporary name (listed in the manifest before it
   is created), flushed to disk and renamed over its final name, atomically: a
   reader sees the old file, no file, or the new complete one, never a prefix;
6. :meth:`OutputFolder.complete` writes the manifest with ``"complete": true``,
   the size and SHA-256 of every file, the seed, the version and the options:
   **last**, and atomically too.

A reader checks the folder with :func:`read_manifest`: it raises
:class:`IncompleteOutputError` unless the manifest is dpinfer's own, says
complete, and every listed file is present with the recorded size and
checksum. A run killed at any moment therefore leaves a folder that a reader
recognises as incomplete, never one that claims to be complete while holding
a partial or stale file.

Examples
--------
>>> import json, tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp()) / "run"
>>> with OutputFolder(folder, info={"example": "demo"}) as out:
...     path = out.write_text("summary.json", json.dumps({"mean": 1.5}))
...     manifest = out.complete()
>>> manifest = read_manifest(folder)
>>> manifest["complete"], sorted(manifest["files"])
(True, ['summary.json'])
"""

from __future__ import annotations

import contextlib
import datetime
import errno
import fcntl
import hashlib
import json
import os
import secrets
import stat
from collections.abc import Callable, Mapping
from pathlib import Path

from . import _validate as check
from ._version import __version__

__all__ = [
    "MANIFEST",
    "IncompleteOutputError",
    "OutputBusyError",
    "OutputFolder",
    "OutputPathError",
    "check_output_path",
    "read_manifest",
]

#: Name of the manifest in an output folder.
MANIFEST = "manifest.json"
#: Identifies the manifest's layout.
FORMAT = "dpinfer-output/1"
# Earlier versions locked a file of this name; it is never opened and never counts as foreign.
_LEGACY_LOCK = ".dpinfer.lock"
_RESERVED = frozenset(
    {
        "format",
        "complete",
        "state",
        "dpinfer_version",
        "pid",
        "started",
        "finished",
        "error",
        "files",
        "temporary",
    }
)
_TEMP_PREFIX = ".dpinfer-tmp-"


class OutputPathError(ValueError):
    """The output path cannot be used (not a folder, a link, or holds files not dpinfer's)."""


class OutputBusyError(RuntimeError):
    """Another process holds the folder's lock."""


class IncompleteOutputError(RuntimeError):
    """The folder holds no complete, intact run (interrupted, failed, or still running)."""


def check_output_path(path) -> Path:
    """Return ``path`` as a :class:`~pathlib.Path`, or raise unless it can be an output folder.

    Parameters
    ----------
    path : str or path-like
        The folder; it may not exist yet.

    Raises
    ------
    OutputPathError
        If ``path`` is empty, a symbolic link, or it (or one of its parents) is
        an existing non-folder.

    Examples
    --------
    >>> check_output_path("")
    Traceback (most recent call last):
    ...
    dpinfer.outputs.OutputPathError: the output folder must be a non-empty path, got ''
    """
    if not isinstance(path, str | os.PathLike):
        raise TypeError(f"the output folder must be a path, got {type(path).__name__}: {path!r}")
    text = os.fspath(path)
    if not isinstance(text, str):
        raise TypeError(f"the output folder must be a text path, got {text!r}")
    if not text.strip():
        raise OutputPathError(f"the output folder must be a non-empty path, got {text!r}")
    folder = Path(text)
    if folder.is_symlink():
        raise OutputPathError(_link_message(text))
    for candidate in (folder, *folder.parents):
        if candidate.exists() and not candidate.is_dir():
            raise OutputPathError(
                f"the output folder {text!r} cannot be created: {str(candidate)!r} is an "
                "existing file, not a folder"
            )
        if candidate.exists():
            break
    return folder


class OutputFolder:
    """A locked output folder whose files appear atomically and whose manifest comes last.

    Parameters
    ----------
    path : str or path-like
        The folder, created with its parents if missing. It must not be a
        symbolic link.
    info : dict, optional
        JSON-serialisable metadata for the manifest (example, seed, options, ...).
    wait : bool, default False
        Wait for another writer to finish instead of raising :class:`OutputBusyError`.
    overwrite : bool, default False
        Use a folder that holds files dpinfer did not write (or changed since):
        the files this run writes replace same-named ones; no other file is
        touched. Without it such a folder is refused with
        :class:`OutputPathError` naming the files.

    Notes
    -----
    Use it as a context manager. Inside, :meth:`write` and :meth:`write_text`
    add files and :meth:`complete` seals the run; leaving the block without
    :meth:`complete` (an exception) records ``"state": "failed"`` with the
    error, and a killed process leaves ``"state": "running"`` behind, with no
    lock held: either way ``"complete": false``.

    Files are only ever removed when the folder's own manifest (format
    ``dpinfer-output/1``, read without following links) lists them under plain
    names and they are still the regular files that dpinfer wrote; temporary
    files are listed in the manifest before they are created, so a killed
    run's leftovers are removed by the next run.
    """

    def __init__(self, path, *, info: Mapping | None = None, wait=False, overwrite=False):
        self.path = check_output_path(path)
        self.info = check.mapping("info", info)
        clash = sorted(set(self.info) & _RESERVED)
        if clash:
            raise ValueError(f"info must not set the manifest's own keys {clash}")
        self.wait = check.flag("wait", wait)
        self.overwrite = check.flag("overwrite", overwrite)
        self.files: dict[str, dict] = {}
        self._dir_fd: int | None = None
        self._token = secrets.token_hex(8)
        self._temporary: list[str] = [self._temp_name(MANIFEST)]
        self._started = _now()
        self._completed = False

    # --- the lock and the previous run ------------------------------------------------

    def __enter__(self) -> OutputFolder:
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise OutputPathError(
                f"cannot create the output folder {str(self.path)!r}: {err.strerror}"
            ) from err
        self._dir_fd = _open_folder(self.path)
        try:
            _lock(self._dir_fd, self.path, wait=self.wait)
            previous = _own_manifest(self._dir_fd)
            owned = _owned_files(self._dir_fd, previous)
            foreign = sorted(set(_entries(self._dir_fd)) - set(owned) - {_LEGACY_LOCK})
            if foreign and not self.overwrite:
                raise OutputPathError(_foreign_message(self.path, foreign))
            # the previous run's files stay listed (as running) until they are gone
            stale = [name for name in owned if name != MANIFEST]
            self.files = {n: previous["files"][n] for n in stale if n in previous["files"]}
            self._write_manifest(state="running", extra=stale)
            for name in stale:
                _unlink_regular(self._dir_fd, name)
            self.files = {}
            self._write_manifest(state="running")
        except BaseException:
            self._release()
            raise
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if exc is not None and not self._completed and self._dir_fd is not None:
                self._write_manifest(state="failed", error=f"{exc_type.__name__}: {exc}")
        finally:
            self._release()

    def _release(self) -> None:
        if self._dir_fd is not None:
            os.close(self._dir_fd)  # closing the descriptor releases the flock
            self._dir_fd = None

    # --- writing ---------------------------------------------------------------------

    def write(self, name: str, writer: Callable[[Path], object]) -> Path:
        """Write the file ``name`` by calling ``writer(temporary_path)``, then rename it.

        ``writer`` must create a regular file at the path it is given (which
        keeps ``name``'s extension); a symbolic link there is refused. Returns
        the final path.
        """
        self._check_open()
        if not _plain_name(name) or name == MANIFEST or name.startswith(_TEMP_PREFIX):
            raise ValueError(
                f"name must be a plain file name other than {MANIFEST} and not starting with "
                f"{_TEMP_PREFIX!r}, got {name!r}"
            )
        if not callable(writer):
            raise TypeError(f"writer must be a callable writer(path), got {type(writer).__name__}")
        temp = self._temp_name(name)
        self._temporary.append(temp)
        self._write_manifest(state="running")  # the temporary is listed before it exists
        try:
            writer(self.path / temp)
            # listed with its checksum before it takes its name, so a run killed in between
            # leaves a file that the next run recognises as dpinfer's
            self.files[name] = _seal(self._dir_fd, temp, label=name)
            self._write_manifest(state="running")
            os.replace(temp, name, src_dir_fd=self._dir_fd, dst_dir_fd=self._dir_fd)
        except BaseException:
            self.files.pop(name, None)
            raise
        finally:
            _unlink_entry(self._dir_fd, temp)  # ours: whatever the writer left there
            self._temporary.remove(temp)
        os.fsync(self._dir_fd)
        return self.path / name

    def write_text(self, name: str, text: str) -> Path:
        """Write ``text`` (UTF-8) to ``name`` atomically; see :meth:`write`."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        return self.write(name, lambda p: Path(p).write_text(text, encoding="utf-8"))

    def complete(self) -> dict:
        """Write the final manifest (``"complete": true``) and return it."""
        self._check_open()
        manifest = self._write_manifest(state="complete")
        self._completed = True
        return manifest

    def _check_open(self) -> None:
        if self._dir_fd is None:
            raise RuntimeError("use OutputFolder as a context manager (with ... as folder:)")
        if self._completed:
            raise RuntimeError("this output folder is already complete")

    def _temp_name(self, name: str) -> str:
        return f"{_TEMP_PREFIX}{self._token}-{name}"

    def _write_manifest(self, *, state: str, error: str | None = None, extra=()) -> dict:
        manifest = {
            "format": FORMAT,
            "complete": state == "complete",
            "state": state,
            "dpinfer_version": __version__,
            "pid": os.getpid(),
            "started": self._started,
            **({"finished": _now()} if state != "running" else {}),
            **({"error": error} if error else {}),
            **self.info,
            "files": dict(self.files),
            "temporary": sorted({*self._temporary, *(n for n in extra if n not in self.files)}),
        }
        text = json.dumps(manifest, indent=2, sort_keys=False, default=_json_default) + "\n"
        temp = self._temporary[0]
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
        fd = os.open(temp, flags | os.O_NOFOLLOW, 0o644, dir_fd=self._dir_fd)
        try:
            with os.fdopen(fd, "wb", closefd=False) as fh:
                fh.write(text.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, MANIFEST, src_dir_fd=self._dir_fd, dst_dir_fd=self._dir_fd)
        os.fsync(self._dir_fd)
        return manifest


def read_manifest(path, *, verify=True) -> dict:
    """Return the manifest of a complete output folder, or raise if the run is not intact.

    Parameters
    ----------
    path : str or path-like
        The output folder (not a symbolic link).
    verify : bool, default True
        Check the size and SHA-256 of every listed file.

    Returns
    -------
    dict
        The manifest: ``complete``, ``files`` (name -> bytes, sha256),
        ``dpinfer_version``, ``started``, ``finished`` and the writer's metadata
        (for ``dpinfer run``: ``example``, ``seed``, ``options``).

    Raises
    ------
    IncompleteOutputError
        No manifest, one that is not dpinfer's own (another format, a symbolic
        link, a listed name that is not a plain file name), a manifest not
        marked complete (the run is still running, failed, or was killed), or
        a listed file missing, replaced by a link, or altered.
    """
    verify = check.flag("verify", verify)
    folder = check_output_path(path)
    try:
        dir_fd = _open_folder(folder)
    except (OutputPathError, FileNotFoundError) as err:
        raise IncompleteOutputError(f"{str(folder)!r} is not an output folder: {err}") from None
    try:
        manifest = _own_manifest(dir_fd)
        if manifest is None:
            raise IncompleteOutputError(
                f"{str(folder)!r} has no {MANIFEST} of dpinfer's own (format {FORMAT!r}, a "
                "regular file): it was not written by a finished dpinfer run, or the run was "
                "interrupted before it started writing"
            )
        if not manifest.get("complete"):
            state = manifest.get("state", "unknown")
            detail = f": {manifest['error']}" if manifest.get("error") else ""
            raise IncompleteOutputError(
                f"the run in {str(folder)!r} is not complete (state {state!r}{detail}); its "
                "files are partial or stale"
            )
        if verify:
            for name, meta in manifest["files"].items():
                found = _record(dir_fd, name)
                if found is None:
                    raise IncompleteOutputError(
                        f"{str(folder / name)!r} is listed in {MANIFEST} but missing (or not a "
                        "regular file)"
                    )
                if found != {"bytes": meta.get("bytes"), "sha256": meta.get("sha256")}:
                    raise IncompleteOutputError(
                        f"{str(folder / name)!r} differs from the file the run wrote (size or "
                        "checksum)"
                    )
        return manifest
    finally:
        os.close(dir_fd)


# --- internals: everything below works through an open folder, never through a link ------


def _open_folder(path: Path) -> int:
    try:
        return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError as err:
        if err.errno == errno.ELOOP or path.is_symlink():
            raise OutputPathError(_link_message(str(path))) from None
        if err.errno == errno.ENOTDIR:
            raise OutputPathError(f"{str(path)!r} is not a folder") from None
        raise


def _lock(dir_fd: int, path: Path, *, wait: bool) -> None:
    try:
        fcntl.flock(dir_fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except OSError as err:
        if err.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise
        manifest = _own_manifest(dir_fd) or {}
        holder = manifest.get("pid") if manifest.get("state") == "running" else None
        raise OutputBusyError(
            f"{str(path)!r} is being written by another dpinfer run (pid "
            f"{holder if isinstance(holder, int) else 'unknown'}); wait for it to finish (or "
            "pass wait=True / --wait), or choose another output folder"
        ) from None


def _own_manifest(dir_fd: int) -> dict | None:
    """Return the folder's manifest if it is dpinfer's own and well formed, else None."""
    data = _read_regular(dir_fd, MANIFEST)
    if data is None:
        return None
    try:
        manifest = json.loads(data.decode("utf-8"))
    except ValueError:
        return None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        return None
    files, temporary = manifest.get("files"), manifest.get("temporary", [])
    if not isinstance(files, dict) or not isinstance(temporary, list):
        return None
    if not all(_plain_name(n) and n != MANIFEST and isinstance(m, dict) for n, m in files.items()):
        return None
    if not all(_plain_name(n) and n.startswith(_TEMP_PREFIX) for n in temporary):
        return None
    return manifest


def _owned_files(dir_fd: int, manifest: dict | None) -> list[str]:
    """Names in the folder that dpinfer wrote: its manifest, and what the manifest lists intact."""
    if manifest is None:
        return []
    owned = [MANIFEST]
    for name, meta in manifest["files"].items():
        if _record(dir_fd, name) == {"bytes": meta.get("bytes"), "sha256": meta.get("sha256")}:
            owned.append(name)
    owned += [name for name in manifest["temporary"] if _is_regular(dir_fd, name)]
    return owned


def _entries(dir_fd: int) -> list[str]:
    with os.scandir(dir_fd) as it:
        return [entry.name for entry in it]


def _is_regular(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except FileNotFoundError:
        return False


def _unlink_regular(dir_fd: int, name: str) -> None:
    if _is_regular(dir_fd, name):
        _unlink_entry(dir_fd, name)


def _unlink_entry(dir_fd: int, name: str) -> None:
    """Remove the entry ``name`` itself (a link is removed, never followed); not a folder."""
    with contextlib.suppress(FileNotFoundError, IsADirectoryError, PermissionError):
        os.unlink(name, dir_fd=dir_fd)


def _open_regular(dir_fd: int, name: str) -> int | None:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW, dir_fd=dir_fd)
    except OSError as err:
        if err.errno in (errno.ENOENT, errno.ELOOP, errno.EISDIR, errno.ENXIO):
            return None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return fd


def _read_regular(dir_fd: int, name: str) -> bytes | None:
    fd = _open_regular(dir_fd, name)
    if fd is None:
        return None
    with os.fdopen(fd, "rb") as fh:
        return fh.read()


def _record(dir_fd: int, name: str) -> dict | None:
    """Size and SHA-256 of the regular file ``name``, or None if there is none."""
    fd = _open_regular(dir_fd, name)
    if fd is None:
        return None
    digest, size = hashlib.sha256(), 0
    with os.fdopen(fd, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
            size += len(block)
    return {"bytes": size, "sha256": digest.hexdigest()}


def _seal(dir_fd: int, temp: str, *, label: str) -> dict:
    """Flush the writer's temporary file to disk and return its record."""
    fd = _open_regular(dir_fd, temp)
    if fd is None:
        raise OutputPathError(
            f"the writer of {label!r} did not create a regular file at the path it was given"
        )
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return _record(dir_fd, temp)


def _plain_name(name) -> bool:
    return (
        isinstance(name, str)
        and name not in ("", ".", "..")
        and "/" not in name
        and "\0" not in name
    )


def _link_message(text: str) -> str:
    return (
        f"the output folder {text!r} is a symbolic link; dpinfer writes only into a real "
        "folder: pass the folder it points to, or another path"
    )


def _foreign_message(path: Path, names: list[str]) -> str:
    shown = ", ".join(repr(n) for n in names[:5]) + (" ..." if len(names) > 5 else "")
    return (
        f"the output folder {str(path)!r} holds {len(names)} file(s) that dpinfer did not write "
        f"(or that changed since it wrote them): {shown}. Choose a new or empty folder, or pass "
        "overwrite=True (--overwrite on the command line) to write dpinfer's files into it; "
        "files of other names are never touched"
    )


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def _json_default(value):
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)
