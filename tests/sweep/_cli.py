"""The ``dpinfer`` command's options as sweep entries: bad text on the command line.

A call is made through :func:`dpinfer.cli.main` with the example's run replaced by a
sentinel, so an accepted option costs nothing: a refusal is argparse's usage error
(exit status 2) whose message names the flag; reaching the run is *silent*.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

from dpinfer import _run_command, cli
from dpinfer import example as _example

from ._harness import Entry, Param


class Accepted(Exception):
    """Raised in place of running an example: the options were all accepted."""


class Refused(ValueError):
    """The command stopped with a usage error; its text is the message."""


_NOT_A_NUMBER = ("abc", "", "1+2j", "true", "0x10")
_BAD_TEXT = {
    "positive": (*_NOT_A_NUMBER, "nan", "inf", "-inf", "1e400", "-1", "0"),
    "finite": (*_NOT_A_NUMBER, "nan", "inf", "-inf", "1e400"),
    "ranged": (*_NOT_A_NUMBER, "nan", "inf", "-inf", "1e400"),
    "integer": (*_NOT_A_NUMBER, "nan", "inf", "2.5", "-1", "0", str(2**70)),
    "yes_no": ("maybe", "", "2", "nan"),
    "choice": ("", "other", "AUTO"),
    "subset": ("", ",", "other", "AUTO", "naive,other"),
    "folder": ("", "no-such-folder", __file__, str(Path(__file__).parent)),
}


def _kind(check) -> str:
    if check is _example.positive:
        return "positive"
    if check is _example.finite:
        return "finite"
    if check is _example.yes_no:
        return "yes_no"
    if hasattr(check, "requires"):
        return "folder"
    if hasattr(check, "several"):
        return "subset"
    if hasattr(check, "choices"):
        return "choice"
    if hasattr(check, "size"):
        return "vector"
    if hasattr(check, "bounds") and not check.range.startswith("an integer"):
        return "ranged"
    return "integer"


def _never_run(*args, **kwargs):
    raise Accepted


def run_cli(argv: list[str]) -> None:
    """Run ``dpinfer argv``; raise :class:`Refused` on a usage error, return if accepted."""
    stderr = io.StringIO()
    original = _run_command.save_run
    _run_command.save_run = _never_run
    try:
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            status = cli.main(argv)
    except Accepted:
        return
    except SystemExit as exit_:
        if exit_.code == 2:
            raise Refused(stderr.getvalue().strip().splitlines()[-1]) from None
        raise RuntimeError(f"exit status {exit_.code}: {stderr.getvalue()}") from None
    finally:
        _run_command.save_run = original
    if status != 0:
        raise RuntimeError(f"exit status {status}: {stderr.getvalue()}")


def _example_entry(example, tmp_out: str) -> Entry:
    params = []
    for opt in example.options:
        kind = _kind(opt.check)
        if kind == "vector":
            element = _BAD_TEXT["finite"]
            bad = [" ".join([v or "''"] * opt.size) for v in element if v]
            bad.append(" ".join(["1"] * (opt.size - 1)))  # one value short
        else:
            bad = list(_BAD_TEXT[kind])
        if kind == "integer":
            low, high = (int(b) for b in opt.check.bounds)
            bad += [str(low - 1), str(high + 1)]
        if kind == "ranged":
            low, high = opt.check.bounds
            bad += [repr(low - max(abs(low), 1.0)), repr(high + max(abs(high), 1.0))]
        params.append(Param(opt.cli_flag, "", tuple(bad), named=opt.cli_flag))
    params.append(Param("--seed", "", ("-1", "abc", "1.5", ""), named="--seed"))
    params.append(Param("--out", "", ("", __file__), named="--out"))
    params.append(Param("--format", "", ("xml", ""), named="--format"))

    def call(**options):
        argv = ["run", example.name, "--no-progress"]
        for flag, value in options.items():
            argv += [flag, *str(value).split(" ")] if " " in str(value) else [flag, str(value)]
        run_cli(argv)

    return Entry(f"dpinfer run {example.name}", call, lambda: {"--out": tmp_out}, tuple(params))


def _mechanisms_entry() -> Entry:
    def call(**options):
        argv = ["mechanisms"]
        for flag, value in options.items():
            argv += [flag, str(value)]
        run_cli(argv)

    bad = ("-1", "abc", "1.5", "", "nan", str(2**70))
    return Entry(
        "dpinfer mechanisms",
        call,
        lambda: {"--seed": "1"},
        (
            Param("--value", "", bad, named="--value"),
            Param("--seed", "", ("-1", "abc", "1.5", ""), named="--seed"),
        ),
    )


def cli_entries(tmp_out: str) -> list[Entry]:
    """Entries for ``dpinfer mechanisms`` and every discovered ``dpinfer run`` example."""
    examples = _example.discover()
    return [_mechanisms_entry(), *(_example_entry(e, tmp_out) for e in examples.values())]
