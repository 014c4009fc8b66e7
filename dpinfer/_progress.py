"""Progress bars for long runs (rich), silenced by ``progressbar=False``.

Bars go to standard error, so that standard output holds results only (``dpinfer run
--format json | ...``).
"""

from __future__ import annotations

import contextlib

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from ._validate import flag


class _Silent:
    def advance(self, amount: float = 1) -> None:
        pass

    def update(self, **fields) -> None:
        pass


class _Bar:
    def __init__(self, progress: Progress, task):
        self._progress, self._task = progress, task

    def advance(self, amount: float = 1) -> None:
        self._progress.advance(self._task, amount)

    def update(self, **fields) -> None:
        self._progress.update(self._task, **fields)


@contextlib.contextmanager
def progress_bar(description: str, *, total: float | None, enabled: bool):
    """Yield an object with ``advance(n)`` and ``update(**fields)``; a no-op when disabled.

    ``enabled`` is the caller's ``progressbar`` argument and is checked under that name.
    """
    if not flag("progressbar", enabled):
        yield _Silent()
        return
    columns = (
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, transient=True, console=Console(stderr=True)) as progress:
        yield _Bar(progress, progress.add_task(description, total=total))
