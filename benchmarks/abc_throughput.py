"""Throughput and memory of exact rejection ABC against a per-particle Python loop.

Model (Gong 2022's running example): theta ~ Gamma(25, 1), s | theta ~ Poisson(theta),
released through a Laplace mechanism with epsilon = 0.2 (scale 5); release 37.4.
One core: ``executor=None``.

A fixed number of proposals is run by asking ``rejection_abc`` for far more draws than it
can accept and stopping it with ``max_simulations=N`` (it raises
``SimulationBudgetExceeded`` after exactly N proposals, N a multiple of the batch size).

Usage: ``python benchmarks/abc_throughput.py [--quick]``.
"""

from __future__ import annotations

import argparse
import math
import re
import resource
import sys
import time

import numpy as np
import scipy.stats as st
from _common import traced

import dpinfer as dp

RELEASE = 37.4
EPSILON = 0.2
BATCH = 100_000


def make_problem():
    model = dp.Model(
        prior={"theta": st.gamma(25.0)},
        simulate=lambda p, rng: rng.poisson(p["theta"]),
    )
    mech = dp.Laplace.from_privacy(epsilon=EPSILON, sensitivity=1.0)
    return model, mech


def run_vectorised(n_proposals: int, *, seed: int = 1) -> tuple[float, int]:
    """Run exactly ``n_proposals`` proposals; return (seconds, accepted)."""
    model, mech = make_problem()
    start = time.perf_counter()
    try:
        dp.rejection_abc(
            model,
            mech,
            RELEASE,
            draws=10**12,
            rng=seed,
            batch_size=BATCH,
            max_simulations=n_proposals,
            progressbar=False,
        )
    except dp.SimulationBudgetExceeded as stop:
        elapsed = time.perf_counter() - start
        accepted = int(re.search(r"with (\d+) of", str(stop)).group(1))
        return elapsed, accepted
    raise AssertionError("the budget should have stopped the run")


def run_loop(n_proposals: int, *, seed: int = 1) -> tuple[float, int]:
    """The per-particle baseline: one Python iteration per proposal."""
    rng = np.random.default_rng(seed)
    scale = 1.0 / EPSILON
    log_bound = -math.log(2 * scale)
    accepted = 0
    start = time.perf_counter()
    for _ in range(n_proposals):
        theta = rng.gamma(25.0)
        s = rng.poisson(theta)
        log_eta = -abs(RELEASE - s) / scale - math.log(2 * scale)
        if rng.random() < math.exp(log_eta - log_bound):
            accepted += 1
    return time.perf_counter() - start, accepted


def maxrss_bytes() -> int:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss if sys.platform == "darwin" else rss * 1024  # kB on Linux


def traced_peak(n_proposals: int) -> tuple[int, int]:
    """Peak traced bytes of a run, and the bytes its accepted draws must occupy."""
    (_, accepted), peak = traced(run_vectorised, n_proposals)
    return peak, accepted * np.dtype(float).itemsize


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10x fewer proposals")
    args = parser.parse_args(argv)
    n_vec = 10**6 if args.quick else 10**7
    n_loop = 2 * 10**4 if args.quick else 2 * 10**5

    print("rejection_abc throughput: Gamma(25) prior, Poisson simulator, Laplace eps=0.2")
    print(f"release {RELEASE}; one core (executor=None); batch_size {BATCH:,}")
    print("fixed proposal counts via max_simulations=N (SimulationBudgetExceeded stops the run)")

    run_vectorised(BATCH)  # warm-up: imports, first-call caches
    rss_before = maxrss_bytes()

    t_vec, acc_vec = run_vectorised(n_vec)
    rate_vec = n_vec / t_vec
    print(f"vectorised rejection_abc : {n_vec:>12,} proposals in {t_vec:8.3f} s "
          f"= {rate_vec:14,.0f} proposals/s  (acceptance {acc_vec / n_vec:.4f})")  # fmt: skip

    t_loop, acc_loop = run_loop(n_loop)
    rate_loop = n_loop / t_loop
    print(f"per-particle Python loop : {n_loop:>12,} proposals in {t_loop:8.3f} s "
          f"= {rate_loop:14,.0f} proposals/s  (acceptance {acc_loop / n_loop:.4f})")  # fmt: skip
    print(f"speed-up (vectorised / loop): {rate_vec / rate_loop:,.1f}x")
    target = 5e6
    verdict = "meets" if rate_vec >= target else "BELOW"
    print(f"target >= {target:,.0f} proposals/s on one core: {verdict}")

    rss_growth = maxrss_bytes() - rss_before
    # The accepted draws themselves (about 16% of proposals here) are the output and are kept;
    # everything else must stay at one chunk's worth, whatever the number of proposals.
    peaks = {n: traced_peak(n) for n in (n_vec // 10, n_vec)}
    for n, (peak, kept) in peaks.items():
        print(f"tracemalloc peak at {n:>12,} proposals: {peak / 2**20:8.2f} MiB "
              f"= accepted draws {kept / 2**20:6.2f} MiB + working memory "
              f"{(peak - kept) / 2**20:6.2f} MiB")  # fmt: skip
    (small, kept_small), (large, kept_large) = peaks[n_vec // 10], peaks[n_vec]
    ratio = (large - kept_large) / (small - kept_small)
    print(f"working-memory ratio ({n_vec:,} vs {n_vec // 10:,} proposals): {ratio:.2f} "
          f"(bounded: ~1; total peak ratio {large / small:.2f})")  # fmt: skip
    print(f"maxrss growth over the {n_vec:,}-proposal run: {rss_growth / 2**20:.1f} MiB "
          f"(accepted draws in it: {kept_large / 2**20:.1f} MiB)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
