"""Speed and accuracy of the tuberculosis example of ABCDP (Park et al. 2021, Section 6.3).

Sections (each a function; ``main`` runs the ones asked for):

* ``speed``: simulator runs per second on one core (CPU time), at the truth and averaged
  over prior draws, with events per second; the baseline is the same algorithm as a
  plain Python loop (one Python iteration per event, the numpy Generator drawing each
  number), timed on a few runs. Printed: the ratio.
* ``full`` (``--full``): the paper's error table, ``n`` in {100, 1000} records (``--records``
  to run one), ``T = 1000`` proposals, ``c = 10``, ``epsilon_abc = 150``, ``epsilon_total =
  1``, with and without resampling, and the non-private run on the same draws. Each set of
  public draws (a set of confidential records and up to ``T n = 10^6`` simulator runs) is
  computed once through a process pool (or dask), and ABCDP is run ``--noise`` times on it
  with fresh privacy noise; ``--public`` sets are drawn. Printed: the wall time of every set
  of public draws (the end-to-end time of the full setting is that plus the ABCDP runs, also
  printed), and the errors of single runs (one per set of public draws and noise draw):
  their mean with its standard error over the public sets, their sd and quantiles, beside
  the paper's numbers, each of which is ONE run of the authors' code.

Timings of ``speed`` are CPU time of this single-threaded process, so they measure one core
even on a busy machine; ``full`` reports wall time with the load average.

Measured (``--full --records 100 --public 10 --noise 100``, then ``--records 1000 --public 5
--noise 100``; a process pool of 2 workers on 2 cores shared with other jobs, load average
2-9):

* speed: 3 372-3 376 runs/s at the truth (10 667 events a run, 28 ns an event), 2 410-2 478 runs/s
  over the prior (14 669 events a run on average, up to 244 091; warm-ups up to 300 years);
  the Python loop runs 59.9 runs/s: 56 times slower.
* full setting, ``n = 1000``: the 10^6 simulator runs of one set of public draws took 410 to
  1276 s of wall time (784-2437 runs/s on the shared cores; 2 x 2456 = 4900 runs/s, about
  200 s, on two idle ones); the 300 ABCDP runs on them 13-32 s. ``n = 100``: 10^5 runs in
  63-160 s. The two tables: 20 and 68 minutes.
* mean absolute error of the posterior mean over the four parameters, single runs: 10 sets
  of public draws (n = 100) or 5 (n = 1000), 100 privacy noise draws each; the paper's
  numbers are one run each, unseeded, and ``rank`` is the share of our runs with an error
  at most the paper's::

       n  setting             runs  mean  s.e.    sd    5%   25%   50%   75%   95%  paper rank
     100  without resampling  1000  3.54  0.15  1.48  1.49  2.50  3.29  4.33  6.29   4.51 0.78
     100  with resampling     1000  3.80  0.18  1.56  1.66  2.63  3.58  4.78  6.81   4.71 0.73
     100  non-private           10  1.43  0.27  0.86  0.45  0.87  1.32  1.66  2.85      -    -
    1000  without resampling   500  2.24  0.38  1.10  0.61  1.36  2.13  3.03  4.03   2.10 0.50
    1000  with resampling      500  2.37  0.26  1.11  0.71  1.54  2.30  3.12  4.32   2.20 0.48
    1000  non-private            5  2.12  0.56  1.24  0.94  1.00  1.90  3.03  3.59      -    -

  One run's error varies with the privacy noise alone (sd 0.66-0.91 within a set of public
  draws at n = 1000 without resampling, 1.0-1.7 at n = 100) and more with the records and
  public draws (the five sets' means at n = 1000: 1.17 to 3.40). The paper's runs fall in
  the middle of ours at n = 1000 (ranks 0.50 and 0.48) and in the upper half at n = 100
  (0.78 and 0.73): our runs agree with them, and a table of one run per setting cannot
  rank the settings. (An earlier table of 3 sets gave s.e. 0.04-0.07 at n = 1000: the
  three sets' means happened to agree.) For scale: the mean of 10 random prior draws is
  off by 3.9 on average (the prior mean by 2.5). Every one of the 4500 runs accepted 10
  draws.

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
