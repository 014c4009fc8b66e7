"""The error table of the tuberculosis example's ABCDP runs (Park et al. 2021, 6.3).

Part of :mod:`dpinfer.models.tuberculosis`, which documents the model and the setup.
"""

from __future__ import annotations

import math
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

#: Park et al.'s mean absolute errors (Section 6.3): (n, resample) -> error.
PAPER_ERRORS = {(100, True): 4.71, (1000, True): 2.20, (100, False): 4.51, (1000, False): 2.10}

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
            # over the public repetitions' means, or over the noise runs of the only one
            spread = np.array([finite_mean(row) for row in mae]) if n_public > 1 else mae
            se = _standard_error(spread[np.isfinite(spread)])
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
            errors = table["abs_error"].sel(n_records=n, setting=setting).mean("parameter")
            out[f"{key}_mae"] = finite_mean(errors.values)
            out[f"{key}_accepted"] = float(
                table["n_accepted"].sel(n_records=n, setting=setting).values.mean()
            )
            paper = PAPER_ERRORS.get((int(n), setting == "with resampling"))
            if paper is not None and setting != "non-private":
                out[f"{key}_mae_paper"] = paper
    return out
