r"""A stochastic SIR epidemic released through the binomial mechanism (Xiong et al. 2023).

Section 4.1 and S3.1 of Xiong, Ju and Zhang (2023): a closed population of
``K`` people moves through the compartments susceptible, infected and
recovered as a Markov jump process with infection rate ``beta S I / K`` and
recovery rate ``gamma I``, from ``(S, I, R) = (K - 1, 1, 0)``. The number
infected ``I(t)`` at ``L`` observation times is the confidential statistic;
the curator publishes ``s_i ~ Binomial(n, (I(t_i) + m) / (K + 2m))``, which is
``epsilon = nL/m``-DP (Proposition 4; :class:`dpinfer.BinomialRelease`).

The example's settings: ``K = 10**6``; times ``t = 0, 17, ..., 153`` (``L =
10``, horizon 160); ``n = m = 1000``, so ``epsilon = 10``; parameters
``(log beta, log gamma)`` with independent normal priors of means
``(log 0.4, log 0.125)`` and *variances* ``(0.5, 0.2)``; truth ``(log beta,
log gamma) = (-0.5, -3)`` (``R0 = beta / gamma`` about 12, a measles-like
outbreak). Xiong et al. report the release as fractions ``s_i / n``
(:data:`RELEASED_FRACTIONS`); dpinfer's mechanism works with the integer
counts (:data:`RELEASED`).

Two simulators of the curve, both compiled with numba and drawing from the
numpy ``Generator`` passed as ``rng``:

* :func:`simulate_exact`, Gillespie's direct method (exact; about 2 million
  events per full epidemic at ``K = 10**6``);
* :func:`simulate_approx`, exact events while few are infected and
  tau-leaps above (approximate; its measured error is in its docstring).

Examples
--------
>>> import numpy as np
>>> from dpinfer.models import sir
>>> sir.RELEASED
array([  1,  31, 614, 263, 123,  47,  18,   9,   5,   3])
>>> sir.mechanism().privacy.epsilon
10.0
>>> curves = sir.simulate_exact([0.6, 0.6], [0.05, 0.05], population=1000, rng=1)
>>> curves.shape
(2, 10)
"""

from __future__ import annotations

import numpy as np

import dpinfer as dp
from dpinfer._rng import RNGLike, as_seed_sequence
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

from ._sir_model import NoiselessFraction, model, naive_abc, naive_mechanism, r0, simulate_release
from ._sir_setting import (
    EPSILON,
    N_TRIALS,
    POPULATION,
    PRIOR_MEAN,
    PRIOR_VARIANCE,
    RELEASED,
    RELEASED_FRACTIONS,
    TIMES,
    TRUTH,
    M,
    mechanism,
    prior,
)
from ._sir_simulate import simulate_approx, simulate_exact

__all__ = [
    "EPSILON",
    "M",
    "NoiselessFraction",
    "N_TRIALS",
    "POPULATION",
    "PRIOR_MEAN",
    "PRIOR_VARIANCE",
    "RELEASED",
    "RELEASED_FRACTIONS",
    "TIMES",
    "TRUTH",
    "mechanism",
    "model",
    "naive_abc",
    "naive_mechanism",
    "prior",
    "r0",
    "run",
    "simulate_approx",
    "simulate_exact",
    "simulate_release",
]

REFERENCE = (
    "Xiong, Ju and Zhang (2023). Simulation-based inference from privacy-protected data. "
    "Section 4.1, Proposition 4 and Supplement S3.1."
)

EXAMPLE = Example(
    name="sir",
    title="SIR epidemic curve released through the binomial mechanism: exact SMC-ABC",
    paper="Xiong, Ju & Zhang (2023), Section 4.1",
    seconds=60,
    module=__name__,
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
