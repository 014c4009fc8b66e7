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

from ._brute import log_marginal

POP = np.array([900, 2500, 400, 7000, 1300, 3100])
SIGMA = 12.0
RELEASED = np.array([3, 21, -9, 30, 6, 2])
PRIOR = st.gamma(2.0, scale=1 / 400.0)


def exact_posterior() -> tuple[float, float]:
    """Posterior mean and sd of the rate: prior times the brute-force marginal of every cell."""
    grid = np.linspace(1e-6, 0.02, 2001)
    mechanism = dp.DiscreteGaussian(SIGMA)
    log_post = PRIOR.logpdf(grid) + np.array(
        [
            sum(
                log_marginal("poisson", p * r, 0, [(mechanism, y)])
                for p, y in zip(POP, RELEASED, strict=True)
            )
            for r in grid
        ]
    )
    w = np.exp(log_post - logsumexp(log_post))
    mean = float(np.sum(w * grid))
    return mean, float(np.sqrt(np.sum(w * (grid - mean) ** 2)))
