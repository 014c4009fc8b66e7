"""SPPE and SPLE on the linear regression example at epsilon = 10, beside the NUTS reference.

Xiong, Ju and Zhang (2023), Section 4.2 and Table 1: beta ~ N(0, I_3), n = 100 subjects,
nine clamped sufficient statistics released through a Laplace mechanism (epsilon = 10,
scale 0.013), the published release. Posterior means and 95% equal-tailed intervals of
beta from

* the data-augmentation reference (``models.linear_regression.pymc_reference``, NUTS on
  the latent records: exact up to Monte Carlo error),
* ``dpinfer.neural.sppe`` and ``dpinfer.neural.sple`` with the paper's settings (N = 1000
  simulations per round, 8 RQMC noise copies, the default spline flows and Adam settings),
  ``--rounds`` rounds (the paper runs 10),

printed beside the rows of the paper's Table 1, with each method's MMD to the reference
(``neural_common.ReferenceMMD``: kernel fixed by the reference sample), its C2ST accuracy
against the reference (0.5 = indistinguishable) and its cost. The NUTS reference is cached
under ``benchmarks/.cache/`` (``--no-cache`` recomputes it).

Measured (``--light --rounds 4 --nuts-draws 1000``, two shared cores, 2026-11): NUTS 48 s
(R-hat 1.002); SPPE 4 000 simulations, 394 s, MMD 0.070, C2ST 0.565; SPLE 4 000
simulations, 193 s, MMD 0.043, C2ST 0.548. Means and 95% intervals (beta_0, beta_1, beta_2):
NUTS -0.63 (-2.40, 0.99), -2.63 (-3.66, -0.84), 0.61 (-1.02, 2.60); SPPE -0.58 (-2.26, 0.88),
-2.61 (-3.62, -0.98), 0.70 (-0.83, 2.38); SPLE -0.56 (-2.31, 1.05), -2.63 (-3.61, -0.75),
0.62 (-0.96, 2.46); Table 1's rows are printed beside them.

Usage: ``python benchmarks/neural_linear_regression.py [--quick] [--rounds 10]
[--nuts-draws 2000] [--light] [--no-cache]`` (``--light``: the lighter flows of
``neural_common.neural_options``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import torch
from neural_common import ReferenceMMD, cached, describe, neural_options

from dpinfer.models import linear_regression as lr
from dpinfer.neural import c2st, sple, sppe

# Table 1 (epsilon = 10): mean (2.5%, 97.5%) of beta_0, beta_1, beta_2
PAPER = {
    "confidential posterior": (
        (-2.15, -2.68, -1.61),
        (-2.79, -3.08, -2.50),
        (-0.83, -1.08, -0.58),
    ),
    "naive": ((-4.63, -5.04, -4.22), (-6.23, -6.57, -5.90), (-5.10, -5.40, -4.79)),
    "SMC-ABC": ((-0.59, -2.28, 0.93), (-2.44, -3.67, -0.38), (0.85, -0.88, 2.77)),
    "DA-MCMC": ((-0.62, -2.50, 0.99), (-2.72, -3.74, -0.96), (0.54, -1.06, 2.46)),
    "SPPE": ((-0.51, -2.25, 1.07), (-2.40, -3.61, -0.30), (0.90, -0.89, 2.85)),
    "SPLE": ((-0.64, -2.31, 0.96), (-2.61, -3.65, -0.98), (0.64, -0.93, 2.48)),
}


def beta(idata) -> np.ndarray:
    """``(n, 3)`` draws of beta."""
    arr = np.asarray(idata.posterior["beta"])
    return arr.reshape(-1, arr.shape[-1])


def summary(draws: np.ndarray) -> list[tuple[float, float, float]]:
    """Mean and 95% equal-tailed interval per coefficient."""
    lo, hi = np.quantile(draws, [0.025, 0.975], axis=0)
    return [(float(m), float(a), float(b)) for m, a, b in zip(draws.mean(0), lo, hi, strict=True)]


def row(label: str, cells) -> str:
    return f"{label:<24}" + "".join(f"  {m:6.2f} ({a:6.2f}, {b:6.2f})" for m, a, b in cells)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small settings (smoke test)")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--simulations", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--seed", type=int, default=2023)
    parser.add_argument(
        "--light", action="store_true", help="lighter flows and 4 noise copies (see neural_common)"
    )
    parser.add_argument("--nuts-draws", type=int, default=2000, help="NUTS draws per chain")
    parser.add_argument("--no-cache", action="store_true", help="recompute the NUTS reference")
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.simulations = 2, 300
    torch.set_num_threads(args.threads)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"linear regression, epsilon = {lr.EPSILON:g}, the published release; torch "
        f"{args.threads} thread(s); load average {load} on {os.cpu_count()} CPUs; SPPE/SPLE: "
        + describe(neural_options(light=args.light, threads=args.threads)),
        flush=True,
    )
    draws, tune = (300, 300) if args.quick else (args.nuts_draws, 1000)
    ref = cached(
        "regression-nuts",
        {"draws": draws, "tune": tune, "seed": args.seed},
        lambda: nuts_reference(draws, tune, args.seed),
        use=not args.no_cache,
    )
    reference = ref["beta"]
    metric = ReferenceMMD(reference, seed=args.seed)
    print(
        f"NUTS data augmentation: {draws} draws x 2 chains after {tune} tuning steps, "
        f"{ref['seconds']:.0f} s{' (cached)' if ref['cached'] else ''}; "
        f"R-hat max {ref['rhat_max']:.3f}",
        flush=True,
    )
    ours = {"NUTS data augmentation": (summary(reference), 0.0, 0.5, ref["seconds"], "-")}
    for method in (sppe, sple):
        idata, _ = method(
            lr.model(),
            lr.mechanism(),
            lr.RELEASED,
            rounds=args.rounds,
            simulations=args.simulations,
            rng=args.seed,
            **neural_options(light=args.light, threads=args.threads),
            progressbar=False,
        )
        draws_m = beta(idata)
        attrs = idata.posterior.attrs
        ours[method.__name__.upper()] = (
            summary(draws_m),
            metric.mmd(draws_m),
            c2st(draws_m, reference),
            float(attrs["wall_seconds"]),
            f"{int(attrs['n_simulations']):,}",
        )
        print(
            f"{method.__name__}: {int(attrs['n_simulations']):,} simulations, "
            f"{float(attrs['wall_seconds']):.0f} s (training "
            f"{float(attrs['training_seconds']):.0f} s); "
            f"MMD to NUTS {ours[method.__name__.upper()][1]:.3f}",
            flush=True,
        )

    print("\nposterior mean (95% interval) of beta_0, beta_1, beta_2")
    print("ours:")
    for label, (cells, value, acc, seconds, sims) in ours.items():
        extra = (
            ""
            if label.startswith("NUTS")
            else f"   MMD {value:.3f}, C2ST {acc:.3f}, {sims} sims, {seconds:.0f} s"
        )
        print(row(label, cells) + extra)
    print(row("naive (closed form)", _naive()))
    print("Xiong et al. (2023), Table 1:")
    for label, cells in PAPER.items():
        print(row(label, cells))
    return 0


def nuts_reference(draws: int, tune: int, seed: int) -> dict:
    """NUTS on the data-augmentation model: beta draws, seconds and the largest R-hat."""
    start = time.perf_counter()
    ref = lr.pymc_reference(draws=draws, tune=tune, chains=2, rng=seed)
    return {
        "beta": beta(ref),
        "seconds": time.perf_counter() - start,
        "rhat_max": float(ref.posterior.attrs["rhat_max"]),
    }


def _naive():
    post = lr.naive_posterior(lr.RELEASED)
    lo, hi = post.interval(0.95)
    return list(zip(post.mean, lo, hi, strict=True))


if __name__ == "__main__":
    sys.exit(main())
