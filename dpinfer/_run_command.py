"""``dpinfer run``: every published example of :mod:`dpinfer.models`, found by discovery.

Each example module declares an :class:`~dpinfer.example.Example`
(name, paper, expected run time, options) and a ``run`` function; this module
turns every option into a ``--flag`` of ``dpinfer run <example>``, runs the
example into its output folder (:func:`dpinfer.example.save_run`: locked,
written atomically, manifest last) and prints the report as a table or as JSON.

Standard output carries only the report; notices (a long run's expected
time, where the files went in JSON mode) and progress bars go to standard
error. PyMC's and PyTensor's messages and warnings are hidden unless
``--verbose``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import math
import sys
import warnings
from collections.abc import Iterator

import numpy as np

from .example import discover, save_run
from .outputs import (
    WAIT_LIMIT,
    OutputBusyError,
    OutputPathError,
    OutputWriteError,
    check_output_path,
)

__all__ = ["add_run_command"]

#: Loggers and warning sources that are chatter, not results.
_NOISY = ("pymc", "pytensor")


def add_run_command(subparsers) -> None:
    """Add ``run`` with one sub-parser per discovered example to ``subparsers``."""
    missing: dict[str, str] = {}
    examples = discover(missing=missing)
    parser = subparsers.add_parser(
        "run",
        help="run a paper's example end to end (--list shows them)",
        description=(
            "Run a published example: the exact analysis of a DP release next to the naive "
            "one, maximum likelihood and references where the example has them. Writes "
            "posterior.nc, summary.csv, summary.json, a figure and manifest.json (last) to "
            "--out. 'dpinfer run <example> --help' lists the example's options."
        ),
    )
    parser.add_argument(
        "--list", action="store_true", help="list the examples with their papers and run times"
    )
    chooser = parser.add_subparsers(title="examples", dest="example", metavar="<example>")
    for example in examples.values():
        _add_example_parser(chooser, example)
    parser.set_defaults(func=_cmd_run, examples=examples, missing=missing, run_parser=parser)


#: The on/off options of every ``dpinfer run <example>``, after its own options.
SWITCHES = {
    "--no-progress": "hide progress bars",
    "--verbose": "show PyMC's and PyTensor's messages and progress",
    "--overwrite": (
        "write into an --out folder that holds files dpinfer did not write: files of the "
        "names this run writes are replaced, no other file is touched"
    ),
}


def _add_example_parser(chooser, example) -> None:
    sub = chooser.add_parser(
        example.name,
        help=f"{example.title} ({example.paper}; {example.runtime})",
        description=f"{example.title}. {example.paper}. Expected run time {example.runtime}.",
    )
    for opt in example.options:
        choices = None if hasattr(opt.check, "several") else getattr(opt.check, "choices", None)
        sub.add_argument(
            opt.cli_flag,
            dest=f"option_{opt.name}",
            nargs=opt.size,
            default=None,
            metavar="{" + ",".join(choices) + "}" if choices else _metavar(opt),
            help=f"{opt.help} ({_valid(opt)})",
        )
    sub.add_argument(
        "--seed",
        type=seed_type,
        default=None,
        help="root seed of the run (default: fresh OS entropy, recorded in manifest.json)",
    )
    sub.add_argument(
        "--out",
        type=_out_folder,
        default=None,
        help=f"output folder (default: out/{example.name})",
    )
    sub.add_argument(
        "--format", choices=("table", "json"), default="table", help="console output format"
    )
    for flag, text in SWITCHES.items():
        sub.add_argument(flag, action="store_true", help=text)
    sub.add_argument(
        "--wait",
        nargs="?",
        const=WAIT_LIMIT,
        default=None,
        type=_seconds,
        metavar="SECONDS",
        help=(
            "if another process holds --out, wait for it instead of refusing, up to SECONDS "
            f"(default {WAIT_LIMIT:g})"
        ),
    )
    sub.set_defaults(example_parser=sub)


def _cmd_run(args: argparse.Namespace, console) -> int:
    if args.list:
        print(listing(args.examples, args.missing))
        return 0
    if args.example is None:
        args.run_parser.error("name an example (dpinfer run --list shows them)")
    example = args.examples[args.example]
    options = _options(args, example)
    try:
        out = args.out if args.out is not None else check_output_path(f"out/{example.name}")
    except OutputPathError as err:
        args.example_parser.error(f"argument --out: {err}")
    seed = args.seed
    if seed is None:
        # a SeedSequence made without entropy draws an int of 128 bits; its stubs allow any
        seed = int(np.random.SeedSequence().entropy)  # type: ignore[arg-type]
    notice = _notice(example, out) if example.long else None
    try:
        with quiet(args.verbose):
            result, manifest = save_run(
                example,
                out,
                options,
                seed=seed,
                progressbar=not args.no_progress,
                verbose=args.verbose,
                wait=args.wait is not None,
                wait_limit=WAIT_LIMIT if args.wait is None else args.wait,
                overwrite=args.overwrite,
                on_start=notice,
            )
    except (OutputBusyError, OutputPathError, OutputWriteError) as err:
        print(f"dpinfer run: error: {err}", file=sys.stderr)
        return 1
    except (ValueError, TypeError) as err:
        # the example's own checks (a release outside the mechanism's range, ...)
        if args.verbose:
            raise
        print(
            f"dpinfer run {example.name}: error: {err} (--verbose shows where; {out} is "
            "marked incomplete)",
            file=sys.stderr,
        )
        return 2
    files = [str(out / name) for name in manifest["files"]]
    if args.format == "json":
        document = {
            "example": example.name,
            "paper": example.paper,
            "seed": seed,
            "options": manifest["options"],
            **result.report.to_dict(),
            "out": str(out),
            "files": files,
        }
        print(json.dumps(document, indent=2))
    else:
        print(result.report.table())
        print(f"\nseed {seed}; wrote {', '.join(files)} and {out / 'manifest.json'}")
    return 0


def listing(examples, missing=None) -> str:
    """Return the text of ``dpinfer run --list``: name, paper, expected run time, title."""
    rows = [(e.name, e.paper, e.runtime, e.title) for e in examples.values()]
    head = ("example", "paper", "run time", "what it shows")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(3)]
    lines = [
        "  ".join(f"{c:<{w}}" for c, w in zip(r[:3], widths, strict=True)) + "  " + r[3]
        for r in [head, *rows]
    ]
    lines.append("")
    for module, reason in (missing or {}).items():
        lines.append(f"not available in this installation: {module} ({reason})")
    lines.append("Options of one example: dpinfer run <example> --help")
    return "\n".join(line.rstrip() for line in lines)


@contextlib.contextmanager
def quiet(verbose: bool) -> Iterator[None]:
    """Hide PyMC's and PyTensor's log messages and warnings, unless ``verbose``."""
    if verbose:
        yield
        return
    # PyMC sets its loggers' levels when it is imported, possibly inside this block, so
    # messages below ERROR are disabled globally rather than per logger.
    previous = logging.root.manager.disable
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="PyTensor could not link to a BLAS")
        # an ABCDP run that accepts nothing says so in its report
        warnings.filterwarnings("ignore", message="More chains .* than draws")
        for name in _NOISY:
            warnings.filterwarnings("ignore", module=rf"{name}(\.|$)")
        logging.disable(logging.WARNING)
        try:
            yield
        finally:
            logging.disable(previous)


def _options(args: argparse.Namespace, example) -> dict:
    parser: argparse.ArgumentParser = args.example_parser
    options = example.defaults()
    for opt in example.options:
        given = getattr(args, f"option_{opt.name}")
        if given is None:
            continue
        try:
            options[opt.name] = opt.parse(" ".join(given) if opt.size else given)
        except (TypeError, ValueError) as err:
            parser.error(f"argument {opt.cli_flag}: {err}")
    try:  # combinations of options that cannot run (a predicted cost past a budget)
        return example.check(options)
    except (TypeError, ValueError) as err:
        parser.error(str(err))


def _notice(example, out):
    def say() -> None:
        print(
            f"{example.name}: expected run time {example.runtime} ({example.paper}); "
            f"results will be in {out}",
            file=sys.stderr,
            flush=True,
        )

    return say


def seed_type(text: str) -> int:
    """Parse a seed: a non-negative integer."""
    try:
        seed = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {text!r}") from None
    if seed < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {text!r}")
    return seed


def _seconds(text: str) -> float:
    """Parse a time limit: a positive, finite number of seconds."""
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not (seconds > 0 and math.isfinite(seconds)):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text!r}")
    return seconds


def _out_folder(text: str):
    try:
        return check_output_path(text)
    except OutputPathError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _valid(opt) -> str:
    # the documented range and the default, for --help; '%' is argparse's format character
    default = ",".join(opt.default) if hasattr(opt.check, "several") else _show(opt.default)
    text = opt.range + ("" if opt.default is None else f"; default: {default}")
    return text.replace("%", "%%")


def _metavar(opt) -> str:
    return opt.name.upper() if opt.size is None else "X"


def _show(value) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, np.ndarray | list | tuple):
        return " ".join(f"{v:g}" if isinstance(v, float | np.floating) else str(v) for v in value)
    return f"{value:g}" if isinstance(value, float) else str(value)
