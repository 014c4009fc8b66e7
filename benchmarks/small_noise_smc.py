"""SMC-ABC when the mechanism noise is small: one simulation per particle against several.

The Normal-mean example of ``benchmarks/reported_error.py``: mu ~ N(0, 1), the
confidential mean s ~ N(mu, 0.1^2), released with Laplace noise of scale
0.1 / epsilon (release 0.3), so at epsilon = 100 the noise is a hundredth of the
statistic's spread. For each epsilon, ``--replicates`` seeds of ``smc_abc``
(2000 particles, 4 chains) with ``simulations_per_particle`` m = 1 (before) and
m = 4, 16, 64 (after: each particle carries the mean of m mechanism densities),
and ``"auto"`` (m chosen by a pilot run, whose simulations are counted).
Printed per row: the m chosen (the range over seeds for ``auto``), mean
simulations per run, the reported ESS (``attrs['ess']``),
the real ESS (posterior variance over the mean squared error against the exact
mean, by quadrature), the real ESS per 1000 simulations, the root-mean-square
error of the mean, its ratio to the reported error, the bias in units of its
standard error, CPU seconds per run, and the gains over m = 1 in real ESS per
simulation and per CPU second.

Usage: ``python benchmarks/small_noise_smc.py [--replicates 20] [--quick]``.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
from reported_error import normal_mean_example, replicate_count

import dpinfer as dp


def replicate(epsilon, per_particle, replicates):
    model, mech, release, exact = normal_mean_example(epsilon)
    means, sds, ess, sims, chosen = [], [], [], [], []
    start = time.process_time()
    for seed in range(replicates):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            idata = dp.smc_abc(
                model, mech, release, particles=2000, rng=seed, progressbar=False,
                simulations_per_particle=per_particle,
            )  # fmt: skip
        mu = idata.posterior["mu"]
        means.append(float(mu.mean()))
        sds.append(float(mu.std()))
        ess.append(float(idata.attrs["ess"]))
        sims.append(idata.attrs["n_simulations"])
        chosen.append(idata.attrs["simulations_per_particle"])
    means, sds, ess = np.array(means), np.array(sds), np.array(ess)
    mse = float(np.mean((means - exact["mu"]) ** 2))
    real_ess = float(np.mean(sds**2)) / mse
    cpu = (time.process_time() - start) / replicates
    return {
        "m": f"{min(chosen)}" if min(chosen) == max(chosen) else f"{min(chosen)}-{max(chosen)}",
        "sims": float(np.mean(sims)),
        "ess": float(np.mean(ess)),
        "real": real_ess,
        "per_ksim": real_ess / np.mean(sims) * 1e3,
        "per_cpu": real_ess / cpu,
        "rmse": mse**0.5,
        "ratio": mse**0.5 / float(np.sqrt(np.mean(sds**2 / ess))),
        "bias_z": float((means.mean() - exact["mu"]) / (means.std(ddof=1) / np.sqrt(replicates))),
        "cpu": cpu,
    }


EPSILONS = (1.0, 10.0, 100.0, 1000.0)
COUNTS = (1, 4, 16, 64, "auto")


def main() -> None:
    replicates, _ = replicate_count(__doc__, 4)
    print(f"{replicates} replicates, 2000 particles, 4 chains; one CPU")
    print(
        f"{'eps':>6}{'m':>5}{'chosen':>7}{'sims':>11}{'rep. ESS':>9}{'real ESS':>9}{'ESS/ksim':>9}"
        f"{'RMSE':>9}{'ratio':>7}{'bias z':>7}{'cpu s':>7}{'gain/sim':>9}{'gain/cpu':>9}"
    )
    model, mech, release, _ = normal_mean_example(EPSILONS[0])
    dp.smc_abc(model, mech, release, rng=0, progressbar=False)  # warm up outside the timed rows
    for epsilon in EPSILONS:
        base = None
        for m in COUNTS:
            r = replicate(epsilon, m, replicates)
            base = base or r
            print(
                f"{epsilon:>6g}{m:>5}{r['m']:>7}{r['sims']:>11.0f}{r['ess']:>9.0f}{r['real']:>9.0f}"
                f"{r['per_ksim']:>9.3g}{r['rmse']:>9.2e}{r['ratio']:>7.2f}{r['bias_z']:>7.2f}"
                f"{r['cpu']:>7.2f}{r['per_ksim'] / base['per_ksim']:>9.2f}"
                f"{r['per_cpu'] / base['per_cpu']:>9.2f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
