"""Module paths that moved: importing the old path warns, pointing at the importing line."""

from __future__ import annotations

import os
import sys
import types
import warnings


def _is_bootstrap(filename: str) -> bool:
    # frames that ``warnings`` skips by itself when it counts ``stacklevel``
    return "importlib" in filename and "_bootstrap" in filename


def _is_forwarding(frame) -> bool:
    # importlib.import_module, and a package's ``__getattr__`` importing the module on access
    return (
        frame.f_code.co_filename.endswith(f"importlib{os.sep}__init__.py")
        or frame.f_code.co_name == "__getattr__"
    )


def warn_moved_module(old: str, names) -> None:
    """Warn that the module ``old`` is deprecated; its ``names`` live in ``dpinfer.samplers``.

    Called from the top level of the module ``old``. The warning is attributed to the
    line that imported it, past the import machinery and a package's ``__getattr__``,
    so that Python's default filters show it to the code doing the import.
    """
    level = 3
    frame: types.FrameType | None = sys._getframe(2)  # frame 1 is the old module's body
    while frame is not None:
        if _is_forwarding(frame):
            level += 1
        elif not _is_bootstrap(frame.f_code.co_filename):
            break
        frame = frame.f_back
    warnings.warn(
        f"the module {old} is deprecated and will be removed in a future release; "
        f"import {', '.join(names)} from dpinfer.samplers (or dpinfer) instead",
        DeprecationWarning,
        stacklevel=level,
    )
