"""SBC of a trained neural estimator: all releases in one batched call, against one call each.

Problem: ``theta ~ Gamma(4, rate 0.4)``, a Poisson count ``s ~ Poisson(theta)`` released
with Laplace noise of scale 4 (the test problem of ``tests/calibration``). SPPE and SPLE
are trained once, one round on the prior predictive (amortised: the estimate serves any
release), with a light flow (4 transforms of 32 units, 8 bins).

Then ``dp.sbc`` over ``--replicates`` releases (default 1,000), 100 posterior draws each:

* ``batched``: the estimator itself is passed to ``dp.sbc``, which draws every release's
  posterior in one call (``estimator.sample(releases)``, ``estimator.posterior(releases,
  prior)`` for SPLE);
* ``per release`` (the baseline): a callable that calls the estimator once per replicate,
  ``lambda r, rng: estimator.sample(r, draws=100, rng=rng)``, one InferenceData each. For
  SPLE, whose per-release Markov chains take about a second each, the baseline runs on
  ``--baseline-replicates`` releases (default 20) and its time is scaled to the full count
  (printed as such).

Printed per row: wall seconds, CPU seconds of this process (torch runs one thread), the
ratio of the baseline's to the batched wall time, and the SBC p-value (chi-square of the
fractional ranks; a correct estimate gives a uniform p-value). The load average is printed
too: on a shared machine wall times stretch with the load, CPU times much less.

Usage: ``python benchmarks/sbc_neural.py [--replicates 1000] [--baseline-replicates 20]``.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import scipy.stats as st
import torch

import dpinfer as dp
from dpinfer.neural import MCMC, SplineFlow, Training, sple, sppe

SHAPE, RATE, SCALE, DRAWS = 4.0, 0.4, 4.0, 100


def problem():
    model = dp.Model(
        prior={"theta": st.gamma(SHAPE, scale=1 / RATE)},
        simulate=lambda p, rng: rng.poisson(p["theta"]),
    )
    return model, dp.Laplace.from_privacy(epsilon=1 / SCALE, sensitivity=1.0)


def timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def train(method, model, mech, **kw):
    def run():
        return method(
            model,
            mech,
            10.0,
            rounds=1,
            simulations=2000,
            noise_copies=4,
            draws=40,
            flow=SplineFlow(transforms=4, hidden_features=32, bins=8),
            training=Training(max_epochs=100),
            rng=1,
            progressbar=False,
            **kw,
        )[1]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the 40 final draws' R-hat
        return timed(run)


def row(label, result, wall, cpu, baseline_wall=None, scaled=False):
    ratio = "" if baseline_wall is None else f"{baseline_wall / wall:9.1f}x"
    note = " (scaled from the baseline's replicates)" if scaled else ""
    p = result.p_values["theta"] if result is not None else float("nan")
    print(f"{label:<28} {wall:9.2f} {cpu:9.2f} {ratio:>10} {p:10.3g}{note}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--baseline-replicates", type=int, default=20)
    args = parser.parse_args()
    torch.set_num_threads(1)
    model, mech = problem()
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    posterior, wall, cpu = train(sppe, model, mech)
    print(f"SPPE trained (one round, 2000 simulations): {wall:.1f} s wall, {cpu:.1f} s CPU")
    chains = MCMC(warmup=200, thin=2, proposal_chains=4, initial_candidates=500)
    likelihood, wall, cpu = train(sple, model, mech, mcmc=chains)
    print(f"SPLE trained (one round, 2000 simulations): {wall:.1f} s wall, {cpu:.1f} s CPU")
    n, m = args.replicates, args.baseline_replicates

    def sbc(sample, replicates, options=None):
        return dp.sbc(
            sample,
            model,
            mech,
            replicates=replicates,
            estimator_options=options,
            rng=2,
            progressbar=False,
        )

    print(f"\nSBC over {n} releases, {DRAWS} draws each")
    print(f"{'':<28} {'wall s':>9} {'CPU s':>9} {'speed-up':>10} {'p-value':>10}")
    batched, b_wall, b_cpu = timed(lambda: sbc(posterior, n, {"draws": DRAWS}))

    def sppe_each(r, rng):
        return posterior.sample(r, draws=DRAWS, rng=rng)

    base, wall, cpu = timed(lambda: sbc(sppe_each, n))
    row("SPPE per release", base, wall, cpu)
    row("SPPE batched", batched, b_wall, b_cpu, wall)

    options = {"draws": DRAWS, "mcmc": chains}
    batched, b_wall, b_cpu = timed(lambda: sbc(likelihood, n, options))

    def sple_each(r, rng):
        return likelihood.posterior(r, model.prior, draws=DRAWS, mcmc=chains, rng=rng)

    base, wall, cpu = timed(lambda: sbc(sple_each, m))
    row(f"SPLE per release ({m})", base, wall, cpu)
    row("SPLE per release, scaled", None, wall * n / m, cpu * n / m, scaled=True)
    row("SPLE batched", batched, b_wall, b_cpu, wall * n / m)
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
