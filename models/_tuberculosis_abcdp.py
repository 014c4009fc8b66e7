"""The ABCDP record setup of the tuberculosis example and its error table (Park et al. 2021, 6.3).

Imported by :mod:`dpinfer.models.tuberculosis`, which documents the model and the setup.
"""

from __future__ import annotations

import math
import time

import numpy as np

import dpinfer as dp
from dpinfer import _validate
from dpinfer._rng import (
    RNGLike,
    as_generator,
    as_seed_sequence,
    child_sequence,
    chunk_generator,
)
from dpinfer.distances import PairedClippedL2, PrecomputedDistances
from dpinfer.samplers._public import public_distances

from ._tuberculosis_prior import BETA_SD, PARAMETERS, JointPrior
from ._tuberculosis_simulator import STATISTICS, _simulate

#: The parameters that generated the synthetic confidential records (Park et al.'s truth,
#: from Lintusaari et al.'s estimates on the San Francisco data).
TRUTH = {"R1": 5.88, "t1": 6.74, "R2": 0.09, "beta": 192.0}

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


# --- the model and the records -----------------------------------------------------


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

    Parameters
    ----------
    rng : seed, optional
        Public randomness: the confidential records and the public draws.
    privacy_rng : seed, optional
        The privacy noise; None (default) gives every ABCDP run fresh OS
        entropy. A seed makes the table reproducible, for studies only.

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
    table, _ = _error_runs(
        n_records,
        n_proposals=n_proposals,
        c=c,
        epsilon_abc=epsilon_abc,
        epsilon_total=epsilon_total,
        public_repetitions=public_repetitions,
        noise_repetitions=noise_repetitions,
        rng=rng,
        privacy_rng=privacy_rng,
        executor=executor,
        progressbar=progressbar,
        beta_sd=beta_sd,
    )
    return table


def _error_runs(
    n_records,
    *,
    n_proposals,
    c,
    epsilon_abc,
    epsilon_total,
    noise_repetitions,
    rng,
    progressbar,
    public_repetitions=1,
    privacy_rng=None,
    executor=None,
    beta_sd=BETA_SD,
):
    """:func:`error_table`, and the ABCDP outputs of the first noise repetition.

    The outputs are ``{(n, setting): InferenceData}`` of the first public repetition.
    """
    import xarray as xr

    n_values = tuple(_validate.positive_int("n_records", n) for n in np.atleast_1d(n_records))
    public_repetitions = _validate.positive_int("public_repetitions", public_repetitions)
    noise_repetitions = _validate.positive_int("noise_repetitions", noise_repetitions)
    c = _validate.positive_int("c", c)
    root = as_seed_sequence(rng)
    noise = None if privacy_rng is None else as_seed_sequence(privacy_rng)
    abcdp_settings = dict(c=c, epsilon_abc=epsilon_abc, epsilon_total=epsilon_total)
    results, seconds = [], np.zeros((len(n_values), public_repetitions, 2))
    posteriors = {}
    for i, n in enumerate(n_values):
        for p in range(public_repetitions):
            k = i * public_repetitions + p
            seq = child_sequence(root, k)
            observed = confidential_records(n, rng=chunk_generator(seq, 0))
            start = time.perf_counter()
            params, dist = public_draws(
                observed,
                n_proposals=n_proposals,
                rng=child_sequence(seq, 1),
                executor=executor,
                progressbar=progressbar,
                beta_sd=beta_sd,
            )
            seconds[i, p, 0] = time.perf_counter() - start
            noise_root = None if noise is None else child_sequence(noise, k)
            *arrays, first = _runs_on_draws(
                observed, params, dist, noise_root, noise_repetitions, **abcdp_settings
            )
            results.append(arrays)
            if p == 0:
                posteriors.update({(n, setting): out for setting, out in first.items()})
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
    return table.transpose("n_records", "setting", "public", "noise", ...), posteriors


def _runs_on_draws(observed, params, dist, noise_root, repetitions, *, c, **settings):
    """ABCDP in every setting on one set of distances; the non-private run once (no noise).

    Returns posterior means ``(setting, noise, parameter)``, accepted and answered counts
    ``(setting, noise)``, the accepted draws of the first repetition ``(setting, c,
    parameter)`` (NaN-padded), and ``{setting: InferenceData}`` of the first repetition.
    Without a ``noise_root`` every private run draws its noise from OS entropy.
    """
    shape = (len(SETTINGS), repetitions)
    means = np.full((*shape, len(PARAMETERS)), np.nan)
    accepted, queries = np.zeros(shape, dtype=np.int64), np.zeros(shape, dtype=np.int64)
    draws = np.full((len(SETTINGS), c, len(PARAMETERS)), np.nan)
    first = {}
    for s, setting in enumerate(SETTINGS):
        private = setting != "non-private"
        for r in range(repetitions if private else 1):
            stream = s * repetitions + r
            out = dp.abcdp(
                observed,
                dist,
                params=params,
                pseudo_data=np.arange(dist.values.size),
                epsilon_total=settings["epsilon_total"] if private else math.inf,
                epsilon_abc=settings["epsilon_abc"],
                c=c,
                resample=setting == "with resampling",
                privacy_rng=None if noise_root is None else chunk_generator(noise_root, stream),
                progressbar=False,
            )
            theta = np.column_stack([np.asarray(out.posterior[k]).ravel() for k in PARAMETERS])
            cols = slice(r, r + 1) if private else slice(None)  # no noise: every column alike
            means[s, cols] = theta.mean(axis=0) if len(theta) else np.nan
            accepted[s, cols] = len(theta)
            queries[s, cols] = out.posterior.attrs["n_queries"]
            if r == 0:
                draws[s, : len(theta)] = theta
                first[setting] = out
    return means, accepted, queries, draws, first


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
                f"{int(n):>6} {setting:<20} {finite_mean(mae):7.3f} {se_text} {paper_text}"
                + "".join(f"{float(v):8.3f}" for v in per)
                + f" {acc:9.1f}"
            )
    if n_public == 1:
        lines.append("(one set of public draws: the s.e. covers the privacy noise only)")
    return "\n".join(lines)


def _check_records(observed) -> np.ndarray:
    obs = np.asarray(observed, dtype=float)
    if obs.ndim != 2 or obs.shape[1] != len(STATISTICS):
        raise ValueError(f"observed must be (n, {len(STATISTICS)}) records, got shape {obs.shape}")
    return obs


def finite_mean(values) -> float:
    """Mean of the finite values; NaN without a warning when a run accepted nothing."""
    values = np.asarray(values, dtype=float)
    finite = values[np.isfinite(values)]
    return float(finite.mean()) if finite.size else math.nan
