"""Exact posteriors by summation for the DA-MCMC tests, and the Monte Carlo checks against them.

A count written as ``n`` records: ``n`` Bernoulli(p) records (their sum is Binomial(n, p))
with ``p ~ Beta(a, b)``, or ``n`` Poisson(theta) records (sum Poisson(n theta)) with
``theta ~ Gamma(alpha, rate beta)``. Given the sum ``s`` the posterior is conjugate, and
the prior predictive of ``s`` is Beta-binomial or negative binomial, so the exact posterior
given a release is the finite mixture over ``s`` of conjugate laws with weights
``pi(s) eta(s_dp | s)``; the mechanism density enters through scipy.stats, independently
of dpinfer's mechanism code.

``check_draws`` compares MCMC draws with such a law: mean, standard deviation and
quantiles, each as a z-score whose standard error uses the draws' effective sample size.
"""

from __future__ import annotations

import numpy as np
import scipy.optimize as so
import scipy.stats as st
from scipy.special import logsumexp

from dpinfer.results import effective_sample_size

Z_LIMIT = 4.0  # two-sided |z| > 4: probability 6.3e-5 per z-score (normal approximation)
QUANTILES = (0.05, 0.5, 0.95)


class Mixture:
    """``sum_c w_c D(params_c)`` for a vectorised frozen scipy family ``D``."""

    def __init__(self, weights, components):
        self.weights = np.asarray(weights, dtype=float)
        self.components = components  # a frozen scipy distribution with array parameters

    def mean(self) -> float:
        return float(np.sum(self.weights * self.components.mean()))

    def std(self) -> float:
        second = np.sum(self.weights * (self.components.var() + self.components.mean() ** 2))
        return float(np.sqrt(second - self.mean() ** 2))

    def cdf(self, x) -> float:
        return float(np.sum(self.weights * self.components.cdf(x)))

    def pdf(self, x) -> float:
        return float(np.sum(self.weights * self.components.pdf(x)))

    def ppf(self, q: float) -> float:
        lo, hi = self.components.ppf(1e-12).min(), self.components.ppf(1 - 1e-12).max()
        return float(so.brentq(lambda x: self.cdf(x) - q, lo, hi, xtol=1e-12))


def _normalise(log_w):
    return np.exp(log_w - logsumexp(log_w))


def bernoulli_records_posterior(released, log_eta, n, a, b) -> Mixture:
    """Posterior of ``p`` given a release of the sum of ``n`` Bernoulli(p) records."""
    s = np.arange(n + 1)
    log_w = st.betabinom.logpmf(s, n, a, b) + log_eta(released, s)
    return Mixture(_normalise(log_w), st.beta(a + s, b + n - s))


def poisson_records_posterior(released, log_eta, n, alpha, beta, s_max) -> Mixture:
    """Posterior of ``theta`` given a release of the sum of ``n`` Poisson(theta) records."""
    s = np.arange(s_max + 1)
    log_w = st.nbinom.logpmf(s, alpha, beta / (beta + n)) + log_eta(released, s)
    assert log_w[-1] - logsumexp(log_w) < -40, "s_max truncates the posterior of the sum"
    return Mixture(_normalise(log_w), st.gamma(alpha + s, scale=1.0 / (beta + n)))


def check_draws(draws, exact, quantiles=QUANTILES) -> dict[str, float]:
    """z-scores of the draws' mean, sd and quantiles against the exact law.

    ``draws`` has shape ``(chains, draws)``. Standard errors: ``sd / sqrt(ESS)`` for the
    mean; the delta method ``sqrt(var((x - m)^2) / ESS2) / (2 sd)`` for the sd, with ESS2
    the ESS of the squared deviations; ``sqrt(q (1 - q) / ESSq) / f(x_q)`` for a quantile,
    with ESSq the ESS of the indicator ``x <= x_q`` and ``f`` the exact density.
    """
    draws = np.asarray(draws, dtype=float)
    flat = draws.ravel()
    out = {}
    sd = flat.std()
    out["mean"] = (flat.mean() - exact.mean()) / (sd / np.sqrt(effective_sample_size(draws)))
    dev2 = (draws - flat.mean()) ** 2
    se_sd = np.sqrt(dev2.var() / effective_sample_size(dev2)) / (2 * sd)
    out["sd"] = (sd - exact.std()) / se_sd
    for q in quantiles:
        x_q = exact.ppf(q)
        below = (draws <= x_q).astype(float)
        se = np.sqrt(q * (1 - q) / effective_sample_size(below)) / exact.pdf(x_q)
        out[f"q{q:g}"] = (np.quantile(flat, q) - x_q) / se
    return out


def max_abs_z(z: dict[str, float]) -> float:
    return float(max(abs(v) for v in z.values()))
