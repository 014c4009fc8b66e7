"""SPPE, SPLE and exact SMC-ABC on the SIR example at epsilon = 10: cost to reach MMD < 0.1.

Xiong, Ju and Zhang (2023), Section 4.1 and Table S1: the posterior of (log beta, log gamma)
given their published binomial release of the epidemic curve (n = m = 1000, L = 10,
epsilon = 10), against a long exact SMC-ABC reference. For each method: simulations, time
spent simulating, training time and total time until the MMD between its posterior draws
and the reference falls below 0.1, and the C2ST accuracy there (0.5 = indistinguishable).

* reference: ``dp.smc_abc`` with ``--ref-particles`` (10 000) particles;
* SMC-ABC: ``dp.smc_abc`` at 125, 250, ..., particles (``--seeds`` runs each); the first
  particle count whose mean MMD is below 0.1;
* SPPE and SPLE (``dpinfer.neural``, the paper's settings: N = 1000 simulations per round,
  8 RQMC noise copies, neural spline flows of 8 transforms, 2 residual blocks of 50 units,
  10 bins; Adam, batch 100, learning rate 5e-4, patience 20): rounds until the MMD of the
  round's posterior draws is below 0.1 (at most ``--rounds``).

MMD: ``dpinfer.compare.mmd`` (Gaussian kernel on coordinates standardised by the reference,
median-heuristic bandwidth, 2000 points per sample). C2ST: ``dpinfer.neural.c2st``
(5-fold, 2 hidden layers of 20 units). All methods use the approximate (hybrid tau-leaping)
simulator of ``models/sir.py`` (about 35 us per curve); the paper's times are for
Gillespie's exact simulator on a GPU workstation, so only the simulation counts compare
directly.

Usage: ``python benchmarks/neural_sir.py [--quick] [--threads 1] [--rounds 10]``.
"""

from __future__ import annotations

import argparse
import inspect
import os
import sys
import time

import numpy as np
import torch

import dpinfer as dp
from dpinfer.compare import mmd
from dpinfer.models import sir
from dpinfer.neural import c2st, sple, sppe

PARAMS = ("log_beta", "log_gamma")
MMD_TARGET = 0.1
# Table S1 (mean): simulations (thousands), simulation time, training time, total time (s)
PAPER = {
    "SMC-ABC": (82.85, 115.38, None, 115.38),
    "SPPE": (2.12, 2.65, 15.73, 18.38),
    "SPLE": (5.40, 7.11, 45.98, 53.09),
}


def joint(draws) -> np.ndarray:
    """``(n, 2)`` array of (log beta, log gamma) from a dict or an InferenceData."""
    post = getattr(draws, "posterior", None)
    if post is not None:
        draws = {k: np.asarray(post[k]) for k in PARAMS}
    return np.column_stack([np.asarray(draws[k], dtype=float).ravel() for k in PARAMS])


def smc(model, mech, particles: int, seed) -> tuple[object, float]:
    """One exact SMC-ABC run of ``particles`` particles in one population, timed."""
    kwargs = dict(particles=particles, rng=seed, progressbar=False)
    if "chains" in inspect.signature(dp.smc_abc).parameters:
        kwargs["chains"] = 1  # one population of ``particles``, as in the paper
    start = time.perf_counter()
    idata = dp.smc_abc(model, mech, sir.RELEASED, **kwargs)
    return idata, time.perf_counter() - start


def smc_to_target(model, mech, reference, grid, seeds) -> list[dict]:
    """SMC-ABC at growing particle counts until the mean MMD is below the target."""
    rows = []
    for particles in grid:
        runs = []
        for seed in seeds:
            idata, seconds = smc(model, mech, particles, seed)
            runs.append(
                {
                    "sims": int(idata.posterior.attrs["n_simulations"]),
                    "seconds": seconds,
                    "mmd": mmd(joint(idata), reference),
                    "draws": joint(idata),
                }
            )
        row = {
            "particles": particles,
            "sims": float(np.mean([r["sims"] for r in runs])),
            "seconds": float(np.mean([r["seconds"] for r in runs])),
            "mmd": float(np.mean([r["mmd"] for r in runs])),
            "draws": runs[0]["draws"],
        }
        rows.append(row)
        print(
            f"  smc_abc {particles:>6,} particles: {row['sims']:>10,.0f} simulations, "
            f"{row['seconds']:7.1f} s, MMD {row['mmd']:.3f}",
            flush=True,
        )
        if row["mmd"] < MMD_TARGET:
            break
    return rows


def neural_to_target(method, model, mech, reference, args) -> dict:
    """Rounds of SPPE or SPLE until the round's posterior draws reach the MMD target."""
    rounds = []

    def callback(info):
        value = mmd(joint(info.draws), reference)
        rounds.append(
            {
                "round": info.round,
                "sims": info.n_simulations,
                "training": info.training_seconds,
                "seconds": info.seconds,
                "mmd": value,
            }
        )
        print(
            f"  {method.__name__} round {info.round}: {info.n_simulations:,} simulations, "
            f"training {info.training_seconds:7.1f} s, total {info.seconds:7.1f} s, "
            f"MMD {value:.3f}",
            flush=True,
        )
        return value < MMD_TARGET

    idata, _ = method(
        model,
        mech,
        sir.RELEASED,
        rounds=args.rounds,
        simulations=args.simulations,
        draws=4000,
        rng=args.seed,
        callback=callback,
        progressbar=False,
    )
    attrs = idata.posterior.attrs
    return {
        "rounds": rounds,
        "simulation_seconds": float(attrs["simulation_seconds"]),
        "training_seconds": float(attrs["training_seconds"]),
        "wall_seconds": float(attrs["wall_seconds"]),
        "n_simulations": int(attrs["n_simulations"]),
        "final": joint(idata),
        "rhat": float(attrs.get("rhat_max", np.nan)),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small settings (smoke test)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--simulations", type=int, default=1000)
    parser.add_argument("--ref-particles", type=int, default=10_000)
    parser.add_argument("--seeds", type=int, default=3, help="smc_abc runs per particle count")
    parser.add_argument("--seed", type=int, default=2023)
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.simulations, args.ref_particles, args.seeds = 2, 300, 1000, 1
    torch.set_num_threads(args.threads)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"SIR, epsilon = {sir.EPSILON:g}, Xiong et al.'s release; approximate simulator; "
        f"torch {torch.__version__}, {args.threads} thread(s); load average {load} on "
        f"{os.cpu_count()} CPUs"
    )
    model, mech = sir.model(simulator="approx"), sir.mechanism()
    sir.simulate_approx([0.6], [0.05], population=100, rng=0)  # numba compilation

    ref_idata, ref_seconds = smc(model, mech, args.ref_particles, args.seed)
    reference = joint(ref_idata)
    print(
        f"reference: smc_abc, {args.ref_particles:,} particles, "
        f"{int(ref_idata.posterior.attrs['n_simulations']):,} simulations, {ref_seconds:.0f} s; "
        "mean (sd): "
        + ", ".join(
            f"{k} {reference[:, j].mean():.4f} ({reference[:, j].std():.4f})"
            for j, k in enumerate(PARAMS)
        ),
        flush=True,
    )
    grid = (250, 500) if args.quick else (125, 250, 500, 1000, 2000, 4000)
    seeds = np.random.SeedSequence(args.seed + 1).spawn(args.seeds)
    print("\nexact SMC-ABC (one population per run):")
    smc_rows = smc_to_target(model, mech, reference, grid, seeds)
    results = {}
    for method in (sppe, sple):
        print(f"\n{method.__name__.upper()}:")
        results[method.__name__] = neural_to_target(method, model, mech, reference, args)

    print("\nCost to reach MMD < 0.1 against the reference (ours | Xiong et al. Table S1)")
    header = (
        f"{'method':<8} {'simulations':>12} {'sim s':>8} {'train s':>8} {'total s':>8} "
        f"{'MMD':>6} {'C2ST':>6} | {'paper sims':>10} {'sim s':>7} {'train s':>8} {'total s':>8}"
    )
    print(header)
    hit = next((r for r in smc_rows if r["mmd"] < MMD_TARGET), smc_rows[-1])
    lines = [
        (
            "SMC-ABC",
            hit["sims"],
            hit["seconds"],
            None,
            hit["seconds"],
            hit["mmd"],
            c2st(hit["draws"], reference),
        )
    ]
    for name, res in results.items():
        hit_round = next((r for r in res["rounds"] if r["mmd"] < MMD_TARGET), res["rounds"][-1])
        sim_share = res["simulation_seconds"] * hit_round["sims"] / res["n_simulations"]
        lines.append(
            (
                name.upper(),
                hit_round["sims"],
                sim_share,
                hit_round["training"],
                hit_round["seconds"],
                hit_round["mmd"],
                c2st(res["final"], reference),
            )
        )
    for label, sims, sim_s, train_s, total_s, value, acc in lines:
        paper = PAPER[label]
        train = "-" if train_s is None else f"{train_s:8.1f}"
        ptrain = "-" if paper[2] is None else f"{paper[2]:8.2f}"
        reached = "" if value < MMD_TARGET else " (not reached)"
        print(
            f"{label:<8} {sims:>12,.0f} {sim_s:8.1f} {train:>8} {total_s:8.1f} {value:6.3f} "
            f"{acc:6.3f} | {paper[0] * 1e3:>10,.0f} {paper[1]:7.2f} {ptrain:>8} "
            f"{paper[3]:8.2f}{reached}"
        )
    print(
        "\n'sim s' for SPPE/SPLE is simulation plus privatisation time; their 'total s' also "
        "counts drawing each round's proposals (SPLE: MCMC). C2ST of SPPE/SPLE is for their "
        "final draws (4000, at the round that reached the target); SPLE final R-hat "
        f"{results['sple']['rhat']:.3f}."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
