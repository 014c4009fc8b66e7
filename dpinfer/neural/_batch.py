"""Posteriors of a batch of releases from one trained estimator, in one call.

An amortised estimator serves any release: :meth:`NeuralPosterior.sample` and
:meth:`NeuralLikelihood.posterior` given a batch ``(m, *event_shape)`` of releases
draw every release's posterior together, instead of one call (and one
InferenceData) per release. The flow runs on all releases' contexts at once, in
chunks of at most ``_SAMPLE_BATCH`` draws; the likelihood's Markov chains for all
releases step together, each release's chains with their own adapted proposal.
The result is one InferenceData with a ``release`` dimension
(:func:`dpinfer.results.to_batch_inference_data`). Draws for a batch differ from
those of one release at a time with the same seed (the random numbers are consumed
in another order); both are exact draws from the same estimate.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from .._rng import as_generator, child_sequence
from ._mcmc import Chains, random_walk_metropolis
from ._torch_rng import forked

_SAMPLE_BATCH = 100_000
_MIN_SUPPORT_RATE = 1e-3
_GIVE_UP = 10 * _SAMPLE_BATCH


def posterior_draws(estimator, releases: np.ndarray, n: int, seq, prior=None):
    """``n`` draws of ``z`` per release ``(m, k)`` in the prior support: ``(n, m, d)``, ``log q``.

    Each pass draws, for the releases still short of ``n``, what their support rate
    so far predicts they lack (all ``n`` on the first pass), so a flow that stays in
    the support needs one pass.
    """
    m = len(releases)
    d = estimator.density.features
    z_out, log_q_out = np.empty((n, m, d)), np.empty((n, m))
    filled, tried = np.zeros(m, dtype=np.int64), np.zeros(m, dtype=np.int64)
    context = estimator._tensor(releases)
    with forked(seq), torch.no_grad():
        while (short := np.flatnonzero(filled < n)).size:
            _check_support_rate(filled[short], tried[short], short)
            per = n if not tried.any() else _next_pass(n - filled[short], filled, tried, short)
            for chunk in np.array_split(short, math.ceil(len(short) * per / _SAMPLE_BATCH)):
                z, log_q, ok = _draw(estimator, context[chunk], per, prior)
                tried[chunk] += per
                for j, release in enumerate(chunk):
                    good = np.flatnonzero(ok[:, j])[: n - filled[release]]
                    stop = filled[release] + len(good)
                    z_out[filled[release] : stop, release] = z[good, j]
                    log_q_out[filled[release] : stop, release] = log_q[good, j]
                    filled[release] = stop
    return z_out, log_q_out, filled.sum() / tried.sum()


def _next_pass(want: np.ndarray, filled, tried, short) -> int:
    """Draws per release for another pass: the most any short release is predicted to need."""
    rate = np.maximum(filled[short] / tried[short], _MIN_SUPPORT_RATE)
    return min(int(np.max(np.ceil(1.1 * want / rate))) + 10, _SAMPLE_BATCH)


def _draw(estimator, context: torch.Tensor, per: int, prior):
    """``per`` draws for each context row: ``z (per, rows, d)``, ``log q``, in-support mask."""
    z = estimator.density.sample(context, per)
    log_q = estimator.density.log_prob(z, context).double().cpu().numpy()
    z = z.double().cpu().numpy()
    ok = np.all(np.isfinite(z), axis=2) & np.isfinite(log_q)
    if prior is not None and ok.any():
        params, _ = estimator.space.batch_from_unconstrained(z[ok])
        ok[ok] = np.isfinite(np.asarray(prior.logpdf(params), dtype=float))
    return z, log_q, ok


def _check_support_rate(filled: np.ndarray, tried: np.ndarray, releases: np.ndarray) -> None:
    low = (tried >= _GIVE_UP) & (filled < _MIN_SUPPORT_RATE * tried)
    if low.any():
        raise RuntimeError(
            f"the posterior estimate puts less than {_MIN_SUPPORT_RATE:g} of its mass in the "
            f"prior support at {int(low.sum())} of the releases (the first: index "
            f"{int(releases[low][0])}); train longer or check the model"
        )


def likelihood_chains(
    estimator, releases: np.ndarray, prior, chains: int, per_chain: int, mcmc, seq
):
    """Markov chains of every release's posterior: ``Chains`` with ``z (m, chains, per_chain, d)``.

    All releases' chains start from one set of prior candidates, each release
    resampling its own starts by its likelihood weights, and step together.
    """
    gen = as_generator(seq)
    m = len(releases)
    candidates = estimator.space.batch_to_unconstrained(prior.sample(mcmc.initial_candidates, gen))
    n_cand = len(candidates)
    log_w = estimator._log_lik(
        np.repeat(releases, n_cand, axis=0), np.tile(candidates, (m, 1))
    ).reshape(m, n_cand)
    log_w[~np.isfinite(log_w)] = -np.inf
    dead = ~np.isfinite(log_w).any(axis=1)
    if dead.any():
        raise RuntimeError(
            f"the likelihood estimate is zero at every initial candidate for {int(dead.sum())} "
            f"of the releases (the first: index {int(np.flatnonzero(dead)[0])})"
        )
    w = np.exp(log_w - log_w.max(axis=1, keepdims=True))
    w /= w.sum(axis=1, keepdims=True)
    starts = np.concatenate([candidates[gen.choice(n_cand, size=chains, p=row)] for row in w])
    centred = candidates[None] - (w @ candidates)[:, None]  # (m, n_cand, d)
    cov = np.einsum("gn,gni,gnj->gij", w, centred, centred)
    rows = np.repeat(releases, chains, axis=0)
    target = estimator.log_target(rows, prior)
    run = random_walk_metropolis(target, starts, cov, per_chain, mcmc, gen, groups=m)
    d = candidates.shape[1]
    return Chains(
        run.z.reshape(m, chains, per_chain, d),
        run.log_target.reshape(m, chains, per_chain),
        run.acceptance_rate,
    )


def release_major(values: np.ndarray) -> np.ndarray:
    """Reorder ``(m, chains, per_chain, ...)`` as ``(chains * per_chain, m, ...)``, chain-major."""
    m, chains, per_chain = values.shape[:3]
    moved = np.moveaxis(values.reshape(m, chains * per_chain, *values.shape[3:]), 0, 1)
    return np.ascontiguousarray(moved)


def unflatten_batch(space, z: np.ndarray):
    """Parameters (each ``(n, m, *shape)``) and log-Jacobians ``(n, m)`` of ``z`` ``(n, m, d)``."""
    n, m, d = z.shape
    params, log_jac = space.batch_from_unconstrained(z.reshape(n * m, d))
    return {k: v.reshape(n, m, *v.shape[1:]) for k, v in params.items()}, log_jac.reshape(n, m)


def sample_batch(estimator, releases: np.ndarray, n: int, chains: int, prior, root):
    """:meth:`NeuralPosterior.sample` for a batch ``(m, k)`` of releases."""
    z, log_q, rate = posterior_draws(estimator, releases, n, child_sequence(root, 0), prior)
    params, log_jac = unflatten_batch(estimator.space, z)
    stats = {"log_q": log_q - log_jac}
    return estimator._draws_result(
        params, releases, root, chains, stats, batch=True, support_rate=rate, ess=float(n)
    )


def posterior_batch(estimator, releases: np.ndarray, prior, chains: int, n: int, mcmc, root):
    """:meth:`NeuralLikelihood.posterior` for a batch ``(m, k)`` of releases."""
    seq = child_sequence(root, 0)
    run = likelihood_chains(estimator, releases, prior, chains, n // chains, mcmc, seq)
    z = release_major(run.z)  # (draws, m, d)
    params, _ = unflatten_batch(estimator.space, z)
    rows = np.broadcast_to(releases, (len(z), *releases.shape)).reshape(-1, releases.shape[1])
    log_lik = estimator._log_lik(rows, z.reshape(-1, z.shape[2])).reshape(z.shape[:2])
    stats = {"log_likelihood_estimate": log_lik, "lp": release_major(run.log_target)}
    rate = run.acceptance_rate
    return estimator._draws_result(
        params, releases, root, chains, stats, batch=True, mcmc_acceptance_rate=rate
    )
