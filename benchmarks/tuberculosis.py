"""Speed and accuracy of the tuberculosis example of ABCDP (Park et al. 2021, Section 6.3).

Sections (each a function; ``main`` runs the ones asked for):

* ``speed``: simulator runs per second on one core (CPU time), at the truth and averaged
  over prior draws, with events per second; the baseline is the same algorithm as a
  plain Python loop (one Python iteration per event, the numpy Generator drawing each
  number), timed on a few runs. Printed: the ratio.
* ``full`` (``--full``): the paper's error table, ``n`` in {100, 1000} records, ``T = 1000``
  proposals, ``c = 10``, ``epsilon_abc = 150``, ``epsilon_total = 1``, with and without
  resampling, and the non-private run on the same draws. Each set of public draws (up to
  ``T n = 10^6`` simulator runs) is computed once through a process pool (or dask), and
  ABCDP is run ``--noise`` times on it with fresh privacy noise. Printed: the wall time of
  every set of public draws (the end-to-end time of the full setting is that plus the
  ABCDP runs, also printed), and the mean absolute error of the posterior mean, overall
  and per parameter, next to the paper's.

Timings of ``speed`` are CPU time of this single-threaded process, so they measure one core
even on a busy machine; ``full`` reports wall time with the load average.

Measured (``--full --public 3 --noise 100``, a process pool of 2 workers on 2 cores shared
with other jobs, load average 8-17):

* speed: 3 396 runs/s at the truth (10 667 events a run, 28 ns an event), 2 456 runs/s over
  the prior (14 669 events a run on average, up to 244 091; warm-ups up to 300 years); the
  Python loop runs 60.5 runs/s: 56 times slower.
* full setting, ``n = 1000``: the 10^6 simulator runs of one set of public draws took 1585,
  1866 and 962 s of wall time (536-1040 runs/s on the shared cores; 2 x 2456 = 4900 runs/s,
  about 200 s, on two idle ones); the 300 ABCDP runs on them 5-7 s. ``n = 100``: 10^5 runs
  in 112-126 s. The whole table: 80 minutes.
* mean absolute error of the posterior mean (3 sets of public draws x 100 noise draws;
  s.e. over the public sets; paper in brackets)::

       n  setting              MAE    s.e.   R1     t1     R2     beta
     100  without resampling   3.50   0.21   0.64   6.67   0.053  6.64   (4.51)
     100  with resampling      3.70   0.16   0.64   7.10   0.061  7.02   (4.71)
     100  non-private          0.88   0.28   0.60   0.89   0.021  1.99
    1000  without resampling   2.46   0.04   0.48   3.51   0.021  5.82   (2.10)
    1000  with resampling      2.55   0.07   0.43   4.21   0.023  5.53   (2.20)
    1000  non-private          2.39   0.34   0.51   3.97   0.015  5.05

  For scale: the mean of 10 random prior draws is off by 3.9 on average (the prior mean by
  2.5). Every one of the 1800 runs accepted 10 draws.

Usage: ``python benchmarks/tuberculosis.py [--quick] [--full] [--public N] [--noise N]
[--executor process|dask|serial] [--out FILE]``.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from dpinfer.models import tuberculosis as tb


def python_outbreak(rates, rng: np.random.Generator) -> int:
    """The baseline: the same process as a plain Python event loop; returns observations."""
    beta, a_c, d_c, a_nc, d_nc = (float(r) for r in rates)
    p_c, p_obs = tb.P_COMPLIANCE, tb.P_OBSERVED
    entries = beta / (1 - p_c * a_c / d_c - (1 - p_c) * a_nc / d_nc)
    means = (p_c * entries / d_c, (1 - p_c) * entries / d_nc)
    cases: tuple[list, list] = ([], [])  # cluster of every compliant / non-compliant case
    observed: dict[int, int] = {}
    clusters, t, year, reached, t_warm, horizon, phase = 0, 0.0, 0, [False, False], 0.0, 1.0, 0
    while True:
        n_c, n_nc = len(cases[0]), len(cases[1])
        total = beta + (a_c + d_c) * n_c + (a_nc + d_nc) * n_nc
        t_next = t + rng.exponential(1.0 / total)
        if t_next >= horizon:
            t = horizon
            if phase == 0:
                year += 1
                reached = [reached[0] or n_c >= means[0], reached[1] or n_nc >= means[1]]
                if all(reached) or year >= tb.MAX_WARMUP_YEARS:
                    t_warm, phase = max(2.0 * year, tb.MIN_WARMUP), 1
                    horizon = t_warm
                else:
                    horizon = year + 1.0
            elif phase == 1:
                phase, horizon = 2, t_warm + tb.T_OBS
            else:
                return sum(observed.values())
            continue
        t = t_next
        u = rng.random() * total
        if u < beta:
            cases[rng.random() >= p_c].append(clusters)
            clusters += 1
            continue
        u -= beta
        source = 0 if u < (a_c + d_c) * n_c else 1
        pool = cases[source]
        j = int(rng.random() * len(pool))
        birth = u < a_c * n_c if source == 0 else u - (a_c + d_c) * n_c < a_nc * n_nc
        if birth:
            cases[rng.random() >= p_c].append(pool[j])
        else:
            cluster = pool[j]
            pool[j] = pool[-1]
            pool.pop()
            if phase == 2 and rng.random() < p_obs:
                observed[cluster] = observed.get(cluster, 0) + 1


def bench_speed(*, quick: bool) -> list[str]:
    """Simulator runs per second: numba at the truth and over the prior, Python baseline."""
    n_truth, n_prior, n_python = (300, 300, 2) if quick else (4000, 4000, 10)
    tb.simulate(tb.TRUTH, rng=0)  # compile (or load the cache) first
    truth = {k: np.full(n_truth, v) for k, v in tb.TRUTH.items()}
    start = time.process_time()
    stats, diag = tb.simulate(truth, rng=1, diagnostics=True)
    cpu_truth = time.process_time() - start
    prior = tb.prior().sample(n_prior, np.random.default_rng(2))
    start = time.process_time()
    _, diag_prior = tb.simulate(prior, rng=3, diagnostics=True)
    cpu_prior = time.process_time() - start
    rates, rng = tb.rates(tb.TRUTH), np.random.default_rng(4)
    start = time.process_time()
    baseline_obs = [python_outbreak(rates, rng) for _ in range(n_python)]
    cpu_python = time.process_time() - start
    per_s = n_truth / cpu_truth
    per_s_python = n_python / cpu_python
    events = diag["events"].mean()
    return [
        f"numba, at the truth: {n_truth} runs in {cpu_truth:.2f} s CPU: {per_s:,.0f} runs/s, "
        f"{events:,.0f} events a run, {1e9 * cpu_truth / diag['events'].sum():.0f} ns/event; "
        f"{stats[:, 0].mean():.1f} observations a run",
        f"numba, over {n_prior} prior draws: {n_prior / cpu_prior:,.0f} runs/s "
        f"({diag_prior['events'].mean():,.0f} events a run on average, "
        f"{diag_prior['events'].max():,.0f} at most; warm-up up to "
        f"{diag_prior['warmup'].max():.0f} years)",
        f"Python loop (baseline), at the truth: {n_python} runs in {cpu_python:.2f} s CPU: "
        f"{per_s_python:.2f} runs/s ({np.mean(baseline_obs):.0f} observations a run)",
        f"speed-up of the numba simulator over the Python loop: {per_s / per_s_python:,.0f}x",
    ]


def bench_full(
    *, quick: bool, public: int, noise: int, executor_name: str, out, records=None
) -> list[str]:
    """The error table of Section 6.3 and the time of every full setting."""
    n_values, n_proposals = ((20, 50), 100) if quick else (tb.N_RECORDS, tb.N_PROPOSALS)
    n_values = n_values if records is None else records
    executor, closer = _executor(executor_name)
    try:
        start = time.perf_counter()
        table = tb.error_table(
            n_values,
            n_proposals=n_proposals,
            public_repetitions=public,
            noise_repetitions=noise,
            rng=20210806,
            privacy_rng=61,
            executor=executor,
            progressbar=False,
        )
        total = time.perf_counter() - start
    finally:
        closer()
    if out:
        table.to_netcdf(out)
    lines = [
        f"executor: {executor_name}; {public} public repetition(s), {noise} noise repetitions; "
        f"total {total / 60:.1f} min wall; load average {os.getloadavg()[0]:.1f} on "
        f"{os.cpu_count()} cores",
    ]
    for n in table["n_records"].values:
        secs = table["seconds"].sel(n_records=n).values
        runs = int(n) * n_proposals
        for p, (draws, abcdp) in enumerate(secs):
            lines.append(
                f"  n = {int(n)}: public draws {p}: {runs:,} simulator runs in {draws:.0f} s "
                f"({runs / draws:,.0f} runs/s); {len(tb.SETTINGS)} settings x {noise} ABCDP "
                f"runs in {abcdp:.1f} s; end to end {draws + abcdp:.0f} s"
            )
    lines += ["", tb.summarise_errors(table), _random_draws_reference()]
    accepted = table["n_accepted"].values
    lines.append(f"runs accepting nothing: {int(np.sum(accepted == 0))} of {accepted.size}")
    return lines


def _random_draws_reference(reps: int = 20_000) -> str:
    """Errors of the prior mean and of c random prior draws' mean (a run accepting at random)."""
    rng = np.random.default_rng(0)
    draws = tb.prior().sample(200_000, rng)
    values = np.column_stack([draws[k] for k in tb.PARAMETERS])
    truth = np.array([tb.TRUTH[k] for k in tb.PARAMETERS])
    random_means = values[rng.integers(0, len(values), (reps, tb.C))].mean(axis=1)
    return (
        f"for scale: the prior mean has MAE {np.abs(values.mean(0) - truth).mean():.2f}; the "
        f"mean of {tb.C} random prior draws {np.abs(random_means - truth).mean(1).mean():.2f}"
    )


def _executor(name: str):
    if name == "serial":
        return None, lambda: None
    if name == "process":
        pool = ProcessPoolExecutor(
            os.cpu_count() or 1, mp_context=multiprocessing.get_context("spawn")
        )
        return pool, pool.shutdown
    if name == "dask":
        from dask.distributed import Client, LocalCluster

        cluster = LocalCluster(
            n_workers=os.cpu_count() or 1, threads_per_worker=1, dashboard_address=None
        )
        client = Client(cluster)

        def close():
            client.close()
            cluster.close()

        return client.get_executor(), close
    raise ValueError(f"unknown executor {name!r}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke test)")
    parser.add_argument("--full", action="store_true", help="the error table (long)")
    parser.add_argument("--public", type=int, default=1, help="public repetitions per n")
    parser.add_argument("--noise", type=int, default=100, help="ABCDP runs per setting")
    parser.add_argument("--executor", default="process", choices=("process", "dask", "serial"))
    parser.add_argument("--out", default=None, help="write the error table (netCDF) here")
    parser.add_argument(
        "--records", default=None, help="numbers of records, comma-separated (default 100,1000)"
    )
    args = parser.parse_args(argv)
    print(f"tuberculosis example (Park et al. 2021, Section 6.3); Python {sys.version.split()[0]}")
    for line in bench_speed(quick=args.quick):
        print(line, flush=True)
    if args.full or args.quick:
        for line in bench_full(
            quick=args.quick,
            public=args.public,
            noise=args.noise,
            executor_name=args.executor,
            out=args.out,
            records=None if args.records is None else [int(n) for n in args.records.split(",")],
        ):
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
