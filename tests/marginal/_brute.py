"""Independent references: marginal likelihoods by brute-force sums over very wide windows.

The latent pmf comes from scipy.stats and the mechanism density from ``Mechanism.logpdf``;
the window is wide enough that both factors' neglected mass is below 1e-15 of the total,
whatever the parameters (checked by the tests that use it).
"""

from __future__ import annotations

import numpy as np
import scipy.stats as st
from scipy.special import logsumexp

LATENTS = {
    "poisson": lambda a, b: st.poisson(a),
    "binomial": lambda a, b: st.binom(int(a), b),
    "negative_binomial": lambda a, b: st.nbinom(a, b),
    "geometric": lambda a, b: st.geom(a),
    "discrete_uniform": lambda a, b: st.randint(int(a), int(b) + 1),
}


def window(dist, releases, mechanisms, width=60.0):
    """Integers covering the latent's and every mechanism's mass around the releases."""
    support_lo, support_hi = (float(v) for v in dist.support())
    for mechanism in mechanisms:
        if hasattr(mechanism, "population"):
            support_lo, support_hi = max(support_lo, 0.0), min(support_hi, mechanism.population)
    spread = [_spread(m) for m in mechanisms]
    releases = [_center(m, r) for m, r in zip(mechanisms, releases, strict=True)]
    lo = min(
        [_tail(dist, -1), *(float(r) - width * s for r, s in zip(releases, spread, strict=True))]
    )
    hi = max(
        [_tail(dist, +1), *(float(r) + width * s for r, s in zip(releases, spread, strict=True))]
    )
    return np.arange(np.floor(max(lo, support_lo)), np.ceil(min(hi, support_hi)) + 1)


def _center(mechanism, released):
    """Where a release's density lives: the release, or the threshold of a suppressed cell.

    A release of several values (a BinomialRelease's) is centred at its largest.
    """
    value = np.max(released)
    if np.isnan(value):
        return float(np.max(mechanism.threshold))
    return float(value)


def _tail(dist, side):
    """A point beyond which the latent's mass is below e^-45, by doubling from its median."""
    x, step = float(dist.median()), 1.0
    while True:
        x += side * step
        if x < dist.support()[0] or x > dist.support()[1]:
            return x
        log_tail = dist.logsf(x) if side > 0 else dist.logcdf(x)
        if log_tail < -45:
            return x
        step *= 2


def _spread(mechanism):
    mechanism = getattr(mechanism, "mechanism", mechanism)  # the noise inside a threshold
    for name in ("sigma", "scale"):
        if hasattr(mechanism, name):
            return float(np.max(getattr(mechanism, name)))
    return float(getattr(mechanism, "population", 1e6)) ** 0.5 + 10.0


def log_marginal(family, a, b, pairs):
    """``log sum_s p(s) prod_m eta_m(r_m | s)`` for one cell; ``pairs`` of (mechanism, r)."""
    dist = LATENTS[family](a, b)
    s = window(dist, [r for _, r in pairs], [m for m, _ in pairs])
    terms = dist.logpmf(s)
    for mechanism, r in pairs:
        terms = terms + mechanism.logpdf(
            np.reshape(r, mechanism.event_shape), _values(mechanism, s)
        )
    return float(logsumexp(terms))


def _values(mechanism, s):
    values = s if not mechanism.discrete else s.astype(np.int64)
    return values.reshape(-1, *mechanism.event_shape)
