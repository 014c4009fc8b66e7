r"""The toy example of ABCDP: a mixture of five uniforms (Park et al. 2021, Section 6.1).

The parameter is a vector of mixing weights with a flat Dirichlet prior, and
an observation is drawn from the mixture of ``Uniform[i - 1, i]``,
``i = 1..5``:

.. math:: \theta \sim \mathrm{Dirichlet}(1, \dots, 1), \qquad
          p(y \mid \theta) = \sum_{i=1}^5 \theta_i \, \mathrm{U}(y; [i-1, i]).

The confidential data are ``N = 5000`` draws at the true weights
``[0.25, 0.04, 0.33, 0.04, 0.34]``; every pseudo-dataset has ``N`` draws too.
The distance is the random-feature MMD with 100 frequencies of a Gaussian
kernel of bandwidth 0.6 (the authors' code; the paper mentions the median
heuristic on simulated data). Its features have norm 1, so ``B_k = 1`` and
the sensitivity is ``2 / N`` under the replacement of one observation
(Lemma 1). The frequencies are drawn from public randomness, independently
of the data.

Figure 3 of the paper reports the mean squared error of the posterior mean
for ``c`` in {10, 100, 1000}, ``epsilon_abc`` in {0.05, 0.1, 0.2, 0.5},
``epsilon_total`` in {0.5, 1, 10, inf} and both RESAMPLE modes, over
``T = 10000`` prior draws (the authors' code reports the mean absolute
error; we report the squared one, as the figure says). :func:`figure3`
computes that grid: the public draws and their distances are computed once
per repetition, and every setting reuses them with fresh privacy noise.

Examples
--------
>>> from dpinfer.models import mixture_uniform as mu
>>> res = mu.run_experiment(c=10, epsilon_abc=0.1, epsilon_total=10.0,
...                         n_observations=200, n_proposals=300, rng=0,
...                         privacy_rng=1)
>>> res.mse.shape, bool(res.mse[0] < 0.05)
((1,), True)
"""

from __future__ import annotations

import math

import numpy as np

from dpinfer._rng import RNGLike, as_seed_sequence, chunk_generator
from dpinfer.distances import PrecomputedDistances
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

from ._mixture_uniform_figure3 import (
    ExperimentResult,
    _abcdp,
    _repetition,
    figure3,
    run_experiment,
)
from ._mixture_uniform_model import (
    BANDWIDTH,
    C_VALUES,
    EPSILON_ABC_VALUES,
    EPSILON_TOTAL_VALUES,
    N_FEATURES,
    N_OBSERVATIONS,
    N_PROPOSALS,
    PRIOR_MEAN,
    TRUE_WEIGHTS,
    confidential_data,
    distance,
    model,
    prior,
    public_draws,
    sample_mixture,
)

__all__ = [
    "BANDWIDTH",
    "C_VALUES",
    "EPSILON_ABC_VALUES",
    "EPSILON_TOTAL_VALUES",
    "N_FEATURES",
    "N_OBSERVATIONS",
    "N_PROPOSALS",
    "TRUE_WEIGHTS",
    "ExperimentResult",
    "PrecomputedDistances",
    "confidential_data",
    "distance",
    "figure3",
    "model",
    "prior",
    "public_draws",
    "run",
    "run_experiment",
    "sample_mixture",
]

EXAMPLE = Example(
    name="mixture-uniform",
    title="ABCDP on a mixture of five uniforms: private posterior draws of the weights",
    paper="Park, Vinaroz & Jitkrittum (2021), Section 6.1",
    seconds=120,
    module=__name__,
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
