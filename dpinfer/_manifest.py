"""The manifest of an output folder: its name, its format, and what makes one dpinfer's own.

A manifest is dpinfer's own when it is a regular file (read through the folder's
descriptor, up to :data:`MAX_MANIFEST_BYTES`) holding JSON of format
:data:`FORMAT` whose listed files have plain names and whose temporaries are
listed by the SHA-256 of their names (by name in earlier versions). Only what
such a manifest lists, and still finds as the regular files dpinfer wrote, is
ever removed (:func:`owned_files`).
"""

from __future__ import annotations

import datetime
import json
import os
import re
import stat
from collections.abc import Iterable, Mapping

from . import _folder_files as files
from ._version import __version__

#: Name of the manifest in an output folder.
MANIFEST = "manifest.json"
#: Identifies the manifest's layout.
FORMAT = "dpinfer-output/1"
#: The largest manifest dpinfer reads, in bytes (one lists a handful of files).
MAX_MANIFEST_BYTES = 16 * 2**20
#: The manifest's own keys, which a writer's metadata may not set.
KEYS = frozenset(
    "format complete state dpinfer_version pid started finished error files temporary".split()
)
_DIGEST = re.compile(r"[0-9a-f]{64}")


def compose(
    *,
    state: str,
    started: str,
    error: str | None,
    info: Mapping,
    records: Mapping,
    temporary: Iterable[str],
) -> tuple[dict, bytes]:
    """Return a manifest and its text; temporaries are listed by the SHA-256 of their names."""
    manifest = {
        "format": FORMAT,
        "complete": state == "complete",
        "state": state,
        "dpinfer_version": __version__,
        "pid": os.getpid(),
        "started": started,
        **({"finished": now()} if state != "running" else {}),
        **({"error": error} if error else {}),
        **info,
        "files": dict(records),
        "temporary": sorted(files.temp_digest(name) for name in temporary),
    }
    text = json.dumps(manifest, indent=2, sort_keys=False, default=_json_default) + "\n"
    return manifest, text.encode("utf-8")


def now() -> str:
    """Return the time, as the manifest records it (UTC, to the second)."""
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def load(dir_fd: int) -> tuple[dict | None, str | None]:
    """Return the folder's manifest if it is dpinfer's own and well formed, else None (and why)."""
    try:
        data = files.read_regular(dir_fd, MANIFEST, limit=MAX_MANIFEST_BYTES)
    except files.TooLargeError as err:
        return None, f" of at most {MAX_MANIFEST_BYTES:,} bytes; it has {err.size:,}"
    if data is None:
        return None, None
    try:
        manifest = json.loads(data.decode("utf-8"))
    except ValueError:
        return None, None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        return None, None
    listed, temporary = manifest.get("files"), manifest.get("temporary", [])
    if not isinstance(listed, dict) or not isinstance(temporary, list):
        return None, None
    if not all(plain_name(n) and n != MANIFEST and isinstance(m, dict) for n, m in listed.items()):
        return None, None
    if not all(_is_digest(n) or _is_temp_name(n) for n in temporary):
        return None, None
    return manifest, None


def owned_files(dir_fd: int, manifest: dict | None) -> list[str]:
    """Return the names dpinfer wrote: the manifest, and what it lists that is still intact."""
    if manifest is None:
        return []
    owned = [MANIFEST]
    owned += [n for n, meta in manifest["files"].items() if files.matches(dir_fd, n, meta)]
    listed = set(manifest["temporary"])
    owned += [
        name
        for name in files.entries(dir_fd)
        if name.startswith(files.TEMP_PREFIX)
        and (name in listed or files.temp_digest(name) in listed)
        and files.kind(dir_fd, name) == stat.S_IFREG
    ]
    return owned


def running_pid(manifest: dict | None) -> int | None:
    """Return the process id of the run that the manifest says is running, if any."""
    pid = (manifest or {}).get("pid")
    running = (manifest or {}).get("state") == "running"
    return pid if running and isinstance(pid, int) and not isinstance(pid, bool) else None


def plain_name(name) -> bool:
    """Tell whether ``name`` is a file name without a folder part."""
    return (
        isinstance(name, str)
        and name not in ("", ".", "..")
        and "/" not in name
        and "\0" not in name
    )


def _is_digest(name) -> bool:
    return isinstance(name, str) and _DIGEST.fullmatch(name) is not None


def _is_temp_name(name) -> bool:
    return plain_name(name) and name.startswith(files.TEMP_PREFIX)


def _json_default(value):
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)
