"""The ``dpinfer`` command.

Subcommands are registered by small ``_add_*_command`` functions listed in
:data:`_SUBCOMMANDS`; each adds its own sub-parser and sets ``func``, the
function that runs it and returns an exit status. A new subcommand is one new
function and one new entry.

Examples
--------
.. code-block:: console

    $ dpinfer mechanisms --value 40 --seed 1
    $ dpinfer run --list
    $ dpinfer run poisson-count --draws 10000 --seed 1 --out out/poisson-count
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from rich.console import Console
from rich.table import Table

from . import __version__, accounting
from ._rng import as_seed_sequence
from ._run_command import add_run_command, seed_type
from .mechanisms import (
    BinomialRelease,
    DiscreteGaussian,
    DiscreteLaplace,
    Gaussian,
    Laplace,
    Mechanism,
    Privacy,
    SparseVector,
)

__all__ = ["main"]

#: Offsets from the confidential value at which the analyst evaluates the log-density.
OFFSETS = (-4, -2, 0, 2, 4)

#: A made-up epidemic curve (infected counts at L = 10 times) in a population of 10^6.
CURVE = np.array([100, 30_000, 610_000, 265_000, 120_000, 47_000, 18_000, 9_000, 5_000, 3_000])

#: Candidate counts the sparse vector technique is asked about, in order.
SVT_GUESSES = (0, 10, 20, 30, 40, 50, 60)

#: The sparse vector technique answers "is |s - k| <= SVT_THRESHOLD?" (up to noise).
SVT_THRESHOLD = 5.0


@dataclass(frozen=True)
class DemoRow:
    """One mechanism of the ``mechanisms`` demo: what the curator and the analyst see.

    Attributes
    ----------
    name : str
        Mechanism name.
    settings : str
        Its parameters, as a short text.
    privacy : Privacy
        The guarantee for the declared sensitivity.
    release : str
        What was published, as a short text.
    logpdf : numpy.ndarray or None
        ``log eta(release | value + offset)`` for each of :data:`OFFSETS`, or
        None for a mechanism that publishes no density over the value.
    """

    name: str
    settings: str
    privacy: Privacy
    release: str
    logpdf: np.ndarray | None


def mechanism_rows(value: int, *, rng=None) -> list[DemoRow]:
    """Release ``value`` with every mechanism and evaluate the analyst's log-density.

    Parameters
    ----------
    value : int
        The confidential count.
    rng : None, int, SeedSequence or Generator, optional
        Source of the privacy noise; each mechanism gets its own child stream.
        None draws OS entropy, as a real release must.

    Returns
    -------
    list of DemoRow
    """
    streams = as_seed_sequence(rng).spawn(6)
    offsets = np.asarray(OFFSETS)
    counts: list[tuple[str, Mechanism, str]] = [
        ("Laplace", Laplace.from_privacy(epsilon=0.5, sensitivity=1.0), "scale"),
        (
            "Gaussian",
            Gaussian.from_privacy(epsilon=1.0, delta=1e-5, sensitivity=1.0),
            "sigma",
        ),
        ("DiscreteLaplace", DiscreteLaplace.from_privacy(epsilon=0.5, sensitivity=1), "scale"),
        (
            "DiscreteGaussian",
            DiscreteGaussian.from_privacy(epsilon=1.0, delta=1e-6, sensitivity=1),
            "sigma",
        ),
    ]
    rows = []
    for (name, mech, param), stream in zip(counts, streams, strict=False):
        released = mech.release(value, rng=np.random.default_rng(stream))
        text = f"{int(released)}" if mech.discrete else f"{float(released):.4f}"
        rows.append(
            DemoRow(
                name=name,
                settings=f"{param} = {float(getattr(mech, param)):.4g}",
                privacy=mech.privacy,
                release=text,
                logpdf=mech.logpdf(released, value + offsets),
            )
        )

    binomial = BinomialRelease(n=1000, m=1000, population=10**6, length=CURVE.size)
    curve_release = binomial.release(CURVE, rng=np.random.default_rng(streams[4]))
    rows.append(
        DemoRow(
            name="BinomialRelease",
            settings=f"n = {binomial.n}, m = {binomial.m:g}, L = {CURVE.size}",
            privacy=binomial.privacy,
            release=" ".join(str(x) for x in curve_release),
            logpdf=binomial.logpdf(curve_release, CURVE + offsets[:, None]),
        )
    )

    svt = SparseVector.from_privacy(epsilon=1.0, threshold=SVT_THRESHOLD, c=1, sensitivity=1.0)
    result = svt.run(
        [abs(value - guess) for guess in SVT_GUESSES], rng=np.random.default_rng(streams[5])
    )
    hits = [str(g) for g, hit in zip(SVT_GUESSES, result.indicators, strict=False) if hit]
    rows.append(
        DemoRow(
            name="SparseVector",
            settings=f"threshold = {svt.threshold:g}, c = {svt.c}, b = {svt.scale:g}",
            privacy=result.privacy,
            release=(
                f"yes at k = {', '.join(hits)}; halted after {result.n_queries} of "
                f"{len(SVT_GUESSES)} guesses"
                if result.halted
                else f"no yes among the {len(SVT_GUESSES)} guesses"
            ),
            logpdf=None,
        )
    )
    return rows


def _cmd_mechanisms(args: argparse.Namespace, console: Console) -> int:
    rows = mechanism_rows(args.value, rng=args.seed)
    seed = "OS entropy" if args.seed is None else f"seed {args.seed}"
    curator = Table(
        title=f"Curator: releases of the confidential count s = {args.value} ({seed})",
        title_justify="left",
    )
    curator.add_column("mechanism", no_wrap=True)
    curator.add_column("settings")
    curator.add_column("privacy", no_wrap=True)
    curator.add_column("release")
    for row in rows:
        curator.add_row(row.name, row.settings, str(row.privacy), row.release)
    console.print(curator)
    console.print(
        f"SparseVector asks, for the guesses k = {', '.join(map(str, SVT_GUESSES))} in turn, "
        f"whether the count is within {SVT_THRESHOLD:g} of k, publishes only the yes/no answers "
        "and halts after the first yes."
    )
    console.print()

    analyst = Table(
        title="Analyst: log-density of each release at confidential values s + d",
        title_justify="left",
    )
    analyst.add_column("mechanism", no_wrap=True)
    for offset in OFFSETS:
        analyst.add_column(f"d = {offset:+d}", justify="right", no_wrap=True)
    for row in rows:
        if row.logpdf is not None:
            analyst.add_row(row.name, *(f"{x:.3f}" for x in row.logpdf))
    console.print(analyst)
    console.print(
        "BinomialRelease releases a made-up epidemic curve (infected counts at 10 times in a "
        "population of 10^6) as binomial counts out of n; the analyst shifts the curve by d "
        "at every time. "
        "SparseVector publishes indicators only, so it has no density over s."
    )

    total = accounting.compose(*(row.privacy for row in rows[:4]))
    console.print(
        f"Publishing all four count releases together costs {total} (basic composition)."
    )
    return 0


def _add_mechanisms_command(subparsers) -> None:
    parser = subparsers.add_parser(
        "mechanisms",
        help="release a count with every mechanism and show its privacy and log-density",
        description=(
            "A curator releases a confidential count with each mechanism; for each, print "
            "its privacy guarantee and the analyst's log-density of the release at a few "
            "confidential values."
        ),
    )
    parser.add_argument(
        "--value", type=_count, default=40, help="the confidential count (default: 40)"
    )
    parser.add_argument(
        "--seed",
        type=seed_type,
        default=None,
        help="seed of the privacy noise, for a reproducible demo (default: OS entropy)",
    )
    parser.set_defaults(func=_cmd_mechanisms)


def _count(text: str) -> int:
    """Parse a confidential count for the demo: an integer from 0 to 2**53 (exact as a float)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {text!r}") from None
    if not 0 <= value <= 2**53:
        raise argparse.ArgumentTypeError(
            f"must be a non-negative integer (a count) up to 2**53, got {text!r}"
        )
    return value


#: Functions that add one subcommand each to the sub-parsers object.
_SUBCOMMANDS: tuple[Callable[..., None], ...] = (_add_mechanisms_command, add_run_command)


def _build_parser() -> argparse.ArgumentParser:
    """Return the ``dpinfer`` parser with every subcommand of :data:`_SUBCOMMANDS`."""
    parser = argparse.ArgumentParser(
        prog="dpinfer",
        description="Statistical inference from differentially private data.",
        epilog="'dpinfer run --list' lists the papers' examples with their expected run times.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(
        title="commands", dest="command", metavar="<command>", required=True
    )
    for add_command in _SUBCOMMANDS:
        add_command(subparsers)
    return parser


def _console() -> Console:
    # Wide enough for the tables when the output is a file or a pipe.
    return Console() if sys.stdout.isatty() else Console(width=120)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``dpinfer`` command.

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments after the program name; defaults to ``sys.argv[1:]``.

    Returns
    -------
    int
        Exit status (0 on success).
    """
    args = _build_parser().parse_args(argv)
    try:
        return args.func(args, _console())
    except KeyboardInterrupt:
        print("dpinfer: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
