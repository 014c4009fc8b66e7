"""Models and checks shared by several sampler test modules."""

from __future__ import annotations

import numpy as np
import scipy.stats as st
from scipy.special import gammaln

import dpinfer as dp

# --- the Poisson count of the MCEM tests (Gong 2022, Section 5.1) ---------------------------

POISSON_FAMILY = dp.ExponentialFamily(statistic=lambda s: s, maximize=lambda m: {"theta": m[0]})


def callable_likelihood(family=POISSON_FAMILY):
    """The Poisson log-likelihood, score and Hessian as plain callables."""
    return dp.Likelihood.from_callables(
        lambda s, p: s * np.log(p["theta"]) - p["theta"] - gammaln(s + 1),
        score=lambda s, p: (s / p["theta"] - 1)[:, None],
        hessian=lambda s, p: (-s / p["theta"] ** 2)[:, None, None],
        params=["theta"],
        support={"theta": "positive"},
        exponential_family=family,
    )


def poisson_model(likelihood=None):
    """``theta ~ Gamma(25)``, ``s ~ Poisson(theta)``; the callable likelihood by default."""
    return dp.Model(
        prior={"theta": st.gamma(25)},
        simulate=lambda p, rng: rng.poisson(p["theta"]),
        likelihood=callable_likelihood() if likelihood is None else likelihood,
    )


# --- faulty models for the SMC samplers' input checks --------------------------------------


def wrong_shape_model(width: int) -> dp.Model:
    """A scalar prior whose simulator returns ``(n, width)`` instead of ``(n,)``."""
    return dp.Model(
        prior={"theta": st.norm(0.0, 1.0)},
        simulate=lambda p, rng: np.zeros((len(p["theta"]), width)),
    )


def prior_without_logpdf_model() -> dp.Model:
    """A normal model whose prior can be sampled but has no density."""
    return dp.Model(
        prior=dp.Prior(lambda n, rng: {"theta": rng.standard_normal(n)}),
        simulate=lambda p, rng: p["theta"] + rng.standard_normal(len(p["theta"])),
    )


# --- the legacy global random state ----------------------------------------------------------


def global_state_equal(a, b) -> bool:
    """Whether two ``np.random.get_state()`` tuples are the same state."""
    return all(
        np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y
        for x, y in zip(a, b, strict=True)
    )
