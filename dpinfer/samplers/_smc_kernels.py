"""Pieces shared by the SMC samplers: proposals, move counts, particle selection."""

from __future__ import annotations

import math

import numpy as np

from ._transforms import ParameterSpace


def proposal_factor(z, weights) -> np.ndarray:
    """Return the Cholesky factor of the random-walk covariance (2.38^2/d times weighted)."""
    d = z.shape[1]
    cov = np.atleast_2d(np.cov(z, rowvar=False, aweights=weights))
    cov = cov + 1e-10 * np.eye(d) * max(1.0, float(np.trace(cov)) / d)
    return np.linalg.cholesky(cov * (2.38**2 / d))


def moves_needed(rate, move_probability, max_moves) -> int:
    """Return how many moves make a particle move with ``move_probability`` at this rate."""
    if rate <= 0:
        return max_moves
    if rate >= 1:
        return 1
    return int(
        min(max_moves, max(1, math.ceil(math.log1p(-move_probability) / math.log1p(-rate))))
    )


def take(state, idx):
    """Select particles ``idx`` from every per-particle field of a state NamedTuple."""

    def pick(value):
        if isinstance(value, dict):
            return {k: v[idx] for k, v in value.items()}
        if isinstance(value, np.ndarray) and value.ndim:
            return value[idx]
        return value

    return state._replace(**{f: pick(getattr(state, f)) for f in state._fields})


def expand(mask, like):
    """Reshape a per-particle mask to broadcast against ``like``."""
    return mask.reshape(mask.shape + (1,) * (np.ndim(like) - 1))


def initial_particles(model, n, rng):
    """Draw ``n`` prior particles; return the space, ``z``, parameters and log prior on z."""
    params = model.prior.sample(n, rng)
    space = ParameterSpace(model.prior, params)
    z = space.flatten(params)
    params, log_jac = space.unflatten(z)
    return space, z, params, model.prior.logpdf(params) + log_jac
