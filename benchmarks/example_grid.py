"""Run every example at both ends of every documented option range; print status and time.

For each example and each option with a numeric range, the option is set to
the low and to the high end of its range (each entry of a vector option at
once), the other options at their defaults, sample sizes at their smallest
(:meth:`Example.range_ends`, ``Example.smallest``); each case must either
complete with its report and figure or be refused before anything runs
(``check_options``). The unit test
``tests/models/test_option_grid.py`` runs the cheap examples' cases; this
script runs all of them, the expensive ones (NUTS, MCEM) included, and prints
one line per case with its wall time, the ratio to the example's run at its
smallest setting, and what the report flagged or why the case was refused.

Usage::

    python benchmarks/example_grid.py                 # every example
    python benchmarks/example_grid.py poisson-count   # one or more examples
"""

from __future__ import annotations

import logging
import sys
import tempfile
import time
import warnings
from pathlib import Path

from dpinfer.example import discover, save_run


def grid_cases(example) -> list[tuple[str, dict]]:
    """Return ``(label, options)``: the smallest setting, then each option's range ends."""
    return [("smallest", {**example.defaults(), **example.smallest}), *example.range_ends()]


def run_case(example, options, out: Path) -> tuple[str, str]:
    """Run one case into ``out``; return its status and the report's flags or the refusal."""
    try:
        example.check(options)
    except (TypeError, ValueError) as err:
        return "refused", str(err)[:160]
    result, manifest = save_run(example, out, options, seed=1, progressbar=False)
    flags = sorted({f"{r.analysis}: {r.flag}" for r in result.report.rows if r.flag})
    figure = manifest.get("figure_error", "")
    return "complete" if not figure else "complete, no figure", "; ".join(flags) or figure


def main(names: list[str]) -> None:
    """Print one line per case."""
    examples = discover()
    logging.disable(logging.WARNING)
    warnings.simplefilter("ignore")
    for name in names or list(examples):
        example = examples[name]
        baseline = None
        for label, options in grid_cases(example):
            with tempfile.TemporaryDirectory() as tmp:
                start = time.perf_counter()
                status, detail = run_case(example, options, Path(tmp) / "out")
                seconds = time.perf_counter() - start
            baseline = baseline or seconds
            print(
                f"{name:18s} {label:24s} {status:20s} {seconds:7.1f} s "
                f"({seconds / baseline:5.2f} x smallest)  {detail}",
                flush=True,
            )


if __name__ == "__main__":
    main(sys.argv[1:])
