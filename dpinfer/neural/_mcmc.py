r"""Vectorised random-walk Metropolis with several chains, for SPLE's posterior.

All chains step together (one batched evaluation of the target per step). During
warm-up the Gaussian proposal adapts every 50 steps: its covariance to
:math:`2.38^2/d` times the covariance of the chains' recent states, its scale by
a Robbins-Monro step towards an acceptance rate of 0.3. It is then frozen, so
the kept draws come from a Metropolis kernel that leaves the target invariant.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .. import _validate
from ..results import rhat

_WINDOW = 50
_TARGET_ACCEPTANCE = 0.3


@dataclass(frozen=True)
class MCMC:
    """Settings of SPLE's random-walk Metropolis sampler.

    Parameters
    ----------
    warmup : int, default 500
        Adaptation steps per chain, discarded.
    thin : int, default 5
        Keep every ``thin``-th step.
    proposal_chains : int, default 20
        Chains run in parallel to draw each round's proposal parameters.
    initial_candidates : int, default 1000
        Chains start at draws resampled, by the target's weight, from this many
        prior draws.

    Examples
    --------
    >>> from dpinfer.neural import MCMC
    >>> MCMC(thin=10).warmup
    500
    """

    warmup: int = 500
    thin: int = 5
    proposal_chains: int = 20
    initial_candidates: int = 1000

    def __post_init__(self):
        for name in ("warmup", "thin", "proposal_chains", "initial_candidates"):
            _validate.size(name, getattr(self, name))


class Chains(NamedTuple):
    """Kept states ``(chains, draws, d)``, their log targets, and the acceptance rate."""

    z: np.ndarray
    log_target: np.ndarray
    acceptance_rate: float

    def rhat_max(self) -> float:
        """Largest rank-normalised split R-hat over coordinates (needs two or more chains)."""
        if self.z.shape[0] < 2:
            return math.nan
        return max(rhat(self.z[..., j]) for j in range(self.z.shape[-1]))


def random_walk_metropolis(
    log_target, start: np.ndarray, cov: np.ndarray, draws: int, options, rng
):
    """Run ``len(start)`` chains from ``start`` and keep ``draws`` thinned states per chain.

    ``log_target(z)`` maps an ``(n, d)`` array to ``(n,)`` log densities (``-inf``
    outside the support); ``cov`` is the initial guess of the target's covariance.
    """
    z = np.array(start, dtype=float)
    n_chains, d = z.shape
    lp = log_target(z)
    chol = np.linalg.cholesky(_regularised(np.atleast_2d(cov), d))
    scale = 2.38 / math.sqrt(d)
    accepted = 0
    recent = []
    for step in range(1, options.warmup + 1):
        z, lp, acc = _step(log_target, z, lp, chol * scale, rng)
        recent.append(z)
        accepted += acc.sum()
        if step % _WINDOW == 0:
            rate = accepted / (_WINDOW * n_chains)
            scale *= math.exp(rate - _TARGET_ACCEPTANCE)
            pooled = np.concatenate(recent)
            if len(np.unique(pooled, axis=0)) > d:
                chol = np.linalg.cholesky(_regularised(np.cov(pooled, rowvar=False), d))
            accepted, recent = 0, []
    kept_z = np.empty((n_chains, draws, d))
    kept_lp = np.empty((n_chains, draws))
    accepted = 0
    for i in range(draws * options.thin):
        z, lp, acc = _step(log_target, z, lp, chol * scale, rng)
        accepted += acc.sum()
        if (i + 1) % options.thin == 0:
            kept_z[:, i // options.thin] = z
            kept_lp[:, i // options.thin] = lp
    return Chains(kept_z, kept_lp, accepted / (draws * options.thin * n_chains))


def _step(log_target, z, lp, factor, rng):
    proposal = z + rng.standard_normal(z.shape) @ factor.T
    lp_new = log_target(proposal)
    accept = np.log(rng.random(len(z))) < lp_new - lp
    z = np.where(accept[:, None], proposal, z)
    return z, np.where(accept, lp_new, lp), accept


def _regularised(cov, d) -> np.ndarray:
    cov = np.atleast_2d(cov)
    return cov + 1e-9 * max(float(np.trace(cov)) / d, 1e-12) * np.eye(d)
