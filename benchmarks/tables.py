"""Marginalised tables in PyMC: dpinfer's compiled sums against the naive and the dense models.

The model is the county-rates one (``dpinfer run county-rates``): hierarchical Poisson counts
``cases_i ~ Poisson(pop_i exp(mu + tau z_i))`` over ``n`` cells, each released through the
discrete Gaussian mechanism at ``rho`` zCDP per count (sensitivity 1, so sigma =
1 / sqrt(2 rho)). Three likelihoods of the same release:

* ``naive``: the releases taken as the counts (``pm.Poisson(..., observed=max(y, 0))``);
* ``dpinfer``: ``mech.to_pymc("cases", pm.Poisson.dist(mu=lam), observed=y)``, the exact
  marginal likelihood by the compiled kernel (``dpinfer.marginal``);
* ``dense``: the hand-written PyMC marginal a user writes without dpinfer: a fixed window of
  ``2 w + 1`` counts around every release (``w = ceil(8 sigma)``) and a dense
  ``(window x cells)`` logsumexp graph.

Sections:

* ``sampling``: NUTS with 2 chains x (500 tune + 500 draws) at 1,000 and 10,000 cells: wall
  time, the smallest bulk ESS of (mu, tau) and ESS per second, and the wall-time ratio of
  each to ``naive``. Target: ``dpinfer`` at most 2x ``naive``.
* ``evaluation``: one log-density-and-gradient evaluation of the compiled model from 10**2
  to 10**6 cells: median wall time over repeats and the peak memory that NumPy allocates
  during it (tracemalloc), for ``dpinfer`` and ``dense`` (``naive`` for scale).

Run ``python benchmarks/tables.py`` (both sections) or name one with ``--section``; ``--cells``
changes the sizes of ``sampling``. Timings are of this machine as it is: on a shared machine
run it when it is quiet.
"""

from __future__ import annotations

import argparse
import math
import time
import tracemalloc

import numpy as np

import dpinfer as dp

KINDS = ("naive", "dpinfer", "dense")


def table(n: int, rho: float, seed: int = 0):
    """Populations, true counts and the discrete Gaussian release of ``n`` made-up counties."""
    rng = np.random.default_rng(seed)
    population = np.round(np.exp(rng.normal(10.2, 1.3, size=n))).astype(np.int64) + 100
    rate = np.exp(-6.0 + 0.4 * rng.standard_normal(n))
    counts = rng.poisson(population * rate)
    mechanism = (
        dp.DiscreteGaussian.from_zcdp(rho=rho, sensitivity=1)
        if hasattr(dp.DiscreteGaussian, "from_zcdp")
        else dp.DiscreteGaussian(1 / math.sqrt(2 * rho))
    )
    return population, mechanism, mechanism.release(counts, rng=seed + 1)


def model(kind: str, population, mechanism, released):
    """The hierarchical Poisson model with the release attached by ``kind``."""
    import pymc as pm

    n = population.size
    with pm.Model() as m:
        mu = pm.Normal("mu", -6.0, 2.0)
        tau = pm.HalfNormal("tau", 1.0)
        z = pm.Normal("z", 0.0, 1.0, shape=n)
        lam = population * pm.math.exp(mu + tau * z)
        if kind == "naive":
            pm.Poisson("cases", lam, observed=np.maximum(released, 0))
        elif kind == "dpinfer":
            mechanism.to_pymc("cases", pm.Poisson.dist(mu=lam), observed=released)
        else:
            pm.Potential("cases", dense_loglik(lam, mechanism, released).sum())
    return m


def dense_loglik(lam, mechanism, released):
    """The hand-written marginal: a fixed window around each release, summed by logsumexp."""
    import pymc as pm
    import pytensor.tensor as pt

    sigma = float(np.max(mechanism.sigma))
    w = math.ceil(8 * sigma)
    s = np.maximum(released[None, :] + np.arange(-w, w + 1)[:, None], 0)
    noise = mechanism.logpdf(0, (released[None, :] - s).reshape(-1, 1)).reshape(s.shape)
    latent = pm.logp(pm.Poisson.dist(mu=lam[None, :]), s)
    return pt.logsumexp(latent + noise, axis=0)


def sampling(cells, rho):
    """NUTS wall time and ESS per second for each likelihood."""
    import pymc as pm

    from dpinfer.results import effective_sample_size

    rows = []
    for n in cells:
        data = table(n, rho)
        times = {}
        for kind in KINDS:
            m = model(kind, *data)
            start = time.perf_counter()
            with m:
                idata = pm.sample(
                    500,
                    tune=500,
                    chains=2,
                    random_seed=1,
                    progressbar=False,
                    compute_convergence_checks=False,
                )
            wall = time.perf_counter() - start
            ess = min(effective_sample_size(idata.posterior[v].values) for v in ("mu", "tau"))
            times[kind] = wall
            rows.append((n, kind, wall, ess, ess / wall, wall / times["naive"]))
            print(
                f"{n:>7,} {kind:>8}  {wall:8.1f} s  ESS {ess:7.0f}  ESS/s {ess / wall:7.1f}  "
                f"x naive {wall / times['naive']:5.2f}",
                flush=True,
            )
    return rows


def evaluation(sizes, rho, repeats=7):
    """Time and traced peak memory of one log-density-and-gradient evaluation."""
    for n in sizes:
        data = table(n, rho)
        for kind in KINDS:
            if kind == "dense" and n > 10**5:
                print(f"{n:>9,} {kind:>8}  skipped (the (window x cells) graph needs >10 GB)")
                continue
            m = model(kind, *data)
            fn = m.logp_dlogp_function(ravel_inputs=True)
            fn.set_extra_values({})
            x = np.concatenate([np.ravel(v) for v in m.initial_point().values()])
            fn(x)
            laps = []
            for _ in range(repeats):
                start = time.perf_counter()
                fn(x)
                laps.append(time.perf_counter() - start)
            tracemalloc.start()
            fn(x)
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            ms, mib = np.median(laps) * 1e3, peak / 2**20
            print(f"{n:>9,} {kind:>8}  {ms:10.3f} ms  peak {mib:9.1f} MiB", flush=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--section", choices=("sampling", "evaluation"), default=None)
    parser.add_argument("--cells", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--rho", type=float, default=0.5)
    args = parser.parse_args(argv)
    if args.section in (None, "sampling"):
        print("== sampling: 2 chains x (500 + 500), wall time and ESS of (mu, tau) ==")
        sampling(args.cells, args.rho)
    if args.section in (None, "evaluation"):
        print("== evaluation: one log-density and gradient ==")
        evaluation([10**k for k in range(2, 7)], args.rho)


if __name__ == "__main__":
    main()
