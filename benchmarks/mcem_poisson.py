"""Time and simulations for Monte Carlo EM to converge on Gong's Poisson count (Section 5.1).

s ~ Poisson(theta), released with Laplace noise (epsilon = 0.2, scale 5); release 37.4;
start theta = 1. Two sample-size schedules of ``dpinfer.mcem``:

* ``staged``: Gong's Appendix E, N = 1e3, 1e5, 1e7 with tolerances 1e-3,
  1e-4, 1e-5 on successive values, plus the information pass at N = 1e7;
* ``auto`` (the default of ``dpinfer.mcem``): ascent-based sample sizes (Caffo, Jank and
  Jones 2005), plus the information pass at N = 1e6.

The likelihood is PyMC's Poisson (derivatives by PyTensor autodiff); it is compiled
before timing. The exact MLE and observed information come from summation over the
count. Peak traced memory shows that N = 1e7 streams in chunks. One core
(``executor=None``), several seeds per schedule.

Usage: ``python benchmarks/mcem_poisson.py [--quick]`` (``--quick``: one seed).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from _common import traced

from dpinfer.models import poisson_count as pc


def run(schedule, seed):
    start = time.perf_counter()
    fit = pc.mle(schedule=schedule, rng=seed)
    return fit, time.perf_counter() - start


def peak_memory(schedule, seed) -> float:
    """Peak traced memory (MB) of one fit (traced separately: tracing slows numpy)."""
    return traced(pc.mle, schedule=schedule, rng=seed)[1] / 1e6


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one seed per schedule")
    args = parser.parse_args(argv)
    seeds = [1] if args.quick else [1, 2, 3]

    ref = pc.exact_mle()
    pc._shared_likelihood().derivatives(np.arange(3), np.array([2.0]), order=2)  # compile

    print(__doc__.splitlines()[0])
    print(
        f"exact (summation): theta = {ref['estimate']:.4f}, "
        f"information = {ref['information']:.5e}; Gong: 37.237 and 1.582e-2\n"
    )
    head = (
        f"{'schedule':<8}{'seed':>5}{'time s':>9}{'simulations':>14}{'iters':>7}"
        f"{'theta':>10}{'MC s.e.':>9}{'z':>7}{'information':>13}"
    )
    print(head)
    summary = {}
    for name in ("staged", "auto"):
        times, sims = [], []
        for seed in seeds:
            fit, elapsed = run(name, seed)
            theta, mcse = fit.estimate["theta"], fit.monte_carlo_se["theta"]
            info = float(fit.observed_information[0, 0])
            print(
                f"{name:<8}{seed:>5}{elapsed:>9.2f}{fit.n_simulations:>14,}{fit.iterations:>7}"
                f"{theta:>10.4f}{mcse:>9.4f}{(theta - ref['estimate']) / mcse:>7.2f}"
                f"{info:>13.5e}"
            )
            assert fit.converged, f"{name} seed {seed} did not converge"
            times.append(elapsed)
            sims.append(fit.n_simulations)
        summary[name] = (statistics.median(times), statistics.median(sims))
    print()
    for name, (t, n) in summary.items():
        print(f"{name:<8} median time {t:7.2f} s, median simulations {int(n):>13,}")
    ratio_t = summary["staged"][0] / summary["auto"][0]
    ratio_n = summary["staged"][1] / summary["auto"][1]
    print(f"staged / auto: {ratio_t:.1f}x the time, {ratio_n:.1f}x the simulations")
    print(f"peak traced memory of a staged fit (N up to 1e7): {peak_memory('staged', 1):.1f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
