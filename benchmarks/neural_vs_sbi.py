"""SPPE and SPLE beside sbi's NPE and NLE at their defaults: CPU seconds and accuracy, one run.

The problem (``_normal_laplace.py``): theta = (mu, log sigma) of 40 normal records whose
mean and sample variance are released with Laplace noise; the exact posterior is computed
on a grid, and 4 000 exact draws come from it. Every method gets the same budget,
``--rounds`` rounds (4) of ``--simulations`` simulations (1 000), and returns 4 000
posterior draws; each runs once per seed (``--seeds``), on one torch thread, in a process
of its own (``--jobs`` at a time).

* SPPE (default), SPLE (default): ``dpinfer.neural.sppe`` / ``sple`` at their defaults;
* SPPE (paper): ``sppe(settings="paper")``, Xiong, Ju and Zhang's (2023, S3) settings,
  which were SPPE's defaults before (the before/after pair of issue 20);
* SPLE (paper) with ``--paper-sple``;
* sbi NPE, sbi NLE: ``sbi.inference.NPE`` / ``NLE`` with every setting at sbi's default
  (NPE: a masked autoregressive flow of 5 transforms, batches of 200, atomic loss with 10
  atoms in later rounds; NLE: the same flow, posterior by sbi's default MCMC). sbi's
  simulator returns one release per parameter (sbi has no noise copies).

Columns: *CPU s*, the process's CPU time (``time.process_time``) for the whole method
(simulation, training, proposals, final draws); *mean err*, the largest over the two
parameters of |posterior mean - exact mean| / exact sd; *sd err*, the largest
|sd / exact sd - 1|; *C2ST* (``dpinfer.neural.c2st``, 0.5 = indistinguishable) and *MMD*
(``neural_common.ReferenceMMD``) against the exact draws. 4 000 exact draws themselves
score about 0.01-0.02 on the errors (Monte Carlo), C2ST about 0.5 and MMD about 0.015.

sbi is not a dependency of dpinfer. To include its rows, install it in a throwaway
environment beside dpinfer, the pinned CPU torch first so that pip keeps it:

    python3 -m venv /tmp/sbi-venv
    /tmp/sbi-venv/bin/pip install torch==2.13.0
    /tmp/sbi-venv/bin/pip install sbi==0.27.0 -e '.[neural]'
    /tmp/sbi-venv/bin/python benchmarks/neural_vs_sbi.py

(In an environment that has sbi already, ``pip install --no-deps -e .`` adds dpinfer, which
then needs zuko, ArviZ and rich beside it.) Without sbi the script says so and prints
dpinfer's rows only.

Usage: ``python benchmarks/neural_vs_sbi.py [--quick] [--rounds 4] [--simulations 1000]
[--seeds 3] [--jobs 2] [--paper-sple] [--methods NAME ...]``.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor

import _normal_laplace as problem
import numpy as np
import torch
from neural_common import ReferenceMMD

from dpinfer.neural import c2st, sple, sppe

DRAWS = 4000
SBI = ("sbi NPE", "sbi NLE")
DPINFER = ("SPPE (default)", "SPPE (paper)", "SPLE (default)", "SPLE (paper)")


def _draws(idata) -> np.ndarray:
    return np.column_stack([np.asarray(idata.posterior[k]).ravel() for k in problem.NAMES])


def run_dpinfer(name: str, seed: int, rounds: int, simulations: int) -> dict:
    """One SPPE or SPLE run; CPU seconds measured in this process."""
    torch.set_num_threads(1)
    method = sppe if name.startswith("SPPE") else sple
    settings = "paper" if "paper" in name else "default"
    start = time.process_time()
    idata, _ = method(
        problem.model(),
        problem.mechanism(),
        problem.RELEASED,
        rounds=rounds,
        simulations=simulations,
        settings=settings,
        draws=DRAWS,
        rng=seed,
        progressbar=False,
    )
    cpu = time.process_time() - start
    attrs = idata.posterior.attrs
    return {
        "draws": _draws(idata),
        "cpu": cpu,
        "simulations": int(attrs["n_simulations"]),
        "epochs": np.asarray(attrs["round_epochs"]).astype(int).tolist(),
    }


def run_sbi(name: str, seed: int, rounds: int, simulations: int) -> dict:
    """One sbi NPE or NLE run at sbi's defaults, with dpinfer's simulator and mechanism."""
    from sbi.inference import NLE, NPE
    from torch.distributions import Independent, Normal

    torch.set_num_threads(1)
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    sd = torch.tensor([problem.PRIOR_SD[k] for k in problem.NAMES])
    prior = Independent(Normal(torch.zeros(2), sd), 1)
    mech = problem.mechanism()

    def simulator(theta):
        th = theta.numpy().astype(float)
        s = problem.simulate({k: th[:, j] for j, k in enumerate(problem.NAMES)}, rng)
        return torch.as_tensor(mech.release(s, rng=rng), dtype=torch.float32)

    x_o = torch.as_tensor(problem.RELEASED, dtype=torch.float32)
    start = time.process_time()
    npe = name == "sbi NPE"
    inference = (NPE if npe else NLE)(prior=prior, show_progress_bars=False)
    proposal, epochs = prior, []
    for r in range(rounds):
        quiet = {"show_progress_bars": False} if r else {}  # the prior takes no such option
        theta = proposal.sample((simulations,), **quiet)
        x = simulator(theta)
        if npe:
            estimator = inference.append_simulations(theta, x, proposal=proposal).train()
        else:
            estimator = inference.append_simulations(theta, x).train()
        epochs.append(int(inference._summary["epochs_trained"][-1]))
        proposal = inference.build_posterior(estimator).set_default_x(x_o)
    draws = proposal.sample((DRAWS,), x=x_o, show_progress_bars=False).numpy()
    cpu = time.process_time() - start
    return {
        "draws": draws.astype(float),
        "cpu": cpu,
        "simulations": rounds * simulations,
        "epochs": epochs,
    }


def task(name: str, seed: int, rounds: int, simulations: int) -> dict:
    import warnings

    warnings.filterwarnings("ignore")
    runner = run_sbi if name in SBI else run_dpinfer
    return {"name": name, "seed": seed, **runner(name, seed, rounds, simulations)}


def scores(result: dict, exact, metric, reference) -> dict:
    err = exact.errors(result["draws"])
    return {
        "mean": float(np.max(np.abs(err["mean"]))),
        "sd": float(np.max(np.abs(err["sd"]))),
        "sd_signed": err["sd"],
        "c2st": c2st(result["draws"], reference),
        "mmd": metric.mmd(result["draws"]),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small settings (smoke test)")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--simulations", type=int, default=1000)
    parser.add_argument("--seeds", type=int, default=3, help="runs of every method")
    parser.add_argument("--jobs", type=int, default=1, help="methods run at once (processes)")
    parser.add_argument("--paper-sple", action="store_true", help="add SPLE (paper)")
    parser.add_argument("--methods", nargs="+", help="only these rows (names as printed)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)  # the scores (C2ST) in this process, as the methods in theirs
    if args.quick:
        args.rounds, args.simulations, args.seeds = 2, 300, 1

    try:
        import sbi

        have_sbi = f"sbi {sbi.__version__}"
    except ImportError:
        have_sbi = None
    names = [n for n in DPINFER if n != "SPLE (paper)" or args.paper_sple]
    if have_sbi:
        names += SBI
    if args.methods:
        names = [n for n in names if n in args.methods]
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"held-out problem: mean and variance of {problem.N_RECORDS} normal records, Laplace "
        f"scales {problem.SCALES.tolist()}, release {problem.RELEASED.tolist()}; "
        f"{args.rounds} rounds x {args.simulations} simulations, {DRAWS} draws; torch "
        f"{torch.__version__}, 1 thread per method, {args.jobs} at once; "
        f"{have_sbi or 'sbi not installed: its rows are skipped (see this script docstring)'};"
        f" load average {load} on {os.cpu_count()} CPUs",
        flush=True,
    )
    exact = problem.ExactPosterior()
    reference = exact.sample(DRAWS, 0)
    metric = ReferenceMMD(reference, seed=0)
    print(
        "exact posterior (grid): "
        + ", ".join(
            f"{k} {m:.4f} ({s:.4f})"
            for k, m, s in zip(problem.NAMES, exact.mean, exact.sd, strict=True)
        ),
        flush=True,
    )
    seeds = [2023 + i for i in range(args.seeds)]
    jobs = [(n, s, args.rounds, args.simulations) for s in seeds for n in names]
    results = []
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=args.jobs, mp_context=context) as pool:
        for res in pool.map(task, *zip(*jobs, strict=True)):
            res.update(scores(res, exact, metric, reference))
            results.append(res)
            print(
                f"  {res['name']:<15} seed {res['seed']}: {res['cpu']:7.1f} CPU s, epochs "
                f"{res['epochs']}, mean err {res['mean']:.3f}, sd err "
                f"{np.round(res['sd_signed'], 3).tolist()}, C2ST {res['c2st']:.3f}, "
                f"MMD {res['mmd']:.3f}",
                flush=True,
            )
    table(results, names, exact, metric, reference)
    return 0


def table(results, names, exact, metric, reference) -> None:
    """Median (min - max) over seeds of each column, one row per method."""
    baseline = scores({"draws": exact.sample(DRAWS, 1)}, exact, metric, reference)
    print(
        f"\n{'method':<16} {'sims':>6} {'CPU s':>19} {'mean err':>17} {'sd err':>17} "
        f"{'C2ST':>17} {'MMD':>17}"
    )

    def cell(values, fmt):
        v = np.asarray(values, dtype=float)
        return f"{np.median(v):{fmt}} ({v.min():{fmt}}-{v.max():{fmt}})"

    for name in names:
        rows = [r for r in results if r["name"] == name]
        if not rows:
            continue
        print(
            f"{name:<16} {rows[0]['simulations']:>6} {cell([r['cpu'] for r in rows], '5.0f'):>19}"
            + "".join(
                f" {cell([r[k] for r in rows], '.3f'):>17}" for k in ("mean", "sd", "c2st", "mmd")
            )
        )
    print(
        f"{'4000 exact draws':<16} {'-':>6} {'-':>19}"
        + "".join(f" {baseline[k]:>17.3f}" for k in ("mean", "sd", "c2st", "mmd"))
    )
    print(
        "median (min-max) over seeds; mean err in exact sds, sd err relative; CPU s of the "
        "whole method in its own process"
    )


if __name__ == "__main__":
    sys.exit(main())
