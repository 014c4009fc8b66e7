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

``dpinfer run`` runs :func:`run_example`: a reduced setting by default
(``n = 100`` records, ``T = 300`` proposals: 30 000 simulator runs, about
15 s of one core), the paper's with ``full=True`` (1.1 million runs, about
8 minutes of CPU: 4 minutes on two idle cores, 20-35 minutes measured on
two heavily shared ones).

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

import math
import time
from pathlib import Path

import numpy as np

import dpinfer as dp
from dpinfer import _validate
from dpinfer._rng import RNGLike, as_generator, as_seed_sequence, chunk_generator
from dpinfer.distances import PairedClippedL2, PrecomputedDistances
from dpinfer.samplers._public import public_distances

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
    STATISTICS,
    T_OBS,
    Outbreak,
    _simulate,
    equilibrium,
    rates,
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
    "P_OBSERVED",
    "R1_BOUNDS",
    "R2_FRACTION_BOUNDS",
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
    "run_example",
    "sf_statistics",
    "simulate",
    "simulate_outbreak",
    "summarise_errors",
    "summary_statistics",
]

#: The parameters that generated the synthetic confidential records (Park et al.'s truth,
#: from Lintusaari et al.'s estimates on the San Francisco data).
TRUTH = {"R1": 5.88, "t1": 6.74, "R2": 0.09, "beta": 192.0}

#: San Francisco 1991-92 (Small et al. 1994): cluster sizes, 473 cases in 326 clusters.
SF_CLUSTER_SIZES = np.repeat(
    [30, 23, 15, 10, 8, 5, 4, 3, 2, 1], [1, 1, 1, 1, 1, 2, 4, 13, 20, 282]
).astype(np.int64)
#: The observation months (0-23) of the 30 cases of the largest cluster.
SF_LARGEST_MONTHS = np.array(
    [0, 0, 1, 2, 3, 3, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 7, 8, 8, 10, 11, 12, 14, 16, 16]
    + [18, 20, 21, 23],
    dtype=np.int64,
)

#: Weights of the distance; the two ratios are compared by relative error.
WEIGHTS = np.array([1.0, 1.0, 2.0, 10.0, 100.0, 100.0, 10.0, 10.0])
RELATIVE = (4, 5)

#: The ABCDP settings of Section 6.3.
CLIP = 200.0
C = 10
N_PROPOSALS = 1000
EPSILON_ABC = 150.0
EPSILON_TOTAL = 1.0
N_RECORDS = (100, 1000)
#: Park et al.'s mean absolute errors (Section 6.3): (n, resample) -> error.
PAPER_ERRORS = {(100, True): 4.71, (1000, True): 2.20, (100, False): 4.51, (1000, False): 2.10}

REFERENCE = (
    "Park, Vinaroz and Jitkrittum (2021). ABCDP: Approximate Bayesian computation with "
    "differential privacy. Entropy 23(8), 961, Section 6.3; Lintusaari et al. (2019), "
    "Wellcome Open Research 4:14."
)

_RUNS_PER_CHUNK = 20_000  # simulator runs per chunk of public draws (about 8 s of one core)


# --- the model -----------------------------------------------------------------------


def prior(*, beta_sd: float = BETA_SD) -> dp.Prior:
    """Return the jointly truncated prior (:class:`JointPrior`) as a :class:`dpinfer.Prior`.

    Examples
    --------
    >>> import numpy as np
    >>> draws = prior().sample(5, np.random.default_rng(0))
    >>> sorted(draws), draws["beta"].shape
    (['R1', 'R2', 'beta', 't1'], (5,))
    """
    joint = JointPrior(beta_sd=beta_sd)
    return dp.Prior(joint.sample, logpdf=joint.logpdf)


def sf_statistics() -> np.ndarray:
    """Return the statistics of the San Francisco data.

    They are 473, 326, 30, 20/3, 282/473, 20/473, 24 and 17.

    Examples
    --------
    >>> sf_statistics().round(4).tolist()
    [473.0, 326.0, 30.0, 6.6667, 0.5962, 0.0423, 24.0, 17.0]
    """
    return summary_statistics(SF_CLUSTER_SIZES, SF_LARGEST_MONTHS)


def distance(*, clip: float = CLIP) -> PairedClippedL2:
    """Lintusaari et al.'s weighted distance per record pair, clipped at ``C``, averaged.

    Weights :data:`WEIGHTS` on the differences of the statistics, relative
    errors for the two ratios; sensitivity ``C / n`` for ``n`` records.

    Examples
    --------
    >>> distance().sensitivity(100)
    2.0
    """
    return PairedClippedL2(clip, weights=WEIGHTS, relative=RELATIVE)


def model(*, n_records: int = 1, beta_sd: float = BETA_SD) -> dp.Model:
    """Return the prior and the simulator of pseudo-datasets ``(batch, n_records, 8)``.

    Examples
    --------
    >>> import numpy as np
    >>> m = model(n_records=3)
    >>> rng = np.random.default_rng(0)
    >>> m.simulate(m.prior.sample(2, rng), rng).shape
    (2, 3, 8)
    """
    n_records = _validate.positive_int("n_records", n_records)
    return dp.Model(prior(beta_sd=beta_sd), simulate=_RecordSimulator(n_records))


class _RecordSimulator:
    """``n`` independent outbreak records per parameter set (picklable for process pools)."""

    def __init__(self, n_records: int):
        self.n_records = n_records
        self.__name__ = f"tuberculosis.records(n={n_records})"

    def __call__(self, params, rng):
        repeated = {k: np.repeat(np.asarray(params[k], float), self.n_records) for k in PARAMETERS}
        stats = _simulate(repeated, rng)
        return stats.reshape(-1, self.n_records, len(STATISTICS))


def confidential_records(n_records: int, *, rng: RNGLike = None, params=None) -> np.ndarray:
    """Simulate the confidential data: ``n_records`` outbreak records ``(n, 8)`` at the truth.

    Examples
    --------
    >>> confidential_records(4, rng=0).shape
    (4, 8)
    """
    n_records = _validate.positive_int("n_records", n_records)
    theta = TRUTH if params is None else params
    return _simulate(
        {k: np.full(n_records, theta[k], dtype=float) for k in PARAMETERS}, as_generator(rng)
    )


# --- the ABCDP record setup ------------------------------------------------------------


def public_draws(
    observed,
    *,
    n_proposals: int = N_PROPOSALS,
    rng: RNGLike = None,
    executor=None,
    batch_size: int | None = None,
    progressbar: bool = True,
    beta_sd: float = BETA_SD,
) -> tuple[dict[str, np.ndarray], PrecomputedDistances]:
    """Public prior draws and their distances to the confidential records, in chunks.

    Each chunk draws parameters, simulates ``n`` pseudo-records per draw,
    reduces them to the clipped averaged distance and discards them, so
    memory holds one chunk's records at a time; chunks run on ``executor``
    (a process pool, a dask ``client.get_executor()``, or serially) and give
    the same draws whichever runs them.

    Parameters
    ----------
    observed : array_like
        The ``(n, 8)`` confidential records.
    n_proposals : int, default 1000
        ``T``.
    rng : seed, optional
        Public randomness of the draws and pseudo-records.
    executor : concurrent.futures.Executor, optional
    batch_size : int, optional
        Draws per chunk; default about 20 000 simulator runs per chunk.
    progressbar : bool, default True
    beta_sd : float, default 30

    Returns
    -------
    params : dict
        ``T`` public draws of each parameter.
    distances : dpinfer.distances.PrecomputedDistances
        Their distances, for :func:`dpinfer.abcdp` with
        ``pseudo_data=np.arange(T)``; sensitivity ``C / n``.
    """
    obs = _check_records(observed)
    size = max(1, _RUNS_PER_CHUNK // len(obs)) if batch_size is None else batch_size
    base = distance()
    draws = public_distances(
        obs,
        base,
        model=model(n_records=len(obs), beta_sd=beta_sd),
        n_proposals=n_proposals,
        rng=rng,
        batch_size=size,
        executor=executor,
        progressbar=progressbar,
    )
    return draws.params, PrecomputedDistances(base, obs, draws.distances)


SETTINGS = ("without resampling", "with resampling", "non-private")


def error_table(
    n_records=N_RECORDS,
    *,
    n_proposals: int = N_PROPOSALS,
    c: int = C,
    epsilon_abc: float = EPSILON_ABC,
    epsilon_total: float = EPSILON_TOTAL,
    public_repetitions: int = 1,
    noise_repetitions: int = 20,
    rng: RNGLike = None,
    privacy_rng: RNGLike = None,
    executor=None,
    progressbar: bool = True,
    beta_sd: float = BETA_SD,
):
    """Errors of ABCDP's posterior mean on the record setup, as in Section 6.3.

    For each ``n`` and each of ``public_repetitions`` sets of confidential
    records and public draws (:func:`public_draws`), ABCDP runs
    ``noise_repetitions`` times with fresh privacy noise in both resampling
    modes, on the same distances; the non-private run (``epsilon_total =
    inf``, the first ``c`` draws within ``epsilon_abc``) has no noise and is
    run once.

    Returns
    -------
    xarray.Dataset
        ``posterior_mean`` (n_records, setting, public, noise, parameter),
        ``abs_error`` against :data:`TRUTH`, ``n_accepted`` and ``n_queries``
        (n_records, setting, public, noise); settings :data:`SETTINGS`. A
        run that accepts nothing has a NaN mean and error.
        ``accepted_draws`` (n_records, setting, public, draw, parameter): the
        draws of the first noise repetition (NaN-padded to ``c``).
        ``seconds`` (n_records, public, stage): wall time of the public draws
        and of the ABCDP runs on them.
    """
    import xarray as xr

    n_values = tuple(_validate.positive_int("n_records", n) for n in np.atleast_1d(n_records))
    public_repetitions = _validate.positive_int("public_repetitions", public_repetitions)
    noise_repetitions = _validate.positive_int("noise_repetitions", noise_repetitions)
    c = _validate.positive_int("c", c)
    root, noise = as_seed_sequence(rng), as_seed_sequence(privacy_rng)
    abcdp_settings = dict(c=c, epsilon_abc=epsilon_abc, epsilon_total=epsilon_total)
    results, seconds = [], np.zeros((len(n_values), public_repetitions, 2))
    for i, n in enumerate(n_values):
        for p in range(public_repetitions):
            k = i * public_repetitions + p
            seq = _child(root, k)
            observed = confidential_records(n, rng=chunk_generator(seq, 0))
            start = time.perf_counter()
            params, dist = public_draws(
                observed,
                n_proposals=n_proposals,
                rng=_child(seq, 1),
                executor=executor,
                progressbar=progressbar,
                beta_sd=beta_sd,
            )
            seconds[i, p, 0] = time.perf_counter() - start
            results.append(
                _runs_on_draws(
                    observed, params, dist, _child(noise, k), noise_repetitions, **abcdp_settings
                )
            )
            seconds[i, p, 1] = time.perf_counter() - start - seconds[i, p, 0]
    means, accepted, queries, draws = (
        np.stack([r[j] for r in results]).reshape(
            len(n_values), public_repetitions, *results[0][j].shape
        )
        for j in range(4)
    )
    dims = ("n_records", "public", "setting", "noise")
    truth = np.array([TRUTH[k] for k in PARAMETERS])
    table = xr.Dataset(
        {
            "posterior_mean": ((*dims, "parameter"), means),
            "abs_error": ((*dims, "parameter"), np.abs(means - truth)),
            "n_accepted": (dims, accepted),
            "n_queries": (dims, queries),
            "accepted_draws": (("n_records", "public", "setting", "draw", "parameter"), draws),
            "seconds": (("n_records", "public", "stage"), seconds),
        },
        coords={
            "n_records": list(n_values),
            "setting": list(SETTINGS),
            "parameter": list(PARAMETERS),
            "stage": ["public draws", "abcdp runs"],
        },
        attrs={**abcdp_settings, "n_proposals": n_proposals, "clip": CLIP, "beta_sd": beta_sd},
    )
    table.attrs["reference"] = REFERENCE
    return table.transpose("n_records", "setting", "public", "noise", ...)


def _runs_on_draws(observed, params, dist, noise_root, repetitions, *, c, **settings):
    """ABCDP in every setting on one set of distances; the non-private run once (no noise).

    Returns posterior means ``(setting, noise, parameter)``, accepted and answered counts
    ``(setting, noise)``, and the accepted draws of the first repetition ``(setting, c,
    parameter)`` (NaN-padded).
    """
    shape = (len(SETTINGS), repetitions)
    means = np.full((*shape, len(PARAMETERS)), np.nan)
    accepted, queries = np.zeros(shape, dtype=np.int64), np.zeros(shape, dtype=np.int64)
    draws = np.full((len(SETTINGS), c, len(PARAMETERS)), np.nan)
    for s, setting in enumerate(SETTINGS):
        private = setting != "non-private"
        for r in range(repetitions if private else 1):
            out = dp.abcdp(
                observed,
                dist,
                params=params,
                pseudo_data=np.arange(dist.values.size),
                epsilon_total=settings["epsilon_total"] if private else math.inf,
                epsilon_abc=settings["epsilon_abc"],
                c=c,
                resample=setting == "with resampling",
                privacy_rng=chunk_generator(noise_root, s * repetitions + r),
                progressbar=False,
            )
            theta = np.column_stack([np.asarray(out.posterior[k]).ravel() for k in PARAMETERS])
            cols = slice(r, r + 1) if private else slice(None)  # no noise: every column alike
            means[s, cols] = theta.mean(axis=0) if len(theta) else np.nan
            accepted[s, cols] = len(theta)
            queries[s, cols] = out.posterior.attrs["n_queries"]
            if r == 0:
                draws[s, : len(theta)] = theta
    return means, accepted, queries, draws


def summarise_errors(table) -> str:
    """Format the error table: mean absolute error (with its s.e.), overall and per parameter.

    With several public repetitions the standard error is that of the mean over them (each
    averaged over its noise repetitions); with one, it is over the privacy noise only, and
    the text says so.
    """
    n_public = table.sizes["public"]
    head = f"{'n':>6} {'setting':<20} {'MAE':>7} {'s.e.':>6} {'paper':>6}"
    head += "".join(f"{k:>8}" for k in PARAMETERS) + f" {'accepted':>9}"
    lines = [head]
    for n in table["n_records"].values:
        for setting in table["setting"].values:
            errors = table["abs_error"].sel(n_records=n, setting=setting)
            if setting == "non-private":
                errors = errors.isel(noise=[0])  # no noise: one run per set of public draws
            mae = errors.mean("parameter").values  # (public, noise)
            if n_public > 1:
                per_public = np.nanmean(mae, axis=1)
                se = np.std(per_public, ddof=1) / math.sqrt(n_public)
            elif mae.size > 1:
                se = np.nanstd(mae, ddof=1) / math.sqrt(np.sum(np.isfinite(mae)))
            else:
                se = math.nan
            paper = PAPER_ERRORS.get((int(n), setting == "with resampling"))
            paper_text = f"{paper:6.2f}" if paper and setting != "non-private" else "     -"
            se_text = f"{se:6.3f}" if math.isfinite(se) else "     -"
            per = errors.mean(("public", "noise")).values
            acc = table["n_accepted"].sel(n_records=n, setting=setting).values.mean()
            lines.append(
                f"{int(n):>6} {setting:<20} {np.nanmean(mae):7.3f} {se_text} {paper_text}"
                + "".join(f"{float(v):8.3f}" for v in per)
                + f" {acc:9.1f}"
            )
    if n_public == 1:
        lines.append("(one set of public draws: the s.e. covers the privacy noise only)")
    return "\n".join(lines)


def _child(root: np.random.SeedSequence, index: int) -> np.random.SeedSequence:
    return np.random.SeedSequence(root.entropy, spawn_key=(*root.spawn_key, index))


# --- the example --------------------------------------------------------------------


def run_example(
    out_dir,
    *,
    seed=None,
    progressbar: bool = True,
    full: bool = False,
    n_records=None,
    n_proposals: int | None = None,
    noise_repetitions: int = 20,
    executor=None,
) -> str:
    """Run the record setup of Section 6.3 and write its error table and figure.

    By default a reduced setting (``n = 100`` records, ``T = 300``
    proposals: 30 000 simulator runs, about 15 s of one core); ``full=True``
    runs the paper's (``n`` in {100, 1000}, ``T = 1000``: 1.1 million runs,
    about 8 minutes of CPU, so pass a process pool as ``executor``).
    Writes ``tuberculosis_errors.nc`` and ``tuberculosis.png`` to ``out_dir``.

    Parameters
    ----------
    out_dir : str or path
        Output folder (created if missing).
    seed : None, int, SeedSequence or Generator
        Seeds the public draws and (separately) the privacy noise.
    progressbar : bool, default True
    full : bool, default False
        The paper's setting instead of the reduced one.
    n_records, n_proposals : optional
        Override the setting's ``n`` values and ``T``.
    noise_repetitions : int, default 20
        ABCDP runs per setting on the same distances.
    executor : concurrent.futures.Executor, optional
        Where the simulation chunks run.

    Returns
    -------
    str
        The text summary: the San Francisco statistics and the error table
        next to the paper's errors.
    """
    n_values = (N_RECORDS if full else (100,)) if n_records is None else n_records
    n_proposals = (N_PROPOSALS if full else 300) if n_proposals is None else n_proposals
    root = as_seed_sequence(seed)
    table = error_table(
        n_values,
        n_proposals=n_proposals,
        noise_repetitions=noise_repetitions,
        rng=_child(root, 0),
        privacy_rng=_child(root, 1),
        executor=executor,
        progressbar=progressbar,
    )
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    table.to_netcdf(out / "tuberculosis_errors.nc")
    _figure(out / "tuberculosis.png", table)
    scope = "the paper's setting" if full else "a REDUCED setting (full=True for the paper's)"
    sf = ", ".join(f"{v:.4g}" for v in sf_statistics())
    lines = [
        "Tuberculosis outbreaks by ABCDP (Park et al. 2021, Section 6.3)",
        f"{scope}: n = {', '.join(str(n) for n in np.atleast_1d(n_values))} records, "
        f"T = {n_proposals}, c = {C}, epsilon_abc = {EPSILON_ABC:g}, "
        f"epsilon_total = {EPSILON_TOTAL:g}, clip C = {CLIP:g}",
        f"San Francisco statistics: {sf}",
        f"truth: {', '.join(f'{k} = {v:g}' for k, v in TRUTH.items())}",
        "",
        f"mean absolute error of the posterior mean ({noise_repetitions} noise repetitions):",
        summarise_errors(table),
    ]
    return "\n".join(lines)


def _figure(path, table):
    try:
        from matplotlib.figure import Figure
    except ImportError as err:  # pragma: no cover - matplotlib is a test/extra dependency
        raise ImportError("run_example needs matplotlib to draw its figure") from err

    fig = Figure(figsize=(9.0, 2.6 * table.sizes["n_records"]), dpi=80)
    axes = fig.subplots(table.sizes["n_records"], len(PARAMETERS), squeeze=False)
    for i, n in enumerate(table["n_records"].values):
        for j, name in enumerate(PARAMETERS):
            ax = axes[i, j]
            for setting in table["setting"].values:
                values = table["posterior_mean"].sel(n_records=n, setting=setting, parameter=name)
                values = values.values.ravel()
                ax.plot(
                    values,
                    np.full(values.size, list(SETTINGS).index(setting)),
                    "o",
                    ms=3,
                    alpha=0.6,
                )
            ax.axvline(TRUTH[name], color="k", lw=1)
            ax.set_yticks(range(len(SETTINGS)), SETTINGS if j == 0 else [""] * len(SETTINGS))
            ax.set_title(f"{name}, n = {int(n)}", fontsize=9)
    fig.suptitle("posterior means of ABCDP runs (black: truth)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path)


def _check_records(observed) -> np.ndarray:
    obs = np.asarray(observed, dtype=float)
    if obs.ndim != 2 or obs.shape[1] != len(STATISTICS):
        raise ValueError(f"observed must be (n, {len(STATISTICS)}) records, got shape {obs.shape}")
    return obs
