"""The command-line example ``dpinfer run mixture-uniform`` and its report."""

from __future__ import annotations

import math

import numpy as np

from dpinfer.example import (
    Example,
    Option,
    Report,
    Result,
    between,
    draw_rows,
    idata_draws,
    integer,
    value_rows,
    yes_no,
)
from dpinfer.random import RNGLike, as_seed_sequence, chunk_generator

from ._figure3 import (
    _abcdp,
    _repetition,
)
from ._model import (
    BANDWIDTH,
    N_FEATURES,
    N_OBSERVATIONS,
    N_PROPOSALS,
    PRIOR_MEAN,
    TRUE_WEIGHTS,
)

EXAMPLE = Example(
    name="mixture-uniform",
    title="ABCDP on a mixture of five uniforms: private posterior draws of the weights",
    paper="Park, Vinaroz & Jitkrittum (2021), Section 6.1",
    seconds=120,
    module=__package__,
    smallest={"proposals": 100, "observations": 100, "c": 10},
    options=(
        Option("epsilon_total", 1.0, "privacy budget of the ABCDP run", between(0.01, 1000)),
        Option("epsilon_abc", 0.1, "ABC threshold on the MMD", between(0.001, 10)),
        Option("c", 100, "accepted draws, after which the run halts", integer(1, 10**5)),
        Option("resample", False, "redraw the threshold noise after each acceptance", yes_no),
        Option(
            "proposals",
            N_PROPOSALS,
            "public prior draws T (run time grows with T times N)",
            integer(100, 20_000),
        ),
        Option(
            "observations",
            N_OBSERVATIONS,
            "observations N per dataset (run time grows with T times N)",
            integer(10, 10_000),
        ),
    ),
)


def run(
    *,
    epsilon_total: float = 1.0,
    epsilon_abc: float = 0.1,
    c: int = 100,
    resample: bool = False,
    proposals: int = N_PROPOSALS,
    observations: int = N_OBSERVATIONS,
    rng: RNGLike = None,
    progressbar: bool = True,
    verbose: bool = False,
) -> Result:
    """Run ABCDP once on the toy data, next to the same ABC without privacy noise.

    Draws the confidential data, the random features and the public
    proposals from ``rng``; the privacy noise comes from OS entropy, as a
    data owner's release must, so it is not reproducible from ``rng``.

    Parameters
    ----------
    epsilon_total, epsilon_abc, c, resample
        The ABCDP setting (one point of Figure 3).
    proposals, observations : int
        ``T`` and ``N`` (paper: 10000 and 5000).
    rng : seed, optional
        Public randomness.
    progressbar, verbose : bool
        Unused (the run is a few vectorised passes); part of every example's ``run``.

    Returns
    -------
    Result
        ``posterior`` is the ABCDP output; ``extra["non_private"]`` the
        noiseless run on the same proposals.
    """
    gen = chunk_generator(as_seed_sequence(rng), 0)
    observed, dist, params = _repetition(gen, observations, proposals, N_FEATURES, BANDWIDTH)
    settings = {"epsilon_abc": epsilon_abc, "c": c, "resample": bool(resample)}
    private = _abcdp(observed, dist, params, epsilon_total=epsilon_total, **settings)
    exact = _abcdp(observed, dist, params, epsilon_total=math.inf, **settings)
    label = f"ABCDP, eps_total = {epsilon_total:g}"
    rows = [
        *draw_rows(label, "private", idata_draws(private)),
        *draw_rows("rejection ABC, no noise", "non-private", idata_draws(exact)),
        *value_rows("truth", "truth", {"weights": TRUE_WEIGHTS}),
    ]
    notes, diagnostics = [], {}
    for name, out in ((label, private), ("rejection ABC, no noise", exact)):
        draws = idata_draws(out)["weights"]
        mean = draws.mean(axis=0) if len(draws) else PRIOR_MEAN
        mse = float(np.mean((mean - TRUE_WEIGHTS) ** 2))
        queries = int(out.posterior.attrs["n_queries"])
        notes.append(
            f"{name}: {len(draws)} draws accepted after {queries:,} of {proposals:,} "
            f"distances; MSE of the posterior mean {mse:.2e}"
            + ("" if len(draws) else " (nothing accepted: the prior mean stands in)")
        )
        diagnostics[f"{'private' if out is private else 'non_private'}_mse"] = mse
    notes.append(
        f"privacy: {private.posterior.attrs['epsilon']}-DP for the data owner "
        "(privacy noise from OS entropy)"
    )
    report = Report(
        "A mixture of five uniforms released by ABCDP (Park et al. 2021, Section 6.1)",
        [
            f"weights ~ Dirichlet(1, ..., 1); N = {observations} observations at the true "
            f"weights; random-feature MMD ({N_FEATURES} frequencies, bandwidth {BANDWIDTH})",
            f"T = {proposals} public proposals; c = {c}, epsilon_abc = {epsilon_abc:g}, "
            f"epsilon_total = {epsilon_total:g}, resample = {bool(resample)}",
        ],
        rows,
        notes,
        diagnostics,
    )
    return Result(report, private, extra={"non_private": exact})
