"""The error study of the mixture-of-uniforms example: ABCDP runs and Figure 3.

Imported by :mod:`dpinfer.models.mixture_uniform`, which documents the example.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

import dpinfer as dp
from dpinfer.distances import PrecomputedDistances
from dpinfer.random import RNGLike, as_seed_sequence, chunk_generator
from dpinfer.samplers import check_privacy_rng

from . import _model as mix
from ._model import distance, public_draws, sample_mixture


@dataclass(frozen=True)
class ExperimentResult:
    """Squared errors of the ABCDP posterior mean over repetitions.

    Attributes
    ----------
    mse : numpy.ndarray
        Mean over the five weights of the squared error of the posterior
        mean, one entry per repetition (the prior mean is used when a run
        accepts nothing).
    n_accepted : numpy.ndarray
        Number of accepted draws per repetition.
    n_queries : numpy.ndarray
        Number of distances the sparse vector technique answered.
    posterior_mean : numpy.ndarray
        ``(repetitions, 5)``.
    """

    mse: np.ndarray
    n_accepted: np.ndarray
    n_queries: np.ndarray
    posterior_mean: np.ndarray


def _one_run(observed, dist, params, **settings):
    out = _abcdp(observed, dist, params, **settings)
    draws = np.asarray(out.posterior["weights"]).reshape(-1, mix._K)
    mean = draws.mean(axis=0) if len(draws) else mix.PRIOR_MEAN
    return mean, len(draws), int(out.posterior.attrs["n_queries"])


def run_experiment(
    *,
    c: int,
    epsilon_abc: float,
    epsilon_total: float,
    resample: bool = False,
    n_observations: int = mix.N_OBSERVATIONS,
    n_proposals: int = mix.N_PROPOSALS,
    n_features: int = mix.N_FEATURES,
    bandwidth: float = mix.BANDWIDTH,
    repetitions: int = 1,
    rng: RNGLike = None,
    privacy_rng: RNGLike = None,
) -> ExperimentResult:
    """Run ABCDP on the toy example for one setting of Figure 3.

    Each repetition draws new confidential data, random features and public
    proposals from ``rng``, then runs :func:`dpinfer.abcdp` with privacy
    noise from ``privacy_rng``.

    Parameters
    ----------
    c, epsilon_abc, epsilon_total, resample
        The ABCDP setting.
    n_observations, n_proposals, n_features, bandwidth
        ``N``, ``T``, ``D`` and the kernel bandwidth (paper: 5000, 10000, 100, 0.6).
    repetitions : int, default 1
        Independent repetitions.
    rng : seed, optional
        Public randomness (data, features, proposals).
    privacy_rng : seed, optional
        Privacy noise; OS entropy by default. One equal to or derived from
        ``rng`` is refused, as in :func:`dpinfer.abcdp`.

    Returns
    -------
    ExperimentResult
    """
    check_privacy_rng(privacy_rng, public=[rng])
    root, noise = as_seed_sequence(rng), as_seed_sequence(privacy_rng)
    means, accepted, queries = [], [], []
    for r in range(repetitions):
        observed, dist, params = _repetition(
            chunk_generator(root, r), n_observations, n_proposals, n_features, bandwidth
        )
        mean, n_acc, n_q = _one_run(
            observed,
            dist,
            params,
            c=c,
            epsilon_abc=epsilon_abc,
            epsilon_total=epsilon_total,
            resample=resample,
            privacy_rng=chunk_generator(noise, r),
        )
        means.append(mean), accepted.append(n_acc), queries.append(n_q)
    means = np.array(means)
    return ExperimentResult(
        mse=np.mean((means - mix.TRUE_WEIGHTS) ** 2, axis=1),
        n_accepted=np.array(accepted),
        n_queries=np.array(queries),
        posterior_mean=means,
    )


def _repetition(gen, n_observations, n_proposals, n_features, bandwidth):
    observed = sample_mixture(mix.TRUE_WEIGHTS, n_observations, gen)
    base = distance(n_features=n_features, bandwidth=bandwidth, rng=gen)
    params, values = public_draws(observed, base, n_proposals=n_proposals, rng=gen)
    return observed, PrecomputedDistances(base, observed, values), params


def figure3(
    *,
    c_values=mix.C_VALUES,
    epsilon_abc_values=mix.EPSILON_ABC_VALUES,
    epsilon_total_values=mix.EPSILON_TOTAL_VALUES,
    resample_values=(False, True),
    n_observations: int = mix.N_OBSERVATIONS,
    n_proposals: int = mix.N_PROPOSALS,
    n_features: int = mix.N_FEATURES,
    bandwidth: float = mix.BANDWIDTH,
    public_repetitions: int = 1,
    noise_repetitions: int = 10,
    rng: RNGLike = None,
    privacy_rng: RNGLike = None,
):
    """Compute the MSE grid of Figure 3.

    For each of ``public_repetitions`` sets of confidential data, features
    and public proposals, every setting is run ``noise_repetitions`` times
    with fresh privacy noise (the non-private setting once: it has none).

    Returns
    -------
    xarray.DataArray
        Dimensions ``(resample, c, epsilon_total, epsilon_abc, repetition)``.
    """
    import xarray as xr

    check_privacy_rng(privacy_rng, public=[rng])
    root, noise = as_seed_sequence(rng), as_seed_sequence(privacy_rng)
    shape = (
        len(resample_values),
        len(c_values),
        len(epsilon_total_values),
        len(epsilon_abc_values),
        public_repetitions * noise_repetitions,
    )
    mse = np.full(shape, np.nan)
    stream = 0
    for p in range(public_repetitions):
        observed, dist, params = _repetition(
            chunk_generator(root, p), n_observations, n_proposals, n_features, bandwidth
        )
        for idx in np.ndindex(shape[:4]):
            i, j, k, m = idx
            eps_total = epsilon_total_values[k]
            reps = 1 if math.isinf(eps_total) else noise_repetitions
            for r in range(reps):
                mean, _, _ = _one_run(
                    observed,
                    dist,
                    params,
                    c=c_values[j],
                    epsilon_abc=epsilon_abc_values[m],
                    epsilon_total=eps_total,
                    resample=resample_values[i],
                    privacy_rng=chunk_generator(noise, stream),
                )
                stream += 1
                cols = slice(p * noise_repetitions, (p + 1) * noise_repetitions)
                value = np.mean((mean - mix.TRUE_WEIGHTS) ** 2)
                if reps == 1:
                    mse[(*idx, cols)] = value
                else:
                    mse[(*idx, p * noise_repetitions + r)] = value
    return xr.DataArray(
        mse,
        dims=("resample", "c", "epsilon_total", "epsilon_abc", "repetition"),
        coords={
            "resample": list(resample_values),
            "c": list(c_values),
            "epsilon_total": list(epsilon_total_values),
            "epsilon_abc": list(epsilon_abc_values),
        },
        name="mse",
    )


def _abcdp(observed, dist, params, **settings):
    return dp.abcdp(
        observed,
        dist,
        params=params,
        pseudo_data=np.arange(dist.values.size),
        progressbar=False,
        **settings,
    )
