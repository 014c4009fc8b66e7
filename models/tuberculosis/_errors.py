"""The error table of the tuberculosis example's ABCDP runs (Park et al. 2021, 6.3).

Part of :mod:`dpinfer.models.tuberculosis`, which documents the model and the setup.
"""

from __future__ import annotations

import math
import textwrap
import time

import numpy as np

import dpinfer as dp
from dpinfer import validate
from dpinfer.random import RNGLike, as_seed_sequence, child_sequence, chunk_generator
from dpinfer.samplers import check_privacy_rng

from ._abcdp import (
    CLIP,
    EPSILON_ABC,
    EPSILON_TOTAL,
    N_PROPOSALS,
    N_RECORDS,
    REFERENCE,
    TRUTH,
    C,
    confidential_records,
    public_draws,
)
from ._prior import BETA_SD, PARAMETERS

#: Park et al.'s mean absolute errors (Section 6.3): (n, resample) -> error. Each is ONE
#: run of the authors' code (one set of records, of public draws and of privacy noise),
#: its numpy randomness unseeded (their script seeds Python's ``random`` only): compare
#: them with the spread of single runs, not with the standard error of a mean.
PAPER_ERRORS = {(100, True): 4.71, (1000, True): 2.20, (100, False): 4.51, (1000, False): 2.10}

#: The quantiles of the single runs' errors that the summary shows.
QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)

PAPER_NOTE = (
    "paper: Park et al. (2021), Section 6.3: 4.51 / 4.71 (n = 100) and 2.10 / 2.20 (n = 1000) "
    "without / with resampling, each ONE run of the authors' code with unseeded numpy "
    "randomness (one set of records, public draws and privacy noise); compare them with the "
    "single runs' quantiles ('rank': the share of these runs with an error at most the "
    "paper's), not with the s.e. of the mean"
)

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
        entropy. A seed makes the table reproducible, for studies only; one
        equal to or derived from ``rng`` is refused, as in :func:`dpinfer.abcdp`.

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

    n_values = tuple(validate.positive_int("n_records", n) for n in np.atleast_1d(n_records))
    public_repetitions = validate.positive_int("public_repetitions", public_repetitions)
    noise_repetitions = validate.positive_int("noise_repetitions", noise_repetitions)
    c = validate.positive_int("c", c)
    check_privacy_rng(privacy_rng, public=[rng])
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
    """Format the error table: the errors of single runs, and their mean, beside the paper's.

    A single run is one ABCDP run on one set of confidential records and public draws
    with one draw of privacy noise, as each of the paper's numbers is: every (public set,
    noise draw) pair is one (the non-private run, without noise, one per public set).
    The first table gives, per ``n`` and setting, the number of runs, the mean of their
    mean absolute errors with its standard error (over the public sets' means; with one
    public set, over the noise only, and the text says so), the standard deviation and
    the :data:`QUANTILES` of the single runs' errors, the paper's number and its rank
    among these runs. The second gives the error per parameter and the accepted draws.
    """
    n_public = table.sizes["public"]
    quantiles = "".join(f"{f'{100 * q:g}%':>7}" for q in QUANTILES)
    head = f"{'n':>6} {'setting':<20} {'runs':>5} {'mean':>6} {'s.e.':>6} {'sd':>6}{quantiles}"
    lines = [head + f" {'paper':>6} {'rank':>5}"]
    per_parameter = [
        f"{'n':>6} {'setting':<20}" + "".join(f"{k:>8}" for k in PARAMETERS) + f" {'accepted':>9}"
    ]
    for n in table["n_records"].values:
        for setting in table["setting"].values:
            runs, errors = single_run_errors(table, int(n), str(setting))
            lines.append(f"{int(n):>6} {setting:<20} " + _spread_row(runs, n_public))
            lines[-1] += _paper_columns(runs, PAPER_ERRORS.get(_paper_key(int(n), setting)))
            acc = table["n_accepted"].sel(n_records=n, setting=setting).values.mean()
            per = errors.mean(("public", "noise")).values
            per_parameter.append(
                f"{int(n):>6} {setting:<20}"
                + "".join(f"{float(v):8.3f}" for v in per)
                + f" {acc:9.1f}"
            )
    runs_note = (
        "runs: one per set of public draws and privacy noise draw "
        f"({n_public} public set(s) x {table.sizes['noise']} noise draw(s); non-private: one "
        "per public set); mean and s.e.: "
        + ("over the public sets' means" if n_public > 1 else "over the privacy noise only")
    )
    wrap = textwrap.TextWrapper(99, break_on_hyphens=False).wrap
    lines += [*wrap(runs_note), *wrap(PAPER_NOTE)]
    return "\n".join([*lines, "mean absolute error per parameter:", *per_parameter])


def single_run_errors(table, n: int, setting: str):
    """Return the runs' mean absolute errors ``(public, noise)`` and the errors per parameter.

    The non-private run has no noise: its first noise column is its one run per public set.
    """
    errors = table["abs_error"].sel(n_records=n, setting=setting)
    if setting == "non-private":
        errors = errors.isel(noise=[0])
    return errors.mean("parameter").values, errors


def _spread_row(runs: np.ndarray, n_public: int) -> str:
    """Format runs, mean, s.e., sd and quantiles of single runs' errors ``(public, noise)``."""
    finite = runs[np.isfinite(runs)]
    # over the public sets' means, or over the noise runs of the only one
    spread = np.array([finite_mean(row) for row in runs]) if n_public > 1 else runs.ravel()
    se = _standard_error(spread[np.isfinite(spread)])
    sd = float(np.std(finite, ddof=1)) if finite.size > 1 else math.nan
    qs = np.quantile(finite, QUANTILES) if finite.size else np.full(len(QUANTILES), np.nan)
    return (
        f"{finite.size:>5} {finite_mean(runs):6.2f} {_number(se, 6, 3)} {_number(sd, 6, 2)}"
        + "".join(_number(float(q), 7, 2) for q in qs)
    )


def _paper_columns(runs: np.ndarray, paper: float | None) -> str:
    """Format the paper's error and the share of single runs with an error at most it."""
    finite = runs[np.isfinite(runs)]
    if paper is None or not finite.size:
        return f" {'-':>6} {'-':>5}"
    return f" {paper:6.2f} {np.mean(finite <= paper):5.2f}"


def _paper_key(n: int, setting: str):
    return None if setting == "non-private" else (n, setting == "with resampling")


def _number(value: float, width: int, digits: int) -> str:
    return f"{value:{width}.{digits}f}" if math.isfinite(value) else f"{'-':>{width}}"


def _standard_error(values) -> float:
    """Return the standard error of the mean; NaN without a warning below two values."""
    return float(np.std(values, ddof=1) / math.sqrt(values.size)) if values.size > 1 else math.nan


def finite_mean(values) -> float:
    """Mean of the finite values; NaN without a warning when a run accepted nothing."""
    values = np.asarray(values, dtype=float)
    finite = values[np.isfinite(values)]
    return float(finite.mean()) if finite.size else math.nan


def _notes(table, shown, mode, epsilon_total, repetitions) -> list[str]:
    notes = []
    for label, out in shown:
        queries, draws = int(out.posterior.attrs["n_queries"]), out.posterior.sizes
        notes.append(
            f"{label}: {draws['chain'] * draws['draw']} draws accepted after answering "
            f"{queries:,} of {table.attrs['n_proposals']:,} distances"
        )
    sensitivities = ", ".join(f"{CLIP / n:g}" for n in table["n_records"].values)
    notes += [
        f"the private rows are the first run {mode}; privacy: each ABCDP run is "
        f"{epsilon_total:g}-DP for the data owner (one record replaced; sensitivity C / n = "
        f"{sensitivities}), privacy noise from OS entropy",
        f"the error table repeats ABCDP {2 * repetitions} times on the same synthetic records "
        "to measure the error over the privacy noise: a simulation study, not one release",
        f"mean absolute error of the posterior mean over the parameters ({repetitions} noise "
        "repetitions):",
        *summarise_errors(table).splitlines(),
    ]
    return notes


def _diagnostics(table) -> dict:
    out = {"public_draws_seconds": table["seconds"].sel(stage="public draws").values.ravel()}
    for n in table["n_records"].values:
        for setting in table["setting"].values:
            key = f"n{int(n)}_{setting.replace(' ', '_').replace('-', '_')}"
            runs, _ = single_run_errors(table, int(n), str(setting))
            out[f"{key}_mae"] = finite_mean(runs)
            finite = runs[np.isfinite(runs)]
            for q in (0.05, 0.5, 0.95):
                value = float(np.quantile(finite, q)) if finite.size else math.nan
                out[f"{key}_mae_single_run_q{round(100 * q):02d}"] = value
            out[f"{key}_accepted"] = float(
                table["n_accepted"].sel(n_records=n, setting=setting).values.mean()
            )
            paper = PAPER_ERRORS.get(_paper_key(int(n), str(setting)))
            if paper is not None:
                out[f"{key}_mae_paper_single_run"] = paper
    return out
