"""``dpinfer run lalonde``: one column of Gong's Figure 2, and its report."""

from __future__ import annotations

import math

import dpinfer as dp
from dpinfer import validate
from dpinfer.example import (
    Example,
    Option,
    Report,
    Result,
    between,
    draw_rows,
    idata_draws,
    integer,
    mle_interval_notes,
    mle_rows,
    nuts_note,
    plan_sampler,
    save_run,
    smc_note,
    vector,
)
from dpinfer.random import as_seed_sequence

from ._data import PARAMETERS, STATISTICS, confidential_statistics, mechanism, model, release
from ._exact import exact_mle
from ._mle import MLE_MAX_ITERATIONS, MLE_SCHEDULE, mle, naive_mle
from ._reference import naive_posterior, pymc_reference, statistics_posterior

#: Documented ranges of the released means and variances ($1k and $1k squared): incomes
#: are clamped to [0, 100], so a mean lies in [0, 100] and a variance in [0, 2514];
#: the ranges add about 15 noise scales (Laplace 3 and 6) on each side.
MEAN_RANGE, VARIANCE_RANGE = (-50.0, 150.0), (-100.0, 2600.0)
_CLAMPED = "incomes are clamped to [0, 100] $1k, so the release cannot be this far out"
#: Prior simulations of the pilot that predicts rejection ABC's cost in :func:`run`.
PILOT_SIMULATIONS = 10**5

EXAMPLE = Example(
    name="lalonde",
    title="NSW job-training earnings from Laplace-noised group means and variances",
    paper="Gong (2022), Section 5.2",
    seconds=60,
    module=__package__,
    smallest={"draws": 100, "nuts_draws": 100, "mle_simulations": 10**5},
    options=(
        Option(
            "released",
            None,
            "the release ybar_t ybar_c s2_t s2_c (default: a new release of the data)",
            vector(
                4,
                [between(*MEAN_RANGE, hint=_CLAMPED)] * 2
                + [between(*VARIANCE_RANGE, hint=_CLAMPED)] * 2,
            ),
            flag="--release",
        ),
        Option(
            "draws",
            4000,
            "rejection ABC draws (about 2 million simulations per 1000; smc_abc particles "
            "when rejection would exceed its budget)",
            integer(100, 10_000),
        ),
        Option(
            "nuts_draws",
            1000,
            "draws and tuning steps per chain of each NUTS fit",
            integer(100, 10_000),
        ),
        Option(
            "mle_simulations",
            10**6,
            "largest MCEM sample (Gong's stages 10^3, 10^5, 10^6 up to this size)",
            integer(1000, 10**7),
        ),
    ),
)


def run(
    *,
    released=None,
    draws: int = 4000,
    nuts_draws: int = 1000,
    mle_simulations: int = 10**6,
    rng=None,
    progressbar: bool = True,
    verbose: bool = False,
) -> Result:
    """Reproduce one column of Gong's Figure 2: original, naive and exact posteriors, and MLEs.

    Draws one release of the confidential statistics (unless ``released`` is
    given), then fits the original analysis (confidential statistics), the
    naive analysis (release as statistics), exact rejection ABC and the PyMC
    reference, and the maximum likelihood estimate by Monte Carlo EM with the
    Louis information next to the exact (numerical integration) and naive ones.

    Parameters
    ----------
    released : array_like, optional
        The release ``(ybar_t, ybar_c, s2_t, s2_c)``; default a new release of
        the confidential statistics drawn from ``rng`` (a demonstration: a
        real curator draws its noise from OS entropy, see :func:`release`).
    draws : int, default 4000
        Rejection ABC draws (about 2 million simulations per 1000 draws). A
        pilot of :data:`PILOT_SIMULATIONS` prior simulations predicts the
        cost first; past :data:`~dpinfer.example.REJECTION_BUDGET`
        simulations (a release far from the data), exact ``smc_abc`` with
        ``draws`` particles runs instead, and the notes say so.
    nuts_draws : int, default 1000
        Draws and tuning steps per chain (2 chains) of the three NUTS fits.
    mle_simulations : int, default 10**6
        Largest sample of the MCEM fit: :data:`MLE_SCHEDULE` with its stages
        up to this size (a smaller one gives a quicker, rougher fit), each
        stage at most :data:`MLE_MAX_ITERATIONS` iterations; a fit that has
        not converged is flagged in its table rows.
    rng : None, int, SeedSequence or Generator
        Root seed of the release, the sampler, the NUTS runs and MCEM.
    progressbar : bool, default True
        Show dpinfer's progress bars.
    verbose : bool, default False
        Show PyMC's progress bars too.

    Returns
    -------
    Result
        ``posterior`` is the rejection ABC (or ``smc_abc``) result;
        ``extra["reference"]`` the PyMC reference.
    """
    seeds = as_seed_sequence(rng).spawn(7)
    truth = confidential_statistics()
    demo = released is None
    released = (
        release(rng=seeds[0]) if demo else validate.finite_array("released", released, shape=(4,))
    )
    nuts = {
        "draws": nuts_draws,
        "tune": nuts_draws,
        "chains": 2,
        "progressbar": progressbar and verbose,
    }
    abc, label, abc_notes, abc_numbers = _exact_sampler(
        released, draws, seeds[6], seeds[1], progressbar
    )
    reference = pymc_reference(released, rng=seeds[4], **nuts)
    fit = mle(
        released,
        schedule=_schedule_up_to(mle_simulations),
        rng=seeds[5],
        progressbar=progressbar,
    )
    # a fit that ran out of iterations is flagged in its own rows, not only in the notes
    flag = "" if fit.converged else "not converged"
    rows = [
        *draw_rows(
            "original (confidential)",
            "confidential",
            _draws(statistics_posterior(truth, rng=seeds[2], **nuts)),
        ),
        *draw_rows("naive", "naive", _draws(naive_posterior(released, rng=seeds[3], **nuts))),
        *draw_rows(label, "exact", _draws(abc)),
        *draw_rows("PyMC reference", "reference", _draws(reference)),
        *mle_rows(
            "MLE: Monte Carlo EM + Louis", "exact", fit.estimate, fit.standard_error, flag=flag
        ),
        *_mle_rows("MLE: exact (integration)", "reference", exact_mle(released)),
        *_mle_rows("MLE: naive (release as data)", "naive", naive_mle(released)),
    ]
    nuts_text, nuts_numbers = nuts_note("PyMC reference", reference, "reference")
    notes = [
        *abc_notes,
        nuts_text,
        f"MCEM: {fit.iterations} iterations, {fit.n_simulations:,} simulations, "
        f"converged: {fit.converged}"
        + ("" if fit.converged else f" (at most {MLE_MAX_ITERATIONS} iterations per stage)"),
    ]
    interval_notes, interval_numbers = mle_interval_notes(
        fit, simulations=min(mle_simulations, 100_000), progressbar=progressbar
    )
    notes += interval_notes
    diagnostics = {
        **abc_numbers,
        **interval_numbers,
        **nuts_numbers,
        "mcem_iterations": fit.iterations,
        "mcem_simulations": fit.n_simulations,
        "mcem_converged": bool(fit.converged),
        "released": released,
    }
    setting = [
        f"{'':<26}" + "".join(f"{n:>10}" for n in STATISTICS),
        f"{'confidential statistics':<26}" + "".join(f"{v:10.3f}" for v in truth),
        f"{'release (Laplace 3,3,6,6)':<26}"
        + "".join(f"{v:10.3f}" for v in released)
        + ("  (drawn from the seed: a demonstration)" if demo else ""),
    ]
    report = Report(
        "Lalonde NSW earnings from a DP release of group means and variances "
        "(Gong 2022, Section 5.2)",
        setting,
        rows,
        notes,
        diagnostics,
    )
    return Result(report, abc, extra={"reference": reference})


def run_example(out_dir, *, seed=None, progressbar: bool = True, **options) -> str:
    """Run :func:`run` (keyword ``options``) into ``out_dir`` and return the console summary.

    Writes ``posterior.nc`` (the ABC result), ``reference.nc`` (NUTS),
    ``summary.csv``, ``summary.json``, ``lalonde.png`` and ``manifest.json``
    (last). This is ``dpinfer run lalonde``.
    """
    result, manifest = save_run(
        EXAMPLE, out_dir, {**EXAMPLE.defaults(), **options}, seed=seed, progressbar=progressbar
    )
    return result.report.table() + f"\nwrote {', '.join(manifest['files'])} to {out_dir}"


def _schedule_up_to(size: int) -> dp.StagedSchedule:
    stages = [stage for stage in MLE_SCHEDULE.stages if stage[0] < size]
    return dp.StagedSchedule(
        stages=(*stages, (size, MLE_SCHEDULE.stages[-1][1])), max_iterations=MLE_MAX_ITERATIONS
    )


def _exact_sampler(released, draws, pilot_seed, seed, progressbar):
    """Exact rejection ABC when its predicted cost fits the budget, else ``smc_abc``.

    The cost comes from a pilot estimate of the acceptance rate
    (:func:`dpinfer.estimate_acceptance_rate`, :data:`PILOT_SIMULATIONS`
    prior simulations, a fraction of a second). Returns the result, its label, notes
    and diagnostics.
    """
    model_, mech = model(), mechanism()
    estimate = dp.estimate_acceptance_rate(
        model_, mech, released, simulations=PILOT_SIMULATIONS, rng=pilot_seed
    )
    log_rate = estimate.log_rate
    source = f"pilot of {PILOT_SIMULATIONS:,} prior simulations"
    plan = plan_sampler(log_rate, draws, fallback="smc_abc", source=source)
    notes = [plan.note]
    if not plan.switched:
        try:
            abc = dp.rejection_abc(
                model_,
                mech,
                released,
                draws=draws,
                max_simulations=plan.max_simulations,
                rng=seed,
                progressbar=progressbar,
            )
        except dp.SimulationBudgetExceeded as err:  # the pilot was too optimistic
            notes.append(f"rejection ABC stopped ({err}); smc_abc is used instead")
        else:
            attrs = abc.posterior.attrs
            rate, n_sim = float(attrs["acceptance_rate"]), int(attrs["n_simulations"])
            notes.append(
                f"rejection ABC: {draws} draws, acceptance rate {rate:.3e} ({n_sim} simulations)"
            )
            return abc, "rejection ABC", notes, {"acceptance_rate": rate, "n_simulations": n_sim}
    abc = dp.smc_abc(model_, mech, released, particles=draws, rng=seed, progressbar=progressbar)
    text, numbers = smc_note("smc_abc", abc, "smc")
    return (
        abc,
        "smc_abc",
        [*notes, text],
        {"predicted_acceptance_rate": math.exp(log_rate), **numbers},
    )


def _draws(idata) -> dict:
    return idata_draws(idata, PARAMETERS)


def _mle_rows(label: str, role: str, fit: dict) -> list:
    return mle_rows(label, role, fit["estimate"], fit["standard_error"])
