"""The pageviews example under NUTS: the exact censored fit against the naive published-only one.

The model is ``dpinfer run pageviews`` (:mod:`dpinfer.models.pageviews`): nine countries'
daily views, Poisson around ``log views + weekly + trend``, released with Wikimedia's discrete
Gaussian noise (sigma 18.3, 90 and 179.8 by tier) and thresholds (90, 550, 1000). At the
default 280 days the table has 2,520 cells, 851 of them suppressed. Both fits sample the
same model (its parameters standardised by the rough fit, ``pv.rough_fit``); they differ only
in the likelihood:

* ``naive``: the published cells taken as the views, the suppressed ones dropped;
* ``exact``: ``mech.to_pymc`` (each true count summed out, suppressed cells censored).

Sections:

* ``sampling``: NUTS, 2 chains x (``--tune`` 300 + ``--draws`` 300) one after the other
  (``cores=1``), the two likelihoods alternating ``--repeats`` times, after a short fit of
  each that is not counted (the process's first fit pays for loading PyTensor's compiled
  code and the sampler's first use, some 2 s that fell on whichever likelihood ran first:
  without it the naive fit took 4 s the first time and 2 s after): wall and CPU time of
  the whole fit (building the model, compiling it or loading it from the cache, sampling),
  leapfrog steps, mean tree depth, the adapted step size, divergences (tuning + draws), the
  smallest bulk ESS over views, weekly and trend, ESS per wall second, and the ratios of
  exact to naive. Target: exact at
  most 3x naive in wall time.
* ``gradient`` (after ``sampling``, whose exact posterior it walks): one log-density and
  gradient evaluation of each model along a path through the exact posterior (7 points
  between consecutive draws, as leapfrog steps are), CPU; and the exact likelihood's cost
  per cell by tier, published against suppressed (each group of cells as its own
  ``to_pymc`` term, so a group's time includes one call's fixed cost), along the same path
  and with every rate multiplied by ``e^2`` to ``e^3`` (where NUTS went before the
  parameters were standardised: a suppressed cell's cut then lies some 40 sigma or more
  below its rate).
* ``map``: ``pm.find_MAP`` of the exact model, and its error in log views against the truth.
* ``example``: the example's default run (``dpinfer run pageviews``: 91 days, three fits of
  2 chains x (300 + 300)), wall and CPU time.

CPU time is this process's; ``+ compiler`` adds its children's (the C compiler PyTensor runs
for a model it has not compiled before), which the wall time of a fit on a quiet machine
also holds.

Run ``python benchmarks/pageviews.py`` (all sections) or name one with ``--section``. On a
shared machine wall time is noisy; CPU time is the stable figure.
"""

from __future__ import annotations

import argparse
import logging
import os
import resource
import time

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import numpy as np  # noqa: E402

import dpinfer as dp  # noqa: E402
from dpinfer.models import pageviews as pv  # noqa: E402
from dpinfer.results import effective_sample_size  # noqa: E402

KINDS = {"naive": "published", "exact": "exact"}
PARAMETERS = ("views", "weekly", "trend")


def _children_cpu() -> float:
    """CPU seconds of this process's finished children (the C compiler)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def fit(table, mech, kind: str, *, tune: int, draws: int, seed: int) -> dict:
    """One NUTS fit (2 chains): times, steps, tree depth, step size, divergences, ESS."""
    import pymc as pm

    wall, cpu, compiler = time.perf_counter(), time.process_time(), _children_cpu()
    model = pv.pymc_model(table["released"], mech, analysis=KINDS[kind])
    with model:
        idata = pm.sample(
            draws,
            tune=tune,
            chains=2,
            cores=1,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
            discard_tuned_samples=False,
        )
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    compiler = _children_cpu() - compiler
    warm, stats = idata.warmup_sample_stats, idata.sample_stats
    post = idata.posterior
    components = np.concatenate(
        [np.asarray(post[n]).reshape(2, draws, -1) for n in PARAMETERS], -1
    )
    return {
        "wall": wall,
        "cpu": cpu,
        "compiler": compiler,
        "steps": int(warm["n_steps"].sum() + stats["n_steps"].sum()),
        "depth": float(stats["tree_depth"].mean()),
        "step_size": float(stats["step_size"].mean()),
        "divergences": (int(warm["diverging"].sum()), int(stats["diverging"].sum())),
        "ess": min(effective_sample_size(components[..., k]) for k in range(components.shape[-1])),
        "posterior": post,
    }


def sampling(days: int, *, tune: int, draws: int, repeats: int) -> dict:
    """Fit both likelihoods ``repeats`` times, alternating; print each fit and the ratios."""
    table, mech = pv.simulate(days=days), pv.mechanism(days=days)
    cells, hidden = table["released"].size, int(np.isnan(table["released"]).sum())
    print(
        f"== sampling: {cells:,} cells ({hidden} suppressed), 2 chains x ({tune} + {draws}), "
        f"{repeats} repeat(s), the likelihoods alternating; ESS: smallest bulk over "
        f"{', '.join(PARAMETERS)} =="
    )
    warm = {kind: fit(table, mech, kind, tune=20, draws=20, seed=0)["wall"] for kind in KINDS}
    print(
        "warm-up fits of 2 chains x (20 + 20), not counted: "
        + ", ".join(f"{kind} {wall:.1f} s" for kind, wall in warm.items()),
        flush=True,
    )
    runs = {kind: [] for kind in KINDS}
    for repeat in range(repeats):
        for kind in KINDS:
            run = fit(table, mech, kind, tune=tune, draws=draws, seed=1 + repeat)
            runs[kind].append(run)
            print(
                f"{kind:>6}  wall {run['wall']:7.1f} s  CPU {run['cpu']:7.1f} s "
                f"(+ compiler {run['compiler']:5.1f} s)  "
                f"steps {run['steps']:6,}  CPU/step {run['cpu'] / run['steps'] * 1e3:6.3f} ms  "
                f"depth {run['depth']:4.2f}  step size {run['step_size']:5.3f}  "
                f"divergences {run['divergences'][0]} + {run['divergences'][1]}  "
                f"ESS {run['ess']:5.0f}  "
                f"ESS/s {run['ess'] / run['wall']:6.2f}",
                flush=True,
            )
    median = {
        k: {q: float(np.median([r[q] for r in v])) for q in ("wall", "cpu", "compiler")}
        for k, v in runs.items()
    }
    ess_rate = {k: float(np.median([r["ess"] / r["wall"] for r in v])) for k, v in runs.items()}
    print(
        f"exact / naive (medians): wall {median['exact']['wall'] / median['naive']['wall']:.2f}, "
        f"CPU {median['exact']['cpu'] / median['naive']['cpu']:.2f}, CPU + compiler "
        f"{_total(median['exact']) / _total(median['naive']):.2f}, ESS per wall second "
        f"{ess_rate['exact'] / ess_rate['naive']:.3f}  (target: wall at most 3)"
    )
    return runs["exact"][-1]["posterior"]


def _total(times: dict) -> float:
    return times["cpu"] + times["compiler"]


def _free_path(model, posterior, steps: int = 7) -> list[np.ndarray]:
    """The model's free variables along chain 0: ``steps`` points between consecutive draws."""
    import pytensor.tensor as pt

    columns = []
    for value in model.value_vars:
        rv = model.values_to_rvs[value]
        draws = np.asarray(posterior[rv.name])[0]
        transform = model.rvs_to_transforms.get(rv)
        if transform is not None:
            draws = transform.forward(pt.as_tensor(draws)).eval()
        columns.append(draws.reshape(len(draws), -1))
    x = np.concatenate(columns, axis=1)
    return [
        a + f * (b - a)
        for a, b in zip(x[:-1], x[1:], strict=True)
        for f in np.arange(steps) / steps
    ]


def _log_rates(posterior, days: int, steps: int = 7) -> list[np.ndarray]:
    """Each cell's log rate along the path of :func:`_free_path` (affine in the free variables)."""
    draws = [np.asarray(posterior[n])[0] for n in ("log_views", "weekly", "trend")]
    logs = [pv._log_rate(*d, days).ravel() for d in zip(*draws, strict=True)]
    return [
        a + f * (b - a)
        for a, b in zip(logs[:-1], logs[1:], strict=True)
        for f in np.arange(steps) / steps
    ]


def _compiled(model):
    fn = model.logp_dlogp_function(ravel_inputs=True)
    fn.set_extra_values({})
    return fn


def _group_logp(mech, released, cells):
    """The exact log-likelihood and its gradient in the log rates of ``cells`` alone."""
    import pymc as pm

    sub = dp.Thresholded(
        dp.DiscreteGaussian(mech.mechanism.sigma.ravel()[cells], event_shape=(cells.size,)),
        threshold=mech.threshold.ravel()[cells],
        publish=mech.publish,
    )
    with pm.Model() as model:
        log_rate = pm.Flat("log_rate", shape=cells.size)
        sub.to_pymc(
            "y", pm.Poisson.dist(mu=pm.math.exp(log_rate)), observed=released.ravel()[cells]
        )
    fn = model.logp_dlogp_function(ravel_inputs=True)
    fn.set_extra_values({})
    return fn


def _cpu_per_call(fn, points) -> float:
    fn(points[0])
    start = time.process_time()
    for x in points:
        fn(x)
    return (time.process_time() - start) / len(points)


def gradient(days: int, posterior) -> None:
    """CPU per log-density-and-gradient evaluation: both models, and the exact one per cell."""
    table, mech = pv.simulate(days=days), pv.mechanism(days=days)
    released = table["released"]
    models = {kind: pv.pymc_model(released, mech, analysis=a) for kind, a in KINDS.items()}
    path = _free_path(models["exact"], posterior)
    print(f"== gradient: CPU per evaluation along {len(path)} points of the exact posterior ==")
    cost = {kind: _cpu_per_call(_compiled(model), path) for kind, model in models.items()}
    print(
        f"naive {cost['naive'] * 1e3:.3f} ms, exact {cost['exact'] * 1e3:.3f} ms: "
        f"exact / naive {cost['exact'] / cost['naive']:.1f}"
    )
    print("exact likelihood per cell (each group alone), CPU along the path and far from it:")
    sigma, hidden = mech.mechanism.sigma.ravel(), np.isnan(released).ravel()
    log_rates = _log_rates(posterior, days)
    for s in np.unique(sigma):
        for suppressed in (False, True):
            cells = np.flatnonzero((sigma == s) & (hidden == suppressed))
            fn = _group_logp(mech, released, cells)
            logs = [x[cells] for x in log_rates]
            near = _cpu_per_call(fn, logs) / cells.size
            far = [
                _cpu_per_call(fn, [logs[0] + shift] * 2) / cells.size for shift in (2.0, 2.5, 3.0)
            ]
            print(
                f"  sigma {s:5.1f} {'suppressed' if suppressed else 'published':>10} "
                f"{cells.size:4d} cells: {near * 1e9:6.0f} ns a cell at the posterior; rates x "
                "e^2, e^2.5, e^3: " + ", ".join(f"{x * 1e6:7.1f}" for x in far) + " us a cell",
                flush=True,
            )


def find_map(days: int) -> None:
    """Time ``pm.find_MAP`` of the exact model and compare its log views with the truth."""
    import pymc as pm

    table, mech = pv.simulate(days=days), pv.mechanism(days=days)
    wall, cpu = time.perf_counter(), time.process_time()
    model = pv.pymc_model(table["released"], mech)
    point = pm.find_MAP(model=model, progressbar=False)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    error = np.log(point["views"] / np.array([v for _, v in pv.COUNTRIES]))
    print(
        f"== MAP of the exact model: wall {wall:.1f} s, CPU {cpu:.1f} s; log(MAP views / true "
        f"views): {', '.join(f'{e:+.3f}' for e in error)} =="
    )


def example() -> None:
    """Time the example's default run, as ``dpinfer run pageviews`` makes it."""
    wall, cpu, compiler = time.perf_counter(), time.process_time(), _children_cpu()
    result = pv.run(rng=0, progressbar=False)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    compiler = _children_cpu() - compiler
    print(
        f"== the example's default run (dpinfer run pageviews, {pv.EXAMPLE.seconds} s "
        f"announced): wall {wall:.1f} s, CPU {cpu:.1f} s (+ compiler {compiler:.1f} s); mean "
        "|log error| of views: "
        + ", ".join(
            f"{k} {result.report.diagnostics[f'{k}_views_log_error']:.3f}" for k in pv.ANALYSES
        )
        + " =="
    )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--section", choices=("sampling", "gradient", "map", "example"), default=None
    )
    parser.add_argument("--days", type=int, default=280)
    parser.add_argument("--tune", type=int, default=300)
    parser.add_argument("--draws", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args(argv)
    logging.getLogger("pymc").setLevel(logging.ERROR)
    posterior = None
    if args.section in (None, "sampling", "gradient"):
        posterior = sampling(args.days, tune=args.tune, draws=args.draws, repeats=args.repeats)
    if args.section in (None, "gradient"):
        gradient(args.days, posterior)
    if args.section in (None, "map"):
        find_map(args.days)
    if args.section in (None, "example"):
        example()


if __name__ == "__main__":
    main()
