"""Bulk and tail ESS and rank-normalised R-hat of many scalar components at once.

The same estimators as ArviZ's ``ess(method="bulk")``, ``ess(method="tail")`` and
``rhat(method="rank")``
(Vehtari et al. 2021), vectorised over components: ArviZ computes one component per
call, about 4 ms each, which makes a batch of a thousand posteriors (one per
release) cost seconds for its diagnostics alone. Here the rank normalisation, the
autocovariances (by FFT) and Geyer's truncation run over all components in one
pass; ``tests/test_batch_diagnostics.py`` checks them against ArviZ to rounding.

Arrays are ``(chains, draws, components)``; a component with non-finite values,
or fewer than 4 draws, gets NaN (and R-hat needs two chains).
"""

from __future__ import annotations

import numpy as np
import scipy.fft
import scipy.stats

__all__ = ["bulk_ess", "rank_rhat", "tail_ess"]


def bulk_ess(draws: np.ndarray) -> np.ndarray:
    """Bulk effective sample size of each component of ``draws`` ``(chains, draws, k)``."""
    return _each_valid(draws, 1, lambda x: _ess(_z_scale(_split(x))))


def tail_ess(draws: np.ndarray) -> np.ndarray:
    """Tail effective sample size: the smaller ESS of being below the 5% or the 95% quantile."""

    def tail(x):
        quantiles = np.quantile(x.reshape(-1, x.shape[2]), [0.05, 0.95], axis=0)
        low, high = (_ess(_split((x <= q).astype(float))) for q in quantiles)
        return np.where(np.isnan(low), low, np.fmin(low, high))

    return _each_valid(draws, 1, tail)


def rank_rhat(draws: np.ndarray) -> np.ndarray:
    """Rank-normalised split R-hat (the larger of bulk and folded) of each component."""

    def rhat(x):
        split = _split(x)
        folded = np.abs(split - np.median(split.reshape(-1, split.shape[2]), axis=0))
        return np.maximum(_rhat(_z_scale(split)), _rhat(_z_scale(folded)))

    return _each_valid(draws, 2, rhat)


def _each_valid(draws: np.ndarray, min_chains: int, compute) -> np.ndarray:
    """``compute`` on the valid components of ``draws``; NaN for the others."""
    draws = np.asarray(draws, dtype=float)
    out = np.full(draws.shape[2], np.nan)
    ok = _valid(draws, min_chains=min_chains)
    if ok.any():
        out[ok] = compute(draws[..., ok])
    return out


def _valid(draws: np.ndarray, *, min_chains: int) -> np.ndarray:
    chains, n, k = draws.shape
    if chains < min_chains or n < 4:
        return np.zeros(k, dtype=bool)
    return np.isfinite(draws).all(axis=(0, 1))


def _split(draws: np.ndarray) -> np.ndarray:
    """Split each chain into its first and last halves (an odd chain's middle draw dropped)."""
    half = draws.shape[1] // 2
    return np.concatenate([draws[:, :half], draws[:, -half:]], axis=0)


def _z_scale(draws: np.ndarray) -> np.ndarray:
    """Return the normal scores of each component's pooled ranks (Blom's offset 3/8)."""
    chains, n, k = draws.shape
    ranks = scipy.stats.rankdata(draws.reshape(-1, k), method="average", axis=0)
    size = chains * n
    return scipy.stats.norm.ppf((ranks - 3 / 8) / (size - 3 / 4 + 1)).reshape(chains, n, k)


def _autocov(x: np.ndarray) -> np.ndarray:
    """Autocovariance of each chain and component at every lag (axis 1), divided by n."""
    n = x.shape[1]
    centred = x - x.mean(axis=1, keepdims=True)
    size = scipy.fft.next_fast_len(2 * n)
    spec = scipy.fft.rfft(centred, n=size, axis=1)
    return scipy.fft.irfft(spec * np.conjugate(spec), n=size, axis=1)[:, :n] / n


def _ess(z: np.ndarray) -> np.ndarray:
    chains, n, k = z.shape
    total = chains * n
    constant = np.ptp(z.reshape(-1, k), axis=0) < np.finfo(float).resolution
    acov = _autocov(z).mean(axis=0)  # (n, k): averaged over chains
    mean_var = acov[0] * n / (n - 1.0)
    var_plus = mean_var * (n - 1.0) / n
    if chains > 1:
        var_plus = var_plus + np.var(z.mean(axis=1), axis=0, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = 1.0 - (mean_var - acov) / var_plus
    rho[0] = 1.0
    tau = np.array([_geyer_tau(rho[:, j]) for j in range(k)]) if n > 4 else np.zeros(k)
    tau = np.maximum(tau, 1 / np.log10(total))
    ess = total / tau
    ess[np.isnan(rho).any(axis=0)] = np.nan
    ess[constant] = total
    return ess


def _rhat(z: np.ndarray) -> np.ndarray:
    n = z.shape[1]
    between = n * np.var(z.mean(axis=1), axis=0, ddof=1)
    within = np.var(z, axis=1, ddof=1).mean(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.sqrt((between / within + n - 1) / n)


def _geyer_tau(rho: np.ndarray) -> float:
    """Integrated autocorrelation time from Geyer's initial positive and monotone sequences.

    ``rho[t]`` are the autocorrelations at lags ``t = 0 .. n-1``. Pairs
    ``P_j = rho[2j] + rho[2j+1]`` are summed up to (not including) the first
    non-positive pair, after making them non-increasing; as in ArviZ, the even
    lag of the stopping pair is added once when it is positive (or when the pair
    stopped only at the end of the chain), and at most ``(n - 2) / 2`` pairs are used.
    """
    n = rho.size
    n_pairs = (n - 1) // 2  # pairs j with 2j - 1 < n - 3, counting P_0
    pairs = rho[: 2 * n_pairs].reshape(n_pairs, 2).sum(axis=1)
    stop = np.flatnonzero(pairs[1:] <= 0)
    k = int(stop[0]) + 1 if stop.size else n_pairs - 1
    if pairs[0] <= 0:
        k = 0
    kept = np.minimum.accumulate(pairs[:k])
    stored = k > 0 and pairs[k] >= 0
    last = rho[2 * k] if (rho[2 * k] > 0 or stored) else 0.0
    return -1.0 + 2.0 * kept.sum() + last
