"""Throughput and accuracy of the SIR simulators (Xiong, Ju & Zhang 2023, Section 4.1).

Sections (each a function; ``main`` runs the ones asked for):

* ``exact``: trajectories per second of Gillespie's direct method at K = 10**6 and the truth
  (log beta, log gamma) = (-0.5, -3), one core. Target: at most 30 ms per trajectory.
* ``approx``: trajectories per second of the hybrid tau-leaping simulator, same setting.
  Target: at least 10**4 trajectories per second.
* ``accuracy`` (``--accuracy``, a few minutes): the approximate simulator against the exact
  one, difference of mean curves and of 10/50/90% quantiles of I at each time, relative to K,
  with bootstrap Monte Carlo standard errors.

Timings are CPU time of this (single-threaded) process, so they measure one core even on a
busy machine; wall time is printed beside them, with the load average. They exclude numba
compilation (a warm-up call runs first).

Usage: ``python benchmarks/sir.py [--quick] [--accuracy]``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np

from dpinfer.models import sir

BETA = math.exp(sir.TRUTH["log_beta"])
GAMMA = math.exp(sir.TRUTH["log_gamma"])
EXACT_TARGET_MS = 30.0
APPROX_TARGET_PER_S = 1e4
QUANTILES = (0.1, 0.5, 0.9)


def _warm_up() -> None:
    sir.simulate_exact([BETA], [GAMMA], population=100, rng=0)
    sir.simulate_approx([BETA], [GAMMA], population=100, rng=0)


def bench_exact(n_traj: int, *, population: int = sir.POPULATION, seed: int = 1) -> dict:
    """Time ``n_traj`` exact trajectories at the truth; count their events."""
    beta, gamma = np.full(n_traj, BETA), np.full(n_traj, GAMMA)
    wall, start = time.perf_counter(), time.process_time()
    curves = sir.simulate_exact(beta, gamma, population=population, rng=seed, full=True)
    elapsed, wall = time.process_time() - start, time.perf_counter() - wall
    s_last, r_last = curves[:, 0, -1], curves[:, 2, -1]
    events = float(np.sum(population - 1 - s_last) + np.sum(r_last))  # infections + recoveries
    # Epidemics that die out early cost next to nothing; charge the time to the others.
    took_off = int(np.sum(r_last + curves[:, 1, -1] > population // 10))
    return {
        "seconds": elapsed,
        "wall_seconds": wall,
        "ms_per_traj": 1e3 * elapsed / n_traj,
        "ms_per_epidemic": 1e3 * elapsed / max(took_off, 1),
        "per_second": n_traj / elapsed,
        "events_per_epidemic": events / max(took_off, 1),
        "ns_per_event": 1e9 * elapsed / events,
        "took_off": took_off,
    }


def bench_approx(
    n_traj: int, *, population: int = sir.POPULATION, dt: float = 0.5, seed: int = 2
) -> dict:
    """Time ``n_traj`` approximate trajectories at the truth."""
    beta, gamma = np.full(n_traj, BETA), np.full(n_traj, GAMMA)
    wall, start = time.perf_counter(), time.process_time()
    sir.simulate_approx(beta, gamma, population=population, dt=dt, rng=seed)
    elapsed, wall = time.process_time() - start, time.perf_counter() - wall
    return {
        "seconds": elapsed,
        "wall_seconds": wall,
        "ms_per_traj": 1e3 * elapsed / n_traj,
        "per_second": n_traj / elapsed,
    }


def _summaries(curves: np.ndarray) -> np.ndarray:
    """Mean and quantiles of I at each time: shape (1 + len(QUANTILES), L)."""
    return np.vstack([curves.mean(axis=0), np.quantile(curves, QUANTILES, axis=0)])


def _bootstrap_se(curves: np.ndarray, rng: np.random.Generator, reps: int = 200) -> np.ndarray:
    n = len(curves)
    draws = [_summaries(curves[rng.integers(0, n, n)]) for _ in range(reps)]
    return np.std(draws, axis=0, ddof=1)


def accuracy(
    *,
    n_exact: int = 2000,
    n_approx: int = 20000,
    population: int = sir.POPULATION,
    dt: float = 0.5,
    seed: int = 2024,
) -> dict:
    """Approximate against exact curves at the truth: differences relative to K, and SEs."""
    seeds = np.random.SeedSequence(seed).spawn(3)
    start = time.perf_counter()
    exact = sir.simulate_exact(
        np.full(n_exact, BETA), np.full(n_exact, GAMMA), population=population, rng=seeds[0]
    )
    exact_seconds = time.perf_counter() - start
    approx = sir.simulate_approx(
        np.full(n_approx, BETA),
        np.full(n_approx, GAMMA),
        population=population,
        dt=dt,
        rng=seeds[1],
    )
    boot = np.random.default_rng(seeds[2])
    ex, ap = _summaries(exact), _summaries(approx)
    se = np.sqrt(_bootstrap_se(exact, boot) ** 2 + _bootstrap_se(approx, boot) ** 2)
    diff = (ap - ex) / population
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(se > 0, (ap - ex) / se, 0.0)
    return {
        "exact": ex / population,
        "diff": diff,
        "se": se / population,
        "z": z,
        "peak": float(ex[0].max() / population),
        "extinct": (float(np.mean(exact[:, -1] == 0)), float(np.mean(approx[:, -1] == 0))),
        "n_exact": n_exact,
        "n_approx": n_approx,
        "population": population,
        "dt": dt,
        "exact_seconds": exact_seconds,
    }


def report_speed(*, quick: bool) -> list[str]:
    """Run the exact and approximate throughput sections; return report lines."""
    n_exact, n_approx = (5, 2_000) if quick else (40, 20_000)
    _warm_up()
    ex = bench_exact(n_exact)
    ap = bench_approx(n_approx)
    ok_ex = "meets" if ex["ms_per_epidemic"] <= EXACT_TARGET_MS else "MISSES"
    ok_ap = "meets" if ap["per_second"] >= APPROX_TARGET_PER_S else "MISSES"
    return [
        f"exact (Gillespie direct method): {n_exact} trajectories in {ex['seconds']:.2f} s CPU "
        f"({ex['wall_seconds']:.2f} s wall), "
        f"{ex['ms_per_traj']:.1f} ms/trajectory ({ex['per_second']:.1f} trajectories/s);",
        f"  {ex['took_off']} took off: {ex['ms_per_epidemic']:.1f} ms per full epidemic, "
        f"{ex['events_per_epidemic'] / 1e6:.2f} million events each, "
        f"{ex['ns_per_event']:.1f} ns/event; "
        f"target <= {EXACT_TARGET_MS:g} ms/trajectory: {ok_ex}",
        f"approx (hybrid tau-leaping, dt = 0.5): {n_approx} trajectories in "
        f"{ap['seconds']:.2f} s CPU ({ap['wall_seconds']:.2f} s wall): "
        f"{1e3 * ap['ms_per_traj']:.1f} us/trajectory, "
        f"{ap['per_second']:,.0f} trajectories/s",
        f"  target >= {APPROX_TARGET_PER_S:,.0f} trajectories/s: {ok_ap}; "
        f"speed-up over exact per full epidemic: "
        f"{ex['ms_per_epidemic'] / ap['ms_per_traj']:,.0f}x",
    ]


def report_accuracy(*, quick: bool) -> list[str]:
    """Run the accuracy section; return report lines."""
    kwargs = {"n_exact": 200, "n_approx": 2000} if quick else {}
    res = accuracy(**kwargs)
    names = ("mean", *(f"q{round(100 * q)}" for q in QUANTILES))
    times = sir.TIMES
    lines = [
        f"approx (dt = {res['dt']:g}) against exact at the truth, K = {res['population']:,}: "
        f"{res['n_exact']} exact ({res['exact_seconds']:.0f} s) and {res['n_approx']} "
        "approximate curves",
        "differences (approx - exact) / K; +- bootstrap MC standard error of the difference",
        f"{'t':>5} {'exact mean/K':>13}" + "".join(f" {name + ' diff':>18}" for name in names),
    ]
    for j, t in enumerate(times):
        cells = "".join(
            f" {res['diff'][r, j]:+9.4f}+-{res['se'][r, j]:.4f}" for r in range(len(names))
        )
        lines.append(f"{t:5g} {res['exact'][0, j]:13.4f}{cells}")
    late = slice(1, None)  # t = 0 is the initial state in both
    worst = np.abs(res["diff"][:, late]).max(axis=1)
    lines.append(
        "max |diff|/K over t > 0: "
        + ", ".join(f"{n} {w:.4f}" for n, w in zip(names, worst, strict=True))
        + f"; peak of the exact mean curve {res['peak']:.4f} K; "
        f"max |z| {np.abs(res['z'][:, late]).max():.1f} over {worst.size * (times.size - 1)}"
        " comparisons"
    )
    lines.append(
        "died out (I = 0 at the last time): exact {:.2%}, approx {:.2%}; "
        "theory gamma/beta = {:.2%}".format(*res["extinct"], GAMMA / BETA)
    )
    return lines


def main(argv: list[str] | None = None) -> int:
    """Run the requested sections and print their reports."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few trajectories (smoke test)")
    parser.add_argument(
        "--accuracy", action="store_true", help="also measure approx against exact (minutes)"
    )
    args = parser.parse_args(argv)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"SIR simulators, K = {sir.POPULATION:,}, truth (beta, gamma) = ({BETA:.4f}, "
        f"{GAMMA:.4f}); load average {load} on {os.cpu_count()} CPUs; one core"
    )
    for line in report_speed(quick=args.quick):
        print(line)
    if args.accuracy:
        print()
        for line in report_accuracy(quick=args.quick):
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
