"""Marginalised tables in PyMC: dpinfer's compiled sums against the naive and the dense models.

The model is the county-rates one (``dpinfer run county-rates``): hierarchical Poisson counts
``cases_i ~ Poisson(pop_i exp(log_rate_i))``, ``log_rate_i ~ Normal(mu, tau)`` over ``n``
cells, each released through the discrete Gaussian mechanism at ``rho`` zCDP per count
(sensitivity 1, so sigma = 1 / sqrt(2 rho)). Most counts are in the tens to hundreds, so each
rate is pinned by its own count and is sampled in the centred form; the cells released below
10 are sampled in the non-centred form ``log_rate = mu + tau z`` (the usual choice for
rates the data leave to the prior; it is made from the release, the same for every variant).

NumPy's BLAS runs on one thread here (set below, before NumPy loads): PyMC's NUTS takes dot
products of 10,000-long vectors at every step, and a multithreaded BLAS on a machine whose
cores are busy spends most of its time waiting (the naive model at 10,000 cells had not
finished after 14 CPU minutes; on one thread it takes about 0.7 ms a step).
Three likelihoods of the same release, on the same model:

* ``naive``: the releases taken as the counts (``pm.Poisson(..., observed=max(y, 0))``);
* ``dpinfer``: ``mech.to_pymc("cases", pm.Poisson.dist(mu=lam), observed=y)``, the exact
  marginal likelihood by the compiled kernel (``dpinfer.marginal``);
* ``dense``: the hand-written PyMC marginal a user writes without dpinfer: a fixed window of
  ``2 w + 1`` counts around every release (``w = ceil(12 sigma)``; around 0 for a negative
  release), its negative counts masked out, and a dense ``(window x cells)`` logsumexp graph.
  Before the timings, the script checks that its log-likelihood is dpinfer's on a small table
  (:func:`check_dense`).

Sections:

* ``sampling``: NUTS with 2 chains x (``--tune`` 500 + ``--draws`` 500), run one after the
  other in this process (``cores=1``) and alternating between the likelihoods (so that a
  change in the machine's load falls on all of them), at 1,000 and 10,000 cells (``dense``
  only up to ``--dense-max`` cells): wall and CPU time, the leapfrog steps taken, the CPU
  time per step, the smallest bulk ESS of (mu, tau), ESS per wall second, and the ratios of
  wall and CPU time to ``naive``.
  Target: ``dpinfer`` at most 2x ``naive``. On a shared machine wall time is noisy; CPU time
  and the per-evaluation times are the stable figures.
* ``nutpie``: nutpie on the ``naive`` and ``dpinfer`` models at ``--cells``, ``--nutpie-chains``
  (default 4) chains of 1,000 tuning steps and ``--nutpie-draws`` (default 4,000) draws each,
  the chains one after the other on one core: CPU per leapfrog step, the bulk ESS of mu and
  of tau over all the chains, CPU per effective sample (of the smaller), and the ratios of
  ``dpinfer`` to ``naive``, for each of ``--nutpie-seeds`` (default 11 and 12) and pooled
  over them. Target: at most 2.5x per effective sample. ``sampling``'s 2 x 500
  draws put the ESS ratio of the two models anywhere from 0.6 to 1.2 (at 1,000 cells, 1,937
  against 1,158 in one run); with 16,000 draws the two ESS agree within about a tenth (the
  models' posteriors of mu and tau are nearly the same: at 10,000 cells the ratio of the
  smaller ESS was 0.91 with seed 11 and 0.99 with seed 12), so that the ratio per effective
  sample is near the ratio per step, as it should be; pooling the seeds narrows it further.
* ``evaluation``: one log-density-and-gradient evaluation of the compiled model from 10**2
  to 10**6 cells: median wall and CPU time over repeats, the ratio of CPU time to ``naive``,
  and the peak memory that NumPy allocates during it (tracemalloc).
* ``cores``: one log-density-and-gradient of the ``dpinfer`` model at ``--cores-cells``
  (default 10**6) on one core and on two, in alternating (paired) runs, under three builds of
  the same function: PyTensor's C backend (``FAST_RUN``, what ``pm.sample`` uses) with only
  the kernel threaded; the C backend with PyTensor's OpenMP elementwise loops
  (``FAST_RUN+omp``: compiled with ``pytensor.config.openmp``, so that the model's own
  elementwise work, its exponentials and normal densities, is spread too); and the numba
  backend (``NUMBA``, what nutpie compiles; its elementwise loops have no threads). "One
  core" is numba's threads (the kernel's) and OpenMP's (the ``+omp`` build's elementwise
  loops) both set to 1; "two cores" is both set to 2, in the same compiled function; BLAS
  stays on one thread. Printed: wall time, CPU time, the busiest thread's time on a
  processor, and the ratios of two cores to one. Target: two cores at most 0.6x one. On a
  shared machine the wall time of two threads waits for a second free core; the busiest
  thread's time (``/proc``'s per-thread accounting, Linux only; it includes a thread's
  spinning while it waits for the other) approximates the wall time with two free cores,
  and the load average printed says how busy the machine was. The CPU time of two cores
  includes the idle threads' spinning (TBB's; OpenMP's threads sleep when idle,
  ``OMP_WAIT_POLICY=PASSIVE``: spinning, on this shared 2-core machine they took about 30 ms
  of CPU an evaluation and made the two-core wall time 1.7x the one-core one). The Op
  threads tables of at least ``dpinfer.marginal._op.THREADED_CELLS`` cells only; what
  stays on one thread is the model's graph outside the Op (in this model its indexing, the
  sums, and, without OpenMP, its elementwise loops). The row ``Op alone`` is
  the marginal Op's own evaluation (the kernel's log-density and scores, its ``perform``)
  with the inputs the ``FAST_RUN`` function gave it: the part that threads can divide. With
  a serial part ``G`` and an Op of one-core time ``O`` halved on two, the whole evaluation's
  ratio is ``(G + O / 2) / (G + O)``, at most 0.6 only where ``O >= 4 G``.
* ``--build``: building the model (the ``with pm.Model()`` block) and then compiling its
  log-density-and-gradient function with one evaluation, for ``naive`` and ``dpinfer`` from
  10**4 to 10**7 cells (``--build-cells``), each in a fresh process: CPU time per cell, the
  resident memory the model holds per cell after building (and after compiling), the peak
  resident memory per cell while building and while compiling (the kernel's high-water mark,
  reset before the build), and the ratios of ``dpinfer`` to ``naive``. Target at 10**6
  cells: building at most 2x ``naive``, resident memory at most 1.5x.
* ``--large CELLS``: ``dpinfer``'s model at that many cells (10**7 on a 24 GB machine):
  build, compile, one log-density-and-gradient evaluation, and a short NUTS run
  (``--tune`` + ``--draws`` draws, tree depth at most ``--max-treedepth``), with CPU time,
  leapfrog steps and resident memory per cell.

* ``jax-callback``: one log-likelihood-and-gradient of the marginal Op at ``--cells``: the
  numba kernel called directly against the JAX function of the Op (a host callback into the
  same kernel, :mod:`dpinfer.marginal._jax`), CPU time.
* ``jax-samplers``: numpyro and blackjax NUTS (as ``pm.sample(nuts_sampler=...)`` runs them)
  on the naive and dpinfer models at ``--cells``: CPU per leapfrog step and per effective
  sample of (mu, tau), and their ratios to naive ``pm.sample``.

The kernel's threads (numba's) are off in ``sampling`` and ``evaluation``, as BLAS's are, so
that their CPU times compare the likelihoods' work; ``cores`` turns them on.

Run ``python benchmarks/tables.py`` (every section) or name one with ``--section``; ``--cells``
changes the sizes of ``sampling``; ``--rho`` the budget per count (default 0.5). The exact
model's cost per cell grows with the noise's width in counts: at tolerance 1e-10 a cell sums
about ``2 x 5.9 sigma_eff + 1`` terms, ``sigma_eff`` at most ``sigma = 1 / sqrt(2 rho)``, so a
smaller ``rho`` makes the ratio to ``naive`` larger.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import subprocess
import sys
import time
import tracemalloc

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")
# OpenMP's idle threads (``cores``) sleep at once instead of spinning: on two cores they
# would otherwise spin against the kernel's threads (TBB's) and the machine's other work
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402

import dpinfer as dp  # noqa: E402

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
    """The hierarchical Poisson model with the release attached by ``kind``.

    The centred and non-centred rates are placed by integer indices, as PyMC's hierarchical
    models index their groups: boolean masks run as NumPy code in PyTensor's C backend, which
    took 9 of the 61 ms of an evaluation at 10**6 cells (in both models; PyTensor's numba
    backend turns the masks into these indices itself).
    """
    import pymc as pm
    import pytensor.tensor as pt

    small = np.asarray(released) < 10
    # as constants: PyTensor's indexing walks a NumPy index array element by element in Python
    few, many = pt.as_tensor(np.flatnonzero(small)), pt.as_tensor(np.flatnonzero(~small))
    with pm.Model() as m:
        mu = pm.Normal("mu", -6.0, 2.0)
        tau = pm.HalfNormal("tau", 1.0)
        centred = pm.Normal("log_rate", mu, tau, shape=int((~small).sum()))
        z = pm.Normal("z", 0.0, 1.0, shape=int(small.sum()))
        log_rate = pt.set_subtensor(pt.zeros(small.size)[many], centred)
        log_rate = pt.set_subtensor(log_rate[few], mu + tau * z)
        lam = population * pm.math.exp(log_rate)
        if kind == "naive":
            pm.Poisson("cases", lam, observed=np.maximum(released, 0))
        elif kind == "dpinfer":
            mechanism.to_pymc("cases", pm.Poisson.dist(mu=lam), observed=released)
        else:
            pm.Potential("cases", dense_loglik(lam, mechanism, released).sum())
    return m


def dense_loglik(lam, mechanism, released):
    """The hand-written marginal: a fixed window of counts around each release, by logsumexp.

    Cell ``i`` sums the counts ``max(y_i, 0) - w, ..., max(y_i, 0) + w`` (``w = ceil(12 sigma)``)
    with the negative ones masked out (a zero term), not clipped to 0: clipping would count the
    term of the count 0 once for each negative entry of the window, up to ``w + 1`` times.
    """
    import pymc as pm
    import pytensor.tensor as pt

    released = np.asarray(released)
    w = math.ceil(12 * float(np.max(mechanism.sigma)))
    s = np.maximum(released, 0)[None, :] + np.arange(-w, w + 1)[:, None]
    counts = np.maximum(s, 0)  # the masked entries' counts, only for finite latent terms
    noise = mechanism.logpdf(0, (released[None, :] - counts).reshape(-1, 1)).reshape(s.shape)
    noise = np.where(s >= 0, noise, -np.inf)
    latent = pm.logp(pm.Poisson.dist(mu=lam[None, :]), counts)
    return pt.logsumexp(latent + noise, axis=0)


def check_dense(n: int = 300, rho: float = 0.5, *, seed: int = 3, tol: float = 1e-6) -> float:
    """Check that the dense peer's log-likelihood is dpinfer's on a small table; return the gap.

    Both are evaluated at the model's initial point and at two points around it (fixed
    seed). Each of dpinfer's cells is within ``tol = 1e-10`` of its exact value relative to
    its likelihood and the dense window misses less than ``1e-13`` of it, so the totals of
    ``n`` cells agree within ``n x 1e-10``; ``tol`` is that bound with room for rounding.
    """
    data = table(n, rho, seed=seed)
    if not np.any(data[2] < 8):
        raise ValueError(f"the table of seed {seed} has no cell released below 8: pick another")
    models = {kind: model(kind, *data) for kind in ("dpinfer", "dense")}
    logps = {k: m.compile_logp(vars=[m["cases"]], jacobian=False) for k, m in models.items()}
    start = models["dense"].initial_point()
    rng = np.random.default_rng(seed)
    points = [start] + [
        {k: v + 0.2 * rng.standard_normal(np.shape(v)) for k, v in start.items()} for _ in range(2)
    ]
    gap = max(abs(float(logps["dense"](p)) - float(logps["dpinfer"](p))) for p in points)
    if not gap <= tol:
        raise AssertionError(
            f"the dense peer and dpinfer's marginal differ by {gap:.3g} nats on {n} cells "
            f"(tolerance {tol:g})"
        )
    return gap


def sampling(cells, rho, dense_max, *, tune=500, draws=500, chains=2):
    """NUTS wall and CPU time, leapfrog steps and ESS per second for each likelihood.

    The chains of the likelihoods alternate (naive's first chain, dpinfer's first chain, ...,
    naive's second chain, ...), so that a change in the machine's load falls on all of them
    rather than on whichever ran during it.
    """
    rows = []
    for n in cells:
        data = table(n, rho)
        kinds = [k for k in KINDS if k != "dense" or n <= dense_max]
        if len(kinds) < len(KINDS):
            print(f"{n:>7,}    dense  skipped (more than --dense-max={dense_max:,} cells)")
        kinds += [k for k in NUTPIE_KINDS if _has_nutpie()]
        runs = {kind: [] for kind in kinds}
        for chain in range(chains):
            for kind in kinds:
                run = _run_nutpie if kind in NUTPIE_KINDS else _run
                m = model(kind.removeprefix("nutpie-"), *data)
                runs[kind].append(run(m, tune=tune, draws=draws, chain=chain))
        base = None
        for kind in kinds:
            row = _combine(runs[kind])
            base = base or row
            rows.append((n, kind, *row))
            wall, cpu, steps, ess = row
            print(
                f"{n:>7,} {kind:>8}  wall {wall:7.1f} s  CPU {cpu:7.1f} s  steps {steps:7,}  "
                f"CPU/step {cpu / steps * 1e3:6.3f} ms  ESS {ess:6.0f}  ESS/s {ess / wall:6.1f}  "
                f"x naive: wall {wall / base[0]:5.2f} CPU {cpu / base[1]:5.2f}",
                flush=True,
            )
        _print_per_effective_sample(n, {kind: row[1:] for (m, kind, *row) in rows if m == n})
    return rows


# nutpie (pm.sample(nuts_sampler="nutpie")) on the naive and the dpinfer model, when installed
NUTPIE_KINDS = ("nutpie-naive", "nutpie-dpinfer")


def _has_nutpie() -> bool:
    import importlib.util

    return importlib.util.find_spec("nutpie") is not None


def _run_nutpie(m, *, tune, draws, chain):
    """:func:`_run` by nutpie; its compilation is timed apart and printed, not counted."""
    import nutpie

    compile_cpu = time.process_time()
    compiled = nutpie.compile_pymc_model(m)
    compile_cpu = time.process_time() - compile_cpu
    print(f"        nutpie compiled in {compile_cpu:5.1f} CPU s (not counted below)", flush=True)
    wall, cpu = time.perf_counter(), time.process_time()
    idata = nutpie.sample(
        compiled, draws=draws, tune=tune, chains=1, cores=1, seed=1 + chain, progress_bar=False
    )
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    steps = int(idata.warmup_sample_stats["n_steps"].sum() + idata.sample_stats["n_steps"].sum())
    return wall, cpu, steps, {v: idata.posterior[v].values[0] for v in ("mu", "tau")}


def _print_per_effective_sample(n, rows) -> None:
    """CPU per step and per effective sample of (mu, tau), as ratios to the naive models."""
    per_step = {kind: cpu / steps for kind, (cpu, steps, _) in rows.items()}
    per_ess = {kind: cpu / ess for kind, (cpu, _, ess) in rows.items()}
    for kind in rows:
        step_ratio = per_step[kind] / per_step["naive"]
        line = (
            f"{n:>7,} {kind:>14}  CPU/step x pm.sample naive {step_ratio:5.2f}"
            f"  CPU/ESS {per_ess[kind] * 1e3:8.2f} ms, x pm.sample naive "
            f"{per_ess[kind] / per_ess['naive']:5.2f}"
        )
        if kind == "nutpie-dpinfer" and "nutpie-naive" in rows:
            line += (
                f", x nutpie naive: CPU/step {per_step[kind] / per_step['nutpie-naive']:5.2f}"
                f" CPU/ESS {per_ess[kind] / per_ess['nutpie-naive']:5.2f}"
            )
        print(line, flush=True)


def nutpie_ess(cells, rho, *, chains, draws, seeds=(11, 12), tune=1_000):
    """nutpie's CPU per step and per effective sample of (mu, tau), naive and dpinfer.

    One run of ``chains`` chains per seed and likelihood; with several seeds, the ratios
    of the runs pooled too (their CPU times and their effective samples added).
    """
    for n in cells:
        data = table(n, rho)
        totals = {kind: np.zeros(3) for kind in ("naive", "dpinfer")}  # CPU, steps, ESS
        for seed in seeds:
            rows = {}
            for kind in ("naive", "dpinfer"):
                cpu, steps, ess = _nutpie_run(model(kind, *data), chains, draws, tune, seed)
                rows[kind] = (cpu / steps, cpu / min(ess.values()))
                totals[kind] += (cpu, steps, min(ess.values()))
                print(
                    f"{n:>7,} {kind:>8}  seed {seed}  CPU {cpu:7.1f} s  steps {steps:8,}  "
                    f"CPU/step {cpu / steps * 1e3:6.3f} ms  ESS mu {ess['mu']:7.0f}  "
                    f"tau {ess['tau']:7.0f}  CPU/ESS {rows[kind][1] * 1e3:7.3f} ms",
                    flush=True,
                )
            step, per_ess = (rows["dpinfer"][i] / rows["naive"][i] for i in range(2))
            print(
                f"{n:>7,} nutpie dpinfer / naive, seed {seed}: CPU/step {step:5.2f}  "
                f"CPU/ESS {per_ess:5.2f} (target 2.50)"
            )
        if len(seeds) > 1:
            (cpu_d, steps_d, ess_d), (cpu_n, steps_n, ess_n) = totals["dpinfer"], totals["naive"]
            print(
                f"{n:>7,} nutpie dpinfer / naive, {len(seeds)} seeds pooled: CPU/step "
                f"{cpu_d / steps_d / (cpu_n / steps_n):5.2f}  CPU/ESS "
                f"{cpu_d / ess_d / (cpu_n / ess_n):5.2f} (target 2.50)"
            )


def _nutpie_run(m, chains, draws, tune, seed):
    """Sample ``m`` by nutpie on one core: (CPU s, leapfrog steps, ESS of mu and tau)."""
    import nutpie

    from dpinfer.results import effective_sample_size

    compiled = nutpie.compile_pymc_model(m)
    cpu = time.process_time()
    idata = nutpie.sample(
        compiled, draws=draws, tune=tune, chains=chains, cores=1, seed=seed, progress_bar=False
    )
    cpu = time.process_time() - cpu
    stats = (idata.warmup_sample_stats, idata.sample_stats)
    steps = int(sum(s["n_steps"].sum() for s in stats))
    ess = {v: effective_sample_size(idata.posterior[v].values) for v in ("mu", "tau")}
    return cpu, steps, ess


def _run(m, *, tune, draws, chain):
    """Sample one chain of ``m``: (wall s, CPU s, leapfrog steps, draws of mu and tau)."""
    import pymc as pm

    wall, cpu = time.perf_counter(), time.process_time()
    with m:
        idata = pm.sample(
            draws,
            tune=tune,
            chains=1,
            cores=1,
            random_seed=1 + chain,
            progressbar=False,
            compute_convergence_checks=False,
            discard_tuned_samples=False,
        )
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    steps = int(idata.warmup_sample_stats["n_steps"].sum() + idata.sample_stats["n_steps"].sum())
    return wall, cpu, steps, {v: idata.posterior[v].values[0] for v in ("mu", "tau")}


def _combine(chains):
    """Add the chains' times and steps: (wall, CPU, steps, smallest bulk ESS of mu and tau)."""
    from dpinfer.results import effective_sample_size

    wall, cpu, steps = (sum(run[i] for run in chains) for i in range(3))
    draws = {v: np.stack([run[3][v] for run in chains]) for v in ("mu", "tau")}
    return wall, cpu, steps, min(effective_sample_size(x) for x in draws.values())


def evaluation(sizes, rho, repeats=15):
    """Time and traced peak memory of one log-density-and-gradient evaluation."""
    for n in sizes:
        data = table(n, rho)
        base = None
        for kind in KINDS:
            if kind == "dense" and n > 10**5:
                print(f"{n:>9,} {kind:>8}  skipped (the (window x cells) graph needs >10 GB)")
                continue
            m = model(kind, *data)
            fn = m.logp_dlogp_function(ravel_inputs=True)
            fn.set_extra_values({})
            x = np.concatenate([np.ravel(v) for v in m.initial_point().values()])
            fn(x)
            laps, cpu = [], []
            for _ in range(repeats):
                start, start_cpu = time.perf_counter(), time.process_time()
                fn(x)
                laps.append(time.perf_counter() - start)
                cpu.append(time.process_time() - start_cpu)
            tracemalloc.start()
            fn(x)
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            ms, cpu_ms, mib = np.median(laps) * 1e3, np.median(cpu) * 1e3, peak / 2**20
            base = base or cpu_ms
            print(
                f"{n:>9,} {kind:>8}  wall {ms:10.3f} ms  CPU {cpu_ms:10.3f} ms  "
                f"x naive (CPU) {cpu_ms / base:6.2f}  peak {mib:9.1f} MiB",
                flush=True,
            )


def cores(n, rho, repeats=9):
    """One log-density-and-gradient on one and two cores, in paired runs (see the docstring).

    Under PyTensor's default (C) backend, which ``pm.sample`` uses, without and with its
    OpenMP elementwise loops, and under its numba backend, which nutpie uses.
    """
    import numba
    import pytensor

    if numba.config.NUMBA_NUM_THREADS < 2:
        print("skipped: numba has one thread here (NUMBA_NUM_THREADS)")
        return
    m = model("dpinfer", *table(n, rho))
    x = np.concatenate([np.ravel(v) for v in m.initial_point().values()])
    openmp = _openmp_threads()
    builds = {"FAST_RUN": False, "FAST_RUN+omp": True, "NUMBA": False}
    for build, elementwise_threads in builds.items():
        if elementwise_threads and openmp is None:
            print(f"{n:>9,} {build:>12}  skipped (no libgomp to set OpenMP's threads)")
            continue
        mode = build.split("+")[0]
        with pytensor.config.change_flags(openmp=elementwise_threads):
            fn = m.logp_dlogp_function(ravel_inputs=True, mode=mode)
        fn.set_extra_values({})
        fn(x)
        laps = {1: [], 2: []}
        for repeat in range(repeats):
            for cores_used in (1, 2) if repeat % 2 else (2, 1):
                numba.set_num_threads(cores_used)
                if elementwise_threads:
                    openmp(cores_used)
                fn(x)  # the other count's spinning threads settle first
                laps[cores_used].append(_lap(lambda: fn(x)))
        numba.set_num_threads(1)
        if openmp is not None:
            openmp(1)
        _print_cores(n, build, laps)
        if build == "FAST_RUN":
            _print_cores(n, "Op alone", _op_alone_laps(fn, x, repeats))
    print(
        f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; numba's threading "
        f"layer {numba.threading_layer()}; OpenMP elementwise loops from "
        f"{pytensor.config.openmp_elemwise_minsize:,} elements)"
    )


def _op_alone_laps(fn, x, repeats):
    """Paired laps of the marginal Op's own evaluation (``perform``) on the inputs of ``fn(x)``."""
    import numba

    from dpinfer.marginal._op import MarginalLogp

    f = fn._pytensor_function
    nodes = f.vm.nodes  # in the order of f.vm.thunks
    (k,) = (i for i, node in enumerate(nodes) if isinstance(node.op, MarginalLogp))
    # the inputs are read from storage after the call: no later node may have written them
    for node in nodes[k + 1 :]:
        destroyed = {node.inputs[i] for i in sum(node.op.destroy_map.values(), [])}
        if destroyed & set(nodes[k].inputs):
            raise RuntimeError(f"{node} overwrites an input of the marginal Op in place")
    collect, f.vm.allow_gc = f.vm.allow_gc, False  # the inputs stay in storage after the call
    fn(x)
    inputs = [cell[0] for cell in f.vm.thunks[k].inputs]
    f.vm.allow_gc = collect

    def evaluate():
        nodes[k].op.perform(nodes[k], inputs, [[None] for _ in range(4)])

    laps = {1: [], 2: []}
    for repeat in range(repeats):
        for cores_used in (1, 2) if repeat % 2 else (2, 1):
            numba.set_num_threads(cores_used)
            evaluate()
            laps[cores_used].append(_lap(evaluate))
    numba.set_num_threads(1)
    return laps


def _openmp_threads():
    """Return a function setting OpenMP's thread count (GNU's libgomp), or None without it."""
    import ctypes

    try:
        library = ctypes.CDLL("libgomp.so.1")
    except OSError:
        return None
    library.omp_set_num_threads.argtypes = [ctypes.c_int]
    return library.omp_set_num_threads


def _print_cores(n, build, laps):
    wall, cpu, busiest = (
        {k: np.array([lap[i] for lap in laps[k]]) for k in laps} for i in range(3)
    )
    for cores_used in (1, 2):
        print(
            f"{n:>9,} {build:>12} {cores_used} core(s)  "
            f"wall {np.median(wall[cores_used]) * 1e3:9.1f} ms  "
            f"CPU {np.median(cpu[cores_used]) * 1e3:9.1f} ms  "
            f"busiest thread {np.median(busiest[cores_used]) * 1e3:9.1f} ms",
            flush=True,
        )
    print(
        f"{n:>9,} {build:>12} two cores / one: wall {np.median(wall[2] / wall[1]):5.2f} "
        f"(paired median)  busiest thread {np.median(busiest[2] / busiest[1]):5.2f} "
        "(paired median; target 0.60)"
    )


def _lap(f):
    """Call ``f``: (wall s, CPU s, the longest time on a processor of one of its threads, s)."""
    before = _thread_run_times()
    wall, cpu = time.perf_counter(), time.process_time()
    f()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    after = _thread_run_times()
    busiest = max((t - before.get(tid, 0) for tid, t in after.items()), default=math.nan)
    return wall, cpu, busiest * 1e-9


def _thread_run_times() -> dict:
    """Nanoseconds on a processor of each of this process's threads (Linux's schedstat)."""
    times = {}
    for tid in os.listdir("/proc/self/task") if os.path.isdir("/proc/self/task") else ():
        try:
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                times[tid] = int(f.read().split()[0])
        except OSError:  # a thread that ended meanwhile
            continue
    return times


BUILD_CELLS = (10**4, 10**5, 10**6, 10**7)


def build(sizes, rho):
    """Build time and resident memory per cell of ``naive`` and ``dpinfer``, one process each."""
    print(
        "cells      kind   build CPU (µs/cell, x naive)   resident B/cell (x naive)   "
        "peak B/cell   compile+eval CPU s   after compile: resident, peak B/cell"
    )
    for n in sizes:
        base = None
        for kind in ("naive", "dpinfer"):
            row = _build_in_child(kind, n, rho)
            base = base or row
            us, held, peak = row["build_cpu"] / n * 1e6, row["held"] / n, row["peak"] / n
            print(
                f"{n:>10,} {kind:>8}  {row['build_cpu']:7.2f} s {us:6.2f} "
                f"{_ratio(row['build_cpu'], base['build_cpu'])}   {held:7.0f} "
                f"{_ratio(row['held'], base['held'])}   {peak:7.0f}   "
                f"{row['compile_cpu']:7.2f}   {row['compiled_held'] / n:7.0f}   "
                f"{row['compiled_peak'] / n:7.0f}",
                flush=True,
            )


def _ratio(value: float, base: float) -> str:
    # a small table's memory can fit in pages the process already holds: no ratio then
    return f"x{value / base:5.2f}" if base > 0 else "     -"


def _build_in_child(kind: str, n: int, rho: float) -> dict:
    """Run :func:`_build_once` in a fresh interpreter, so no earlier size's memory counts."""
    command = [sys.executable, __file__, "--build-one", kind, str(n), "--rho", str(rho)]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def _build_once(kind: str, n: int, rho: float) -> None:
    """Print (JSON) the CPU time and resident memory of building and compiling one model."""
    from _common import cpu_timed  # the script's folder: imported when run, not when loaded

    _compiled_once(model(kind, *table(100, rho)))  # imports and kernels loaded beforehand
    data = table(n, rho)
    gc.collect()
    start = _memory()
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")  # the high-water mark restarts from the present resident set
    m, build_cpu, build_wall = cpu_timed(model, kind, *data)
    gc.collect()
    built = _memory()
    fn, compile_cpu, _ = cpu_timed(_compiled_once, m)
    gc.collect()
    compiled = _memory()
    print(
        json.dumps(
            {
                "build_cpu": build_cpu,
                "build_wall": build_wall,
                "held": built["VmRSS"] - start["VmRSS"],
                "peak": built["VmHWM"] - start["VmRSS"],
                "compile_cpu": compile_cpu,
                "compiled_held": compiled["VmRSS"] - start["VmRSS"],
                "compiled_peak": compiled["VmHWM"] - start["VmRSS"],
            }
        )
    )


def _compiled_once(m):
    """Compile ``m``'s log-density-and-gradient function and evaluate it once."""
    fn = m.logp_dlogp_function(ravel_inputs=True)
    fn.set_extra_values({})
    fn(np.concatenate([np.ravel(v) for v in m.initial_point().values()]))
    return fn


def large(n: int, rho: float, *, tune: int, draws: int, max_treedepth: int) -> None:
    """At ``n`` cells: build dpinfer's model, one log-density and gradient, a short NUTS run.

    The run stores ``mu`` and ``tau`` only (the ``n`` rates would take ``n`` floats a draw)
    and caps the tree depth, so its length is at most ``(tune + draws) 2**max_treedepth``
    gradients; it shows that a table of this size samples, not how well it mixes.
    """
    import pymc as pm
    from _common import cpu_timed

    data = table(n, rho)
    start = _memory()
    m, build_cpu, _ = cpu_timed(model, "dpinfer", *data)
    fn, compile_cpu, _ = cpu_timed(m.logp_dlogp_function, ravel_inputs=True)
    fn.set_extra_values({})
    x = np.concatenate([np.ravel(v) for v in m.initial_point().values()])
    fn(x)
    (logp, _), eval_cpu, eval_wall = cpu_timed(fn, x)
    print(
        f"{n:>12,} cells: build {build_cpu:.2f} s CPU, compile {compile_cpu:.2f} s CPU, "
        f"log-density and gradient {eval_cpu:.3f} s CPU ({eval_wall:.3f} s wall, logp "
        f"{float(logp):.6g}), resident {(_memory()['VmRSS'] - start['VmRSS']) / n:.0f} B/cell",
        flush=True,
    )
    with m:
        idata, nuts_cpu, nuts_wall = cpu_timed(
            pm.sample,
            draws,
            tune=tune,
            chains=1,
            cores=1,
            random_seed=1,
            max_treedepth=max_treedepth,
            var_names=["mu", "tau"],
            progressbar=False,
            compute_convergence_checks=False,
            discard_tuned_samples=False,
        )
    steps = int(idata.warmup_sample_stats["n_steps"].sum() + idata.sample_stats["n_steps"].sum())
    memory = _memory()
    print(
        f"{n:>12,} cells: NUTS {tune} + {draws} draws, {steps} leapfrog steps in "
        f"{nuts_cpu:.1f} s CPU ({nuts_wall:.1f} s wall, {nuts_cpu / steps:.3f} s CPU a step); "
        f"resident {(memory['VmRSS'] - start['VmRSS']) / n:.0f} B/cell, peak "
        f"{(memory['VmHWM'] - start['VmRSS']) / n:.0f} B/cell",
        flush=True,
    )


def _memory() -> dict:
    """This process's resident set and its high-water mark, in bytes (Linux)."""
    with open("/proc/self/status") as status:
        fields = dict(line.split(":", 1) for line in status if line.startswith("Vm"))
    return {key: int(fields[key].split()[0]) * 1024 for key in ("VmRSS", "VmHWM")}


def numba_evaluation(sizes, rho, repeats=50):
    """One log-density-and-gradient evaluation compiled by PyTensor's numba backend (nutpie's).

    The marginal Op's own share is the difference between the two models: their graphs
    differ only in the likelihood term.
    """
    for n in sizes:
        data = table(n, rho)
        base = None
        for kind in ("naive", "dpinfer"):
            m = model(kind, *data)
            fn = m.logp_dlogp_function(ravel_inputs=True, mode="NUMBA")
            fn.set_extra_values({})
            x = np.concatenate([np.ravel(v) for v in m.initial_point().values()])
            fn(x)
            cpu = []
            for _ in range(repeats):
                start = time.process_time()
                fn(x)
                cpu.append(time.process_time() - start)
            cpu_ms = np.median(cpu) * 1e3
            base = base or cpu_ms
            print(
                f"{n:>9,} {kind:>8}  CPU {cpu_ms:8.3f} ms  x naive {cpu_ms / base:5.2f}  "
                f"per cell {cpu_ms / n * 1e6:7.1f} ns",
                flush=True,
            )


def callback_cost(sizes, rho, repeats=30):
    """CPU time of one log-likelihood-and-gradient of the marginal Op: kernel, JAX callback.

    ``kernel``: :func:`dpinfer.marginal._op.sweep` called directly with its state (the
    default backend's work, without PyTensor); ``callback``: the JAX function of
    the Op (:mod:`dpinfer.marginal._jax`), ``jax.jit(jax.value_and_grad)`` of the summed
    log-likelihood, a host callback into the same kernel. Both at the model's initial point;
    CPU time counts every thread of the process (XLA's wait for the callback among them).
    """
    import jax
    from pytensor.graph.traversal import io_toposort

    from dpinfer.marginal import _jax as marginal_jax
    from dpinfer.marginal._forms import unpacked
    from dpinfer.marginal._op import MarginalLogp, sweep
    from dpinfer.marginal._poisson import STATE

    for n in sizes:
        m = model("dpinfer", *table(n, rho))
        nodes = io_toposort([], [m.logp()])
        (node,) = (x for x in nodes if isinstance(x.op, MarginalLogp))
        inputs = [m.compile_fn(x, inputs=m.value_vars, on_unused_input="ignore")(m.initial_point())
                  for x in node.inputs[:2]]  # fmt: skip
        a, b = (np.ascontiguousarray(x, dtype=float) for x in inputs)
        op, (form, shared) = node.op, (x.data for x in node.inputs[2:4])
        (cells, tab), state = unpacked(form, shared), np.full((n, STATE), np.nan)
        outs = (np.empty(n), np.empty(n), np.empty(n), np.empty(n, dtype=np.int64))

        def kernel(a=a, b=b, op=op, cells=cells, tab=tab, state=state, outs=outs):
            sweep(op.family, a, b, cells, tab, op.tol, state, *outs)

        marginal = marginal_jax.marginal_logp_jax(marginal_jax.HostSweep(op, form, shared))
        value_and_grad = jax.jit(jax.value_and_grad(lambda a, b: marginal(a, b)[0].sum()))

        def callback(a=jax.numpy.asarray(a), b=jax.numpy.asarray(b), f=value_and_grad):
            jax.block_until_ready(f(a, b))

        cpu, wall = {}, {}
        for name, fn in (("kernel", kernel), ("callback", callback)):
            fn()
            laps = []
            for _ in range(repeats):
                start, start_cpu = time.perf_counter(), time.process_time()
                fn()
                laps.append((time.process_time() - start_cpu, time.perf_counter() - start))
            cpu[name], wall[name] = np.median(laps, axis=0) * 1e3
        print(
            f"{n:>7,}  CPU: kernel {cpu['kernel']:7.3f} ms  callback {cpu['callback']:7.3f} ms  "
            f"x kernel {cpu['callback'] / cpu['kernel']:5.2f};  wall: kernel "
            f"{wall['kernel']:7.3f} ms  callback {wall['callback']:7.3f} ms  "
            f"x kernel {wall['callback'] / wall['kernel']:5.2f}",
            flush=True,
        )


def jax_samplers(cells, rho, *, tune=500, draws=500, chains=2):
    """numpyro and blackjax NUTS on the naive and dpinfer models, against naive ``pm.sample``.

    Each sampler is called as ``pm.sample(nuts_sampler=...)`` calls it (on PyMC's JAX
    log-density, ``pymc.sampling.jax.get_jaxified_logp``), one chain at a time, with its
    warm-up steps counted too; CPU time includes JAX's compilation, as ``sampling``'s
    includes PyMC's. Printed: CPU per leapfrog step and per effective sample (smallest
    bulk ESS of mu and tau), and their ratios to naive ``pm.sample``.
    """
    for n in cells:
        data = table(n, rho)
        base = _combine([_run(model("naive", *data), tune=tune, draws=draws, chain=c)
                         for c in range(chains)])  # fmt: skip
        rows = [("pm.sample", "naive", base)]
        for sampler in ("numpyro", "blackjax"):
            for kind in ("naive", "dpinfer"):
                m = model(kind, *data)
                runs = [_run_jax(sampler, m, tune=tune, draws=draws, chain=c)
                        for c in range(chains)]  # fmt: skip
                rows.append((sampler, kind, _combine(runs)))
        for sampler, kind, (_, cpu, steps, ess) in rows:
            per_step, per_ess = cpu / steps, cpu / ess
            print(
                f"{n:>7,} {sampler:>9} {kind:>8}  CPU {cpu:7.1f} s  steps {steps:7,}  "
                f"CPU/step {per_step * 1e3:6.3f} ms  ESS {ess:6.0f}  "
                f"CPU/ESS {per_ess * 1e3:7.2f} ms  "
                f"x naive pm.sample: per step {per_step / (base[1] / base[2]):5.2f} "
                f"per ESS {per_ess / (base[1] / base[3]):5.2f}",
                flush=True,
            )


def _run_jax(sampler, m, *, tune, draws, chain):
    """One chain of ``sampler`` on ``m``: (wall s, CPU s, leapfrog steps, draws of mu, tau)."""
    import jax
    from pymc.sampling.jax import get_jaxified_logp

    names = [v.name for v in m.value_vars]
    point = m.initial_point()
    start = [np.asarray(point[name], dtype=float) for name in names]
    key = jax.random.PRNGKey(1 + chain)
    wall, cpu = time.perf_counter(), time.process_time()
    if sampler == "numpyro":
        from numpyro.infer import MCMC, NUTS

        nuts = NUTS(potential_fn=get_jaxified_logp(m, negative_logp=False))
        mcmc = MCMC(nuts, num_warmup=tune, num_samples=draws, progress_bar=False)
        mcmc.warmup(key, init_params=start, collect_warmup=True, extra_fields=("num_steps",))
        steps = int(mcmc.get_extra_fields()["num_steps"].sum())
        mcmc.run(mcmc.post_warmup_state.rng_key, extra_fields=("num_steps",))
        steps += int(mcmc.get_extra_fields()["num_steps"].sum())
        position = mcmc.get_samples()
    else:
        import blackjax

        logdensity = get_jaxified_logp(m)
        adapt = blackjax.window_adaptation(blackjax.nuts, logdensity)
        warm_key, key = jax.random.split(key)
        (state, params), info = adapt.run(warm_key, start, num_steps=tune)
        step = blackjax.nuts(logdensity, **params).step

        def one(state, k):
            state, info = step(k, state)
            return state, (state.position, info.num_integration_steps)

        _, (position, n_steps) = jax.lax.scan(one, state, jax.random.split(key, draws))
        steps = int(info.info.num_integration_steps.sum() + n_steps.sum())
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    mu, log_tau = (np.asarray(position[names.index(v)]) for v in ("mu", "tau_log__"))
    return wall, cpu, steps, {"mu": mu, "tau": np.exp(log_tau)}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sections = (
        "sampling",
        "evaluation",
        "numba-evaluation",
        "nutpie",
        "cores",
        "jax-samplers",
        "jax-callback",
    )
    parser.add_argument("--section", choices=sections, default=None)
    parser.add_argument("--cells", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--rho", type=float, default=0.5)
    parser.add_argument("--dense-max", type=int, default=1_000)
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument("--draws", type=int, default=500)
    parser.add_argument("--cores-cells", type=int, default=10**6)
    parser.add_argument("--nutpie-chains", type=int, default=4)
    parser.add_argument("--nutpie-draws", type=int, default=4_000)
    parser.add_argument("--nutpie-seeds", type=int, nargs="+", default=[11, 12])
    parser.add_argument("--build", action="store_true", help="only the build/memory table")
    parser.add_argument("--build-cells", type=int, nargs="+", default=list(BUILD_CELLS))
    parser.add_argument("--large", type=int, metavar="CELLS", help="build, evaluate, NUTS")
    parser.add_argument("--max-treedepth", type=int, default=3, help="of --large's NUTS run")
    parser.add_argument("--build-one", nargs=2, metavar=("KIND", "CELLS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    import numba

    numba.set_num_threads(1)
    if args.build_one:
        _build_once(args.build_one[0], int(args.build_one[1]), args.rho)
        return
    if args.large:
        print(f"== large: dpinfer's model at {args.large:,} cells ==")
        depth = args.max_treedepth
        large(args.large, args.rho, tune=args.tune, draws=args.draws, max_treedepth=depth)
        return
    if args.build:
        print("== build: the model and its compiled log-density, one fresh process each ==")
        build(args.build_cells, args.rho)
        return
    gap = check_dense(rho=args.rho)
    print(f"== the dense peer and dpinfer's marginal agree within {gap:.2g} nats on 300 cells ==")
    if args.section in (None, "sampling"):
        shape = f"2 chains x ({args.tune} + {args.draws})"
        print(f"== sampling: {shape}, the likelihoods' chains alternating; ESS of (mu, tau) ==")
        sampling(args.cells, args.rho, args.dense_max, tune=args.tune, draws=args.draws)
    if args.section in ("nutpie", "numba-evaluation") and not _has_nutpie():
        missing = "nutpie is not installed: pip install 'dpinfer[nutpie]'"
        print(f"== {args.section}: skipped ({missing}) ==")
    if args.section in (None, "nutpie") and _has_nutpie():
        chains, draws = args.nutpie_chains, args.nutpie_draws
        print(f"== nutpie: {chains} chains x (1000 + {draws}); ESS of (mu, tau) ==")
        nutpie_ess(args.cells, args.rho, chains=chains, draws=draws, seeds=args.nutpie_seeds)
    if args.section in (None, "evaluation"):
        print("== evaluation: one log-density and gradient ==")
        evaluation([10**k for k in range(2, 7)], args.rho)
    if args.section in (None, "cores"):
        print("== cores: one log-density and gradient on 1 and 2 cores ==")
        cores(args.cores_cells, args.rho)
    if args.section in (None, "numba-evaluation") and _has_nutpie():
        print("== numba-evaluation: one log-density and gradient as nutpie compiles it ==")
        numba_evaluation(args.cells, args.rho)
    if args.section in (None, "jax-callback"):
        print("== JAX: one log-likelihood and gradient of the marginal Op, kernel vs callback ==")
        callback_cost(args.cells, args.rho)
    if args.section in (None, "jax-samplers"):
        shape = f"2 chains x ({args.tune} + {args.draws}), one after the other"
        print(f"== JAX samplers (numpyro, blackjax): {shape}; ESS of (mu, tau) ==")
        jax_samplers(args.cells, args.rho, tune=args.tune, draws=args.draws)


if __name__ == "__main__":
    main()
