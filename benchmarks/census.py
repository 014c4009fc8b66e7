"""Census-shaped releases at scale: read, least squares, the lattice sampler, streaming.

Synthetic releases (``dpinfer.census.synthetic_state``, the state total exact):

* ``state``: 105,000 blocks (20 counties x 50 tracts x 3 block groups x 35 blocks), a
  4-cell histogram (votingage x hispanic) and its 4 marginals at every level with
  PL94-like variances (``pl94_variances``): about 10^6 noisy measurements, written as a
  Parquet release folder. Read, gls, the sampler, and the sampler streamed county by
  county (``stream_posterior``).
* ``pl94``: 24,750 blocks (10 x 25 x 3 x 33) with the PL94 persons histogram (hhgq 8 x
  votingage 2 x hispanic 2 x cenrace 63 = 2,016 cells) and the 2020 production
  strategy's queries at every level with its variances (``pl94_production_variances``:
  total, cenrace, hispanic, votingage, hhgq, hispanic * cenrace, votingage * cenrace,
  votingage * hispanic, votingage * hispanic * cenrace, detailed; ``hhinstlevels``, a
  grouping of hhgq and not a marginal, is left out): about 6.8 x 10^7 measurements.
  gls, the sampler in memory (no interval histograms), and streamed from a Parquet
  folder written part by part.
* ``baseline``: the same compiled moves on a small state (1,200 blocks), and the same
  code run as plain Python (``NUMBA_DISABLE_JIT=1``): the ratio is the compiled
  kernel's speed-up over the plain-Python path of the same moves.
* ``counties4``, ``counties8``: 4 and 8 counties of the ``state`` case's size (5,250
  blocks each), streamed: the streamed run's peak resident set above its start should
  not grow with the number of counties (printed side by side, with the largest
  county's size).
* ``ess``: a 2,400-block state, four chains; the bulk ESS per CPU second of the chains
  (and of the whole run) of a few block cells (traced) and of a few tract totals.
* ``calibration``: synthetic states of 192, 400, 900 and 2,400 blocks (4 chains of 400
  draws): how often the 90% intervals cover the true block cells (the issue's band:
  85-95%), the intervals' own posterior mass, and the posterior mean's error against
  least squares' (and least squares' own 90% coverage).
* ``kernel`` (and ``kernel-pl94``): the compiled passes' rate on the ``state`` (and
  ``pl94``) release, and the bulk ESS of the ``ess`` case, by this checkout's kernel
  (``after``) and by the kernel of the commit ``--before`` (``before``: that commit's
  ``dpinfer`` package, taken with ``git archive``, imported ahead of this one), each in
  its own process, and their ratio. The kernel rate is the median over ``--kernel-runs``
  runs of ``--rounds`` rounds each, the two kernels' runs taken in turn (also the subtree
  passes' and the pair passes' rates on their own); ``--ess-draws 0`` leaves the ESS out.

A *cell update* is one proposed move of one person (between two cells of a leaf,
between two leaves, a birth or death, or a swap) scored against every measured cell it
changes and then accepted or rejected; proposals refused before scoring (an empty leaf,
a move an invariant forbids) are not counted. Three rates: the *kernel* alone (the
compiled subtree and pair passes, timed around the calls), the *chains* (rounds with
their bookkeeping and summaries: ``CensusPosterior.rate``) and the *whole run* (all of
``sample_posterior``: the least-squares start, the setup and the final summaries).

Each stage runs in its own process. CPU seconds are ``time.process_time``; memory is the
process's peak resident set (``VmHWM``, reset with ``/proc/self/clear_refs`` before the
measured step, so a stage's setup does not count) and its resident set before that step.
The machine is shared: other processes run on its two cores.

``--bluedown PATH`` (a checkout of google-research/census-bluedown) adds the
comparison of ``_bluedown.py``: BlueDown's linear pass, run as a subprocess by
the Python of its own venv (``--bluedown-python``; by default ``bluedown-venv``
beside the checkout), against dpinfer's ``gls`` on the same synthetic releases
(50,000 and 105,000 blocks, 4-cell histogram) written in the Census Bureau's
noisy measurement file layout: CPU time of each, the ratio, and the agreement of
the estimates. Without it the comparison is skipped with a message.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
from _bluedown import CASES as BLUEDOWN_CASES
from _bluedown import compare, default_python

#: The commit whose lattice kernel the ``kernel`` case measures as "before": small leaves
#: scanned, partners drawn across the whole ancestor, before Lemire's integer draws, the
#: division-free acceptance and group checks and the partner's prefetched unit rows.
BEFORE = "90a9034"

SHAPES = {
    "state": ((20, 50, 3, 35), {"votingage": 2, "hispanic": 2}),
    "pl94": ((10, 25, 3, 33), None),
    "baseline": ((2, 10, 2, 30), {"votingage": 2, "hispanic": 2}),
    "ess": ((4, 10, 3, 20), {"votingage": 2, "hispanic": 2}),
    "counties4": ((4, 50, 3, 35), {"votingage": 2, "hispanic": 2}),
    "counties8": ((8, 50, 3, 35), {"votingage": 2, "hispanic": 2}),
}


def release_of(case: str):
    """The synthetic release of ``case``."""
    from dpinfer import census

    shape, axes = SHAPES[case]
    if axes is None:
        truth = census.synthetic_state(census.PL94_AXES, shape=shape, mean_block=30, rng=1)
        return census.synthetic_release(truth, census.pl94_production_variances(), rng=2)
    truth = census.synthetic_state(axes, shape=shape, mean_block=30, rng=1)
    return census.synthetic_release(truth, census.pl94_variances(axes), rng=2)


def rss_mb(field: str = "VmRSS") -> float:
    """This process's resident set (``VmRSS``) or its peak (``VmHWM``), in MB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def reset_peak() -> float:
    """Reset the peak resident set to the current one; return the current one (MB)."""
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")
    return rss_mb()


def measured(fn, *args) -> tuple[object, dict]:
    """``fn(*args)``, and its CPU seconds, the resident set before and its peak (MB)."""
    before = reset_peak()
    start = time.process_time()
    result = fn(*args)
    seconds = time.process_time() - start
    return result, {"cpu_s": seconds, "rss_before_mb": before, "peak_rss_mb": rss_mb("VmHWM")}


def kernel_rate(release, rounds: int) -> dict:
    """Cell updates per CPU second of the compiled passes alone, over ``rounds`` rounds."""
    from dpinfer._rng import as_seed_sequence, child_sequence
    from dpinfer.census import _chains, _lattice
    from dpinfer.census._chains import MemoryStore
    from dpinfer.census._parts import ReleaseParts
    from dpinfer.census._plan import make_plan, prior_tables
    from dpinfer.census._xoshiro import round_states

    parts = ReleaseParts(release)
    options = {"draws": 1, "tune": 0, "chains": 1, "per_leaf": None, "intervals": False,
               "store_leaves": False, "executor": None, "trace": []}  # fmt: skip
    plan = make_plan(
        parts, MemoryStore(), inner_geocodes=np.array([]), fallback_start=None,
        prior=prior_tables("flat", None, release.axes.cells), options=options,
    )  # fmt: skip
    top = _chains.init_chain(plan, as_seed_sequence(5))
    n = len(parts)
    subtree, pair = np.zeros(2, dtype=np.int64), np.zeros(2, dtype=np.int64)
    seconds = np.zeros(2)  # the subtree passes', the pair passes'
    for r in range(rounds + 1):
        states = round_states(child_sequence(as_seed_sequence(7), r), 1 + n + (n + 1) // 2)
        arenas = [plan.arena(i, plan.store.get(i)) for i in range(n)]
        if r == 1:  # the first round compiles
            subtree[:], pair[:], seconds[:] = 0, 0, 0.0
        start = time.process_time()
        for i, arena in enumerate(arenas):
            subtree += _chains._subtree_pass(plan.tables, arena, plan.per_leaf, states[1 + i])[3]
        middle = time.process_time()
        for p, two in enumerate(_chains._pairs(states[0], n)):
            _lattice.run_pair(
                plan.tables, top, arenas[two[0]], arenas[two[-1]], len(two) == 2,
                max(1, plan.per_leaf // 2), _chains.PAIR_PATTERN, states[1 + n + p], pair,
                _lattice.scratch(plan.tables),
            )  # fmt: skip
        seconds += (middle - start, time.process_time() - middle)
    counts = subtree + pair
    return {"kernel_cell_updates_per_cpu_s": counts[0] / seconds.sum(), "kernel_rounds": rounds,
            "subtree_cell_updates_per_cpu_s": subtree[0] / seconds[0],
            "pair_cell_updates_per_cpu_s": pair[0] / seconds[1],
            "per_leaf": plan.per_leaf, "acceptance": counts[1] / max(counts[0], 1)}  # fmt: skip


def sample_stage(release, rounds: int, intervals: bool, longer: bool = True) -> dict:
    """The sampler's three rates and its peak memory over ``rounds`` rounds of one chain."""
    from dpinfer import census

    census.sample_posterior(release_of("baseline"), draws=1, tune=0, chains=1, rng=3,
                            progressbar=False)  # compile  # fmt: skip
    out = kernel_rate(release, rounds)
    before = reset_peak()
    start = time.process_time()
    post = census.sample_posterior(release, draws=rounds, tune=0, chains=1, rng=4,
                                   progressbar=False, intervals=intervals)  # fmt: skip
    whole = time.process_time() - start
    scored = post.idata.attrs["proposals_scored"]
    peak = rss_mb("VmHWM")
    if longer:
        start = time.process_time()
        run = census.sample_posterior(release, draws=10 * rounds, tune=0, chains=1, rng=4,
                                      progressbar=False, intervals=intervals)  # fmt: skip
        out["whole_run_cell_updates_per_cpu_s_10x_rounds"] = run.idata.attrs[
            "proposals_scored"
        ] / (time.process_time() - start)
    out.update(
        rounds=rounds, intervals=intervals, chains_cell_updates_per_cpu_s=post.rate,
        whole_run_cell_updates_per_cpu_s=scored / whole, whole_run_cpu_s=whole,
        chains_cpu_s=post.idata.attrs["cpu_seconds"], rss_before_mb=before, peak_rss_mb=peak,
    )  # fmt: skip
    return out


def part_sizes(folder: str) -> dict:
    """The in-memory size of the largest part (county) and of the whole release (MB)."""
    from dpinfer.census import StreamedRelease

    sizes = []
    with StreamedRelease(folder) as release:
        for i in range(len(release)):
            part = release.part(i)
            cells = sum(m.values.size for m in part.measurements.values())
            sizes.append((cells, part.units.leaves.size, len(part.units)))
        d = release.axes.cells
    big = max(sizes)
    # a part's release arrays (value and variance: 16 bytes per cell), its chain state
    # (residuals 4, sums and squares 16, histogram 102 bytes per cell; counts, Fenwick
    # and start 12 bytes per leaf cell)
    per_cell = 16 + 4 + 16
    return {
        "parts": len(sizes), "largest_part_cells": big[0], "largest_part_leaves": big[1],
        "largest_part_mb": (big[0] * per_cell + big[1] * d * 12) / 2**20,
        "largest_part_histograms_mb": big[0] * 102 / 2**20,
        "whole_release_cells": sum(s[0] for s in sizes),
    }  # fmt: skip


def stream_stage(folder: str, rounds: int, intervals: bool) -> dict:
    """The streamed sampler on ``folder``: rate and peak memory against the largest county."""
    from dpinfer import census

    with tempfile.TemporaryDirectory() as tmp:
        census.write_release(release_of("baseline"), f"{tmp}/small")
        census.stream_posterior(f"{tmp}/small", f"{tmp}/warm", draws=1, tune=0, chains=1,
                                rng=3, progressbar=False)  # compile  # fmt: skip
        before = reset_peak()
        start = time.process_time()
        post = census.stream_posterior(folder, f"{tmp}/out", draws=rounds, tune=0, chains=1,
                                       rng=4, progressbar=False, intervals=intervals,
                                       format="parquet")  # fmt: skip
        whole = time.process_time() - start
    peak = rss_mb("VmHWM")
    out = {
        "rounds": rounds, "intervals": intervals, "chains_cell_updates_per_cpu_s": post.rate,
        "whole_run_cpu_s": whole, "rss_before_mb": before, "peak_rss_mb": peak,
        "peak_increase_mb": peak - before,
    }  # fmt: skip
    out.update(part_sizes(folder))  # after the measured run: its allocations would count
    return out


def write_folder(release, folder: str) -> None:
    """Write ``release`` as a Parquet release folder, a bounded number of rows at a time."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dpinfer import census
    from dpinfer.outputs import OutputFolder

    geocodes = release.units.geocodes

    def write_measurements(path):
        schema = pa.schema([("geocode", pa.string()), ("query", pa.string()),
                            ("cell", pa.int64()), ("value", pa.int64()),
                            ("variance", pa.float64())])  # fmt: skip
        with pq.ParquetWriter(str(path), schema) as writer:
            for name, meas in release.measurements.items():
                step = max(1, 2_000_000 // meas.values.shape[1])
                for lo in range(0, meas.units.size, step):
                    units = meas.units[lo : lo + step]
                    cells = meas.values.shape[1]
                    writer.write_table(pa.table({
                        "geocode": np.repeat(geocodes[units], cells).astype(str),
                        "query": np.full(units.size * cells, name),
                        "cell": np.tile(np.arange(cells), units.size),
                        "value": meas.values[lo : lo + step].ravel(),
                        "variance": meas.variance[lo : lo + step].ravel(),
                    }, schema=schema))  # fmt: skip

    small = census.CensusRelease(release.axes, release.units, {}, release.invariants)
    invariants = census.release_tables(small)[1]
    with OutputFolder(folder, info={"census_release": True}) as out:
        out.write_text("release.json", json.dumps({"axes": dict(release.axes.items())}))
        out.write("measurements.parquet", write_measurements)
        out.write("invariants.parquet", lambda p: invariants.to_parquet(p, index=False))
        out.complete()


def ess_stage(draws: int, tune: int) -> dict:
    """Bulk ESS per CPU second of a few block cells and a few tract totals."""
    from dpinfer import census
    from dpinfer.results import effective_sample_size

    release = release_of("ess")
    units = release.units
    blocks = units.geocodes[units.leaves][:: units.leaves.size // 4][:4].tolist()
    tracts = np.arange(units.level_start[2], units.level_start[3])[::10][:4]
    census.sample_posterior(release, draws=2, tune=0, chains=1, rng=3, progressbar=False)
    start = time.process_time()
    post = census.sample_posterior(release, draws=draws, tune=tune, chains=4, rng=5,
                                   progressbar=False, trace=blocks)  # fmt: skip
    whole = time.process_time() - start
    chains = post.idata.attrs["cpu_seconds"]
    cells = np.asarray(post.idata.posterior["unit_cells"])[..., -4:]  # the detailed cells
    inner = post.idata.attrs["inner_units"].split(",")
    totals = np.asarray(post.idata.posterior["unit_total"])
    tract_cols = [inner.index(g) for g in units.geocodes[tracts]]
    block_ess = [effective_sample_size(cells[:, :, b, c]) for b in range(4) for c in range(4)
                 if np.ptp(cells[:, :, b, c]) > 0]  # fmt: skip
    tract_ess = [effective_sample_size(totals[:, :, k]) for k in tract_cols]
    return {
        "blocks": release.units.leaves.size, "draws": draws, "tune": tune, "chains": 4,
        "per_leaf": post.idata.attrs["per_leaf"], "chains_cpu_s": chains, "whole_cpu_s": whole,
        "block_cell_ess_per_chains_cpu_s_median": float(np.median(block_ess)) / chains,
        "block_cell_ess_per_chains_cpu_s_min": float(np.min(block_ess)) / chains,
        "tract_total_ess_per_chains_cpu_s_median": float(np.median(tract_ess)) / chains,
        "tract_total_ess_per_chains_cpu_s_min": float(np.min(tract_ess)) / chains,
        "tract_total_ess_per_whole_cpu_s_median": float(np.median(tract_ess)) / whole,
        "rhat_max": post.idata.attrs["rhat_max"],
    }  # fmt: skip


#: States of the ``calibration`` case: (shape, seed); seeds not used by the tests.
CALIBRATION = (
    ((3, 4, 2, 8), 501),
    ((4, 5, 4, 5), 602),
    ((5, 6, 5, 6), 703),
    ((6, 8, 5, 10), 1013),
)


def calibration_stage() -> list[dict]:
    """Coverage of the true block cells by the 90% intervals, and the error against gls."""
    from dpinfer import census

    axes = {"votingage": 2, "hispanic": 2}
    rows = []
    for shape, seed in CALIBRATION:
        truth = census.synthetic_state(axes, shape=shape, mean_block=30, rng=seed)
        release = census.synthetic_release(truth, census.pl94_variances(axes), rng=seed + 1)
        post = census.sample_posterior(release, draws=400, tune=100, chains=4, rng=seed + 2,
                                       store_leaves=True, progressbar=False)  # fmt: skip
        fit = census.gls(release)
        name, leaves = "votingage * hispanic", release.units.leaves
        exact = release.query(name).project(truth.detailed())[leaves]
        lower, upper = post.lower[name][leaves], post.upper[name][leaves]
        draws = np.asarray(post.idata.posterior["leaf_counts"])
        draws = draws.reshape(-1, *draws.shape[2:])
        gls_est, gls_sd = fit.estimate(name)[leaves], fit.sd(name)[leaves]
        rows.append({
            "blocks": int(leaves.size),
            "coverage": float(((lower <= exact) & (exact <= upper)).mean()),
            "interval_mass": float(((draws >= lower) & (draws <= upper)).mean()),
            "rmse": float(np.sqrt(np.mean((post.mean[name][leaves] - exact) ** 2))),
            "gls_coverage": float((np.abs(gls_est - exact) <= 1.645 * gls_sd).mean()),
            "gls_rmse": float(np.sqrt(np.mean((gls_est - exact) ** 2))),
        })  # fmt: skip
    return rows


def child(case: str, stage: str, folder: str, args) -> dict:
    import dpinfer
    from dpinfer import census

    out = {"case": case, "stage": stage}
    if stage in ("before", "after"):
        source = "state" if case == "kernel" else "pl94"
        out.update(kernel_rate(release_of(source), rounds=args.rounds), release=source,
                   package=os.path.dirname(dpinfer.__file__))  # fmt: skip
        return out
    if stage in ("ess-before", "ess-after"):
        out.update(ess_stage(args.ess_draws, args.ess_tune),
                   package=os.path.dirname(dpinfer.__file__))  # fmt: skip
        return out
    if stage == "write":
        start = time.process_time()
        write_folder(release_of(case), folder)
        out["cpu_s"] = time.process_time() - start
    elif stage == "read":
        release, extra = measured(census.read_release, folder)
        out.update(extra, measurements=release.n_measurements)
    elif stage == "gls":
        fit, extra = measured(census.gls, release_of(case))
        out.update(extra, gls_method=fit.method)
    elif stage == "sample":
        release = release_of(case)
        out.update(blocks=int(release.units.leaves.size), measurements=release.n_measurements)
        small = case != "pl94"  # the state-sized case: no histograms, no longer run
        out.update(sample_stage(release, args.rounds, intervals=small, longer=small))
    elif stage == "stream":
        out.update(stream_stage(folder, args.rounds, intervals=case != "pl94"))
    elif stage in ("kernel", "plain"):
        out.update(kernel_rate(release_of(case), rounds=1))
    elif stage == "ess":
        out.update(ess_stage(args.ess_draws, args.ess_tune))
    elif stage == "calibration":
        out["states"] = calibration_stage()
    return out


PLAN = {
    "state": ("write", "read", "gls", "sample", "stream"),
    "pl94": ("gls", "sample", "write", "stream"),
    "baseline": ("kernel", "plain"),
    "ess": ("ess",),
    "calibration": ("calibration",),
    "counties4": ("write", "stream"),
    "counties8": ("write", "stream"),
    "kernel": ("before", "after", "ess-before", "ess-after"),
    "kernel-pl94": ("before", "after"),
}


def before_package(commit: str, folder: str) -> str:
    """Extract the ``dpinfer`` package of ``commit`` into ``folder``; return the folder."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    archive = subprocess.run(["git", "-C", root, "archive", commit, "dpinfer"],
                             capture_output=True, check=True).stdout  # fmt: skip
    os.makedirs(folder)
    subprocess.run(["tar", "-x", "-C", folder], input=archive, check=True)
    return folder


def run_child(case: str, stage: str, tmp: str, args, env=None) -> dict:
    """Run one stage in its own process; return what it printed."""
    cmd = [sys.executable, __file__, "--rounds", str(args.rounds), "--ess-draws",
           str(args.ess_draws), "--ess-tune", str(args.ess_tune), "--child", case,
           stage, f"{tmp}/release"]  # fmt: skip
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"{case} {stage} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def kernel_section(case: str, tmp: str, args) -> None:
    """Print the rates of the kernels before and after, in turn, and their ratios."""
    old = dict(os.environ, PYTHONPATH=before_package(args.before, f"{tmp}/before"))
    envs = {"before": old, "after": None, "ess-before": old, "ess-after": None}
    runs: dict = {stage: [] for stage in PLAN[case]}
    for k in range(args.kernel_runs):
        for stage in PLAN[case]:
            if stage.startswith("ess") and (k or not args.ess_draws):
                continue
            runs[stage].append(run_child(case, stage, tmp, args, envs[stage]))
            print(json.dumps(dict(runs[stage][-1], run=k)), flush=True)
    key = "kernel_cell_updates_per_cpu_s"
    rates = {s: float(np.median([r[key] for r in runs[s]])) for s in ("before", "after")}
    out = {"case": case, "before_commit": args.before, "median_" + key: rates,
           "after_over_before": rates["after"] / rates["before"]}  # fmt: skip
    for part in ("subtree", "pair"):  # each kind of pass on its own
        name = f"{part}_cell_updates_per_cpu_s"
        out["median_" + name] = {s: float(np.median([r[name] for r in runs[s]]))
                                 for s in ("before", "after")}  # fmt: skip
    if runs.get("ess-after"):
        ess = "tract_total_ess_per_chains_cpu_s_median"
        out["ess_after_over_before"] = {
            k: runs["ess-after"][0][k] / runs["ess-before"][0][k]
            for k in (ess, "block_cell_ess_per_chains_cpu_s_median")
        }
    print(json.dumps(out), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--cases", default="state,pl94,baseline,ess,calibration,counties4,counties8"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ess-draws", type=int, default=2400)
    parser.add_argument("--ess-tune", type=int, default=600)
    parser.add_argument("--bluedown", default=None, help="a census-bluedown checkout to compare")
    parser.add_argument("--bluedown-python", default=None, help="the Python of BlueDown's venv")
    parser.add_argument("--child", nargs=3, metavar=("CASE", "STAGE", "DIR"))
    parser.add_argument("--before", default=BEFORE, help="the commit of the 'before' kernel")
    parser.add_argument("--kernel-runs", type=int, default=3)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(*args.child, args)), flush=True)
        return
    print("machine: shared 2-core; CPU seconds by time.process_time, memory by VmHWM")
    bluedown(args.bluedown, args.bluedown_python)
    streamed = {}
    for case in filter(None, args.cases.split(",")):
        results = {}
        with tempfile.TemporaryDirectory() as tmp:
            if case.startswith("kernel"):
                kernel_section(case, tmp, args)
                continue
            for stage in PLAN[case]:
                env = dict(os.environ, NUMBA_DISABLE_JIT="1") if stage == "plain" else None
                results[stage] = run_child(case, stage, tmp, args, env)
                print(json.dumps(results[stage]), flush=True)
        if case == "baseline":
            ratio = (results["kernel"]["kernel_cell_updates_per_cpu_s"]
                     / results["plain"]["kernel_cell_updates_per_cpu_s"])  # fmt: skip
            print(json.dumps({"case": "baseline", "compiled_over_plain_python": ratio}))
        if case.startswith("counties"):
            streamed[SHAPES[case][0][0]] = results["stream"]
    if len(streamed) > 1:
        print(json.dumps(streamed_growth(streamed)))


def streamed_growth(streamed: dict) -> dict:
    """The streamed runs' peak increase by number of counties, against the largest county."""
    return {
        "case": "streamed peak by counties",
        "peak_increase_mb": {n: round(r["peak_increase_mb"], 1) for n, r in streamed.items()},
        "largest_county_mb": {n: round(r["largest_part_mb"], 1) for n, r in streamed.items()},
        "largest_county_with_histograms_mb": {
            n: round(r["largest_part_mb"] + r["largest_part_histograms_mb"], 1)
            for n, r in streamed.items()
        },
    }


def bluedown(checkout, python):
    """Print the BlueDown comparison of ``_bluedown.py``, or why it is skipped."""
    if checkout is None:
        print("BlueDown comparison skipped: pass --bluedown PATH (a census-bluedown checkout)")
        return
    python = python or default_python(checkout)
    for case in BLUEDOWN_CASES:
        print(json.dumps(compare(checkout, python, case)))


if __name__ == "__main__":
    main()
