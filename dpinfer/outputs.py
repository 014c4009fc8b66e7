"""Output folders that are never half-written: atomic files, a lock, and a manifest written last.

A run that writes results to a folder (``dpinfer run ... --out DIR``) goes
through :class:`OutputFolder`:

1. the folder is **locked** (``fcntl.flock`` on ``DIR/.dpinfer.lock``): a second
   writer is refused with :class:`OutputBusyError` naming the holder's process
   id, or waits for it with ``wait=True``. The kernel releases the lock when its
   holder exits, however it exits (a killed process holds nothing);
2. ``manifest.json`` is rewritten at once with ``"complete": false``, and the
   files of the previous run (those its manifest lists) and any temporary
   files left by a killed writer are removed, so nothing stale survives next
   to a fresh manifest;
3. every file is written to a temporary name in the same folder, flushed to
   disk and renamed over its final name (:func:`os.replace`, atomic on POSIX):
   a reader sees the old file, no file, or the new complete one, never a
   prefix of it;
4. :meth:`OutputFolder.complete` writes the manifest with ``"complete": true``,
   the size and SHA-256 of every file, the seed, the version and the options:
   **last**, and atomically too.

A reader checks the folder with :func:`read_manifest`: it raises
:class:`IncompleteOutputError` unless the manifest says complete and every
listed file is present with the recorded size and checksum. A run killed at
any moment therefore leaves a folder that a reader recognises as incomplete,
never one that claims to be complete while holding a partial or stale file.

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
from collections.abc import Callable, Mapping
from pathlib import Path

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
_LOCK = ".dpinfer.lock"
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
    }
)
_TEMP_PREFIX = ".dpinfer-tmp-"


class OutputPathError(ValueError):
    """The output path cannot be a folder (empty, an existing file, not creatable)."""


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
        If ``path`` is empty, or it (or one of its parents) is an existing
        non-folder.

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
    if not text.strip():
        raise OutputPathError(f"the output folder must be a non-empty path, got {text!r}")
    folder = Path(text)
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
        The folder, created with its parents if missing.
    info : dict, optional
        JSON-serialisable metadata for the manifest (example, seed, options, ...).
    wait : bool, default False
        Wait for another writer to finish instead of raising :class:`OutputBusyError`.

    Notes
    -----
    Use it as a context manager. Inside, :meth:`write` and :meth:`write_text`
    add files and :meth:`complete` seals the run; leaving the block without
    :meth:`complete` (an exception) records ``"state": "failed"`` with the
    error, and a killed process leaves ``"state": "running"`` behind, with no
    lock held: either way ``"complete": false``.
    """

    def __init__(self, path, *, info: Mapping | None = None, wait: bool = False):
        self.path = check_output_path(path)
        self.info = dict(info or {})
        clash = sorted(set(self.info) & _RESERVED)
        if clash:
            raise ValueError(f"info must not set the manifest's own keys {clash}")
        self.wait = bool(wait)
        self.files: dict[str, dict] = {}
        self._lock_fd: int | None = None
        self._started = _now()
        self._completed = False

    # --- the lock and the stale state ------------------------------------------------

    def __enter__(self) -> OutputFolder:
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise OutputPathError(
                f"cannot create the output folder {str(self.path)!r}: {err.strerror}"
            ) from err
        self._lock_fd = _acquire(self.path / _LOCK, wait=self.wait)
        try:
            previous = _load_json(self.path / MANIFEST)
            self._write_manifest(state="running")
            self._remove_stale(previous)
        except BaseException:
            self._release()
            raise
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if exc is not None and not self._completed:
                self._write_manifest(state="failed", error=f"{exc_type.__name__}: {exc}")
        finally:
            self._release()

    def _release(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing the descriptor releases the flock
            self._lock_fd = None

    def _remove_stale(self, previous: Mapping | None) -> None:
        names = set(previous.get("files", {})) if isinstance(previous, Mapping) else set()
        for name in names:
            if _plain_name(name):
                with contextlib.suppress(FileNotFoundError):
                    (self.path / name).unlink()
        for leftover in self.path.glob(f"{_TEMP_PREFIX}*"):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()

    # --- writing ---------------------------------------------------------------------

    def write(self, name: str, writer: Callable[[Path], object]) -> Path:
        """Write the file ``name`` by calling ``writer(temporary_path)``, then rename it.

        ``writer`` must create the file at the path it is given (which keeps
        ``name``'s extension). Returns the final path.
        """
        self._check_open()
        if not _plain_name(name) or name == MANIFEST:
            raise ValueError(f"name must be a plain file name other than {MANIFEST}, got {name!r}")
        final = self.path / name
        temp = self.path / f"{_TEMP_PREFIX}{os.getpid()}-{secrets.token_hex(4)}-{name}"
        try:
            writer(temp)
            _fsync_file(temp)
            os.replace(temp, final)
        finally:
            with contextlib.suppress(FileNotFoundError):
                temp.unlink()
        _fsync_dir(self.path)
        self.files[name] = {"bytes": final.stat().st_size, "sha256": _sha256(final)}
        self._write_manifest(state="running")
        return final

    def write_text(self, name: str, text: str) -> Path:
        """Write ``text`` (UTF-8) to ``name`` atomically; see :meth:`write`."""
        return self.write(name, lambda p: Path(p).write_text(text, encoding="utf-8"))

    def complete(self) -> dict:
        """Write the final manifest (``"complete": true``) and return it."""
        self._check_open()
        manifest = self._write_manifest(state="complete")
        self._completed = True
        return manifest

    def _check_open(self) -> None:
        if self._lock_fd is None:
            raise RuntimeError("use OutputFolder as a context manager (with ... as folder:)")
        if self._completed:
            raise RuntimeError("this output folder is already complete")

    def _write_manifest(self, *, state: str, error: str | None = None) -> dict:
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
        }
        text = json.dumps(manifest, indent=2, sort_keys=False, default=_json_default)
        temp = self.path / f"{_TEMP_PREFIX}{os.getpid()}-{secrets.token_hex(4)}-{MANIFEST}"
        temp.write_text(text + "\n", encoding="utf-8")
        _fsync_file(temp)
        os.replace(temp, self.path / MANIFEST)
        _fsync_dir(self.path)
        return manifest


def read_manifest(path, *, verify: bool = True) -> dict:
    """Return the manifest of a complete output folder, or raise if the run is not intact.

    Parameters
    ----------
    path : str or path-like
        The output folder.
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
        No manifest, a manifest not marked complete (the run is still
        running, failed, or was killed), or a listed file missing or altered.
    """
    folder = Path(path)
    manifest = _load_json(folder / MANIFEST)
    if manifest is None:
        raise IncompleteOutputError(
            f"{str(folder)!r} has no readable {MANIFEST}: it was not written by a finished "
            "dpinfer run (or the run was interrupted before it started writing)"
        )
    if not manifest.get("complete"):
        state = manifest.get("state", "unknown")
        detail = f": {manifest['error']}" if manifest.get("error") else ""
        raise IncompleteOutputError(
            f"the run in {str(folder)!r} is not complete (state {state!r}{detail}); its files "
            "are partial or stale"
        )
    if verify:
        for name, meta in manifest.get("files", {}).items():
            file = folder / name
            if not file.is_file():
                raise IncompleteOutputError(f"{str(file)!r} is listed in {MANIFEST} but missing")
            if file.stat().st_size != meta.get("bytes") or _sha256(file) != meta.get("sha256"):
                raise IncompleteOutputError(
                    f"{str(file)!r} differs from the file the run wrote (size or checksum)"
                )
    return manifest


# --- internals ---------------------------------------------------------------------


def _acquire(lock_path: Path, *, wait: bool) -> int:
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except OSError as err:
            if err.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "unknown"
            raise OutputBusyError(
                f"{str(lock_path.parent)!r} is being written by another dpinfer run (pid "
                f"{holder}); wait for it to finish (or pass wait=True / --wait), or choose "
                "another output folder"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode("ascii"), 0)
        return fd
    except BaseException:
        os.close(fd)
        raise


def _plain_name(name: str) -> bool:
    return isinstance(name, str) and name not in ("", ".", "..") and Path(name).name == name


def _load_json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _fsync_file(path: Path) -> None:
    with open(path, "rb") as fh:
        os.fsync(fh.fileno())


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def _json_default(value):
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)
