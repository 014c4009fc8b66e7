"""The files of an output folder, reached only through the folder's open descriptor.

Every function here takes the open folder (``dir_fd``) and a plain name, so a folder
renamed, or replaced by a symbolic link, after it was opened changes nothing, and
``O_NOFOLLOW`` refuses a link at the name itself. Files are created with ``O_EXCL``
under fresh random names (:func:`temp_name`), so a planted entry makes a write fail,
never land elsewhere; they are read with ``O_NONBLOCK`` after a regular-file check
(a FIFO or a device is never opened to wait on) and up to a bound.

A writer that needs a path (netCDF, matplotlib) writes inside :class:`PrivateDir`, a
folder of the run's own (mode 0700) in the system's temporary folder, each of whose
ancestors only its owner or root can change, or is sticky (``/tmp``): nobody else can
rename it and put a link in its place. Its file is then moved into the output folder
through both descriptors: a hard link where the two share a file system, a copy
otherwise.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import secrets
import shutil
import stat
import tempfile
import time
from pathlib import Path

#: Opens a folder; a link is refused.
FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
#: Opens a file for reading; a link is refused and a FIFO does not block.
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
#: Creates a new file; an existing entry (a planted link among them) is refused.
CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
#: The names of dpinfer's temporary files start with this.
TEMP_PREFIX = ".dpinfer-tmp-"
_BLOCK = 1 << 20
_BUSY = {errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES}
# a hard link is refused across file systems, and by some file systems: copy instead
_NO_LINK = {errno.EXDEV, errno.EPERM, errno.EOPNOTSUPP, errno.EMLINK, errno.ENOSYS}
_NOT_THERE = {errno.ENOENT, errno.ELOOP, errno.EISDIR, errno.ENXIO, errno.ENOTDIR}


class TooLargeError(ValueError):
    """A file is larger than what dpinfer reads of it."""

    def __init__(self, size: int, limit: int):
        super().__init__(f"{size:,} bytes, more than the {limit:,} bytes allowed")
        self.size, self.limit = size, limit


class ReplacedError(OSError):
    """A file was replaced by another entry while it was being written."""


def open_folder(path) -> int:
    """Open the folder ``path`` itself, refusing a symbolic link."""
    return os.open(path, FOLDER_FLAGS)


def entries(dir_fd: int) -> list[str]:
    """Return the names in the open folder."""
    with os.scandir(dir_fd) as it:
        return [entry.name for entry in it]


def kind(dir_fd: int, name: str) -> int | None:
    """Return the type of the entry ``name`` itself (``S_IFREG``, ...; a link's own), or None."""
    try:
        return stat.S_IFMT(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return None


def open_regular(dir_fd: int, name: str) -> int | None:
    """Open the regular file ``name`` for reading; None if it is anything else."""
    if kind(dir_fd, name) != stat.S_IFREG:
        return None
    try:
        fd = os.open(name, READ_FLAGS, dir_fd=dir_fd)
    except OSError as err:
        if err.errno in _NOT_THERE:
            return None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped since it was looked at
        os.close(fd)
        return None
    return fd


def read_regular(dir_fd: int, name: str, *, limit: int) -> bytes | None:
    """Return the regular file ``name``'s bytes, or None; :class:`TooLargeError` past ``limit``."""
    fd = open_regular(dir_fd, name)
    if fd is None:
        return None
    try:
        size = os.fstat(fd).st_size
        if size > limit:
            raise TooLargeError(size, limit)
        data = b"".join(_blocks(fd, stop=limit + 1))
        if len(data) > limit:  # it grew since
            raise TooLargeError(len(data), limit)
        return data
    finally:
        os.close(fd)


def digest(fd: int) -> dict:
    """Return the size and SHA-256 of the open file, from its start."""
    sha, size = hashlib.sha256(), 0
    for block in _blocks(fd):
        sha.update(block)
        size += len(block)
    return {"bytes": size, "sha256": sha.hexdigest()}


def matches(dir_fd: int, name: str, record) -> bool:
    """Tell whether ``name`` is a regular file of the recorded size and SHA-256."""
    fd = open_regular(dir_fd, name)
    if fd is None:
        return False
    try:
        if not isinstance(record, dict) or os.fstat(fd).st_size != record.get("bytes"):
            return False
        return digest(fd) == {"bytes": record.get("bytes"), "sha256": record.get("sha256")}
    finally:
        os.close(fd)


def temp_name() -> str:
    """Return a fresh temporary name: 128 random bits, derived from nothing written down."""
    return f"{TEMP_PREFIX}{secrets.token_hex(16)}"


def temp_digest(name: str) -> str:
    """Return what a manifest lists of a temporary: its name's SHA-256, which hides the name."""
    return hashlib.sha256(name.encode("utf-8")).hexdigest()


def create(dir_fd: int, name: str) -> int:
    """Create the new file ``name`` (``O_EXCL``: any existing entry is refused) for writing."""
    return os.open(name, CREATE_FLAGS, 0o644, dir_fd=dir_fd)


def write_new(dir_fd: int, name: str, data: bytes) -> int:
    """Create ``name`` (``O_EXCL``), write ``data`` and flush it to disk; return its descriptor."""
    fd = create(dir_fd, name)
    try:
        rewrite(fd, data)
    except BaseException:
        os.close(fd)
        unlink_entry(dir_fd, name)
        raise
    return fd


def rewrite(fd: int, data: bytes) -> None:
    """Make ``data`` the whole contents of the open file, flushed to disk."""
    os.lseek(fd, 0, os.SEEK_SET)
    _write_all(fd, data)
    os.ftruncate(fd, len(data))
    os.fsync(fd)


def reserve(dir_fd: int, name: str, size: int) -> int | None:
    """Create ``name`` with ``size`` bytes allocated on disk; return its descriptor.

    None if it cannot be created; if the disk cannot give the bytes, the file is empty.
    """
    try:
        fd = create(dir_fd, name)
    except OSError:
        return None
    allocate = getattr(os, "posix_fallocate", None)  # not on macOS
    with contextlib.suppress(OSError):  # full, or not supported: allocate when written
        if allocate is not None:
            allocate(fd, 0, size)
    return fd


def rename_checked(dir_fd: int, temp: str, name: str, fd: int) -> None:
    """Rename ``temp`` over ``name``, then check that ``name`` is the file open as ``fd``.

    The rename replaces whatever entry ``name`` was (a link is replaced, never followed);
    :class:`ReplacedError` if another process swapped ``temp`` before it took its name.
    """
    os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    mine = os.fstat(fd)
    try:
        now = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        now = None
    if now is None or (now.st_dev, now.st_ino) != (mine.st_dev, mine.st_ino):
        raise ReplacedError(f"{name!r} was replaced by another entry while it was written")


def install(dir_fd: int, temp: str, name: str, fd: int, *, data: bytes | None = None) -> None:
    """Rename the file ``temp`` (open as ``fd``) over ``name`` and flush the folder.

    With ``data``, the file's contents are first replaced by it. The descriptor is
    closed; on any failure ``temp`` is removed and the error raised.
    """
    try:
        if data is not None:
            rewrite(fd, data)
        rename_checked(dir_fd, temp, name, fd)
        os.fsync(dir_fd)
    except BaseException:
        unlink_entry(dir_fd, temp)
        raise
    finally:
        os.close(fd)


def unlink_entry(dir_fd: int, name: str) -> None:
    """Remove the entry ``name`` itself (a link is removed, never followed); not a folder."""
    with contextlib.suppress(FileNotFoundError, IsADirectoryError, PermissionError):
        os.unlink(name, dir_fd=dir_fd)


def lock(dir_fd: int, *, wait: bool, limit: float) -> bool:
    """Take the folder's exclusive ``flock``; wait up to ``limit`` seconds if ``wait``."""
    deadline, pause = time.monotonic() + limit, 0.01
    while True:
        try:
            fcntl.flock(dir_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError as err:
            if err.errno not in _BUSY:
                raise
        left = deadline - time.monotonic()
        if not wait or left <= 0:
            return False
        time.sleep(min(pause, left))
        pause = min(2 * pause, 0.25)


def lock_holder(dir_fd: int) -> int | None:
    """Return the id of the process holding the folder's ``flock`` (``/proc/locks``), or None."""
    st = os.fstat(dir_fd)
    wanted = (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as table:
            lines = table.read(1 << 22).splitlines()
    except OSError:
        return None
    for line in lines:
        # "1: FLOCK  ADVISORY  WRITE 1234 fe:00:2147363 0 EOF"; waiters have "->" second
        fields = line.split()
        if len(fields) < 6 or fields[1] != "FLOCK":
            continue
        try:
            major, minor, inode = fields[5].split(":")
            key = (int(major, 16), int(minor, 16), int(inode))
            if key == wanted:
                return int(fields[4])
        except ValueError:
            continue
    return None


class PrivateDir:
    """A folder of this run's own, for writers that need a path; see the module's notes.

    Raises
    ------
    PermissionError
        If another user could rename the folder or one of its ancestors (a temporary
        folder writable by others and not sticky): set ``TMPDIR`` to a safe folder.
    """

    def __init__(self) -> None:
        self.path = Path(os.path.realpath(tempfile.mkdtemp(prefix="dpinfer-")))
        self.fd: int | None = None
        try:
            self.fd = os.open(self.path, FOLDER_FLAGS)
            _check_private(self.path, self.fd)
        except BaseException:
            self.close()
            raise

    @property
    def _fd(self) -> int:
        if self.fd is None:
            raise RuntimeError(f"the private folder {str(self.path)!r} is closed")
        return self.fd

    def clear(self, name: str) -> None:
        """Remove whatever a writer left at ``name`` (a file, a link, a folder)."""
        if kind(self._fd, name) == stat.S_IFDIR:
            shutil.rmtree(name, dir_fd=self._fd)
        else:
            unlink_entry(self._fd, name)

    def take(self, name: str) -> int | None:
        """Open and flush the regular file a writer made at ``name``; None if there is none."""
        fd = open_regular(self._fd, name)
        if fd is not None:
            os.fsync(fd)
        return fd

    def move(self, name: str, fd: int, dir_fd: int, temp: str) -> int:
        """Put the file ``name`` (open as ``fd``) into the folder ``dir_fd`` as the new ``temp``.

        Returns a descriptor of the file now at ``temp``, to be closed by the caller.
        """
        try:
            os.link(name, temp, src_dir_fd=self.fd, dst_dir_fd=dir_fd, follow_symlinks=False)
            return os.dup(fd)
        except OSError as err:
            if err.errno not in _NO_LINK:
                raise
        out = os.open(temp, CREATE_FLAGS, 0o644, dir_fd=dir_fd)
        try:
            for block in _blocks(fd):
                _write_all(out, block)
            os.fsync(out)
        except BaseException:
            os.close(out)
            unlink_entry(dir_fd, temp)
            raise
        return out

    def close(self) -> None:
        """Remove the folder and everything in it."""
        if self.fd is not None:
            for name in entries(self.fd):
                self.clear(name)
            os.close(self.fd)
            self.fd = None
        with contextlib.suppress(OSError):
            os.rmdir(self.path)


def _check_private(path: Path, fd: int) -> None:
    mine = os.fstat(fd)
    if mine.st_uid != os.geteuid() or stat.S_IMODE(mine.st_mode) & 0o077:
        raise PermissionError(errno.EACCES, f"{str(path)!r} is not a folder of this user only")
    for parent in path.parents:
        st = os.stat(parent)
        others_write = st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
        if st.st_uid not in (0, os.geteuid()) or (others_write and not st.st_mode & stat.S_ISVTX):
            raise PermissionError(
                errno.EACCES,
                f"the temporary folder {str(parent)!r} can be changed by other users (it is "
                "theirs, or writable by them and not sticky), so a private folder in it could "
                "be renamed away and replaced by a link; set TMPDIR to a folder that only you "
                "(or root) can change",
            )


def _blocks(fd: int, *, stop: int | None = None):
    offset = 0
    while stop is None or offset < stop:
        block = os.pread(fd, _BLOCK if stop is None else min(_BLOCK, stop - offset), offset)
        if not block:
            return
        offset += len(block)
        yield block


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
