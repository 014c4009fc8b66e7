"""Time from Ctrl-C to a shut-down process pool, for ``smc_abc`` with its chains on the pool.

A child process runs ``smc_abc`` (4 chains, each one task on a ``ProcessPoolExecutor`` of
2 workers, a simulator that sleeps ``--sleep`` seconds per call so that a chain takes
several seconds), is sent SIGINT ``--delay`` seconds after the run starts, catches the
``KeyboardInterrupt`` and calls ``pool.shutdown()``. Printed: the seconds that shutdown
took, under

* ``dpinfer``: the library as it is (no more chunks than workers unfinished on the pool,
  and running chains told to stop, which they do at their next stage);
* ``baseline``: the behaviour before that change, reproduced by hiding the pool's worker
  count from :mod:`dpinfer.parallel` (every chunk is submitted at once) and by never
  creating the stop file: the chains waiting in the pool's call queue, which
  ``Future.cancel`` cannot reach, and the running ones run in full before shutdown
  returns;

each with the signal sent to the child only (``kill -INT``, or a notebook's interrupt:
the workers finish the chains they run) and to its process group (Ctrl-C in a terminal:
the workers' running chains stop too). The ratio is baseline / dpinfer.

Usage: ``python benchmarks/interrupt.py [--sleep 0.6] [--delay 8]``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time

CHILD = """
import json, sys, time
from concurrent.futures import ProcessPoolExecutor

import arviz  # noqa: F401  (imported before the clock starts)
import scipy.stats as st

import dpinfer as dp
from dpinfer import parallel

SLEEP, BASELINE = float(sys.argv[1]), sys.argv[2] == "baseline"
if BASELINE:
    parallel._workers = lambda executor: 0  # every chunk submitted at once
    parallel._signal_stop = lambda path, running: None  # running chunks never told to stop


def simulate(p, rng):
    time.sleep(SLEEP)
    return rng.poisson(p["theta"])


model = dp.Model(prior={"theta": st.gamma(25)}, simulate=simulate)
mech = dp.Laplace.from_privacy(epsilon=0.2, sensitivity=1.0)
pool = ProcessPoolExecutor(2)
pool.submit(int).result()  # workers started before the clock
print("ready", flush=True)
start = time.monotonic()
try:
    dp.smc_abc(model, mech, 37.4, particles=2000, chains=4, rng=1, executor=pool,
               progressbar=False)
    report = {"interrupted": False, "run": time.monotonic() - start}
except KeyboardInterrupt:
    caught = time.monotonic()
    pool.shutdown()
    report = {"interrupted": True, "at": caught - start, "shutdown": time.monotonic() - caught}
print(json.dumps(report), flush=True)
"""


def shutdown_seconds(variant: str, *, group: bool, sleep: float, delay: float) -> dict:
    """Run the child, interrupt it after ``delay`` seconds, return its report."""
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(sleep), variant],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, for the terminal-like Ctrl-C
    )
    assert child.stdout.readline().strip() == "ready"
    time.sleep(delay)
    if group:
        os.killpg(child.pid, signal.SIGINT)
    else:
        child.send_signal(signal.SIGINT)
    out, _ = child.communicate()
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sleep", type=float, default=0.6, help="seconds per simulator call")
    parser.add_argument("--delay", type=float, default=8.0, help="seconds before SIGINT")
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()}")
    for group in (False, True):
        target = "process group (terminal Ctrl-C)" if group else "parent only (kill -INT)"
        times = {}
        for variant in ("dpinfer", "baseline"):
            report = shutdown_seconds(variant, group=group, sleep=args.sleep, delay=args.delay)
            if not report["interrupted"]:
                print(f"  {variant}: the run finished in {report['run']:.1f} s before SIGINT")
                continue
            times[variant] = report["shutdown"]
            print(
                f"SIGINT to the {target}, {variant}: interrupted at {report['at']:.1f} s, "
                f"shutdown took {report['shutdown']:.2f} s"
            )
        if len(times) == 2:
            ratio = times["baseline"] / max(times["dpinfer"], 1e-3)
            print(f"  ratio baseline / dpinfer: {ratio:.1f}")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
