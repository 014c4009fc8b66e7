"""The samplers of the Poisson count example and their checks against the closed forms."""

from __future__ import annotations

import math
import warnings

import numpy as np
import scipy.stats as st

import dpinfer as dp
from dpinfer.example import mle_interval_notes, mle_rows

from ._mle import mle

#: Importance ABC (when rejection would exceed its budget): the effective sample size
#: it simulates rounds for, at most, and the particles it may keep in memory.
IMPORTANCE_TARGET_ESS = 2000
IMPORTANCE_MAX_SIMULATIONS = 5 * 10**5
#: Importance ABC's particles per round at least (fewer, larger rounds run faster).
IMPORTANCE_ROUND = 50_000
#: The Monte Carlo EM schedules of :func:`run`, capped so that a fit that stalls (a
#: boundary MLE, a noise that swamps the count) ends, flagged as not converged.
MCEM_SCHEDULES = {
    "auto": dp.AscentSchedule(max_iterations=50, max_size=10**6),
    "staged": dp.StagedSchedule(max_iterations=50),
}


def _mle_row(label: str, role: str, fit: dict) -> list:
    return mle_rows(label, role, {"theta": fit["estimate"]}, {"theta": fit["standard_error"]})


def _sample(plan, model_, mech, released, exact, seed, progressbar):
    """Run the planned sampler: rejection ABC, or importance ABC with a matched proposal."""
    data = (model_, mech, released)
    run = {"rng": seed, "progressbar": progressbar}
    if plan.method == "rejection_abc":
        limits = {"draws": plan.draws, "max_simulations": plan.max_simulations}
        return dp.rejection_abc(*data, **limits, **run)
    options = {
        **run,
        "draws": max(plan.draws, IMPORTANCE_ROUND),
        "proposal": {"theta": _proposal(exact)},
    }
    target = min(plan.draws, IMPORTANCE_TARGET_ESS)
    budget = {"target_ess": target, "max_simulations": IMPORTANCE_MAX_SIMULATIONS}
    try:
        return dp.importance_abc(*data, **options, **budget)
    except dp.SimulationBudgetExceeded:
        # one round only; the report gives its ESS and the check flags a poor result
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return dp.importance_abc(*data, **options)


def _proposal(exact):
    """Return a Gamma with the exact posterior's mean, twice its variance, shape <= alpha.

    Its right tail (rate ``mean / (2 var) <= (beta + 1) / 2``) and its left tail (shape at
    most the prior's) are heavier than the posterior's, so the importance weights are
    bounded in both tails.
    """
    mean, var = exact.mean(), 2.0 * exact.std() ** 2
    shape = min(mean * mean / var, exact.alpha)
    return st.gamma(shape, scale=mean / shape)


def _abc_checks(plan, idata, abc, exact) -> tuple[list[str], dict, str]:
    """Check the sampler against the closed forms: mean (z on the ESS), evidence, cost."""
    attrs = idata.posterior.attrs
    n_sim = int(attrs["n_simulations"])
    rejection = plan.method == "rejection_abc"
    ess = float(abc.size if rejection else idata.attrs["ess_kish"])
    z = (float(np.mean(abc)) - exact.mean()) / (exact.std() / math.sqrt(ess))
    # |z| > 4.5 happens with probability 7e-6 for a correct sampler; below an ESS of
    # 100 the weights are too uneven for the z test or the summary to be trusted
    flag = "" if abs(z) <= 4.5 else f"disagrees with the closed form (z = {z:+.1f})"
    if ess < 100:
        flag = f"ESS only {ess:.0f}: unreliable, see the closed form"
    expected = math.exp(plan.log_acceptance)
    diagnostics = {
        "sampler": plan.method,
        "n_simulations": n_sim,
        "acceptance_rate_exact": expected,
        "predicted_rejection_simulations": plan.expected_simulations,
        "ess": ess,
        "mean_z": z,
        "log_evidence_abc": float(attrs["log_evidence"]),
        "log_evidence_exact": exact.log_evidence,
    }
    notes = [plan.note]
    if rejection:
        rate = float(attrs["acceptance_rate"])
        se = math.sqrt(expected * (1 - expected) / n_sim)
        ks = st.kstest(abc, exact.cdf)
        notes += [
            f"rejection ABC: {abc.size} draws from {n_sim:,} simulations; KS test against "
            f"the exact CDF: D = {ks.statistic:.4f}, p = {ks.pvalue:.3f}",
            f"acceptance rate {rate:.4%} (s.e. {se:.4%}); evidence / max eta by summation "
            f"{expected:.4%} (z = {(rate - expected) / se:+.2f})",
        ]
        diagnostics.update(
            acceptance_rate=rate, ks_statistic=float(ks.statistic), ks_pvalue=float(ks.pvalue)
        )
    else:
        notes.append(
            f"importance ABC: {n_sim:,} particles from a Gamma proposal matched to the exact "
            f"posterior (variance doubled), Kish ESS {ess:,.0f}; mean {np.mean(abc):.4g} "
            f"against the exact {exact.mean():.4g} (z = {z:+.2f} on the ESS)"
        )
    notes.append(
        f"log evidence: ABC {float(attrs['log_evidence']):.5f}, exact {exact.log_evidence:.5f}"
    )
    return notes, diagnostics, flag


def _mcem(epsilon, released, schedule, seed, progressbar) -> tuple[list, list, dict]:
    """Fit the MLE by MCEM; return its row (flagged unless converged), notes and numbers.

    The notes give the fit and its Wald and profile-likelihood intervals.
    """
    fit = mle(
        epsilon=epsilon,
        released=released,
        start=max(released, 1.0),
        schedule=MCEM_SCHEDULES[schedule],
        rng=seed,
        progressbar=progressbar,
    )
    flag = "" if fit.converged else "not converged"
    rows = mle_rows(
        "MLE: Monte Carlo EM + Louis", "exact", fit.estimate, fit.standard_error, flag=flag
    )
    note = (
        f"MCEM: {fit.attrs['schedule']} schedule from the naive MLE, {fit.iterations} "
        f"iterations, {fit.n_simulations:,} simulations, Monte Carlo s.e. of theta "
        f"{fit.monte_carlo_se['theta']:.2g}; converged: {fit.converged}"
    )
    numbers = {
        "mcem_iterations": fit.iterations,
        "mcem_simulations": fit.n_simulations,
        "mcem_converged": bool(fit.converged),
    }
    interval_notes, interval_numbers = mle_interval_notes(fit, progressbar=progressbar)
    return rows, [note, *interval_notes], {**numbers, **interval_numbers}
