r"""Tuberculosis outbreaks as a birth-death process, released by ABCDP (Park et al. 2021, 6.3).

The third ABCDP example, after Lintusaari et al. (2019): a continuous-time
Markov jump process (time in years) of active tuberculosis cases, each in
the *cluster* of its pathogen strain.

* **Burden** ``beta``: a new strain appears, a cluster of one case, which
  complies with therapy with probability ``p_c = 0.95``.
* **Transmission** at rate ``alpha_c n_c`` from the compliant cases and
  ``alpha_nc n_nc`` from the non-compliant ones: the new host joins its
  source's cluster, with compliance drawn afresh (``p_c``).
* **Removal** (recovery or death) at rates ``delta_c n_c`` and
  ``delta_nc n_nc``, observed with probability ``p_obs = 0.80`` once past the
  warm-up.

The parameters are ``theta = (R1, t1, R2, beta)``, index 1 non-compliant and
2 compliant: ``delta_2 = 5.95`` is fixed, ``alpha_2 = R2 delta_2``,
``delta_1 = t1 / |R1 - 1|`` and ``alpha_1 = t1 R1 / (R1 - 1)``. The process
starts empty and runs year by year until both case counts have reached their
deterministic equilibrium means (:func:`equilibrium`) or for 150 years;
with ``y`` those years, the warm-up ends at ``t_warm = max(2y, 15)`` and the
removals are observed over ``t_obs = 2`` years. A run is summarised by the
eight statistics :data:`STATISTICS` (:func:`summary_statistics`).

Priors (:func:`prior`): ``R1 ~ U(1.01, 20)``, ``t1 ~ U(0.01, 30)``,
``R2 | R1 ~ U(0.01 B, B)`` with ``B = (1 - 0.05 R1) / 0.95``,
``beta ~ N(200, sd)``, jointly truncated to ``0 < p_obs S < 350`` expected
observations a year and ``alpha_1 < 40``. The two public codes disagree on
``sd``: Lintusaari et al.'s uses 30, the ABCDP code ``sqrt(30)``; the default
here is 30 (``beta_sd`` changes it).

The data of Lintusaari et al. are the San Francisco clusters of 1991-92
(Small et al. 1994; :data:`SF_CLUSTER_SIZES`, :data:`SF_LARGEST_MONTHS`).

ABCDP record setup
------------------
The confidential data are ``n`` independent outbreak records (``n = 100``
and 1000), simulated here at :data:`TRUTH`, each kept as its eight
statistics. A public parameter draw simulates ``n`` pseudo-records, pairs
them with the confidential ones by index and averages the weighted distance
clipped at ``C = 200`` (:func:`distance`), so that replacing one
confidential record moves the average by at most the sensitivity ``C / n``.
The paper's settings: ``c = 10``, ``T = 1000`` prior draws,
``epsilon_abc = 150``, ``epsilon_total = 1``, with and without threshold
resampling; the error is the mean absolute error of the mean of the
accepted draws (:func:`error_table`). That is up to ``T n = 10^6``
simulator runs for ``n = 1000``, which :func:`public_draws` spreads over any
executor in chunks, keeping only the parameters and their distances.

``dpinfer run tuberculosis`` runs :func:`run`: one ABCDP posterior next to
the same rejection ABC without privacy noise and the truth, and the error
table over repetitions of the privacy noise. By default a REDUCED setting
(``n = 100`` records, ``T = 300`` proposals: 30 000 simulator runs); with
``full=True`` the paper's (``n`` = 100 and 1000, ``T = 1000``: 1.1 million
runs, about 8 minutes of one core). The public seed draws the confidential
records and the proposals; the privacy noise always comes from OS entropy.

References
----------
.. [1] Park, M., Vinaroz, M. and Jitkrittum, W. (2021). ABCDP: Approximate
   Bayesian computation with differential privacy. Entropy 23(8), 961.
.. [2] Lintusaari, J., Blomstedt, P., Rose, B., Sivula, T., Gutmann, M. U.,
   Kaski, S. and Corander, J. (2019). Resolving outbreak dynamics using
   approximate Bayesian computation for stochastic birth-death models.
   Wellcome Open Research 4:14.
.. [3] Small, P. M. et al. (1994). The epidemiology of tuberculosis in San
   Francisco. New England Journal of Medicine 330(24), 1703-1709.

Examples
--------
>>> import numpy as np
>>> from dpinfer.models import tuberculosis as tb
>>> tb.sf_statistics()[:3]
array([473., 326.,  30.])
>>> stats = tb.simulate(tb.TRUTH, rng=1)
>>> stats.shape
(8,)
"""

from __future__ import annotations

from dpinfer import _validate
from dpinfer._rng import RNGLike

from ._example import Example, Option, between, integer, yes_no
from ._report import Report, Result, draw_rows, idata_draws, value_rows
from ._tuberculosis_abcdp import (
    CLIP,
    EPSILON_ABC,
    EPSILON_TOTAL,
    N_PROPOSALS,
    N_RECORDS,
    RELATIVE,
    TRUTH,
    WEIGHTS,
    C,
    confidential_records,
    distance,
    model,
    prior,
    public_draws,
)
from ._tuberculosis_errors import (
    PAPER_ERRORS,
    QUANTILES,
    SETTINGS,
    _diagnostics,
    _error_runs,
    _notes,
    error_table,
    single_run_errors,
    summarise_errors,
)
from ._tuberculosis_prior import (
    ALPHA1_BOUND,
    BETA_MEAN,
    BETA_SD,
    BETA_SD_ABCDP_CODE,
    MEAN_OBS_BOUNDS,
    P_COMPLIANCE,
    P_OBSERVED,
    PARAMETERS,
    R1_BOUNDS,
    R2_FRACTION_BOUNDS,
    T1_BOUNDS,
    JointPrior,
)
from ._tuberculosis_simulator import (
    DELTA_2,
    MAX_CASES,
    MAX_WARMUP_YEARS,
    MIN_WARMUP,
    SF_CLUSTER_SIZES,
    SF_LARGEST_MONTHS,
    STATISTICS,
    T_OBS,
    Outbreak,
    equilibrium,
    rates,
    sf_statistics,
    simulate,
    simulate_outbreak,
    summary_statistics,
)

__all__ = [
    "ALPHA1_BOUND",
    "BETA_MEAN",
    "BETA_SD",
    "BETA_SD_ABCDP_CODE",
    "C",
    "CLIP",
    "DELTA_2",
    "EPSILON_ABC",
    "EPSILON_TOTAL",
    "JointPrior",
    "MAX_CASES",
    "MAX_WARMUP_YEARS",
    "MEAN_OBS_BOUNDS",
    "MIN_WARMUP",
    "N_PROPOSALS",
    "N_RECORDS",
    "Outbreak",
    "PAPER_ERRORS",
    "PARAMETERS",
    "P_COMPLIANCE",
    "QUANTILES",
    "P_OBSERVED",
    "R1_BOUNDS",
    "R2_FRACTION_BOUNDS",
    "REDUCED_PROPOSALS",
    "RELATIVE",
    "SETTINGS",
    "SF_CLUSTER_SIZES",
    "SF_LARGEST_MONTHS",
    "STATISTICS",
    "T1_BOUNDS",
    "TRUTH",
    "T_OBS",
    "WEIGHTS",
    "confidential_records",
    "distance",
    "equilibrium",
    "error_table",
    "model",
    "prior",
    "public_draws",
    "rates",
    "run",
    "sf_statistics",
    "simulate",
    "simulate_outbreak",
    "single_run_errors",
    "summarise_errors",
    "summary_statistics",
]


#: Proposals of the reduced default setting of :func:`run` (30 000 simulator runs at n = 100).
REDUCED_PROPOSALS = 300
#: The most simulator runs (public proposals times confidential records) a run may need:
#: the paper's full setting, T = 1000 with n = 100 and 1000.
MAX_SIMULATOR_RUNS = N_PROPOSALS * sum(N_RECORDS)

EXAMPLE = Example(
    name="tuberculosis",
    title="ABCDP on tuberculosis outbreak records: private posterior of a birth-death model",
    paper="Park, Vinaroz & Jitkrittum (2021), Section 6.3",
    seconds=17,
    module=__name__,
    options=(
        Option(
            "records",
            None,
            "confidential outbreak records n (default: 100; with --full yes, 100 and 1000)",
            integer(1, 1000),
        ),
        Option(
            "proposals",
            None,
            f"public prior draws T (default: {REDUCED_PROPOSALS}, REDUCED; with --full yes, "
            f"the paper's {N_PROPOSALS})",
            integer(100, 10_000),
        ),
        Option(
            "epsilon_total", EPSILON_TOTAL, "privacy budget of each ABCDP run", between(0.01, 1000)
        ),
        Option(
            "epsilon_abc",
            EPSILON_ABC,
            f"ABC threshold on the clipped distance (clipped at {CLIP:g})",
            between(
                1,
                CLIP,
                hint=f"the distance is clipped at {CLIP:g}, so a larger threshold "
                "accepts every proposal",
            ),
        ),
        Option("c", C, "accepted draws, after which a run halts", integer(1, 10**4)),
        Option(
            "resample",
            False,
            "show the run with threshold resampling (the error table has both modes)",
            yes_no,
        ),
        Option(
            "noise_repetitions", 20, "ABCDP runs per mode for the error table", integer(1, 1000)
        ),
        Option(
            "full",
            False,
            "the paper's setting: n = 100 and 1000, T = 1000 (1.1 million simulator runs, "
            "about 8 min)",
            yes_no,
        ),
    ),
    smallest={"records": 10, "proposals": 100, "noise_repetitions": 2},
)


# --- the example --------------------------------------------------------------------


def run(
    *,
    records: int | None = None,
    proposals: int | None = None,
    epsilon_total: float = EPSILON_TOTAL,
    epsilon_abc: float = EPSILON_ABC,
    c: int = C,
    resample: bool = False,
    noise_repetitions: int = 20,
    full: bool = False,
    rng: RNGLike = None,
    progressbar: bool = True,
    verbose: bool = False,
) -> Result:
    """Run ABCDP on ``n`` confidential outbreak records, next to the same ABC without noise.

    The confidential records (simulated at :data:`TRUTH`) and the public
    draws with their distances come from ``rng``; on those distances ABCDP
    runs ``noise_repetitions`` times in both resampling modes (the error
    table of Section 6.3) and once without privacy noise. The privacy noise
    comes from OS entropy, as a data owner's release must, so only the
    non-private rows are reproducible from ``rng``.

    Parameters
    ----------
    records : int, optional
        ``n``; default 100, or the paper's 100 and 1000 with ``full``.
    proposals : int, optional
        ``T``; default 300 (a REDUCED setting), or the paper's 1000 with ``full``.
    epsilon_total, epsilon_abc, c : float, float, int
        The ABCDP setting (paper: 1, 150, 10).
    resample : bool, default False
        Which mode's first run is the private posterior (the error table has both).
    noise_repetitions : int, default 20
        ABCDP runs per mode on the same distances.
    full : bool, default False
        The paper's setting: 1.1 million simulator runs.
    rng : seed, optional
        Public randomness.
    progressbar : bool, default True
        Show the progress of the public draws.
    verbose : bool
        Unused; part of every example's ``run``.

    Returns
    -------
    dpinfer.models._report.Result
        ``posterior`` is the first private run at the first ``n``; ``extra``
        holds the other runs shown (``private_n<n>``, ``non_private_n<n>``)
        and the error table (``errors``, as :func:`error_table` returns it).

    Examples
    --------
    >>> from dpinfer.models import tuberculosis as tb
    >>> result = tb.run(records=10, proposals=30, noise_repetitions=2, rng=1,
    ...                 progressbar=False)
    >>> sorted({row.role for row in result.report.rows})
    ['non-private', 'private', 'truth']
    >>> result.posterior.posterior.attrs["privacy_noise"]
    'os-entropy'
    """
    n_values, proposals = _setting(records, proposals, full)
    settings = {"c": c, "epsilon_abc": epsilon_abc, "epsilon_total": epsilon_total}
    repeat = {"noise_repetitions": noise_repetitions, "progressbar": progressbar}
    # one set of public draws; privacy noise from OS entropy (privacy_rng=None)
    table, posteriors = _error_runs(n_values, n_proposals=proposals, rng=rng, **repeat, **settings)
    mode = SETTINGS[1] if resample else SETTINGS[0]
    rows, shown = [], {}
    for n in n_values:
        suffix = f", n = {n}" if len(n_values) > 1 else ""
        for key, label, role, setting in (
            ("private", f"ABCDP, {mode}{suffix}", "private", mode),
            ("non_private", f"rejection ABC, no noise{suffix}", "non-private", "non-private"),
        ):
            shown[f"{key}_n{n}"] = (label, posteriors[(n, setting)])
            rows += draw_rows(label, role, idata_draws(posteriors[(n, setting)], PARAMETERS))
    rows += value_rows("truth", "truth", TRUTH)
    report = Report(
        "Tuberculosis outbreak records released by ABCDP (Park et al. 2021, Section 6.3)",
        _setting_lines(n_values, proposals, **settings),
        rows,
        _notes(table, shown.values(), mode, epsilon_total, noise_repetitions),
        _diagnostics(table),
    )
    runs = {name: idata for name, (_, idata) in shown.items()}
    first = runs.pop(f"private_n{n_values[0]}")
    return Result(report, first, extra={**runs, "errors": table})


def check_options(*, records, proposals, full, **_) -> None:
    """Refuse, before anything runs, more simulator runs than the paper's full setting."""
    _setting(records, proposals, full)


def _setting(records, proposals, full) -> tuple[tuple[int, ...], int]:
    """Return the ``n`` values and ``T``: the reduced setting, the paper's, or as given.

    Refuses, before anything runs, a setting that needs more simulator runs
    (``T`` times the records) than :data:`MAX_SIMULATOR_RUNS`.
    """
    full = yes_no("full", full)
    n_values = (N_RECORDS if full else (N_RECORDS[0],)) if records is None else (records,)
    if proposals is None:
        proposals = N_PROPOSALS if full else REDUCED_PROPOSALS
    proposals = _validate.positive_int("proposals", proposals)
    runs = proposals * sum(n_values)
    if runs > MAX_SIMULATOR_RUNS:
        raise ValueError(
            f"proposals times records is {proposals:,} x {sum(n_values):,} = {runs:,} simulator "
            f"runs, more than the paper's full setting ({MAX_SIMULATOR_RUNS:,}, about 8 min): "
            "lower --proposals or --records"
        )
    return n_values, proposals


def _setting_lines(n_values, proposals, c, epsilon_abc, epsilon_total) -> list[str]:
    ours = (proposals, c, epsilon_abc, epsilon_total)
    if ours == (N_PROPOSALS, C, EPSILON_ABC, EPSILON_TOTAL) and set(n_values) <= set(N_RECORDS):
        scope = "the paper's setting"
    else:
        kind = "a REDUCED setting" if proposals < N_PROPOSALS else "not the paper's setting"
        scope = f"{kind} (--full yes for the paper's: n = 100 and 1000, T = 1000)"
    sf = ", ".join(f"{v:.4g}" for v in sf_statistics())
    return [
        "birth-death outbreaks (Lintusaari et al. 2019), theta = (R1, t1, R2, beta); "
        f"each record is 8 statistics; distance clipped at C = {CLIP:g} per record pair, "
        "averaged",
        f"{scope}: n = {' and '.join(map(str, n_values))} confidential records at the truth, "
        f"T = {proposals} public proposals; c = {c}, epsilon_abc = {epsilon_abc:g}, "
        f"epsilon_total = {epsilon_total:g}",
        f"San Francisco statistics (Small et al. 1994): {sf}",
    ]
