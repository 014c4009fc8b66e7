"""Reading a release's files through the folder's own descriptor, never through a link.

Every file is opened relative to an open folder with ``O_NOFOLLOW`` and
``O_NONBLOCK`` and read only if it is a regular file; sub-folders are opened the
same way. Nothing outside the folder given is reached.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import stat
from pathlib import Path

__all__ = ["Folder"]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NOFOLLOW
_FILE_FLAGS = os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK


class Folder(contextlib.AbstractContextManager):
    """An open folder: its files and sub-folders are reached through its descriptor."""

    def __init__(self, path, *, parent: Folder | None = None, name: str = "path"):
        self.path: Path = Path(path) if parent is None else parent.path / str(path)
        self._name = name
        try:
            self.fd: int = os.open(
                str(path), _DIR_FLAGS, **({} if parent is None else {"dir_fd": parent.fd})
            )
        except OSError as err:
            raise _error(name, self.path, err, "folder") from None

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Close the folder's descriptor."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def entries(self) -> list[str]:
        """Names in the folder, sorted."""
        with os.scandir(self.fd) as it:
            return sorted(entry.name for entry in it)

    def is_folder(self, name: str) -> bool:
        """Whether ``name`` is a folder here (a link to one is not)."""
        try:
            return stat.S_ISDIR(os.stat(name, dir_fd=self.fd, follow_symlinks=False).st_mode)
        except FileNotFoundError:
            return False

    def has(self, name: str) -> bool:
        """Whether an entry called ``name`` exists (of any kind)."""
        try:
            os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return False
        return True

    def folder(self, name: str) -> Folder:
        """Open the sub-folder ``name``."""
        return Folder(name, parent=self, name=self._name)

    def read_bytes(self, name: str) -> bytes:
        """Return the content of the regular file ``name``."""
        try:
            fd = os.open(name, _FILE_FLAGS, dir_fd=self.fd)
        except OSError as err:
            raise _error(self._name, self.path / name, err, "file") from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise ValueError(f"{self._name}: {str(self.path / name)!r} is not a regular file")
            with os.fdopen(fd, "rb", closefd=False) as fh:
                return fh.read()
        finally:
            os.close(fd)

    def read_table(self, name: str, *, strings=("geocode", "query", "query_name", "sign")):
        """Read a ``.csv`` or ``.parquet`` file as a DataFrame, the text columns as text."""
        import pandas as pd

        data = io.BytesIO(self.read_bytes(name))
        if name.endswith(".parquet"):
            return pd.read_parquet(data)
        return pd.read_csv(data, dtype={c: str for c in strings}, keep_default_na=False)


def _error(name: str, path: Path, err: OSError, kind: str) -> Exception:
    if err.errno == errno.ELOOP or (err.errno == errno.ENOTDIR and path.is_symlink()):
        return ValueError(
            f"{name}: {str(path)!r} is a symbolic link; dpinfer does not follow links"
        )
    if err.errno == errno.ENOENT:
        return FileNotFoundError(f"{name}: no {kind} {str(path)!r}")
    if err.errno == errno.ENOTDIR:
        return ValueError(f"{name}: {str(path)!r} is not a folder")
    return err
