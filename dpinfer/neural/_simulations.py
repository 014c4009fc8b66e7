"""Simulations of a sequential run: parameters, privatised copies and the growing pool.

Parameters are handled on the unconstrained scale of
:class:`dpinfer.likelihood.ParameterSpace` (log or logit maps of
bounded scalar components), so flows over parameters never leave the prior
support; the log prior density there carries the Jacobian.
"""

from __future__ import annotations

import numpy as np
import torch

from .._parameter_space import ParameterSpace
from ._rqmc import scrambled_sobol


def privatise(mechanism, s: np.ndarray, copies: int, qmc: bool, rng) -> np.ndarray:
    """Release each statistic ``s[i]`` ``copies`` times; return an ``(n, copies, r)`` array.

    With ``qmc`` the releases are ``mechanism.release_from_uniform`` at the
    first ``copies`` points of a Sobol sequence scrambled independently for
    every statistic; otherwise independent ``mechanism.release`` draws.
    """
    n = len(s)
    event = mechanism.event_shape
    if qmc:
        size = max(1, int(np.prod(event, dtype=int)))
        u = scrambled_sobol(n, copies, size, rng).reshape(n, copies, *event)
        out = mechanism.release_from_uniform(s[:, None], u)
    else:
        out = mechanism.release(np.repeat(s[:, None], copies, axis=1), rng=rng)
    return np.asarray(out, dtype=float).reshape(n, copies, -1)


def prior_log_density(model, params: dict, log_jac: np.ndarray) -> np.ndarray:
    """Log prior density on the unconstrained scale (NaN when the prior has none)."""
    if not model.prior.has_logpdf:
        return np.full(len(log_jac), np.nan)
    return np.asarray(model.prior.logpdf(params), dtype=float) + log_jac


def space_for(model, rng: np.random.Generator) -> ParameterSpace:
    """Return the unconstrained parameter space of the model's prior."""
    return ParameterSpace.from_prior(model.prior, model.prior.sample(2, rng))


class Pool:
    """Every simulation so far: ``z``, log prior, privatised copies, round, validation flag."""

    def __init__(self):
        self.parts: list[dict] = []

    def add(self, *, z, log_prior, s_dp, round_index, validation) -> None:
        """Append one round's simulations."""
        self.parts.append(
            {
                "z": np.asarray(z, dtype=float),
                "log_prior": np.asarray(log_prior, dtype=float),
                "s": np.asarray(s_dp, dtype=float),
                "round": np.full(len(z), round_index),
                "validation": np.asarray(validation, dtype=bool),
            }
        )

    def column(self, name: str) -> np.ndarray:
        """One field over all rounds."""
        return np.concatenate([p[name] for p in self.parts])

    def __len__(self) -> int:
        return sum(len(p["z"]) for p in self.parts)

    def tensors(self, device=None) -> tuple[dict, torch.Tensor, torch.Tensor]:
        """Float32 ``z``, ``s``, ``log_prior`` on ``device``; the training and validation rows."""
        data = {
            name: torch.as_tensor(self.column(name), dtype=torch.float32, device=device)
            for name in ("z", "s", "log_prior")
        }
        validation = self.column("validation")
        train = torch.as_tensor(np.flatnonzero(~validation))
        val = torch.as_tensor(np.flatnonzero(validation))
        return data, train, val


def validation_mask(n: int, fraction: float, rng: np.random.Generator) -> np.ndarray:
    """Hold out ``round(fraction * n)`` of ``n`` simulations (at least one, not all)."""
    n_val = min(max(1, round(fraction * n)), n - 1)
    mask = np.zeros(n, dtype=bool)
    mask[rng.choice(n, size=n_val, replace=False)] = True
    return mask
