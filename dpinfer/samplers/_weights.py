"""Log-weight utilities: normalisation, ESS and systematic resampling."""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp


def normalise(log_weights: np.ndarray) -> np.ndarray:
    """Return self-normalised weights (summing to one) from log weights."""
    lw = np.asarray(log_weights, dtype=float)
    total = logsumexp(lw)
    if not np.isfinite(total):
        raise ValueError(
            "every importance weight is zero (or a weight is infinite): the release is "
            "impossible under all proposed parameters"
        )
    return np.exp(lw - total)


def ess(log_weights: np.ndarray) -> float:
    """Kish effective sample size ``(sum w)^2 / sum w^2``, computed in log space."""
    lw = np.asarray(log_weights, dtype=float)
    return float(np.exp(2 * logsumexp(lw) - logsumexp(2 * lw)))


def systematic_resample(weights: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """Return indices of ``n`` systematic-resampling draws from normalised ``weights``."""
    positions = (rng.random() + np.arange(n)) / n
    cumulative = np.cumsum(weights)
    cumulative[-1] = 1.0
    return np.searchsorted(cumulative, positions, side="right")
