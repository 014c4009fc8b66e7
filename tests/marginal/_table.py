"""A small released table with an exact posterior: six Poisson counts, one shared rate.

The counts are released through the discrete Gaussian mechanism with sigma 12, large next to
the counts, so that the naive analysis (releases taken as counts) is visibly wrong. The
posterior of the rate is computed by quadrature on a grid, each cell's likelihood summed by
brute force (``_brute``), independently of dpinfer's kernel.
"""

from __future__ import annotations

import numpy as np
import scipy.stats as st
from scipy.special import logsumexp

import dpinfer as dp

POP = np.array([900, 2500, 400, 7000, 1300, 3100])
SIGMA = 12.0
RELEASED = np.array([3, 21, -9, 30, 6, 2])
PRIOR = st.gamma(2.0, scale=1 / 400.0)


def posterior_moments(cells, prior, grid) -> tuple[float, float]:
    """Posterior mean and sd of a shared rate on ``grid``, by brute-force sums and Simpson's rule.

    ``cells`` are ``(mechanism, population, released)``: each cell's count is
    Poisson(population * rate) and is summed over one wide window of counts at every
    grid point (scipy's pmf, the mechanism's own ``logpdf``).
    """
    log_lik = 0.0
    for mechanism, population, released in cells:
        top = population * grid[-1]
        inner = getattr(mechanism, "mechanism", mechanism)
        spread = float(np.max(getattr(inner, "sigma", getattr(inner, "scale", 1.0))))
        center = np.nan_to_num(released, nan=float(np.max(getattr(mechanism, "threshold", 0))))
        s = np.arange(0, int(max(top + 25 * np.sqrt(top), center) + 60 * spread + 100))
        noise = mechanism.logpdf(np.asarray(released), s.reshape(-1, *mechanism.event_shape))
        terms = st.poisson.logpmf(s[:, None], population * grid[None, :]) + noise[:, None]
        log_lik = log_lik + logsumexp(terms, axis=0)
    post = dp.GridPosterior(grid, log_lik, prior.logpdf)
    return post.mean(), post.std()


def exact_posterior() -> tuple[float, float]:
    """Posterior mean and sd of the rate of the six-cell table."""
    mechanism = dp.DiscreteGaussian(SIGMA)
    cells = [(mechanism, p, y) for p, y in zip(POP, RELEASED, strict=True)]
    return posterior_moments(cells, PRIOR, np.linspace(1e-6, 0.02, 2001))
