"""CPU time of the first ``da_mcmc`` call in a fresh process, against the second call.

Each run starts a new Python process that imports dpinfer (and ArviZ, so that import
time is not counted), then times two identical small ``da_mcmc`` calls with
``time.process_time``: the first pays for every one-off cost of a session (numba
kernels loaded from their cache or compiled, ArviZ's diagnostics, xarray's first
use); the second is the baseline. The first process of a run may also fill numba's
on-disk cache; the figures are the medians over the later processes, which is what a
user meets from their second session on.

Usage: ``python benchmarks/first_call.py [--processes 5]``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

CHILD = r"""
import time, warnings
warnings.simplefilter("ignore")
import numpy as np, scipy.stats as st
import arviz  # noqa: F401  (imported before timing: import time is not the first call's)
import dpinfer as dp

model = dp.RecordModel(
    prior={"p": st.beta(2, 2)},
    simulate=lambda prm, n, rng: rng.random((len(prm["p"]), n)) < prm["p"][:, None],
    statistic=lambda x: x.astype(float),
    update=lambda x, rng: {"p": rng.beta(2 + x.sum(1), 2 + (~x).sum(1))},
)
mech = dp.Laplace.from_privacy(epsilon=1.0, sensitivity=1.0)

def run():
    start = time.process_time()
    dp.da_mcmc(model, mech, 31.2, n=50, draws=50, tune=50, chains=2, rng=1, progressbar=False)
    return time.process_time() - start

first = run()
second = run()
print(first, second)
"""


def one_process() -> tuple[float, float]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, check=True
    ).stdout
    first, second = map(float, out.split())
    return first, second


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=5)
    args = parser.parse_args()
    runs = [one_process() for _ in range(max(2, args.processes))]
    for i, (first, second) in enumerate(runs):
        print(f"process {i}: first call {first:.3f} CPU s, second call {second:.3f} CPU s")
    later = runs[1:]
    first = statistics.median(r[0] for r in later)
    second = statistics.median(r[1] for r in later)
    print(
        f"median over processes 1..{len(runs) - 1}: first call {first:.3f} CPU s, "
        f"second call {second:.3f} CPU s, first / second = {first / second:.1f}"
    )


if __name__ == "__main__":
    main()
