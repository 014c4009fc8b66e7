"""The command-line example ``dpinfer run naive-bayes`` and its report."""

from __future__ import annotations

import numpy as np

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
    nuts_note,
    nuts_options,
    value_rows,
    vector,
)
from dpinfer.random import RNGLike, as_seed_sequence

from ._data import (
    ALPHA,
    CELL_NAMES,
    EPSILON,
    N_FEATURES,
    PARAMETER_NAMES,
    RELEASED,
    TRUE_PARAMS,
    N,
    mechanism,
    naive_posterior,
    sensitivity,
)
from ._exact import pymc_reference

#: The check of a release: eight proportions plus noise, each from -1 to 2.
_CELLS = vector(len(CELL_NAMES), between(-1, 2, hint="a proportion lies in [0, 1]"))

EXAMPLE = Example(
    name="naive-bayes",
    title="Naive Bayes from Laplace-noised cell proportions: exact-likelihood NUTS vs naive",
    paper="Xiong, Ju & Zhang (2023), Supplement S3.3",
    seconds=40,
    module=__package__,
    smallest={"nuts_draws": 100},
    options=(
        Option("released", RELEASED, "the eight released proportions", _CELLS, flag="--release"),
        Option("epsilon", EPSILON, "privacy budget of the release", between(0.5, 1000)),
        NUTS_DRAWS,
    ),
)


def run(
    *,
    released=RELEASED,
    epsilon: float = EPSILON,
    nuts_draws: int = 1000,
    rng: RNGLike = None,
    progressbar: bool = True,
    verbose: bool = False,
) -> Result:
    """Compare the exact posterior (NUTS on the exact marginal likelihood) with the naive one.

    Exact SMC-ABC needs a fresh table within a few noise scales of the release
    in all eight cells, which fails at the paper's ε = 10 (see the module
    docstring); the likelihood summed over the counts does not, so it is the
    exact method here.

    Parameters
    ----------
    released : array_like
        The eight released proportions (default :data:`RELEASED`).
    epsilon : float
        Privacy budget of the release.
    nuts_draws : int
        Draws and tuning steps per chain (2 chains).
    rng : seed, optional
        Seed of NUTS.
    progressbar : bool
        Unused (no dpinfer sampler runs); part of every example's ``run``.
    verbose : bool
        Show PyMC's progress bars.

    Returns
    -------
    Result
        ``posterior`` is the NUTS result.
    """
    mech = mechanism(epsilon=epsilon)
    released = mech.check_released(released)
    nuts = nuts_options(
        draws=nuts_draws, tune=nuts_draws, progressbar=progressbar, verbose=verbose
    )
    exact = pymc_reference(released, epsilon=epsilon, rng=as_seed_sequence(rng), **nuts)
    rows = [
        *draw_rows("NUTS, counts summed out", "exact", idata_draws(exact, PARAMETER_NAMES)),
        *distribution_rows("naive (release as counts)", "naive", naive_posterior(released)),
        *value_rows("truth", "truth", TRUE_PARAMS),
    ]
    nuts_text, diagnostics = nuts_note("NUTS", exact, "nuts")
    notes = [
        nuts_text,
        f"privacy: {mech.privacy} (replace-one neighbours, sensitivity {sensitivity():g})",
    ]
    report = Report(
        "Naive Bayes from a Laplace release of cell proportions (Xiong et al. 2023, S3.3)",
        [
            f"n = {N} records, {N_FEATURES} binary features, Beta({ALPHA:g}, {ALPHA:g}) priors; "
            f"epsilon = {epsilon:g}",
            f"released {np.round(released, 4).tolist()} ({', '.join(CELL_NAMES)})",
        ],
        rows,
        notes,
        diagnostics,
    )
    return Result(report, exact)
