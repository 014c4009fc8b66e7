"""Time the README's example command, against what exact rejection ABC alone would take.

``dpinfer run poisson-count --release 52 --epsilon 0.5 --alpha 5 --seed 1 --format json``
used to run rejection ABC to its cap of 10^9 simulations (73-104 s, then a
``SimulationBudgetExceeded`` traceback). The example now predicts rejection ABC's cost
from the closed-form evidence and switches to importance ABC. This script runs the
command as printed (in this process, through ``dpinfer.cli.main``) and prints its CPU
time (``time.process_time``: wall time is unreliable on a shared machine), then
measures the throughput of rejection ABC's work on the same setting (prior
simulations and their acceptance probabilities, through
``dpinfer.estimate_acceptance_rate``, which rejection ABC runs on each chunk too)
and prints the CPU time rejection ABC would need for the command's 10,000 draws,
and the ratio of the two. (rejection ABC itself now stops early, as soon as its
own proposals predict the budget is exceeded, so a capped run cannot time it.)

Usage::

    python benchmarks/readme_command.py
"""

from __future__ import annotations

import contextlib
import io
import math
import tempfile
import time
from pathlib import Path

import dpinfer as dp
from dpinfer import cli
from dpinfer.models import poisson_count as pc

ARGS = ["--release", "52", "--epsilon", "0.5", "--alpha", "5", "--seed", "1", "--format", "json"]
#: Simulations of the run that measures rejection ABC's throughput.
PROBE = 2 * 10**6


def main() -> None:
    """Print the command'CPU s time and the ratio to rejection ABC's predicted time."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        start = time.process_time()
        with contextlib.redirect_stdout(io.StringIO()):
            status = cli.main(["run", "poisson-count", *ARGS, "--no-progress", "--out", str(out)])
        seconds = time.process_time() - start
    print(f"README command: exit status {status}, {seconds:.1f} CPU s")

    model, mech = pc.model(alpha=5.0), pc.mechanism(epsilon=0.5)
    start = time.process_time()
    dp.estimate_acceptance_rate(model, mech, 52.0, simulations=PROBE, rng=1)
    rate = PROBE / (time.process_time() - start)
    plan = pc._sampler_plan(5.0, 1.0, 0.5, 52.0, 10_000)
    needed = plan.expected_simulations / rate
    print(
        f"rejection ABC: {rate:.3g} simulations/s; the command's 10,000 draws need about "
        f"{plan.expected_simulations:.3g} simulations = {needed:.3g} CPU s "
        f"({needed / 86400 / 365.25:.3g} years)"
    )
    print(f"ratio (rejection ABC alone / the command): {needed / seconds:.3g}")
    capped = 10**9 / rate
    print(
        f"before: rejection ABC ran to its cap of 10^9 simulations, about "
        f"{capped:.0f} CPU s at this rate, with {math.exp(plan.log_acceptance) * 1e9:.1f} "
        "draws expected"
    )


if __name__ == "__main__":
    main()
