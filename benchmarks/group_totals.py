"""Exact totals in a PyMC model: the cost of summing each group over the splits of its total.

The model is the one of issue 31 (section 2b): a made-up table of 300 counties x 2 sexes x
4 age groups, counts ``Poisson(exp(alpha_county + beta_sex + gamma_age))``, every cell
released with discrete Gaussian noise (``rho`` zCDP per cell, sensitivity 1, so
``sigma = 1 / sqrt(2 rho)``), and each county's total population published exactly. The
same model is built twice:

* ``cells``: ``mech.to_pymc("y", pm.Poisson.dist(mu=mu), observed=y)``, each cell's count
  summed out alone (the totals unused);
* ``totals``: the same with ``totals=(county, county_totals)``, each county's 8 counts summed
  over the splits of its total (``dpinfer.marginal._groups``).

Printed for each: the build time (the model and PyMC's compiled log-density-and-gradient
function, CPU seconds, with the compiled kernels already cached on disk by a first build),
and the CPU time of one log-density-and-gradient evaluation (median over ``--repeats``) at
three kinds of points: the truth; points a sampler's step away from it (the truth moved by
0.01 per coordinate, a different draw each evaluation: the usual cost inside NUTS); and the
model's initial point, far from the data (the warm-up's cost). Then the ratio of ``totals``
to ``cells``. CPU time is of this process (``time.process_time``); on a shared machine wall
time is noisy.

Run ``python benchmarks/group_totals.py``; ``--rho`` changes the budget per cell (default
0.05, sigma 3.2), ``--counties`` the number of counties.
"""

from __future__ import annotations

import argparse
import os
import time

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import numpy as np  # noqa: E402

import dpinfer as dp  # noqa: E402

SEXES, AGES = 2, 4
SEX_SHARE = np.array([0.49, 0.51])
AGE_SHARE = np.array([0.22, 0.30, 0.28, 0.20])


def release(counties: int, rho: float, seed: int = 0):
    """Populations, the noisy table, the exact county totals and the true parameters."""
    rng = np.random.default_rng(seed)
    population = np.round(np.exp(rng.normal(8.5, 1.0, size=counties))) + 200
    truth = {
        "alpha": np.log(population).reshape(-1, 1, 1),
        "beta": np.log(SEX_SHARE).reshape(1, -1, 1),
        "gamma": np.log(AGE_SHARE).reshape(1, 1, -1),
    }
    counts = rng.poisson(np.exp(truth["alpha"] + truth["beta"] + truth["gamma"]))
    mechanism = dp.DiscreteGaussian.from_zcdp(rho=rho, sensitivity=1)
    return mechanism, mechanism.release(counts, rng=rng), counts.sum(axis=(1, 2)), truth


def model(mechanism, released, totals, *, with_totals: bool):
    """The Poisson model with county, sex and age effects, with or without the totals."""
    import pymc as pm

    counties = released.shape[0]
    with pm.Model() as built:
        alpha = pm.Normal("alpha", 8.0, 3.0, shape=(counties, 1, 1))
        beta = pm.Normal("beta", 0.0, 1.0, shape=(1, SEXES, 1))
        gamma = pm.Normal("gamma", 0.0, 1.0, shape=(1, 1, AGES))
        mu = pm.math.exp(alpha + beta + gamma)
        county = np.arange(counties).reshape(-1, 1, 1)
        mechanism.to_pymc(
            "y",
            pm.Poisson.dist(mu=mu),
            observed=released,
            totals=(county, totals) if with_totals else None,
        )
    return built


def build(mechanism, released, totals, *, with_totals: bool):
    """The model and its compiled log-density-and-gradient, and the CPU seconds they took."""
    start = time.process_time()
    built = model(mechanism, released, totals, with_totals=with_totals)
    function = built.logp_dlogp_function(ravel_inputs=True)
    function.set_extra_values({})
    return built, function, time.process_time() - start


def flat(built, point: dict) -> np.ndarray:
    """The model's value variables at ``point``, raveled in the compiled function's order."""
    return np.concatenate([np.ravel(point[v.name]) for v in built.value_vars])


def per_evaluation(function, points: list[np.ndarray], repeats: int) -> float:
    """Median CPU seconds of one evaluation, cycling through ``points``."""
    function(points[0])  # the first call allocates the Ops' states
    times = []
    for i in range(repeats):
        start = time.process_time()
        function(points[i % len(points)])
        times.append(time.process_time() - start)
    return float(np.median(times))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counties", type=int, default=300)
    parser.add_argument("--rho", type=float, default=0.05)
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args(argv)
    mechanism, released, totals, truth = release(args.counties, args.rho)
    sigma = float(np.max(mechanism.sigma))
    print(
        f"{args.counties} counties x {SEXES} sexes x {AGES} ages; discrete Gaussian noise "
        f"sigma {sigma:.2f} (rho {args.rho}); CPU seconds (shared machine)"
    )
    build(mechanism, released, totals, with_totals=True)  # compile or load the kernels once
    build(mechanism, released, totals, with_totals=False)
    rng = np.random.default_rng(1)
    rows = {}
    for label, with_totals in (("cells", False), ("totals", True)):
        built, function, seconds = build(mechanism, released, totals, with_totals=with_totals)
        at_truth = flat(built, truth)
        steps = [at_truth + 0.01 * rng.standard_normal(at_truth.size) for _ in range(16)]
        start = flat(built, built.initial_point())
        rows[label] = (
            seconds,
            per_evaluation(function, [at_truth], args.repeats),
            per_evaluation(function, steps, args.repeats),
            per_evaluation(function, [start], max(args.repeats // 10, 5)),
        )
    print(f"{'':8} {'build s':>9} {'truth ms':>9} {'step ms':>9} {'start ms':>9}")
    for label, (seconds, *evaluations) in rows.items():
        print(f"{label:8} {seconds:9.2f}" + "".join(f"{1e3 * t:9.3f}" for t in evaluations))
    ratios = [t / c for t, c in zip(rows["totals"], rows["cells"], strict=True)]
    print(f"{'ratio':8} {ratios[0]:9.2f}" + "".join(f"{r:9.1f}" for r in ratios[1:]))


if __name__ == "__main__":
    main()
