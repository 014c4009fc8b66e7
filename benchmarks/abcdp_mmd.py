"""Distances per second of the exact and random-feature MMD, and an end-to-end ABCDP run.

Setting of Park et al. (2021), Section 6.1: N = 5000 confidential observations, pseudo-
datasets of 5000 points from the mixture of uniforms, Gaussian kernel of bandwidth 0.6.

* ``exact``: the unsquared exact MMD (``O(N^2)`` kernel evaluations per distance).
* ``random features``: the random-feature MMD with 100 frequencies (``O(N D)``).
  Both have the same sensitivity ``2 / N`` (``B_k = 1``), hence the same privacy noise.
  Target: random features at least 20 times faster.
* ``end to end``: :func:`dpinfer.models.mixture_uniform.run_experiment` with
  ``T = 10**4`` proposals (data, simulation, distances and the sparse vector run).

Timings are CPU time of this process (all its threads), so they are meaningful on a busy
machine; wall time and the load average are printed beside them.

Usage: ``python benchmarks/abcdp_mmd.py [--quick]`` (``--quick``: T = 1000 end to end).
"""

from __future__ import annotations

import argparse
import os

import numpy as np
from _common import cpu_timed

import dpinfer as dp
from dpinfer.models import mixture_uniform as mu

N = mu.N_OBSERVATIONS
TARGET_RATIO = 20.0


def bench_distance(distance, observed, pseudo) -> dict:
    """Distances per second of ``distance`` over the pseudo-datasets (after a warm-up)."""
    distance(observed, pseudo[:1])
    values, cpu, wall = cpu_timed(lambda: distance(observed, pseudo))
    return {
        "n": len(pseudo),
        "cpu": cpu,
        "wall": wall,
        "rate": len(pseudo) / cpu,
        "values": values,
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="T = 1000 end to end")
    args = parser.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")

    rng = np.random.default_rng(0)
    observed = mu.confidential_data(rng=rng)
    pseudo = mu.model().simulate(mu.prior().sample(200, rng), rng)
    exact = dp.distances.MMD(mu.BANDWIDTH)
    features = mu.distance(rng=1)
    assert exact.sensitivity(N) == features.sensitivity(N) == 2 / N  # same privacy noise

    ex = bench_distance(exact, observed, pseudo[:4])
    rf = bench_distance(features, observed, pseudo)
    ratio = rf["rate"] / ex["rate"]
    gap = np.max(np.abs(rf["values"][:4] - ex["values"]))
    print(f"N = {N}, sensitivity 2/N = {2 / N:g} for both distances")
    print(
        f"exact MMD:                  {ex['rate']:8.2f} distances/s CPU "
        f"({ex['n']} in {ex['cpu']:.2f} s CPU, {ex['wall']:.2f} s wall)"
    )
    print(
        f"random-feature MMD (D=100): {rf['rate']:8.2f} distances/s CPU "
        f"({rf['n']} in {rf['cpu']:.2f} s CPU, {rf['wall']:.2f} s wall)"
    )
    print(f"ratio random features / exact: {ratio:.1f}x (target >= {TARGET_RATIO:g}x)")
    print(f"largest |RF - exact| on the first 4 distances: {gap:.4f}")

    t = 1000 if args.quick else mu.N_PROPOSALS
    res, cpu, wall = cpu_timed(
        lambda: mu.run_experiment(
            c=100, epsilon_abc=0.1, epsilon_total=1.0, n_proposals=t, rng=2, privacy_rng=3
        )
    )
    print(
        f"end to end, mixture of uniforms, T = {t}, N = {N}, c = 100, eps_total = 1: "
        f"{cpu:.1f} s CPU ({wall:.1f} s wall, {1e3 * cpu / t:.1f} ms per proposal); "
        f"accepted {res.n_accepted[0]}, MSE {res.mse[0]:.5f}"
    )
    print(f"the same T with the exact MMD would take about {t / ex['rate'] / 60:.0f} min CPU")
    if ratio < TARGET_RATIO:
        raise SystemExit(f"random features only {ratio:.1f}x faster than the exact MMD")


if __name__ == "__main__":
    main()
