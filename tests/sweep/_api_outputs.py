"""Sweep entries of ``dpinfer.outputs``: output folders and their manifests.

Every valid call works in a fresh folder under the sweep's root folder, so no call sees
another's files.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from dpinfer import outputs

from ._harness import OTHER, Entry
from ._valid import P

# the message of a bad output path names "the output folder" (the CLI's --out as well)
FOLDER = "output folder"


def _run(**kwargs):
    with outputs.OutputFolder(**kwargs) as folder:
        folder.write_text("a.txt", "x")
        return folder.complete()


def _writing(method: str, fresh):
    def call(**kwargs):
        with outputs.OutputFolder(fresh()) as folder:
            getattr(folder, method)(**kwargs)
            return folder.complete()

    return call


def _text_writer(path):
    Path(path).write_text("x", encoding="utf-8")


BAD_PATHS = (1.0, None, OTHER, b"out", "", ["out"])
BAD_NAMES = ("", "../a.txt", "sub/a.txt", "manifest.json", ".dpinfer-tmp-x", 1.0, None, OTHER)


def outputs_entries(root: Path):
    """The entries; their folders are made under the folder ``root``."""
    root = Path(root)

    def fresh() -> str:
        return tempfile.mkdtemp(dir=root)

    complete = fresh()
    _run(path=complete)
    return [
        Entry(
            "outputs.OutputFolder",
            _run,
            lambda: {"path": fresh()},
            (
                P("path", "", *BAD_PATHS, named=FOLDER),
                P("info", "", "x", 1.0, OTHER, [("a", 1)], {"format": "mine"}, optional=True),
                P("wait", "flag"),
                P("wait_limit", "positive"),
                P("overwrite", "flag"),
            ),
        ),
        Entry(
            "outputs.check_output_path",
            outputs.check_output_path,
            lambda: {"path": fresh()},
            (P("path", "", *BAD_PATHS, named=FOLDER),),
        ),
        Entry(
            "outputs.read_manifest",
            outputs.read_manifest,
            lambda: {"path": complete},
            (P("path", "", *BAD_PATHS, named=FOLDER), P("verify", "flag")),
        ),
        Entry(
            "OutputFolder.write",
            _writing("write", fresh),
            lambda: {"name": "b.txt", "writer": _text_writer},
            (P("name", "", *BAD_NAMES), P("writer", "callable_required")),
        ),
        Entry(
            "OutputFolder.write_text",
            _writing("write_text", fresh),
            lambda: {"name": "b.txt", "text": "x"},
            (P("name", "", *BAD_NAMES), P("text", "", 1.0, None, b"x", OTHER, ["x"])),
        ),
    ]


# Public names of dpinfer.outputs that take no user input to refuse (exception classes).
OUTPUTS_NOT_ENTRY_POINTS = {
    "IncompleteOutputError",
    "OutputBusyError",
    "OutputPathError",
    "OutputWriteError",
}
