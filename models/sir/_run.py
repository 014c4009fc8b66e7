"""The command-line example ``dpinfer run sir``: exact SMC-ABC and the naive analysis."""

from __future__ import annotations

import numpy as np

import dpinfer as dp
from dpinfer.example import (
    Example,
    Option,
    Report,
    Result,
    between,
    choice,
    distribution_rows,
    draw_rows,
    idata_draws,
    integer,
    smc_note,
    value_rows,
    vector,
)
from dpinfer.random import RNGLike, as_seed_sequence

from ._model import model, naive_abc, r0
from ._setting import (
    EPSILON,
    N_TRIALS,
    POPULATION,
    RELEASED,
    TIMES,
    TRUTH,
    mechanism,
    prior,
)

REFERENCE = (
    "Xiong, Ju and Zhang (2023). Simulation-based inference from privacy-protected data. "
    "Section 4.1, Proposition 4 and Supplement S3.1."
)

EXAMPLE = Example(
    name="sir",
    title="SIR epidemic curve released through the binomial mechanism: exact SMC-ABC",
    paper="Xiong, Ju & Zhang (2023), Section 4.1",
    seconds=60,
    module=__package__,
    smallest={"particles": 100},
    options=(
        Option(
            "released",
            RELEASED,
            "the released counts s_i out of n at the 10 times",
            vector(
                TIMES.size,
                integer(0, N_TRIALS, hint=f"a binomial release counts out of n = {N_TRIALS}"),
            ),
            flag="--release",
        ),
        Option("epsilon", EPSILON, "privacy budget n L / m of the release", between(0.1, 100)),
        Option(
            "particles", 2000, "SMC particles (exact and naive analyses)", integer(100, 20_000)
        ),
        Option(
            "simulator",
            "approx",
            "curve simulator for inference: tau-leaping, or exact Gillespie (slow)",
            choice("approx", "exact"),
        ),
    ),
)


def run(
    *,
    released=RELEASED,
    epsilon: float = EPSILON,
    particles: int = 2000,
    simulator: str = "approx",
    rng: RNGLike = None,
    progressbar: bool = True,
    verbose: bool = False,
) -> Result:
    """Fit the exact posterior of ``(log beta, log gamma)`` and ``R0``, and the naive one.

    Runs :func:`dpinfer.smc_abc` with the release's mechanism (exact: the
    binomial density is the ABC kernel) and :func:`naive_abc`, which reads the
    released fractions as the exact proportions infected.

    Parameters
    ----------
    released : array_like
        Release counts ``s_i`` (default Xiong et al.'s :data:`RELEASED`).
    epsilon : float
        Privacy budget of the release (``m = n L / epsilon``).
    particles : int
        Particles of both SMC runs.
    simulator : {"approx", "exact"}
        Curve simulator used for inference.
    rng : seed, optional
        Root seed of both runs.
    progressbar : bool
        Show the samplers' progress bars.
    verbose : bool
        Unused; part of every example's ``run``.

    Returns
    -------
    Result
        ``posterior`` is the exact SMC-ABC result; ``extra["naive"]`` the naive run.
    """
    seeds = as_seed_sequence(rng).spawn(2)
    mech = mechanism(epsilon)
    exact = dp.smc_abc(
        model(simulator=simulator),
        mech,
        released,
        particles=particles,
        rng=seeds[0],
        progressbar=progressbar,
    )
    naive = naive_abc(
        released, particles=particles, simulator=simulator, rng=seeds[1], progressbar=progressbar
    )

    def with_r0(idata):
        draws = idata_draws(idata, ("log_beta", "log_gamma"))
        return {**draws, "R0": r0(draws)}

    a, b = exact.posterior.attrs, naive.posterior.attrs
    rows = [
        *draw_rows("exact (smc_abc)", "exact", with_r0(exact)),
        *draw_rows("naive (fractions as exact)", "naive", with_r0(naive)),
        *distribution_rows("prior", "prior", prior()),
        *value_rows("truth", "truth", {**TRUTH, "R0": r0(TRUTH)}),
    ]
    exact_text, diagnostics = smc_note("smc_abc", exact, "smc")
    naive_text, naive_numbers = smc_note("naive ABC", naive, "naive")
    notes = [
        f"{exact_text}; log evidence {float(a['log_evidence']):.3f}",
        f"{naive_text}; final tolerance {float(b['tolerance']):.1f} (units of 1/n)",
        f"privacy: {mech.privacy} (n = {mech.n}, m = {mech.m:g}, L = {TIMES.size})",
    ]
    diagnostics.update(
        naive_numbers, log_evidence=float(a["log_evidence"]), naive_tolerance=float(b["tolerance"])
    )
    report = Report(
        "SIR epidemic from a binomial release of the curve (Xiong et al. 2023, Section 4.1)",
        [
            f"K = {POPULATION:,}; times {TIMES.astype(int).tolist()}; simulator {simulator}",
            f"released s = {np.asarray(released).tolist()} out of n = {mech.n}",
        ],
        rows,
        notes,
        diagnostics,
    )
    return Result(report, exact, extra={"naive": naive})
