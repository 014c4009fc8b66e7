"""The command-line example ``dpinfer run tuberculosis`` and its report."""

from __future__ import annotations

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
    value_rows,
    yes_no,
)
from dpinfer.random import RNGLike

from ._abcdp import (
    CLIP,
    EPSILON_ABC,
    EPSILON_TOTAL,
    N_PROPOSALS,
    N_RECORDS,
    TRUTH,
    C,
)
from ._errors import (
    SETTINGS,
    _diagnostics,
    _error_runs,
    _notes,
)
from ._prior import (
    PARAMETERS,
)
from ._simulator import (
    sf_statistics,
)

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
    module=__package__,
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
    dpinfer.example.Result
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
    proposals = validate.positive_int("proposals", proposals)
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
