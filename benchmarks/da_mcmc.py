"""Record-level DA-MCMC (``dp.da_mcmc``): record updates per second, ESS per second, cost in n.

Sections (each a function; all run by default):

* ``throughput``: record updates per second of one chain for a scalar statistic
  (Bernoulli records, Laplace noise on their count), n = 10**5 records: the whole sweep
  (proposals drawn by the model, the numba accept/reject loop, the theta update), the
  kernel alone, and the speculative-block route that a custom ``summary`` takes, against a
  baseline that calls ``mechanism.logpdf`` once per record from Python. Target: 10**6
  record updates per second per core.
* ``regression``: ESS per second for the linear regression of Xiong et al. (2023, Sec. 4.2)
  at epsilon = 10 and 100 (the confidential dataset and releases of
  ``tests/samplers/data/make_regression_reference.py``): ``da_mcmc`` (4 chains, conjugate
  theta update), exact ``smc_abc`` and NUTS on the data-augmentation model
  (``linear_regression.pymc_reference``). ESS is the smallest bulk ESS over the three
  coefficients (for SMC also capped by the Kish ESS of its last reweighting and by its
  number of distinct particles). Each
  posterior is compared with the long stored NUTS reference run (largest |z| over means
  and 5/50/95% quantiles, ``dpinfer.compare``). ``--grid`` adds epsilon = 1 and 30.
* ``naive_bayes``: ESS per second for naive Bayes at epsilon = 10 (Xiong et al. 2023, S3.3,
  the published release), where smc_abc degenerates: ``da_mcmc``, ``smc_abc`` and NUTS on
  the exact marginal likelihood, each checked against the exact posterior by finite sums.
* ``paper``: ``da_mcmc`` and ``smc_abc`` on the published epsilon = 10 regression release,
  posterior means and 95% intervals beside Table 1 of Xiong et al. (2023).
* ``scaling``: cost per iteration and ESS per second as n grows (10**2 .. 10**5 records),
  the regression at epsilon = 10 on a dataset of n records drawn at the true beta.
* ``soma``: the SOMA record update (Xiong et al. 2025, arXiv:2505.00635: one offer, an attempt
  at every record, accepted with the ratio of the two sums of weights), prototyped here in
  numba against the privacy-aware Metropolis update at equal iterations, on the regression
  at epsilon = 100 and naive Bayes at epsilon = 10. It is not part of dpinfer (see below).

Measured (``--grid``, 2 shared cores, load average 4-5.5; CPU seconds; 16 minutes wall):

* throughput, n = 10**5: 1.1e7 record updates per second for the full sweep (acceptance
  0.99), 1.4e8 for the numba loop alone; the speculative route 3.6e4 (acceptance 0.99) to
  1.3e5 (acceptance 0.68); the logpdf-per-record baseline 8.1e4: full sweep 138x baseline.
* regression, ESS per CPU second (ESS per 1000 records simulated; largest |z| against the
  stored NUTS runs):
  epsilon = 1: da_mcmc 40 (0.074; 0.67), smc_abc 2119 (0.24; 1.36), NUTS 123 (1.13);
  epsilon = 10: da_mcmc 46 (0.077; 0.75), smc_abc 491 (0.063; 1.12), NUTS 24 (1.87);
  epsilon = 30: da_mcmc 26 (0.050; 0.86, R-hat 1.05), smc_abc 7.5 (0.001; 1.10; 1869
  distinct of 4000), NUTS 3.9 (2.12);
  epsilon = 100: da_mcmc 108 (0.15; 1.41), smc_abc 1.1 (0.00015; 3.53; 347 distinct of
  4000), NUTS 2.7 (1.75). At epsilon = 100 da_mcmc has 41 times the ESS per second of
  NUTS and 98 times that of smc_abc.
* naive Bayes at epsilon = 10 (largest |z| against the exact posterior): da_mcmc 2739
  ESS per second (6.6 per 1000 records; 2.50), smc_abc 1.9 (150 distinct of 4000; 14.5:
  degenerate and wrong), NUTS on the exact likelihood 80 (1.67): da_mcmc 34x NUTS.
* the published epsilon = 10 release, posterior means (95% intervals) of beta:
  da_mcmc -0.67 (-2.42, 1.01), -2.64 (-3.67, -0.73), 0.58 (-1.01, 2.63); smc_abc -0.63,
  -2.66, 0.59 (|z| 0.94 between them); Table 1 of Xiong et al. reports DA-MCMC -0.62
  (-2.50, 0.99), -2.72 (-3.74, -0.96), 0.54 (-1.06, 2.46) and SMC-ABC -0.59, -2.44, 0.85.
  (Table S2, epsilon = 3, cannot be rerun: its release is not published.)
* scaling at epsilon = 10: 1.6e-4, 4.3e-4, 2.4e-3 and 2.2e-2 CPU s per iteration for
  n = 10**2 .. 10**5 (6.3e5 to 4.5e6 record updates per second); the noise shrinks next to
  the sampling spread (median ratio 1.75 to 0.06) and the chains mix better per
  iteration, so ESS per second stays between 5 and 36 while n grows a thousandfold.
* SOMA: on the regression at epsilon = 100 it mixes better per iteration (min ESS 622
  against 250 over 4 x 2000 draws) but costs 14 times the CPU: 31 against 175 ESS per
  second; on naive Bayes at epsilon = 10 it mixes no better (7127 against 7553) at 6 times
  the cost: 466 against 3095. Each SOMA offer is scored against all n records, O(n) per
  offer against O(1) for the Metropolis update. Its gain does not show in ESS per second,
  so dpinfer does not ship it.

Timings are CPU seconds of this single-threaded process (``time.process_time``), so they
measure one core even on a busy machine; numba compilation is excluded by warm-up calls.

Usage: ``python benchmarks/da_mcmc.py [--quick] [--grid] [--no-nuts] [--sections ...]``.
``--no-nuts`` reads the NUTS times and ESS from the stored reference runs instead of running NUTS.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import math
import os
import sys
import warnings
from functools import partial
from pathlib import Path

import _common
import numba
import numpy as np
import scipy.stats as st

import dpinfer as dp
from dpinfer.compare import compare_posteriors
from dpinfer.models import linear_regression as lr
from dpinfer.models import naive_bayes as nb
from dpinfer.noise.form import NO_TABLE
from dpinfer.noise.terms import term
from dpinfer.results import effective_sample_size, to_inference_data
from dpinfer.samplers.da import _da_kernels

da_module = importlib.import_module("dpinfer.samplers.da")
REFERENCE = Path(__file__).parent.parent / "tests/samplers/data/regression_nuts_reference.npz"
QUANTILES = (0.05, 0.5, 0.95)


def cpu_timed(fn, *args, **kwargs):
    with warnings.catch_warnings():
        # smc_abc's degeneracy warning: the table reports the distinct particles instead
        warnings.filterwarnings("ignore", message="smc_abc: the final population is degenerate")
        return _common.cpu_timed(fn, *args, **kwargs)


# --- throughput --------------------------------------------------------------------------


def bernoulli_model():
    def simulate(params, n, rng):
        return rng.random((len(params["p"]), n)) < params["p"][:, None]

    def update(records, rng):
        ones = records.sum(axis=1)
        return {"p": rng.beta(2 + ones, 2 + records.shape[1] - ones)}

    return dp.RecordModel({"p": st.beta(2, 2)}, simulate, lambda x: x.astype(float), update=update)


def one_chain(model, mech, released, *, n: int, draws: int):
    """One untuned da_mcmc chain, seed 1: throughput, not accuracy."""
    return dp.da_mcmc(
        model, mech, released, n=n, draws=draws, tune=0, chains=1, rng=1, progressbar=False
    )


def throughput(quick: bool) -> None:
    print("\n== throughput: scalar statistic (Bernoulli records, Laplace noise on the count)")
    n, iterations = 100_000, 10 if quick else 40
    model, mech = bernoulli_model(), dp.Laplace(20.0)  # acceptance near 1: every record moves
    released = 0.3 * n
    dp.da_mcmc(model, mech, released, n=1000, draws=2, tune=0, chains=1, progressbar=False)

    idata, cpu, wall = cpu_timed(one_chain, model, mech, released, n=n, draws=iterations)
    updates = n * iterations
    rate = updates / cpu
    acc = idata.attrs["acceptance_rate"]
    print(f"  full sweep (proposals, kernel, theta): {rate:12,.0f} record updates/s per core")
    print(f"    n = {n:,}, {iterations} iterations, acceptance {acc:.2f}; {cpu:.2f} s CPU")

    rng = np.random.default_rng(2)
    stats = (rng.random((n, 1)) < 0.3).astype(float)
    proposals = (rng.random((n, 1)) < 0.3).astype(float)
    log_u = -rng.standard_exponential(n)
    form = mech.cell_form(np.asarray(released))

    def kernel():
        s, t = stats.copy(), stats.sum(axis=0)
        return _da_kernels.record_sweep(s, t, proposals, log_u, form)

    kernel()
    _, cpu_k, _ = cpu_timed(lambda: [kernel() for _ in range(20)])
    print(f"  numba accept/reject loop alone:        {20 * n / cpu_k:12,.0f} record updates/s")

    generic = dp.RecordModel(
        model.prior, model.simulate, model.statistic, update=model.update, summary=lambda t: t
    )
    for label, scale in (("large noise", 20.0), ("small noise", 0.5)):
        m2 = dp.Laplace(scale)

        g, cpu_g, _ = cpu_timed(one_chain, generic, m2, 0.3 * 20_000, n=20_000, draws=5)
        print(
            f"  speculative blocks (summary=), {label:<15} {5 * 20_000 / cpu_g:12,.0f} record "
            f"updates/s (acceptance {g.attrs['acceptance_rate']:.3f})"
        )

    # baseline: one Python call of mechanism.logpdf per record
    small = 2000
    total = float(stats[:small].sum())

    def python_loop():
        t = total
        current = mech.logpdf(released * small / n, t)
        for i in range(small):
            cand = t - stats[i, 0] + proposals[i, 0]
            new = mech.logpdf(released * small / n, cand)
            if log_u[i] < new - current:
                t, current = cand, new
        return t

    _, cpu_b, _ = cpu_timed(python_loop)
    base = small / cpu_b
    print(f"  baseline, logpdf per record in Python: {base:12,.0f} record updates/s")
    print(f"  full sweep / baseline: {rate / base:,.0f}x; target 1e6/s met: {rate >= 1e6}")


# --- regression: ESS per second ----------------------------------------------------------


def load_reference() -> dict:
    data = np.load(REFERENCE)
    meta = json.loads(str(data["meta"]))
    out = {}
    for key, run in meta["runs"].items():
        beta = data[f"beta_{key}"]
        idata = to_inference_data({"beta": beta.reshape(-1, 3)}, chains=beta.shape[0], attrs={})
        out[float(key)] = {"released": data[f"released_{key}"], "idata": idata, "meta": run}
    return out


def min_bulk_ess(idata, names=("beta",)) -> float:
    """Smallest bulk ESS over the scalar components of the named parameters."""
    out = []
    for name in names:
        arr = np.asarray(idata.posterior[name])
        flat = arr.reshape(*arr.shape[:2], -1)
        out += [effective_sample_size(flat[..., j]) for j in range(flat.shape[-1])]
    return min(out)


def accuracy(idata, reference) -> float:
    cmp = compare_posteriors(idata, reference, quantiles=QUANTILES)
    return cmp.max_abs_z()


SMC_SETTINGS = {
    "ess_fraction": 0.5,
    "resample_fraction": 0.5,
    "move_probability": 0.99,
    "max_moves": 30,
    "progressbar": False,
}


def run_da(record_model, mech, released, *, n, draws, tune, rng, chains=4):
    """``chains`` da_mcmc chains (four by default), CPU-timed."""
    options = dict(n=n, draws=draws, tune=tune, chains=chains, rng=rng, progressbar=False)
    return cpu_timed(dp.da_mcmc, record_model, mech, released, **options)


def da_row(eps, idata, cpu, z, names=("beta",)) -> tuple:
    """A table row of a da_mcmc run (see ``print_table``)."""
    ess = min_bulk_ess(idata, names)
    return (eps, "da_mcmc", cpu, ess, z, idata.attrs["rhat_max"], idata.attrs["n_simulations"])


def smc_row(eps, model, mech, released, *, quick, n, check, names=("beta",)) -> tuple:
    """Run smc_abc (4000 particles, 1000 with ``quick``) and return its table row."""
    particles = 1000 if quick else 4000
    smc, cpu, _ = cpu_timed(
        dp.smc_abc, model, mech, released, particles=particles, rng=8, **SMC_SETTINGS
    )
    distinct = int(smc.posterior.attrs["n_distinct"])
    # a population of k distinct particles holds at most k independent draws
    ess = min(min_bulk_ess(smc, names), float(smc.posterior.attrs["ess"]), distinct)
    records = smc.attrs["n_simulations"] * n
    return (eps, f"smc_abc ({distinct} distinct)", cpu, ess, check(smc), math.nan, records)


DA_DRAWS = {1.0: 20_000, 10.0: 10_000, 30.0: 4000, 100.0: 2500}


def regression(quick: bool, grid: bool, run_nuts: bool) -> None:
    print("\n== regression (Xiong et al. 2023, Sec. 4.2): ESS per second, one core")
    ref = load_reference()
    epsilons = [1.0, 10.0, 30.0, 100.0] if grid else [10.0, 100.0]
    rows = []
    for eps in epsilons:
        released, reference = ref[eps]["released"], ref[eps]["idata"]
        mech = lr.mechanism(epsilon=eps)
        draws = DA_DRAWS[eps] // (4 if quick else 1)
        da, cpu, _ = run_da(
            lr.record_model(), mech, released, n=lr.N, draws=draws, tune=500, rng=7
        )
        rows.append(da_row(eps, da, cpu, accuracy(da, reference)))
        smc = (lr.model(), mech, released)
        rows.append(
            smc_row(eps, *smc, quick=quick, n=lr.N, check=partial(accuracy, reference=reference))
        )
        if run_nuts:
            steps = {1.0: 1000, 10.0: 1000, 30.0: 500, 100.0: 300}[eps] // (3 if quick else 1)
            nuts, cpu_n, _ = cpu_timed(
                lr.pymc_reference,
                released,
                epsilon=eps,
                draws=steps,
                tune=steps,
                chains=2,
                rng=9,
            )
            rows.append(
                (
                    eps,
                    "NUTS (PyMC)",
                    cpu_n,
                    min_bulk_ess(nuts),
                    accuracy(nuts, reference),
                    float(nuts.posterior.attrs["rhat_max"]),
                    math.nan,
                )
            )
        else:
            meta = ref[eps]["meta"]  # wall seconds of the run that wrote the reference
            # it is the reference: no |z| against itself
            rows.append(
                (
                    eps,
                    "NUTS (stored, wall s)",
                    meta["seconds"],
                    meta["ess"],
                    math.nan,
                    meta["rhat_max"],
                    math.nan,
                )
            )
    print_table(rows)


def print_table(rows) -> None:
    """Rows ``(epsilon, sampler, CPU s, min ESS, |z|, R-hat, records simulated)``.

    ESS per 1000 records: the records simulated (``n`` per SMC dataset); NUTS simulates
    none (it evaluates gradients of the augmented model), so its entry is blank.
    """
    print(
        f"  {'eps':>5} {'sampler':<26} {'CPU s':>8} {'min ESS':>9} {'ESS/s':>9} "
        f"{'ESS/1e3 rec':>11} {'|z| vs ref':>10} {'R-hat':>6}"
    )
    for eps, name, cpu, ess, z, r, records in rows:
        per_sim = ess / (records / 1000)
        print(
            f"  {eps:>5g} {name:<26} {cpu:8.1f} {ess:9.0f} {ess / cpu:9.2f} {per_sim:11.3g} "
            f"{z:10.2f} {r:6.3f}"
        )
    for eps in dict.fromkeys(row[0] for row in rows):
        da_rate = next(e / c for x, n, c, e, *_ in rows if x == eps and n == "da_mcmc")
        for x, name, cpu, ess, *_ in rows:
            if x == eps and name != "da_mcmc":
                print(f"  eps {eps:g}: da_mcmc ESS/s = {da_rate / (ess / cpu):.2g} x {name}")


# --- naive Bayes at epsilon = 10 ---------------------------------------------------------


def z_against_exact(idata, exact) -> float:
    """Largest |z| of the means and 5/50/95% quantiles against exact laws, ESS-based errors.

    A quantile is checked through the fraction of draws below the exact quantile, whose
    standard error uses the ESS of that indicator.
    """
    worst = 0.0
    for name, law in exact.items():
        draws = np.asarray(idata.posterior[name], dtype=float)
        se_mean = draws.std() / math.sqrt(effective_sample_size(draws))
        worst = max(worst, abs(draws.mean() - law.mean()) / se_mean)
        for q in QUANTILES:
            below = (draws <= law.ppf(q)).astype(float)
            se = math.sqrt(q * (1 - q) / effective_sample_size(below))
            worst = max(worst, abs(below.mean() - q) / se)
    return worst


def naive_bayes(quick: bool, run_nuts: bool) -> None:
    print("\n== naive Bayes (Xiong et al. 2023, S3.3) at epsilon = 10: ESS per second, one core")
    mech, names = nb.mechanism(epsilon=10.0), list(nb.PARAMETER_NAMES)
    exact = nb.exact_posterior(nb.RELEASED, epsilon=10.0)
    rows = []
    da, cpu, _ = run_da(
        nb.record_model(),
        mech,
        nb.RELEASED,
        n=nb.N,
        draws=750 if quick else 3000,
        tune=200,
        rng=10,
    )
    rows.append(da_row(10.0, da, cpu, z_against_exact(da, exact), names))
    smc = (nb.model(), mech, nb.RELEASED)
    check = partial(z_against_exact, exact=exact)
    rows.append(smc_row(10.0, *smc, quick=quick, n=nb.N, check=check, names=names))
    if run_nuts:
        steps = 300 if quick else 1000
        nuts, cpu_n, _ = cpu_timed(
            nb.pymc_reference, nb.RELEASED, epsilon=10.0, draws=steps, tune=steps, chains=2, rng=9
        )
        rows.append(
            (
                10.0,
                "NUTS (exact likelihood)",
                cpu_n,
                min_bulk_ess(nuts, names),
                z_against_exact(nuts, exact),
                float(nuts.posterior.attrs["rhat_max"]),
                math.nan,
            )
        )
    print("  reference: the exact posterior by finite sums (naive_bayes.exact_posterior)")
    print_table(rows)


# --- the paper's release: Xiong et al. (2023), Table 1 -----------------------------------

PAPER_TABLE_1 = {  # epsilon = 10: posterior mean (95% interval) of beta_0, beta_1, beta_2
    "SMC-ABC (paper)": ((-0.59, -2.28, 0.93), (-2.44, -3.67, -0.38), (0.85, -0.88, 2.77)),
    "DA-MCMC (paper)": ((-0.62, -2.50, 0.99), (-2.72, -3.74, -0.96), (0.54, -1.06, 2.46)),
}


def paper_table(quick: bool) -> None:
    print("\n== the published epsilon = 10 release (Xiong et al. 2023, Table 1)")
    mech = lr.mechanism(epsilon=10.0)
    draws = 2500 if quick else 20_000
    da, cpu, _ = run_da(
        lr.record_model(), mech, lr.RELEASED, n=lr.N, draws=draws, tune=500, rng=31
    )
    smc, cpu_s, _ = cpu_timed(
        dp.smc_abc,
        lr.model(),
        mech,
        lr.RELEASED,
        particles=1000 if quick else 4000,
        rng=32,
        progressbar=False,
    )
    rows = dict(PAPER_TABLE_1)
    for label, idata in (("da_mcmc (dpinfer)", da), ("smc_abc (dpinfer)", smc)):
        beta = np.asarray(idata.posterior["beta"]).reshape(-1, 3)
        lo, hi = np.quantile(beta, [0.025, 0.975], axis=0)
        rows[label] = tuple(zip(beta.mean(axis=0), lo, hi, strict=True))
    print(f"  {'method':<20}" + "".join(f"{f'beta_{j}':>22}" for j in range(3)))
    for label, cells in rows.items():
        text = "".join(f"{f'{m:.2f} ({a:.2f}, {b:.2f})':>22}" for m, a, b in cells)
        print(f"  {label:<20}{text}")
    print(
        f"  da_mcmc: {cpu:.1f} CPU s, min ESS {min_bulk_ess(da):.0f}, R-hat "
        f"{da.attrs['rhat_max']:.3f}; smc_abc: {cpu_s:.1f} CPU s, "
        f"{smc.posterior.attrs['n_distinct']} distinct particles"
    )
    print(
        "  largest |z| of da_mcmc against smc_abc (means, 5/50/95% quantiles): "
        f"{accuracy(da, smc):.2f}"
    )


# --- scaling in n ------------------------------------------------------------------------


SCALING_DRAWS = {100: 5000, 1000: 5000, 10_000: 2000, 100_000: 400}  # about 10 CPU s each


def scaling(quick: bool) -> None:
    sizes = [100, 1000, 10_000] if quick else list(SCALING_DRAWS)
    tune = 50 if quick else 200
    print(
        f"\n== cost as n grows: regression at epsilon = 10, 2 chains of {tune} + draws "
        "iterations (CPU s include the starting datasets)"
    )
    header = f"  {'n':>8} {'draws':>6} {'CPU s/iter':>11} {'updates/s':>12} {'acc.':>6}"
    print(header + f" {'min ESS':>8} {'ESS/s':>8} {'noise / sd(s)':>14}")
    for n in sizes:
        x, y = lr.confidential_data(n=n, rng=11)
        released = lr.release(x, y, epsilon=10.0, rng=12)
        mech = lr.mechanism(epsilon=10.0, n=n)
        draws = SCALING_DRAWS[n] // (10 if quick else 1)
        # the noise shrinks like 1/n, the sampling spread of a mean like 1/sqrt(n)
        reps = max(20, min(400, 4_000_000 // n))
        spread = lr.simulate_statistics(np.tile(lr.TRUE_BETA, (reps, 1)), rng=1, n=n).std(axis=0)
        idata, cpu, _ = run_da(
            lr.record_model(n=n), mech, released, n=n, draws=draws, tune=tune, rng=13, chains=2
        )
        iters = 2 * (draws + tune)
        ess = min_bulk_ess(idata)
        print(
            f"  {n:>8,} {draws:6} {cpu / iters:11.2e} {n * iters / cpu:12,.0f} "
            f"{idata.attrs['acceptance_rate']:6.3f} {ess:8.0f} {ess / cpu:8.2f} "
            f"{np.median(mech.scale / spread):14.3f}"
        )


# --- SOMA prototype ----------------------------------------------------------------------


@numba.njit(cache=True)
def _log_eta(form, values):  # pragma: no cover - numba
    total = 0.0
    for j in range(values.shape[0]):
        total += term(form, NO_TABLE, j, values[j])
    return total


@numba.njit(cache=True)
def _soma_weights(stats, total, offer, form, out):
    """log eta of the sum with record i replaced by ``offer``, for every i."""
    n, k = stats.shape
    cand = np.empty(k)
    for i in range(n):
        for j in range(k):
            cand[j] = total[j] - stats[i, j] + offer[j]
        out[i] = _log_eta(form, cand)
    return out


@numba.njit(cache=True)
def _logsumexp(x):
    m = x.max()
    return m + math.log(np.sum(np.exp(x - m))) if m > -np.inf else -np.inf


@numba.njit(cache=True)
def soma_sweep(stats, total, offers, u_pick, log_u, form):
    """One SOMA offer per row of ``offers``; returns which offer each slot took (-1: none)."""
    n, k = stats.shape
    source = np.full(n, -1)
    forward, backward = np.empty(n), np.empty(n)
    new_total = np.empty(k)
    for o in range(offers.shape[0]):
        offer = offers[o]
        _soma_weights(stats, total, offer, form, forward)
        log_w = _logsumexp(forward)
        if log_w == -np.inf:
            continue
        cumulative, target, pick = 0.0, u_pick[o] * math.exp(log_w - forward.max()), n - 1
        for i in range(n):
            cumulative += math.exp(forward[i] - forward.max())
            if cumulative >= target:
                pick = i
                break
        old = stats[pick].copy()
        for j in range(k):
            new_total[j] = total[j] - old[j] + offer[j]
        stats[pick] = offer
        # the reverse move offers the old record to every slot of the new state
        _soma_weights(stats, new_total, old, form, backward)
        if log_u[o] < log_w - _logsumexp(backward):
            total[:] = new_total
            source[pick] = o
        else:
            stats[pick] = old
    return source


def soma_step(state, record_model, updater, theta, rng, *, tuning_step=None):
    """A DA-MCMC iteration whose record update is SOMA with n offers (prototype)."""
    params, walk, theta_rate = theta.update(
        state.params, state.walk, state.records, rng, tuning_step=tuning_step
    )
    records, stats, total = state.records.copy(), state.stats.copy(), state.total.copy()
    n = len(records)
    offered = record_model.simulate_records(params, n, rng)
    offered_stats = np.ascontiguousarray(record_model.statistics(offered)[0].reshape(n, -1))
    source = soma_sweep(
        stats, total, offered_stats, rng.random(n), -rng.standard_exponential(n), updater.form
    )
    moved = source >= 0
    records[moved] = offered[0][source[moved]]
    total = stats.sum(axis=0)
    log_eta = float(updater.log_density(total[None])[0])
    new = da_module.DAState(params, walk, records, stats, total, log_eta)
    return new, da_module.DAInfo(float(moved.mean()), theta_rate, log_eta)


def soma(quick: bool) -> None:
    print("\n== SOMA (prototype) against the privacy-aware Metropolis record update")
    ref = load_reference()
    cases = {
        "regression eps=100": (
            lr.record_model(),
            lr.mechanism(epsilon=100.0),
            ref[100.0]["released"],
            ["beta"],
        ),
        "naive Bayes eps=10": (
            nb.record_model(),
            nb.mechanism(epsilon=10.0),
            nb.RELEASED,
            list(nb.PARAMETER_NAMES),
        ),
    }
    draws = 500 if quick else 2000
    print(f"  {'case':<20} {'update':<10} {'CPU s':>7} {'min ESS':>8} {'ESS/s':>8} {'moved':>6}")
    original = da_module.step
    for label, (model, mech, released, names) in cases.items():
        for update in ("metropolis", "soma"):
            da_module.step = soma_step if update == "soma" else original
            try:
                idata, cpu, _ = cpu_timed(
                    dp.da_mcmc,
                    model,
                    mech,
                    released,
                    n=100,
                    draws=draws,
                    tune=300,
                    chains=4,
                    rng=21,
                    progressbar=False,
                )
            finally:
                da_module.step = original
            ess = min_bulk_ess(idata, names)
            print(
                f"  {label:<20} {update:<10} {cpu:7.1f} {ess:8.0f} {ess / cpu:8.2f} "
                f"{idata.attrs['acceptance_rate']:6.3f}"
            )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter runs")
    parser.add_argument("--grid", action="store_true", help="epsilon in {1, 10, 30, 100}")
    parser.add_argument("--no-nuts", action="store_true", help="stored NUTS times, no NUTS run")
    parser.add_argument(
        "--sections",
        nargs="+",
        choices=SECTIONS,
        default=list(SECTIONS),
        help="run only these sections (default: all)",
    )
    args = parser.parse_args(argv)
    # PyMC's progress messages and PyTensor's BLAS notice are not results; PyMC sets its
    # logger's level when imported, so import it first
    warnings.filterwarnings("ignore", message="PyTensor could not link to a BLAS")
    if not args.no_nuts:
        import pymc  # noqa: F401

    for name in ("pymc", "pytensor"):
        logging.getLogger(name).setLevel(logging.ERROR)
    print(f"dpinfer {dp.__version__}; load average {os.getloadavg()[0]:.1f}")
    runs = {
        "throughput": lambda: throughput(args.quick),
        "regression": lambda: regression(args.quick, args.grid, not args.no_nuts),
        "naive_bayes": lambda: naive_bayes(args.quick, not args.no_nuts),
        "paper": lambda: paper_table(args.quick),
        "scaling": lambda: scaling(args.quick),
        "soma": lambda: soma(args.quick),
    }
    for section in args.sections:
        runs[section]()
    return 0


SECTIONS = ("throughput", "regression", "naive_bayes", "paper", "scaling", "soma")


if __name__ == "__main__":
    sys.exit(main())
