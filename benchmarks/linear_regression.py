"""Exact SMC-ABC against importance ABC from the prior on the linear regression example.

Model (Xiong, Ju and Zhang 2023, Section 4.2): beta ~ N(0, I_3), n = 100 subjects with
x ~ N((0.9, -1.17), I), y | x ~ N(beta_0 + x beta_{1:2}, 2), clamped to [-10, 10] and
divided by 10; nine sufficient statistics released through a Laplace mechanism with
epsilon = 10 (scale 0.013); the published release. Every simulation draws 100 records.
One core (``executor=None``).

* ``smc_abc`` (four chains, ``particles = P`` over them), starting at P = target and
  growing P by half until both the Kish ESS of the final reweightings
  (``attrs["ess_sampler"]``, summed over the chains) and the smallest ArviZ bulk ESS of
  the three coefficients over the final, equally weighted populations
  (``attrs["ess_bulk"]``; ordered by ancestor, so copies made by resampling count once)
  reach the target, that is until ``attrs["ess"]`` does. Simulations and time are those
  of that run.
* ``importance_abc`` from the prior: rounds of ``--round`` draws with independent seeds,
  pooled (the unnormalised log weights of every round), until the pooled Kish ESS
  reaches the target; simulations and time are the totals over the rounds (measured,
  not extrapolated). ``--quick`` stops at a tenth of the target and scales linearly
  (ESS grows in proportion to the number of draws), and says so. Each round's weights
  are degenerate by design here, so importance_abc's low-ESS warning is silenced.

Usage: ``python benchmarks/linear_regression.py [--quick] [--target 1000]``.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings

import numpy as np
from scipy.special import logsumexp

import dpinfer as dp
from dpinfer.models import linear_regression as lr


def run_smc(particles: int, seed: int) -> dict:
    """Run exact SMC-ABC once; return time, simulations and both ESS measures."""
    start = time.perf_counter()
    idata = dp.smc_abc(
        lr.model(), lr.mechanism(), lr.RELEASED, particles=particles, rng=seed, progressbar=False
    )
    seconds = time.perf_counter() - start
    beta = np.asarray(idata.posterior["beta"])  # (chains, particles / chains, 3)
    attrs = idata.posterior.attrs
    return {
        "particles": particles,
        "seconds": seconds,
        "simulations": int(attrs["n_simulations"]),
        "kish_ess": float(attrs["ess_sampler"]),
        "bulk_ess": float(attrs["ess_bulk"]),
        "stages": int(attrs["n_stages"]),
        "mean": beta.reshape(-1, 3).mean(axis=0),
    }


def run_importance(target: float, round_size: int, seed: int) -> dict:
    """Pool importance-ABC rounds from the prior until the Kish ESS reaches ``target``."""
    pooled, seconds, sims, rounds = [], 0.0, 0, 0
    for child in np.random.SeedSequence(seed).spawn(10_000):
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "importance_abc: the weights are degenerate")
            idata = dp.importance_abc(
                lr.model(),
                lr.mechanism(),
                lr.RELEASED,
                draws=round_size,
                rng=child,
                progressbar=False,
            )
        seconds += time.perf_counter() - start
        attrs = idata.posterior.attrs
        normalised = np.asarray(idata.sample_stats["log_weight"]).ravel()
        # unnormalised log weights: log_weight + log(sum w) = log_weight + log_evidence + log N
        pooled.append(normalised + float(attrs["log_evidence"]) + math.log(round_size))
        sims += round_size
        rounds += 1
        lw = np.concatenate(pooled)
        ess = float(np.exp(2 * logsumexp(lw) - logsumexp(2 * lw)))
        print(f"  importance round {rounds:3d}: {sims:>11,} simulations, pooled ESS {ess:8.1f}")
        if ess >= target:
            break
    return {"simulations": sims, "seconds": seconds, "ess": ess, "rounds": rounds}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", type=float, default=1000.0, help="effective particles")
    parser.add_argument("--round", type=int, default=500_000, help="importance draws per round")
    parser.add_argument("--quick", action="store_true", help="importance to target/10, scaled")
    args = parser.parse_args(argv)
    target = args.target

    print("linear regression (Xiong et al. 2023, Sec. 4.2): published release, epsilon = 10")
    print(f"target: {target:,.0f} effective particles; one core (executor=None)")
    run_smc(200, seed=0)  # warm-up: imports and first-call caches

    print("\nexact smc_abc")
    particles, smc_runs = int(target), []
    while True:
        res = run_smc(particles, seed=1)
        smc_runs.append(res)
        print(
            f"  particles {particles:>6,}: {res['simulations']:>11,} simulations in "
            f"{res['seconds']:7.2f} s, {res['stages']} stages; Kish ESS {res['kish_ess']:7.1f}, "
            f"min bulk ESS {res['bulk_ess']:7.1f}; mean beta {np.round(res['mean'], 2)}"
        )
        if min(res["bulk_ess"], res["kish_ess"]) >= target:
            break
        particles = int(math.ceil(particles * 1.5))
    smc = smc_runs[-1]

    print("\nimportance_abc from the prior (pooled rounds)")
    goal = target / 10 if args.quick else target
    imp = run_importance(goal, args.round, seed=2)
    scale = target / imp["ess"] if args.quick else 1.0
    imp_sims, imp_secs = imp["simulations"] * scale, imp["seconds"] * scale
    how = "extrapolated linearly from" if args.quick else "measured:"
    print(
        f"  {how} {imp['simulations']:,} simulations, {imp['seconds']:.1f} s, "
        f"ESS {imp['ess']:.1f} (ESS per simulation {imp['ess'] / imp['simulations']:.2e})"
    )

    print("\nsummary (to reach the target)")
    rows = [
        (f"smc_abc ({smc['particles']:,} particles)", smc["simulations"], smc["seconds"]),
        ("importance_abc (prior)", imp_sims, imp_secs),
    ]
    for label, sims, secs in rows:
        print(f"  {label:<28} {sims:>13,.0f} simulations {secs:9.1f} s")
    print(
        f"  importance / smc: {imp_sims / smc['simulations']:.1f}x simulations, "
        f"{imp_secs / smc['seconds']:.1f}x time"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
