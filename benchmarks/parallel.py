"""Speed-up of rejection ABC and SMC-ABC over process workers and dask, and chunk overheads.

Problem: ``theta ~ N(0, 1)``; the confidential statistic is the mean of ``K = 1000`` draws
of ``N(theta, 1)`` (a simulator costing about 10 microseconds per draw on one core: its cost
is measured and printed); the release adds Laplace noise of scale 0.05; ``s_dp = 0.3``.

Each sampler runs, with the same seed, under

* ``serial``: ``executor=None``, in this process;
* ``1 process``, ``2 processes``: ``concurrent.futures.ProcessPoolExecutor`` (spawn);
* ``dask (2)``: a dask ``LocalCluster`` of 2 single-threaded worker processes;

and must return the same draws under every executor. Printed: wall time of each run, the
speed-up of 2 workers over 1 (target: at least 1.6 on an idle 2-core machine), and the
overheads of a chunk: the cloudpickled task sent with it, the result it returns, and the
time the pool adds per chunk (``1 process`` minus ``serial``, per chunk). Pools are started
(and warmed up with one small run) before timing, so start-up is not counted.

The machine's load average is printed before and after: on a shared machine the speed-up
is limited by the cores other processes take. The CPU time of each run (this process plus
the pool's workers, read from /proc) does not depend on that load much: the ratio of the
2-worker run's CPU time to the serial run's is the parallel overhead, and bounds the
speed-up an idle machine would give.

Usage: ``python benchmarks/parallel.py [--quick]``.
"""

from __future__ import annotations

import argparse
import functools
import logging
import multiprocessing
import os
import pickle
import time
from concurrent.futures import ProcessPoolExecutor

import cloudpickle
import numpy as np
import scipy.stats as st

import dpinfer as dp

K = 1000  # draws averaged per simulation
RELEASED = 0.3
SCALE = 0.05


def simulate(params, rng):
    theta = np.asarray(params["theta"])
    return theta + rng.standard_normal((theta.size, K)).mean(axis=1)


def make_problem():
    model = dp.Model(prior={"theta": st.norm(0.0, 1.0)}, simulate=simulate)
    return model, dp.Laplace(SCALE, sensitivity=1.0)


def simulation_cost(n: int = 20_000) -> float:
    """Seconds per simulated statistic, one core."""
    rng = np.random.default_rng(0)
    theta = {"theta": rng.standard_normal(n)}
    start = time.perf_counter()
    simulate(theta, rng)
    return (time.perf_counter() - start) / n


def run_on_problem(sampler, executor, **options):
    """``sampler`` on the benchmark's problem, seed 2024, its chunks sent to ``executor``."""
    model, mech = make_problem()
    return sampler(
        model, mech, RELEASED, rng=2024, executor=executor, progressbar=False, **options
    )


rejection = functools.partial(run_on_problem, dp.rejection_abc)  # draws=, batch_size=
smc = functools.partial(run_on_problem, dp.smc_abc)  # particles=, batch_size=


def cpu_seconds(pool) -> float:
    """CPU time used so far by this process and, for a process pool, its workers (Linux)."""
    total = time.process_time()
    tick = os.sysconf("SC_CLK_TCK")
    for pid in getattr(pool, "_processes", None) or {}:
        try:
            fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick  # utime + stime
    return total


def timed(fn, pool, **kwargs):
    cpu, start = cpu_seconds(pool), time.perf_counter()
    out = fn(pool, **kwargs)
    return time.perf_counter() - start, out, cpu_seconds(pool) - cpu


def draws_of(idata) -> np.ndarray:
    return np.asarray(idata.posterior["theta"]).ravel()


def chunk_overheads(batch_size: int) -> dict:
    """Sizes and (de)serialisation times of one rejection chunk's task and result."""
    model, mech = make_problem()
    log_bound = mech.log_max_density_at(np.asarray(RELEASED))

    def task(_, rng):
        from dpinfer.samplers.rejection import _rejection_chunk

        return _rejection_chunk(model, mech, np.asarray(RELEASED), log_bound, batch_size, rng)

    start = time.perf_counter()
    blob = cloudpickle.dumps(task)
    dumps = time.perf_counter() - start
    start = time.perf_counter()
    cloudpickle.loads(blob)
    loads = time.perf_counter() - start
    result = task(0, np.random.default_rng(0))
    return {
        "task_bytes": len(blob),
        "task_dumps_ms": 1e3 * dumps,
        "task_loads_ms": 1e3 * loads,
        "result_bytes": len(pickle.dumps(result)),
        "accepted_per_chunk": int(result["_n"]),
    }


def executors(workers: int):
    ctx = multiprocessing.get_context("spawn")
    pools = {
        f"{n} process{'es' if n > 1 else ''}": ProcessPoolExecutor(n, mp_context=ctx)
        for n in (1, workers)
    }
    cluster = client = None
    try:
        import dask.distributed as dd

        cluster = dd.LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
        )
        client = dd.Client(cluster)
        pools[f"dask ({workers})"] = client.get_executor()
    except ImportError:  # pragma: no cover - dask is the 'distributed' extra
        print("dask is not installed: pip install 'dpinfer[distributed]'")
    return pools, (client, cluster)


def drain(pool, workers: int = 2) -> None:
    """Wait until every chunk submitted to ``pool`` so far has finished."""
    if pool is not None:
        for future in [pool.submit(time.sleep, 0.0) for _ in range(4 * workers)]:
            future.result()


def report(name, results, n_chunks, serial_key="serial", one="1 process", two="2 processes"):
    base = results[serial_key][0]
    print(f"\n{name}")
    print(f"{'executor':<14}{'wall s':>9}{'vs serial':>11}{'vs 1 worker':>13}{'CPU s':>9}")
    for key, (seconds, _, cpu) in results.items():
        counted = "" if key.startswith("dask") else f"{cpu:9.2f}"
        print(
            f"{key:<14}{seconds:9.2f}{base / seconds:10.2f}x"
            f"{results[one][0] / seconds:12.2f}x{counted}"
        )
    serial_cpu, two_cpu = results[serial_key][2], results[two][2]
    print(
        f"CPU of the 2-worker run (main process and workers) / CPU of the serial run: "
        f"{two_cpu / serial_cpu:.2f}; on an idle machine at most {2 * serial_cpu / two_cpu:.2f}x "
        "faster than serial"
    )
    overhead = (results[one][0] - base) / n_chunks
    print(f"pool overhead per chunk ({n_chunks} chunks): {1e3 * overhead:+.1f} ms")
    speedup = results[one][0] / results[two][0]
    print(f"speed-up of 2 workers over 1: {speedup:.2f}x (target >= 1.6 on an idle machine)")
    reference = draws_of(results[serial_key][1])
    same = all(np.array_equal(draws_of(out), reference) for _, out, _ in results.values())
    print(f"same draws under every executor: {same}")
    return speedup, same


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smaller run (about 1 minute)")
    args = parser.parse_args(argv)
    draws, particles = (4_000, 5_000) if args.quick else (10_000, 20_000)
    rejection_batch, smc_batch = 2_500, particles // 8
    logging.getLogger("distributed").setLevel(logging.ERROR)

    print(f"load average before: {os.getloadavg()}; cores: {os.cpu_count()}")
    cost = simulation_cost()
    print(f"simulator: {1e6 * cost:.1f} microseconds per draw (one core)")
    overheads = chunk_overheads(rejection_batch)
    print(
        f"rejection chunk of {rejection_batch} proposals: task {overheads['task_bytes']:,} "
        f"bytes (cloudpickle dumps {overheads['task_dumps_ms']:.2f} ms, loads "
        f"{overheads['task_loads_ms']:.2f} ms), result {overheads['result_bytes']:,} bytes "
        f"({overheads['accepted_per_chunk']} accepted draws), compute about "
        f"{1e3 * cost * rejection_batch:.0f} ms"
    )

    pools, (client, cluster) = executors(2)
    try:
        for pool in pools.values():  # start the workers and import dpinfer in them
            rejection(pool, draws=50, batch_size=5_000)
        runs = {"rejection ABC": {}, "SMC-ABC": {}}
        for key, pool in [("serial", None), *pools.items()]:
            runs["rejection ABC"][key] = timed(
                rejection, pool, draws=draws, batch_size=rejection_batch
            )
            drain(pool)  # chunks still running after rejection ABC stopped must not slow SMC
            runs["SMC-ABC"][key] = timed(smc, pool, particles=particles, batch_size=smc_batch)
    finally:
        for pool in pools.values():
            pool.shutdown()
        if client is not None:
            client.close()
            cluster.close()

    rej = runs["rejection ABC"]["serial"][1].posterior.attrs
    sims = int(rej["n_simulations"])
    ok = True
    for name, results in runs.items():
        if name == "rejection ABC":
            n_chunks = sims // rejection_batch
            label = f"rejection ABC: {draws} draws, {sims:,} simulations, {n_chunks} chunks"
        else:
            attrs = results["serial"][1].posterior.attrs
            n_sim = int(attrs["n_simulations"])
            n_chunks = n_sim // smc_batch
            label = (
                f"SMC-ABC: {particles} particles, {int(attrs['n_stages'])} stages, "
                f"{n_sim:,} simulations in chunks of {smc_batch}"
            )
        speedup, same = report(label, results, max(n_chunks, 1))
        ok &= same
    print(f"\nload average after: {os.getloadavg()}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
