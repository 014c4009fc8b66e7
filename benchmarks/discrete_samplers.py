"""Exact discrete samplers: releases per second, ours beside OpenDP's, in one run.

For ``DiscreteLaplace`` and ``DiscreteGaussian`` at several scales, the rate of
``mech.release(zeros(n))`` on the curator path (``rng=None``: every bit from the OS
CSPRNG) and with a seeded Generator, beside

- the pure-Python reference of the same algorithm (the implementation before the
  compiled kernels; one Python loop per draw), and
- OpenDP's exact samplers (``make_laplace`` / ``make_gaussian`` on integer vectors, which
  also draw from the OS CSPRNG), if ``opendp`` is installed (``pip install opendp``; it is
  not a dependency of dpinfer). Their time includes converting the list of values.

Each rate is the best of ``--repeats`` runs, by CPU time of this process (user and
system, so the OS generator's work counts) and, for our curator path, also by wall
clock. On a shared, loaded machine the CPU figures are the comparable ones.

A second table releases tables of 1,000 cells with per-cell scales (1, 3, 100 and 1,000
distinct values), seeded, beside the same number of draws at one scale and beside the
route a user had before per-cell scales: one mechanism per distinct scale, released
group by group.
Usage: ``python benchmarks/discrete_samplers.py [--quick]``.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import time
from fractions import Fraction

import numpy as np

import dpinfer as dp
from dpinfer.mechanisms import _bits, _exact

SCALES = (1.0, 3.7306, 100.0, 10_000.0)
FAMILIES = (("laplace", "DiscreteLaplace"), ("gaussian", "DiscreteGaussian"))


def best_rate(run, n: int, repeats: int) -> tuple[float, float]:
    """Draws per second of ``run()`` (``n`` draws), best of ``repeats``: (CPU, wall)."""
    cpu = wall = float("inf")
    for _ in range(repeats):
        start_cpu, start_wall = time.process_time(), time.perf_counter()
        run()
        cpu = min(cpu, time.process_time() - start_cpu)
        wall = min(wall, time.perf_counter() - start_wall)
    return n / cpu, n / wall


def ours(kind: str, scale: float, n: int, repeats: int, rng) -> tuple[float, float]:
    mech = dp.DiscreteLaplace(scale) if kind == "laplace" else dp.DiscreteGaussian(scale)
    zeros = np.zeros(n, dtype=np.int64)
    mech.release(zeros[:10], rng=rng)  # compile (or load the cached kernels) first
    return best_rate(lambda: mech.release(zeros, rng=rng), n, repeats)


def python_reference(kind: str, scale: float, n: int) -> float:
    param = Fraction(scale) if kind == "laplace" else Fraction(scale**2)
    draw = _exact.discrete_laplace if kind == "laplace" else _exact.discrete_gaussian
    reader = _bits.BitReader(np.empty(0, np.uint64), 0, _bits.OSWords())

    def run():
        for _ in range(n):
            draw(param.numerator, param.denominator, reader)

    return best_rate(run, n, 1)[0]


def opendp_rate(kind: str, scale: float, n: int, repeats: int) -> float | None:
    try:
        import opendp.prelude as odp
    except ImportError:
        return None
    odp.enable_features("contrib")
    domain = odp.vector_domain(odp.atom_domain(T=int))
    if kind == "laplace":
        meas = odp.m.make_laplace(domain, odp.l1_distance(T=int), scale=scale)
    else:
        meas = odp.m.make_gaussian(domain, odp.l2_distance(T=int), scale=scale)
    zeros = [0] * n
    return best_rate(lambda: meas(zeros), n, repeats)[0]


def per_cell_rates(kind: str, rows: int, repeats: int) -> list[tuple]:
    """Per distinct-scale count: (distinct, per-cell rate, one-scale rate, group-loop rate)."""
    family = dp.DiscreteLaplace if kind == "laplace" else dp.DiscreteGaussian
    cells = 1_000
    out = []
    one = family(3.7306, event_shape=(cells,))
    zeros = np.zeros((rows, cells), dtype=np.int64)
    one.release(zeros[:2], rng=1)
    single, _ = best_rate(lambda: one.release(zeros, rng=1), zeros.size, repeats)
    for distinct in (1, 3, 100, 1_000):
        scales = 3.7306 * (1 + np.arange(distinct) / distinct)[np.arange(cells) % distinct]
        mech = family(scales)
        table, _ = best_rate(lambda mech=mech: mech.release(zeros, rng=1), zeros.size, repeats)
        groups = [(family(v), int(np.sum(scales == v)) * rows) for v in np.unique(scales)]

        def loop(groups=groups):
            for m, size in groups:
                m.release(np.zeros(size, dtype=np.int64), rng=1)

        looped, _ = best_rate(loop, zeros.size, repeats)
        out.append((distinct, table, single, looped))
    return out


def print_header(*columns: str) -> None:
    """Print a table's header and a rule under it."""
    header = "".join(columns)
    print(header)
    print("-" * len(header))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller samples")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    n_ours = 200_000 if args.quick else 2_000_000
    n_other = 20_000 if args.quick else 200_000
    n_python = 5_000 if args.quick else 20_000

    try:
        odp_version = importlib.metadata.version("opendp")
    except importlib.metadata.PackageNotFoundError:
        odp_version = None
        print("OpenDP is not installed (pip install opendp): its column is skipped.\n")

    print(f"releases per second (best of {args.repeats}; ours on {n_ours:,} draws)")
    print_header(
        f"{'mechanism':<17}{'scale':>8}{'ours OS, wall':>15}{'ours OS, CPU':>14}",
        f"{'seeded, CPU':>13}{'Python, CPU':>13}{'OpenDP, CPU':>13}{'ours/OpenDP':>13}",
    )
    for kind, name in FAMILIES:
        for scale in SCALES:
            os_cpu, os_wall = ours(kind, scale, n_ours, args.repeats, None)
            seeded, _ = ours(kind, scale, n_ours, args.repeats, 1)
            ref = python_reference(kind, scale, n_python)
            other = opendp_rate(kind, scale, n_other, args.repeats)
            other_text = f"{other:>13.3g}" if other else f"{'-':>13}"
            ratio = f"{os_cpu / other:>13.1f}" if other else f"{'-':>13}"
            print(
                f"{name:<17}{scale:>8g}{os_wall:>15.3g}{os_cpu:>14.3g}{seeded:>13.3g}"
                f"{ref:>13.3g}{other_text}{ratio}"
            )
    rows = 200 if args.quick else 2_000
    print(
        f"\nper-cell scales: tables of 1,000 cells x {rows:,} rows, seeded, CPU draws per second"
    )
    print_header(
        f"{'mechanism':<17}{'distinct':>9}{'per-cell':>11}{'one scale':>11}",
        f"{'ratio':>7}{'group loop':>12}{'ratio':>7}",
    )
    for kind, name in FAMILIES:
        for distinct, table, single, looped in per_cell_rates(kind, rows, args.repeats):
            print(
                f"{name:<17}{distinct:>9}{table:>11.3g}{single:>11.3g}{table / single:>7.2f}"
                f"{looped:>12.3g}{table / looped:>7.2f}"
            )
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"\nPython: the pure-Python reference, {n_python:,} draws; load average {load:.1f}.")
    if odp_version:
        print(f"\nOpenDP {odp_version}, on {n_other:,} draws per call.")


if __name__ == "__main__":
    main()
