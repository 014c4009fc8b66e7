"""The ``theta | records`` half of :func:`dpinfer.da_mcmc`'s Gibbs sweep.

Given the imputed records the release carries no further information about
``theta``: its full conditional is the complete-data posterior
``pi_0(theta) prod_i f(x_i | theta)``. Two kernels leave it invariant:

* the model's ``update(records, rng)``, an exact (conjugate) draw;
* otherwise, ``steps`` random-walk Metropolis steps on the unconstrained scale
  of :class:`dpinfer.likelihood.ParameterSpace` (log-Jacobian included). The proposal covariance is
  the empirical covariance of the chain over doubling windows of the tuning
  phase and its scale follows a Robbins-Monro recursion towards the usual
  acceptance rate (Andrieu & Thoms 2008, Algorithm 4); both are frozen when
  tuning ends, so the draws kept come from one fixed, valid kernel. A random
  walk needs one log-likelihood evaluation per step (an O(n) pass over the
  records, vectorised), no gradient, and no per-chain loop of varying length.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import scipy.stats

from ..._parameter_space import ParameterSpace

_FIRST_WINDOW = 25


class WalkState(NamedTuple):
    """Random-walk Metropolis state of one chain (``z`` on the unconstrained scale)."""

    z: np.ndarray  # (d,)
    log_prior: float  # log prior density of z (with the log-Jacobian)
    chol: np.ndarray  # (d, d) shape of the proposal covariance
    log_scale: float
    window: tuple  # (count, sum z, sum z z^T, window end) of the current tuning window


class ThetaKernel:
    """Updates ``theta`` given one chain's records: exact draw or random-walk Metropolis."""

    def __init__(self, record_model, *, steps: int, n_records: int):
        self.model = record_model
        self.steps = steps
        self.n_records = n_records
        self.space: ParameterSpace | None = None
        self.exact = record_model.update is not None

    def start(self, params: dict, prior_draws: dict) -> WalkState | None:
        """Return the random-walk state at ``params``, scaled by a pool of prior draws."""
        if self.exact:
            return None
        _refuse_simplex(self.model.prior)
        self.space = ParameterSpace.from_prior(
            self.model.prior, params, support=self.model.support
        )
        z = self.space.batch_to_unconstrained(params)[0]
        pool = self.space.batch_to_unconstrained(prior_draws)
        sd = pool.std(axis=0) if len(pool) > 1 else np.ones_like(z)
        sd = np.where(np.isfinite(sd) & (sd > 0), sd, 1.0)
        # the complete-data posterior of n records is about sqrt(n) times narrower than the prior
        chol = np.diag(sd / math.sqrt(self.n_records))
        d = len(z)
        log_scale = math.log(2.38 / math.sqrt(d))
        walk = WalkState(z, -math.inf, chol, log_scale, _new_window(d, _FIRST_WINDOW))
        log_jac = self.space.batch_from_unconstrained(z[None])[1]
        return walk._replace(log_prior=self._log_prior(params, log_jac))

    def update(self, params, walk, records, rng, *, tuning_step: int | None):
        """Return ``(params, walk, acceptance rate)`` after the theta update."""
        batch = records[None]
        if self.exact:
            names = list(params)
            return self.model.draw_update(batch, rng, names), None, 1.0
        if self.space is None:
            raise RuntimeError("start() must set up the random walk before its first update")
        z, log_prior, accepted = walk.z, walk.log_prior, 0
        current = log_prior + self._loglik(batch, params)
        log_scale = walk.log_scale
        target = 0.44 if len(z) == 1 else 0.3
        for step in range(self.steps):
            proposal = z + math.exp(log_scale) * (walk.chol @ rng.standard_normal(len(z)))
            params_new, log_jac = self.space.batch_from_unconstrained(proposal[None])
            prior_new = self._log_prior(params_new, log_jac)
            new = (
                prior_new + self._loglik(batch, params_new) if prior_new > -math.inf else prior_new
            )
            log_alpha = new - current
            if math.log(rng.random()) < log_alpha:
                z, params, current, log_prior = proposal, params_new, new, prior_new
                accepted += 1
            if tuning_step is not None:
                gain = (tuning_step * self.steps + step + 1) ** -0.6
                alpha = math.exp(min(0.0, log_alpha)) if not math.isnan(log_alpha) else 0.0
                log_scale += gain * (alpha - target)
        walk = walk._replace(z=z, log_prior=log_prior, log_scale=log_scale)
        if tuning_step is not None:
            walk = _adapt_covariance(walk, tuning_step)
        return params, walk, accepted / self.steps

    def _log_prior(self, params, log_jac) -> float:
        value = float(np.asarray(self.model.prior.logpdf(params))[0]) + float(log_jac[0])
        return value if math.isfinite(value) else -math.inf

    def _loglik(self, batch, params) -> float:
        return float(self.model.complete_loglik(batch, params)[0])


def _refuse_simplex(prior) -> None:
    """Refuse Dirichlet parameters without ``update=``: a random walk leaves the simplex."""
    for name, dist in (getattr(prior, "_spec", None) or {}).items():
        if isinstance(getattr(dist, "_dist", None), type(scipy.stats.dirichlet)):
            raise ValueError(
                f"parameter {name!r} has a Dirichlet prior: a random-walk Metropolis step "
                "cannot move on the simplex; give the RecordModel an update= (the conjugate "
                "Dirichlet draw given the records)"
            )


def _new_window(d: int, length: int) -> tuple:
    return (0, np.zeros(d), np.zeros((d, d)), length)


def _adapt_covariance(walk: WalkState, tuning_step: int) -> WalkState:
    """Accumulate the window's moments; at its end, take its covariance as the proposal shape."""
    count, total, outer, end = walk.window
    count, total, outer = count + 1, total + walk.z, outer + np.outer(walk.z, walk.z)
    if tuning_step + 1 < end:
        return walk._replace(window=(count, total, outer, end))
    d = len(walk.z)
    chol = walk.chol
    if count > d + 1:
        mean = total / count
        cov = (outer - count * np.outer(mean, mean)) / (count - 1)
        cov += 1e-10 * max(1.0, float(np.trace(cov)) / d) * np.eye(d)
        try:
            candidate = np.linalg.cholesky(cov)
        except np.linalg.LinAlgError:
            candidate = None
        # a chain that did not move in the window says nothing about the shape
        if candidate is not None and np.all(np.diag(candidate) > 0):
            # the optimal scaling for a Gaussian target of this covariance (Roberts et al. 1997)
            chol, walk = candidate, walk._replace(log_scale=math.log(2.38 / math.sqrt(d)))
    # windows of 25, 50, 100, ... iterations: later ones see a chain nearer equilibrium
    return walk._replace(chol=chol, window=_new_window(d, 2 * end + _FIRST_WINDOW))
