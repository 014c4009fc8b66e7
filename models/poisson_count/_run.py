"""``dpinfer run poisson-count``: the example's options, its run and its report."""

from __future__ import annotations

import dataclasses
import functools
import math

import scipy.stats as st

from dpinfer.example import (
    Example,
    Option,
    Report,
    Result,
    SamplerPlan,
    between,
    choice,
    density_figure,
    distribution_rows,
    draw_rows,
    idata_draws,
    integer,
    plan_sampler,
    save_run,
)
from dpinfer.random import as_seed_sequence

from ._checks import _abc_checks, _mcem, _mle_row, _sample
from ._likelihood import EPSILON, RELEASED, _check_prior, _log_evidence, mechanism, model
from ._mle import exact_mle, naive_mle
from ._posterior import ExactPosterior, naive_posterior

EXAMPLE = Example(
    name="poisson-count",
    title="A Poisson count released with Laplace noise: exact posterior and MLE",
    paper="Gong (2022), Section 5.1",
    seconds=10,
    module=__package__,
    smallest={"draws": 100, "mle_schedule": "off"},
    options=(
        Option(
            "released",
            RELEASED,
            "the Laplace release s_dp of the count",
            between(-1000, 10**6, hint="the example's counts are at most 10^6"),
            flag="--release",
        ),
        Option(
            "epsilon",
            EPSILON,
            "privacy-loss budget (Laplace scale 1/epsilon)",
            between(
                0.05,
                10,
                hint="below 0.05 the noise (Laplace scale above 20) swamps a count of this "
                "size and Monte Carlo EM needs hundreds of iterations; above 10 the release "
                "is the count to within rounding",
            ),
        ),
        Option("alpha", 25.0, "shape of the Gamma prior on theta", between(0.1, 1000)),
        Option("beta", 1.0, "rate of the Gamma prior on theta", between(0.001, 1000)),
        Option(
            "draws",
            10_000,
            "rejection ABC's posterior draws (when rejection would exceed its budget, "
            "importance ABC's target effective sample size, at most 2000)",
            integer(100, 100_000),
        ),
        Option(
            "mle_schedule",
            "auto",
            "MCEM schedule: ascent-based, Gong's stages up to 10^7 simulations, or off "
            "(no Monte Carlo EM; the exact and naive MLEs remain)",
            choice("auto", "staged", "off"),
        ),
    ),
)

#: Below this log acceptance rate of rejection ABC (closed-form evidence over the largest
#: Laplace density) a release is refused as implausible under the prior, before anything
#: runs: the closed-form posterior's quadrature bounds its neglected mass by
#: 1e-13 * exp(-log rate), which must stay a normal double.
LOG_ACCEPTANCE_FLOOR = -600.0


def run(
    *,
    released: float = RELEASED,
    epsilon: float = EPSILON,
    alpha: float = 25.0,
    beta: float = 1.0,
    draws: int = 10_000,
    mle_schedule: str = "auto",
    rng=None,
    progressbar: bool = True,
    verbose: bool = False,
) -> Result:
    """Reproduce Gong's Figure 1 (and Table 1's acceptance rate) for one prior.

    Runs exact rejection ABC and compares it with the exact posterior (closed
    form), the naive one and the prior; its acceptance rate with the evidence
    computed by summation; and the maximum likelihood estimate by Monte Carlo
    EM with the Louis information with the exact and naive MLEs.

    The cost of rejection ABC is known before it runs: its acceptance rate is
    the closed-form evidence over the largest Laplace density. When
    ``draws`` would need more than
    :data:`~dpinfer.example.REJECTION_BUDGET` simulations, exact
    importance ABC runs instead (:func:`dpinfer.importance_abc`, with a Gamma
    proposal matched to the closed-form posterior, variance doubled, until an
    ESS of ``min(draws, 2000)``), and the report says so. A release whose
    acceptance rate is below ``exp(LOG_ACCEPTANCE_FLOOR)`` is refused before
    anything runs, with what to change.

    Parameters
    ----------
    released, epsilon : float
        The release and its privacy-loss budget (Gong: 37.4 and 0.2).
    alpha, beta : float
        Shape and rate of the Gamma prior (Gong: 25 and 1).
    draws : int, default 10_000
        Posterior draws of rejection ABC (importance ABC: its target ESS is
        ``min(draws, IMPORTANCE_TARGET_ESS)``, in rounds of at least
        ``IMPORTANCE_ROUND`` particles, at most ``IMPORTANCE_MAX_SIMULATIONS``).
    mle_schedule : {"auto", "staged", "off"}, default "auto"
        Sample sizes of the MCEM fit (:data:`MCEM_SCHEDULES`, started at the
        naive MLE ``max(s_dp, 1)``): ascent-based, Gong's Appendix E stages
        (up to ``10^7`` simulations), or no MCEM fit. A fit that has not
        converged when its schedule ends is flagged in the table.
    rng : None, int, SeedSequence or Generator
        Root seed of the sampler and of the MCEM fit.
    progressbar : bool, default True
        Show progress bars.
    verbose : bool, default False
        Unused (nothing here runs PyMC's sampler); part of every example's ``run``.

    Returns
    -------
    Result
        ``posterior`` is the sampler's result; the figure is Gong's Figure 1.

    Raises
    ------
    ValueError
        Before any simulation, when the release is implausible under the prior
        (see :data:`LOG_ACCEPTANCE_FLOOR`).
    """
    seeds = as_seed_sequence(rng).spawn(2)
    mech = mechanism(epsilon=epsilon)
    plan = _sampler_plan(alpha, beta, epsilon, released, draws)
    exact = ExactPosterior(alpha=alpha, beta=beta, epsilon=epsilon, released=released)
    prior = st.gamma(alpha, scale=1.0 / beta)
    idata = _sample(
        plan, model(alpha=alpha, beta=beta), mech, released, exact, seeds[0], progressbar
    )
    abc = idata_draws(idata)["theta"]
    notes, diagnostics, flag = _abc_checks(plan, idata, abc, exact)
    label = "rejection ABC" if plan.method == "rejection_abc" else "importance ABC"
    rows = [
        *distribution_rows("exact (closed form)", "exact", {"theta": exact}),
        *(dataclasses.replace(r, flag=flag) for r in draw_rows(label, "exact", {"theta": abc})),
        *distribution_rows("prior", "prior", {"theta": prior}),
    ]
    if mle_schedule != "off":
        mcem_rows, mcem_notes, numbers = _mcem(
            epsilon, released, mle_schedule, seeds[1], progressbar
        )
        rows += mcem_rows
        notes += mcem_notes
        diagnostics.update(numbers)
    else:
        notes.append("MCEM: not run (--mle-schedule off)")
    rows += [
        *_mle_row(
            "MLE: exact (closed form)", "reference", exact_mle(epsilon=epsilon, released=released)
        ),
        *_mle_row("MLE: naive (s_dp as the count)", "naive", naive_mle(released=released)),
    ]
    curves = [("exact posterior", exact.pdf, {"color": "tab:green", "lw": 2})]
    try:
        naive = naive_posterior(alpha=alpha, beta=beta, released=released)
    except ValueError as err:
        notes.append(f"no naive posterior: {err}")
    else:
        rows[2:2] = distribution_rows("naive (s_dp as the count)", "naive", {"theta": naive})
        curves.append(("naive posterior", naive.pdf, {"color": "tab:red", "ls": ":", "lw": 2}))
    curves.append(("prior", prior.pdf, {"color": "tab:blue", "ls": "--", "lw": 1.5}))
    report = Report(
        "Poisson count with a Laplace release (Gong 2022, Section 5.1)",
        [
            f"prior theta ~ Gamma({alpha:g}, rate {beta:g}); s ~ Poisson(theta); "
            f"s_dp = s + Lap(1/epsilon), epsilon = {epsilon:g}; s_dp = {released:g}"
        ],
        rows,
        notes,
        diagnostics,
    )
    title = (
        rf"Gamma({alpha:g}, {beta:g}) prior, $\epsilon$ = {epsilon:g}, $s_{{dp}}$ = {released:g}"
    )
    figure = functools.partial(
        density_figure,
        draws=(f"{label} draws", abc),
        curves=curves,
        xlabel=r"$\theta$",
        title=title,
        marks=[("$s_{dp}$", released)],
        support=(0.0, math.inf),
    )
    return Result(report, idata, figure)


def check_options(*, released, epsilon, alpha, beta, draws, **_) -> None:
    """Refuse, before anything runs, a release implausible under the prior.

    Rejection ABC's acceptance rate is the closed-form evidence over the
    largest Laplace density; below ``exp(LOG_ACCEPTANCE_FLOOR)`` the message
    says which options to change. ``dpinfer run`` calls this first.

    Examples
    --------
    >>> check_options(released=37.4, epsilon=0.2, alpha=25.0, beta=1.0, draws=1000)
    >>> check_options(released=1e6, epsilon=0.2, alpha=25, beta=1, draws=9)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: the release 1e+06 is implausible under the prior Gamma(25, rate 1) ...
    """
    _sampler_plan(alpha, beta, epsilon, released, draws)


def run_example(out_dir, *, seed=None, progressbar: bool = True, **options) -> str:
    """Run :func:`run` (keyword ``options``) into ``out_dir`` and return the console summary.

    Writes ``posterior.nc`` (the ABC result), ``summary.csv``, ``summary.json``,
    ``poisson_count.png`` and ``manifest.json`` (last); see
    :func:`dpinfer.example.save_run`. This is ``dpinfer run poisson-count``.
    """
    result, manifest = save_run(
        EXAMPLE, out_dir, {**EXAMPLE.defaults(), **options}, seed=seed, progressbar=progressbar
    )
    return result.report.table() + f"\nwrote {', '.join(manifest['files'])} to {out_dir}"


def _sampler_plan(alpha, beta, epsilon, released, draws) -> SamplerPlan:
    """Rejection ABC's cost from the closed-form evidence; refuse an implausible release."""
    alpha, beta = _check_prior(alpha, beta)
    log_rate = _log_evidence(alpha, beta, epsilon, released) - math.log(epsilon / 2.0)
    if not log_rate >= LOG_ACCEPTANCE_FLOOR:
        raise ValueError(
            f"the release {released:g} is implausible under the prior Gamma({alpha:g}, rate "
            f"{beta:g}) at epsilon = {epsilon:g}: its evidence is exp({log_rate:.4g}) times "
            "the largest Laplace density, so rejection ABC would need about "
            f"exp({-log_rate:.4g}) simulations per draw and the closed-form posterior's "
            f"quadrature is not reliable (the limit is exp({LOG_ACCEPTANCE_FLOOR:g})). Choose "
            "--alpha and --beta so that the prior mean alpha/beta is nearer the release, or "
            "check --release and --epsilon"
        )
    return plan_sampler(log_rate, draws, fallback="importance_abc", source="closed-form evidence")
