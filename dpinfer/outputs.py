"""Output folders that are never half-written and never touch what is not theirs.

A run that writes results to a folder (``dpinfer run ... --out DIR``) goes
through :class:`OutputFolder`:

1. the folder is opened once, refusing a symbolic link, and every later
   operation goes through that open folder with plain file names and
   ``O_NOFOLLOW``: nothing is opened, removed or renamed through a symbolic
   link or outside the folder, even if the folder is renamed or replaced by a
   link while the run writes;
2. the folder is **locked** (``fcntl.flock`` on the folder itself, so no lock
   file is left behind): a second writer is refused with
   :class:`OutputBusyError` naming the holder's process id, or waits for it with
   ``wait=True``, up to ``wait_limit`` seconds (:data:`WAIT_LIMIT` by default).
   The kernel releases the lock when its holder exits, however it exits (a
   killed process holds nothing);
3. a folder holding anything that dpinfer did not write (a file that its own
   manifest does not list, a listed file that was changed since, another
   tool's ``manifest.json``, a symbolic link) is refused unless
   ``overwrite=True``, which allows dpinfer's output files to replace
   same-named files and leaves every other file alone;
4. ``manifest.json`` is rewritten at once with ``"complete": false``, and the
   files of the previous run are removed: only those that the folder's own
   dpinfer manifest lists, under plain names, as regular files, so nothing
   stale survives next to a fresh manifest;
5. every file is created (``O_EXCL``) under a fresh random temporary name,
   flushed to disk and renamed over its final name, atomically: a reader sees
   the old file, no file, or the new complete one, never a prefix. The
   manifest lists each temporary before it is created, by the SHA-256 of its
   name: a killed run's leftovers are recognised and removed by the next run,
   and nobody can learn a name in advance to plant a link there. A writer that
   needs a path (netCDF, matplotlib) writes in a private folder of the run's
   own (mode 0700, in the system's temporary folder) and its file is moved in;
6. :meth:`OutputFolder.complete` writes the manifest with ``"complete": true``,
   the size and SHA-256 of every file, the seed, the version and the options:
   **last**, and atomically too.

A reader checks the folder with :func:`read_manifest`: it raises
:class:`IncompleteOutputError` unless the manifest is dpinfer's own, says
complete, and every listed file is present with the recorded size and
checksum. A run killed at any moment therefore leaves a folder that a reader
recognises as incomplete, never one that claims to be complete while holding
a partial or stale file. Nothing in a folder is opened so that it could block
(a FIFO), and a manifest is read up to :data:`MAX_MANIFEST_BYTES`.

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
import errno
import functools
import hashlib
import os
import stat
from collections.abc import Callable, Mapping
from pathlib import Path

from . import _folder_files as files
from . import _manifest as manifests
from . import _validate as check
from ._manifest import FORMAT, MANIFEST, MAX_MANIFEST_BYTES

__all__ = [
    "MANIFEST",
    "MAX_MANIFEST_BYTES",
    "WAIT_LIMIT",
    "IncompleteOutputError",
    "OutputBusyError",
    "OutputFolder",
    "OutputPathError",
    "OutputWriteError",
    "check_output_path",
    "read_manifest",
]

#: Seconds that ``wait=True`` (``--wait``) waits for another writer by default.
WAIT_LIMIT = 600.0
# Bytes reserved for the next manifest beyond twice the last one's size.
_SPARE = 1 << 16
# Earlier versions locked a file of this name; it is never opened and never counts as foreign.
_LEGACY_LOCK = ".dpinfer.lock"
_TEMP_PREFIX = files.TEMP_PREFIX
_NOT_OPEN = "use OutputFolder as a context manager (with ... as folder:)"


class OutputPathError(ValueError):
    """The output path cannot be used (not a folder, a link, or holds files not dpinfer's)."""


class OutputBusyError(RuntimeError):
    """Another process holds the folder's lock."""


class IncompleteOutputError(RuntimeError):
    """The folder holds no complete, intact run (interrupted, failed, or still running)."""


class OutputWriteError(OSError):
    """A file could not be written into the output folder (disk full, no permission, replaced).

    The message names the folder and the file; ``errno`` is the system's error code,
    where there is one.
    """


def check_output_path(path: str | os.PathLike) -> Path:
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
    wait_limit : float, default :data:`WAIT_LIMIT` (600)
        With ``wait=True``, the seconds to wait before raising :class:`OutputBusyError`
        (a process that only reads the folder can hold its lock forever).
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
    lock held: either way ``"complete": false``. A file that cannot be written
    into the folder (disk full, no permission, an entry replaced by another
    process while it was written) raises :class:`OutputWriteError`.

    Files are only ever removed when the folder's own manifest (format
    ``dpinfer-output/1``, read without following links) lists them under plain
    names and they are still the regular files that dpinfer wrote; temporary
    files are listed in the manifest (by the SHA-256 of their random names)
    before they are created, so a killed run's leftovers are removed by the
    next run.
    """

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        info: Mapping | None = None,
        wait: bool = False,
        wait_limit: float = WAIT_LIMIT,
        overwrite: bool = False,
    ) -> None:
        self.path = check_output_path(path)
        self.info = check.mapping("info", info)
        clash = sorted(set(self.info) & manifests.KEYS)
        if clash:
            raise ValueError(f"info must not set the manifest's own keys {clash}")
        self.wait = check.flag("wait", wait)
        self.wait_limit = check.positive_finite("wait_limit", wait_limit)
        self.overwrite = check.flag("overwrite", overwrite)
        self.files: dict[str, dict] = {}
        self._dir_fd: int | None = None
        self._private: files.PrivateDir | None = None
        # the name the next manifest is written under, listed by the manifest before it
        self._manifest_temp = files.temp_name()
        self._pending: set[str] = set()  # temporaries that may exist besides it
        self._spare: int | None = None  # that name, created with room for the next manifest
        self._started = manifests.now()
        self._completed = False

    # --- the lock and the previous run ------------------------------------------------

    def __enter__(self) -> OutputFolder:
        self._make_folder()
        self._dir_fd = _open_folder(self.path)
        try:
            _lock(self._dir_fd, self.path, wait=self.wait, limit=self.wait_limit)
            self._check_room(MANIFEST)
            previous, _ = manifests.load(self._dir_fd)
            owned = manifests.owned_files(self._dir_fd, previous)
            foreign = sorted(set(files.entries(self._dir_fd)) - set(owned) - {_LEGACY_LOCK})
            if foreign and not self.overwrite:
                raise OutputPathError(_foreign_message(self.path, foreign))
            # the previous run's files stay listed (as running) until they are gone
            stale = [name for name in owned if name != MANIFEST]
            listed = previous["files"] if previous is not None else {}
            self.files = {n: listed[n] for n in stale if n in listed}
            self._pending = {n for n in stale if n not in self.files}
            self._write_manifest(state="running")
            for name in stale:
                _unlink_regular(self._dir_fd, name)
            self.files, self._pending = {}, set()
            self._write_manifest(state="running")
        except BaseException:
            self._release()
            raise
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if exc is not None and not self._completed and self._dir_fd is not None:
                try:
                    self._write_manifest(state="failed", error=f"{exc_type.__name__}: {exc}")
                except Exception as err:  # the disk is still full, ...: keep the first error
                    exc.add_note(f"{MANIFEST} could not be marked failed either ({err})")
        finally:
            self._release()

    def _make_folder(self) -> None:
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise OutputPathError(
                f"cannot create the output folder {str(self.path)!r}: {err.strerror}"
            ) from None

    def _release(self) -> None:
        if self._spare is not None:
            os.close(self._spare)
            files.unlink_entry(self._fd, self._manifest_temp)
            self._spare = None
        if self._private is not None:
            self._private.close()
            self._private = None
        if self._dir_fd is not None:
            os.close(self._dir_fd)  # closing the descriptor releases the flock
            self._dir_fd = None

    # --- writing ---------------------------------------------------------------------

    def write(self, name: str, writer: Callable[[Path], object]) -> Path:
        """Write the file ``name`` by calling ``writer(path)``, then move it in atomically.

        ``writer`` must create a regular file at the path it is given (a path in
        a private folder of the run's own, ending with ``name``); anything else
        there (a symbolic link) is refused with :class:`OutputPathError`.
        Returns the final path.
        """
        self._check_writable(name)
        if not callable(writer):
            raise TypeError(f"writer must be a callable writer(path), got {type(writer).__name__}")
        with self._writing(name):
            if self._private is None:
                self._private = files.PrivateDir()
        private = self._private
        private.clear(name)
        try:
            writer(private.path / name)
            fd = private.take(name)
            if fd is None:
                raise OutputPathError(
                    f"the writer of {name!r} did not create a regular file at the path it was "
                    "given"
                )
            try:
                move = functools.partial(private.move, name, fd, self._fd)
                self._commit(name, files.digest(fd), move)
            finally:
                os.close(fd)
        finally:
            private.clear(name)
        return self.path / name

    def write_text(self, name: str, text: str) -> Path:
        """Write ``text`` (UTF-8) to ``name`` atomically; see :meth:`write`."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        self._check_writable(name)
        data = text.encode("utf-8")
        record = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        self._commit(name, record, lambda temp: files.write_new(self._fd, temp, data))
        return self.path / name

    def complete(self) -> dict:
        """Write the final manifest (``"complete": true``) and return it."""
        self._check_open()
        manifest = self._write_manifest(state="complete")
        self._completed = True
        return manifest

    @property
    def _fd(self) -> int:
        """The descriptor of the folder, open from ``__enter__`` to ``__exit__``."""
        if self._dir_fd is None:
            raise RuntimeError(_NOT_OPEN)
        return self._dir_fd

    def _check_open(self) -> None:
        if self._dir_fd is None:
            raise RuntimeError(_NOT_OPEN)
        if self._completed:
            raise RuntimeError("this output folder is already complete")

    def _check_writable(self, name) -> None:
        self._check_open()
        if not manifests.plain_name(name) or name == MANIFEST or name.startswith(_TEMP_PREFIX):
            raise ValueError(
                f"name must be a plain file name other than {MANIFEST} and not starting with "
                f"{_TEMP_PREFIX!r}, got {name!r}"
            )
        self._check_room(name)

    def _check_room(self, name: str) -> None:
        if files.kind(self._fd, name) == stat.S_IFDIR:
            raise OutputWriteError(
                errno.EISDIR,
                f"cannot write {name!r} in the output folder {str(self.path)!r}: a folder of "
                "that name is in the way, and dpinfer never removes folders; move it away, or "
                "choose another output folder",
            )

    def _commit(self, name: str, record: dict, put: Callable[[str], int]) -> None:
        """Create the file under a new temporary name with ``put``, then rename it to ``name``."""
        temp, before = files.temp_name(), self.files.get(name)
        self._pending.add(temp)
        try:
            self._write_manifest(state="running")  # the temporary is listed before it exists
            with self._writing(name):
                fd = put(temp)
                try:
                    # listed with its checksum before it takes its name, so a run killed in
                    # between leaves a file that the next run recognises as dpinfer's
                    self.files[name] = record
                    self._write_manifest(state="running")
                except BaseException:
                    os.close(fd)
                    files.unlink_entry(self._fd, temp)
                    raise
                files.install(self._fd, temp, name, fd)
        except BaseException:
            self.files.pop(name, None)
            if before is not None:
                self.files[name] = before
            raise
        finally:
            self._pending.discard(temp)

    @contextlib.contextmanager
    def _writing(self, name: str):
        """Turn a system error while writing ``name`` into one that names the folder."""
        try:
            yield
        except OutputWriteError:
            raise
        except OSError as err:
            reason = err.strerror or str(err)
            message = f"cannot write {name!r} in the output folder {str(self.path)!r}: {reason}"
            raise OutputWriteError(*((err.errno, message) if err.errno else (message,))) from None

    def _write_manifest(self, *, state: str, error: str | None = None) -> dict:
        temp, self._manifest_temp = self._manifest_temp, files.temp_name()
        listed = {self._manifest_temp, *self._pending}
        manifest, data = manifests.compose(
            state=state,
            started=self._started,
            error=error,
            info=self.info,
            records=self.files,
            temporary=listed,
        )
        with self._writing(MANIFEST):
            # written into the space reserved after the last manifest: a full disk can still
            # record that the run failed
            fd, self._spare = self._spare, None
            if fd is None:
                fd = files.create(self._fd, temp)
            files.install(self._fd, temp, MANIFEST, fd, data=data)
        self._spare = files.reserve(self._fd, self._manifest_temp, 2 * len(data) + _SPARE)
        return manifest


def read_manifest(path: str | os.PathLike, *, verify: bool = True) -> dict:
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
        link, not a regular file, larger than :data:`MAX_MANIFEST_BYTES`, a listed
        name that is not a plain file name), a manifest not marked complete (the
        run is still running, failed, or was killed), or a listed file missing,
        replaced by a link or anything but a regular file, or altered.
    """
    verify = check.flag("verify", verify)
    folder = check_output_path(path)
    try:
        dir_fd = _open_folder(folder)
    except (OutputPathError, FileNotFoundError) as err:
        raise IncompleteOutputError(f"{str(folder)!r} is not an output folder: {err}") from None
    try:
        manifest, why = manifests.load(dir_fd)
        if manifest is None:
            raise IncompleteOutputError(
                f"{str(folder)!r} has no {MANIFEST} of dpinfer's own (format {FORMAT!r}, a "
                f"regular file{why or ''}): it was not written by a finished dpinfer run, or "
                "the run was interrupted before it started writing"
            )
        if not manifest.get("complete"):
            state = manifest.get("state", "unknown")
            detail = f": {manifest['error']}" if manifest.get("error") else ""
            raise IncompleteOutputError(
                f"the run in {str(folder)!r} is not complete (state {state!r}{detail}); its "
                "files are partial or stale"
            )
        for name, meta in manifest["files"].items() if verify else ():
            if files.kind(dir_fd, name) != stat.S_IFREG:
                raise IncompleteOutputError(
                    f"{str(folder / name)!r} is listed in {MANIFEST} but missing (or not a "
                    "regular file)"
                )
            if not files.matches(dir_fd, name, meta):
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
        return files.open_folder(path)
    except OSError as err:
        if err.errno == errno.ELOOP or path.is_symlink():
            raise OutputPathError(_link_message(str(path))) from None
        if err.errno == errno.ENOTDIR:
            raise OutputPathError(f"{str(path)!r} is not a folder") from None
        raise


def _lock(dir_fd: int, path: Path, *, wait: bool, limit: float) -> None:
    if files.lock(dir_fd, wait=wait, limit=limit):
        return
    running = manifests.running_pid(manifests.load(dir_fd)[0])
    holder = files.lock_holder(dir_fd)
    if running is not None and holder in (None, running):
        who = f"is being written by another dpinfer run (pid {running})"
    elif holder is not None:
        who = f"is locked by a process (pid {holder}) that holds the folder's lock"
    else:
        who = "is locked by a process that holds the folder's lock"
    waited = f" (waited {limit:g} s)" if wait else ""
    raise OutputBusyError(
        f"{str(path)!r} {who}{waited}; wait for it to finish (wait=True with wait_limit in "
        "seconds, --wait [SECONDS] on the command line), or choose another output folder"
    )


def _unlink_regular(dir_fd: int, name: str) -> None:
    if files.kind(dir_fd, name) == stat.S_IFREG:
        files.unlink_entry(dir_fd, name)


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
