"""The command-line example ``dpinfer run linear-regression`` and its report."""

from __future__ import annotations

import scipy.stats as st

import dpinfer as dp
from dpinfer.example import (
    NUTS_DRAWS,
    Example,
    Option,
    Report,
    Result,
    between,
    distribution_rows,
    draw_rows,
    idata_draws,
    integer,
    nuts_note,
    nuts_options,
    smc_note,
    value_rows,
    vector,
)
from dpinfer.random import RNGLike, as_seed_sequence

from ._data import (
    CLAMP,
    EPSILON,
    NOISE_VARIANCE,
    RELEASED,
    SENSITIVITY,
    TRUE_BETA,
    X_MEAN,
    N,
    mechanism,
    model,
)
from ._posteriors import (
    naive_posterior,
)
from ._pymc import pymc_reference

EXAMPLE = Example(
    name="linear-regression",
    title="Linear regression from Laplace-noised sufficient statistics: SMC-ABC and DA-NUTS",
    paper="Xiong, Ju & Zhang (2023), Section 4.2",
    seconds=60,
    module=__package__,
    smallest={"particles": 100, "nuts_draws": 100},
    options=(
        Option(
            "released",
            RELEASED,
            "the nine released statistics (normalised: the statistics lie in [-1, 1])",
            vector(9, between(-5, 5, hint="the normalised statistics lie in [-1, 1]")),
            flag="--release",
        ),
        Option("epsilon", EPSILON, "privacy budget of the release", between(0.5, 100)),
        Option("particles", 2000, "SMC-ABC particles", integer(100, 20_000)),
        NUTS_DRAWS,
    ),
)


def run(
    *,
    released=RELEASED,
    epsilon: float = EPSILON,
    particles: int = 2000,
    nuts_draws: int = 1000,
    rng: RNGLike = None,
    progressbar: bool = True,
    verbose: bool = False,
) -> Result:
    """Fit exact SMC-ABC, the PyMC data-augmentation reference and the naive posterior of ``beta``.

    The two samplers draw from two seeds spawned from ``rng`` (SMC-ABC the
    first); the report compares them with the naive posterior and the truth.

    Parameters
    ----------
    released : array_like
        The nine released statistics (default :data:`RELEASED`, Xiong et al.'s ε = 10 release).
    epsilon : float
        Privacy budget of the release.
    particles : int
        SMC-ABC particles.
    nuts_draws : int
        Draws and tuning steps per chain (2 chains) of the NUTS reference.
    rng : seed, optional
        Root seed of both samplers.
    progressbar : bool
        Show dpinfer's progress bars.
    verbose : bool
        Show PyMC's progress bars too.

    Returns
    -------
    Result
        ``posterior`` is the SMC-ABC result; ``extra["reference"]`` the NUTS one.
    """
    seeds = as_seed_sequence(rng).spawn(2)
    mech = mechanism(epsilon=epsilon)
    released = mech.check_released(released)
    smc = dp.smc_abc(
        model(), mech, released, particles=particles, rng=seeds[0], progressbar=progressbar
    )
    nuts = nuts_options(
        draws=nuts_draws, tune=nuts_draws, progressbar=progressbar, verbose=verbose
    )
    reference = pymc_reference(released, epsilon=epsilon, rng=seeds[1], **nuts)
    naive = naive_posterior(released)
    naive_dists = {
        f"beta[{j}]": st.norm(naive.mean[j], naive.std[j]) for j in range(len(naive.mean))
    }
    rows = [
        *draw_rows("exact (smc_abc)", "exact", idata_draws(smc, ["beta"])),
        *draw_rows("PyMC data augmentation", "reference", idata_draws(reference, ["beta"])),
        *distribution_rows("naive (release as data)", "naive", naive_dists),
        *value_rows("truth", "truth", {"beta": TRUE_BETA}),
    ]
    smc_text, diagnostics = smc_note("smc_abc", smc, "smc")
    nuts_text, nuts_numbers = nuts_note("NUTS reference", reference, "reference")
    notes = [
        smc_text,
        nuts_text,
        f"naive: released Gram matrix projected to PSD: {naive.projected}",
        f"privacy: {mech.privacy} (sensitivity {SENSITIVITY:g} of the normalised statistics)",
    ]
    diagnostics.update(nuts_numbers)
    report = Report(
        "Bayesian linear regression from Laplace-noised sufficient statistics "
        "(Xiong et al. 2023, Section 4.2)",
        [
            f"n = {N}, x ~ N({X_MEAN}, I), y | x ~ N(x beta, {NOISE_VARIANCE:g}), beta ~ N(0, I); "
            f"clamped to +-{CLAMP:g}; epsilon = {epsilon:g}",
        ],
        rows,
        notes,
        diagnostics,
    )
    return Result(report, smc, extra={"reference": reference})
