"""Throughput and accuracy of the SIR simulators (Xiong, Ju & Zhang 2023, Section 4.1).

Sections (each a function; ``main`` runs the ones asked for):

* ``exact``: trajectories per second of Gillespie's direct method at K = 10**6 and the truth
  (log beta, log gamma) = (-0.5, -3), one core. Target: at most 30 ms per trajectory.
* ``approx``: trajectories per second of the hybrid tau-leaping simulator, same setting.
  Target: at least 10**4 trajectories per second.
* ``accuracy`` (``--accuracy``, a few minutes): the approximate simulator against the exact
  one, difference of mean curves and of 10/50/90% quantiles of I at each time, relative to K,
  with bootstrap Monte Carlo standard errors.
* ``smc`` (``--smc``, about 5 minutes of CPU): simulations needed for the posterior of
  (log beta, log gamma) given Xiong et al.'s epsilon = 10 release, approximate simulator, by
  exact SMC-ABC (``dp.smc_abc``), exact rejection ABC (``dp.rejection_abc``) and the
  tolerance-based SMC-ABC baseline (``dp.tolerance_smc_abc``), at the same accuracy.

  *Accuracy measure*: the Wasserstein-1 distance between a method's draws and a long
  reference run (``smc_abc``, 10 000 particles) for each of log beta and log gamma, divided
  by the reference posterior sd; the larger of the two, averaged over independent runs, must
  be at most ``W_TARGET = 0.1``. (A shift of the mean by 0.1 sd alone gives 0.1.)
  ``smc_abc`` runs at 125, 250, ..., 2000 particles (three seeds each); the first count
  that gets there is reported (a factor-2 resolution). Rejection ABC is not
  run to the target: its acceptance rate at this release is about 1e-5, so its cost is
  estimated as (i.i.d. draws needed) x (simulations per accepted draw). The first factor is
  the smallest N whose N draws resampled from the reference reach the target on average;
  the second is 1 / acceptance rate = exp(log_max_density_at(release) - log_evidence), with
  the evidence estimated by the reference SMC run. A short rejection run (20 accepted draws)
  checks that rate. The tolerance baseline is run until its moves accept under 2% and
  under 0.5% of proposals; it is approximate at any tolerance it reaches, and its distance
  to the reference is reported.

  Measured (2 shared cores): ``smc_abc`` reaches W1 0.051 at 1000 particles, 176 000
  simulations (0.11 at 500 particles, 88 000); rejection ABC needs 222 i.i.d. draws at
  140 000 simulations each (predicted rate 7.1e-6; measured 6.9e-6 +- 1.5e-6 over 2.9
  million simulations), about 3.1e7 simulations, 180 times as many; tolerance SMC-ABC stops
  at W1 0.31 (log gamma; its posterior sd 0.037 against 0.026) after 640 000 simulations
  with 2000 particles and does not reach the target.

Timings are CPU time of this (single-threaded) process, so they measure one core even on a
busy machine; wall time is printed beside them, with the load average. They exclude numba
compilation (a warm-up call runs first).

Usage: ``python benchmarks/sir.py [--quick] [--accuracy] [--smc]``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np
import scipy.stats as st

import dpinfer as dp
from dpinfer.models import sir

BETA = math.exp(sir.TRUTH["log_beta"])
GAMMA = math.exp(sir.TRUTH["log_gamma"])
EXACT_TARGET_MS = 30.0
APPROX_TARGET_PER_S = 1e4
QUANTILES = (0.1, 0.5, 0.9)
PARAMS = ("log_beta", "log_gamma")
W_TARGET = 0.1  # standardised Wasserstein-1 distance to the reference, per parameter


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


# --- simulations to a given accuracy: smc_abc, rejection ABC, tolerance SMC-ABC ------


def _draws(idata) -> dict:
    return {k: np.asarray(idata.posterior[k], dtype=float).ravel() for k in PARAMS}


def standardised_w1(draws: dict, reference: dict) -> dict:
    """Wasserstein-1 distance to the reference per parameter, in reference posterior sds."""
    return {
        k: float(st.wasserstein_distance(draws[k], reference[k]) / np.std(reference[k]))
        for k in PARAMS
    }


def _timed(fn, *args, **kwargs):
    start = time.process_time()
    out = fn(*args, **kwargs)
    return out, time.process_time() - start


def iid_draws_needed(
    reference: dict, *, target: float = W_TARGET, reps: int = 200, seed: int = 5
) -> dict:
    """Mean max-parameter W1 of N i.i.d. draws from the reference, and the N that hits target.

    ``W * sqrt(N)`` is nearly constant (the Monte Carlo rate), so the N reaching ``target``
    is ``(mean of W sqrt(N) over the grid / target) ** 2``.
    """
    rng = np.random.default_rng(seed)
    size = len(reference[PARAMS[0]])
    grid = (50, 100, 200, 400, 800, 1600)
    mean_w = {}
    for n in grid:
        ws = []
        for _ in range(reps):
            idx = rng.integers(0, size, n)
            ws.append(
                max(standardised_w1({k: v[idx] for k, v in reference.items()}, reference).values())
            )
        mean_w[n] = float(np.mean(ws))
    c = float(np.mean([w * math.sqrt(n) for n, w in mean_w.items()]))
    return {"mean_w": mean_w, "c": c, "n_needed": math.ceil((c / target) ** 2)}


def smc_speed(*, quick: bool, seed: int = 606) -> dict:
    """Run every method of the ``smc`` section; return their figures."""
    model = sir.model(simulator="approx")
    mech = sir.mechanism()
    released = sir.RELEASED
    seeds = np.random.SeedSequence(seed)
    ref_particles = 1000 if quick else 10_000
    particle_grid = (100, 200) if quick else (125, 250, 500, 1000, 2000)
    repeats = 1 if quick else 3
    out = {"ref_particles": ref_particles, "repeats": repeats}

    def timed_run(sampler, rng, **options):
        """``sampler`` on the release, and its CPU seconds."""
        return _timed(sampler, model, mech, released, rng=rng, progressbar=False, **options)

    ref, out["ref_seconds"] = timed_run(dp.smc_abc, seeds.spawn(1)[0], particles=ref_particles)
    reference = _draws(ref)
    out["ref_sims"] = int(ref.posterior.attrs["n_simulations"])
    out["ref_mean"] = {k: float(v.mean()) for k, v in reference.items()}
    out["ref_sd"] = {k: float(v.std()) for k, v in reference.items()}
    out["log_evidence"] = float(ref.posterior.attrs["log_evidence"])
    out["log_max"] = mech.log_max_density_at(released)
    out["sims_per_draw"] = math.exp(out["log_max"] - out["log_evidence"])

    smc_rows = []
    for particles in particle_grid:
        runs = []
        for child in seeds.spawn(repeats):
            idata, sec = timed_run(dp.smc_abc, child, particles=particles)
            runs.append(
                {
                    "w": standardised_w1(_draws(idata), reference),
                    "sims": int(idata.posterior.attrs["n_simulations"]),
                    "log_evidence": float(idata.posterior.attrs["log_evidence"]),
                    "seconds": sec,
                }
            )
        smc_rows.append({"particles": particles, "runs": runs})
    out["smc"] = smc_rows

    out["iid"] = iid_draws_needed(reference, reps=50 if quick else 200)

    # A short rejection run: is the acceptance rate the evidence-based prediction?
    rej_draws = 2 if quick else 20
    rej, out["rej_seconds"] = timed_run(
        dp.rejection_abc, seeds.spawn(1)[0], draws=rej_draws, batch_size=50_000
    )
    out["rej_draws"] = rej_draws
    out["rej_sims"] = int(rej.posterior.attrs["n_simulations"])
    out["rej_rate"] = float(rej.posterior.attrs["acceptance_rate"])

    tol_rows = []
    for particles in (500,) if quick else (500, 2000):
        for min_acceptance in (0.02, 0.005):
            idata, sec = timed_run(
                dp.tolerance_smc_abc,
                seeds.spawn(1)[0],
                particles=particles,
                min_acceptance=min_acceptance,
            )
            draws = _draws(idata)
            tol_rows.append(
                {
                    "particles": particles,
                    "min_acceptance": min_acceptance,
                    "tolerance": float(idata.posterior.attrs["tolerance"]),
                    "sims": int(idata.posterior.attrs["n_simulations"]),
                    "w": standardised_w1(draws, reference),
                    "sd": {k: float(v.std()) for k, v in draws.items()},
                    "seconds": sec,
                }
            )
    out["tolerance"] = tol_rows
    return out


def report_smc(*, quick: bool):
    """Run the ``smc`` section; yield its report lines."""
    _warm_up()
    res = smc_speed(quick=quick)
    ref_sd, ref_mean = res["ref_sd"], res["ref_mean"]
    yield (
        "SIR posterior of (log beta, log gamma) given Xiong et al.'s release, epsilon = 10 "
        "(BinomialRelease n = m = 1000); approximate (hybrid tau-leaping) simulator"
    )
    yield (
        f"reference: smc_abc, {res['ref_particles']:,} particles, {res['ref_sims']:,} "
        f"simulations, {res['ref_seconds']:.0f} s CPU; posterior mean (sd): "
        + ", ".join(f"{k} {ref_mean[k]:.4f} ({ref_sd[k]:.4f})" for k in PARAMS)
        + f"; log evidence {res['log_evidence']:.3f}"
    )
    yield (
        f"accuracy measure: W1 to the reference per parameter / reference sd; max over "
        f"(log beta, log gamma), mean over {res['repeats']} runs; target <= {W_TARGET:g}"
    )
    yield ""
    yield "exact SMC-ABC (dp.smc_abc, defaults):"
    yield (
        f"{'particles':>9} {'simulations':>12} {'W1 logb':>8} {'W1 logg':>8} {'max W1':>7} "
        f"{'CPU s':>6}"
    )
    smc_hit = None
    for row in res["smc"]:
        runs = row["runs"]
        sims = float(np.mean([r["sims"] for r in runs]))
        wb = float(np.mean([r["w"]["log_beta"] for r in runs]))
        wg = float(np.mean([r["w"]["log_gamma"] for r in runs]))
        wmax = float(np.mean([max(r["w"].values()) for r in runs]))
        sec = float(np.mean([r["seconds"] for r in runs]))
        yield f"{row['particles']:>9,} {sims:>12,.0f} {wb:8.3f} {wg:8.3f} {wmax:7.3f} {sec:6.1f}"
        if smc_hit is None and wmax <= W_TARGET:
            smc_hit = (row["particles"], sims)
    iid = res["iid"]
    yield ""
    yield "exact rejection ABC (dp.rejection_abc): i.i.d. draws, so"
    yield (
        "  W1 of N i.i.d. draws (resampled from the reference): "
        + ", ".join(f"N={n}: {w:.3f}" for n, w in iid["mean_w"].items())
        + f"; W1 sqrt(N) = {iid['c']:.2f}, so N = {iid['n_needed']} draws reach {W_TARGET:g}"
    )
    predicted = 1 / res["sims_per_draw"]
    se = math.sqrt(res["rej_rate"] * (1 - res["rej_rate"]) / res["rej_sims"])
    yield (
        f"  acceptance rate predicted from the reference evidence: exp({res['log_evidence']:.3f}"
        f" - log max eta {res['log_max']:.3f}) = {predicted:.3g}, i.e. "
        f"{res['sims_per_draw']:,.0f} simulations per accepted draw"
    )
    yield (
        f"  measured by a short run: {res['rej_draws']} draws in {res['rej_sims']:,} simulations "
        f"({res['rej_seconds']:.0f} s CPU): rate {res['rej_rate']:.3g} +- {se:.2g}"
    )
    rej_sims = iid["n_needed"] * res["sims_per_draw"]
    rej_cpu = rej_sims * res["rej_seconds"] / res["rej_sims"]
    yield (
        f"  expected cost to the target: {iid['n_needed']} x {res['sims_per_draw']:,.0f} = "
        f"{rej_sims:.3g} simulations, about {rej_cpu / 3600:.1f} CPU hours (not run)"
    )
    yield ""
    yield "tolerance SMC-ABC (dp.tolerance_smc_abc, Euclidean distance of simulated releases):"
    yield (
        f"{'particles':>9} {'stop at acc.':>12} {'tolerance':>9} {'simulations':>12} "
        f"{'W1 logb':>8} {'W1 logg':>8} {'sd logb':>8} {'sd logg':>8} {'CPU s':>6}"
    )
    for row in res["tolerance"]:
        yield (
            f"{row['particles']:>9,} {row['min_acceptance']:>12.3f} {row['tolerance']:9.1f} "
            f"{row['sims']:>12,} {row['w']['log_beta']:8.3f} {row['w']['log_gamma']:8.3f} "
            f"{row['sd']['log_beta']:8.4f} {row['sd']['log_gamma']:8.4f} {row['seconds']:6.1f}"
        )
    best = min(res["tolerance"], key=lambda r: max(r["w"].values()))
    yield ""
    if smc_hit is None:
        yield f"smc_abc did not reach W1 <= {W_TARGET:g} on this grid"
        return
    particles, smc_sims = smc_hit
    yield (
        f"simulations to W1 <= {W_TARGET:g}: smc_abc {smc_sims:,.0f} ({particles:,} particles); "
        f"rejection ABC about {rej_sims:.3g} ({rej_sims / smc_sims:,.0f}x smc_abc); "
        f"tolerance SMC-ABC never (closest: W1 {max(best['w'].values()):.2f} after "
        f"{best['sims']:,} simulations, {best['sims'] / smc_sims:.1f}x smc_abc's budget)"
    )


def main(argv: list[str] | None = None) -> int:
    """Run the requested sections and print their reports."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few trajectories (smoke test)")
    parser.add_argument(
        "--accuracy", action="store_true", help="also measure approx against exact (minutes)"
    )
    parser.add_argument(
        "--smc",
        action="store_true",
        help="also count simulations to a posterior accuracy: smc_abc, rejection, tolerance SMC",
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
    if args.smc:
        print()
        for line in report_smc(quick=args.quick):
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
