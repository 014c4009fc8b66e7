"""The exact posterior of the Poisson mean given the release, and its references.

The normalised density from the closed-form likelihood and the evidence by
summation; its CDF, quantiles and moments by quadrature
(:class:`dpinfer.GridPosterior`); the naive conjugate posterior; the counts
that hold the count's posterior mass; a PyMC reference with the count summed out.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.stats as st

from dpinfer import validate
from dpinfer.grid import GridPosterior

from ._likelihood import (
    EPSILON,
    RELEASED,
    _check_prior,
    _check_theta,
    _log_evidence,
    _log_laplace,
    _loglik_closed_form,
    log_evidence,
    log_likelihood,
    mechanism,
)


def exact_log_posterior(theta, *, method: str = "incomplete_gamma", **setting) -> np.ndarray:
    r"""Normalised log posterior density ``log pi(theta | s_dp)``.

    .. math:: \log \pi_0(\theta) + \log \pi(s_{dp} \mid \theta) - \log \pi(s_{dp}),

    with the likelihood of :func:`log_likelihood` (``method``) and the
    evidence of :func:`log_evidence`; nothing is normalised numerically.
    ``setting``: ``alpha``, ``beta``, ``epsilon`` and ``released``, as in
    :class:`ExactPosterior` (by default Gong's Figure 1).
    """
    alpha, beta, epsilon, released = _setting(**setting)
    alpha, beta = _check_prior(alpha, beta)
    theta = _check_theta(theta)
    log_prior = st.gamma.logpdf(theta, alpha, scale=1.0 / beta)
    return (
        log_prior
        + log_likelihood(theta, released=released, epsilon=epsilon, method=method)
        - log_evidence(alpha=alpha, beta=beta, epsilon=epsilon, released=released)
    )


def _setting(*, alpha=25.0, beta=1.0, epsilon=EPSILON, released=RELEASED) -> tuple:
    return alpha, beta, epsilon, released


def exact_posterior_pdf(theta, **kwargs) -> np.ndarray:
    """Normalised posterior density; keyword arguments as :func:`exact_log_posterior`."""
    return np.exp(exact_log_posterior(theta, **kwargs))


def exact_posterior_cdf(
    theta, *, alpha=25.0, beta=1.0, epsilon=EPSILON, released=RELEASED
) -> np.ndarray:
    """Posterior CDF by quadrature of the exact density (see :class:`ExactPosterior`)."""
    return ExactPosterior(alpha=alpha, beta=beta, epsilon=epsilon, released=released).cdf(theta)


def exact_posterior_quantiles(
    q, *, alpha=25.0, beta=1.0, epsilon=EPSILON, released=RELEASED
) -> np.ndarray:
    """Posterior quantiles by inverting :func:`exact_posterior_cdf`."""
    return ExactPosterior(alpha=alpha, beta=beta, epsilon=epsilon, released=released).ppf(q)


class ExactPosterior(GridPosterior):
    r"""The exact posterior of ``theta`` given the release, as a frozen distribution.

    A :class:`dpinfer.GridPosterior` whose density is exact.

    Parameters
    ----------
    alpha, beta : float
        Gamma prior shape and rate.
    epsilon : float
        Privacy-loss budget of the Laplace release (scale ``1 / epsilon``).
    released : float
        The release ``s_dp``.

    Attributes
    ----------
    log_evidence : float
        ``log pi(s_dp)`` by exact summation.
    quadrature_total : float
        The quadrature of the normalised density over ``theta``: 1 up to
        quadrature error when likelihood and evidence agree (a check).

    Notes
    -----
    The density is exact (:func:`exact_log_posterior`). The CDF is its
    cumulative Simpson integral on a grid of 8001 points uniform in
    ``log theta`` over ``[L, T]`` and a cubic Hermite interpolant (with the
    exact density as derivative) between grid points
    (:meth:`dpinfer.GridPosterior.logspace`). Since
    :math:`\pi(s_{dp} \mid \theta) \le \epsilon / 2`, the posterior mass
    outside ``[L, T]`` is at most
    :math:`(\epsilon / 2) \Pr_0(\theta \notin [L, T]) / \pi(s_{dp})`; ``L`` and
    ``T`` are the prior quantiles that make this bound ``1e-13``.

    Examples
    --------
    >>> post = ExactPosterior(alpha=25)
    >>> abs(post.quadrature_total - 1) < 1e-8
    True
    >>> bool(post.ppf(0.05) < post.mean() < post.ppf(0.95))
    True
    """

    def __init__(
        self,
        *,
        alpha: float = 25.0,
        beta: float = 1.0,
        epsilon: float = EPSILON,
        released: float = RELEASED,
    ):
        self.alpha, self.beta = _check_prior(alpha, beta)
        eps = self.epsilon = validate.positive_finite("epsilon", epsilon)
        x = self.released = validate.finite("released", released)
        log_z = _log_evidence(self.alpha, self.beta, eps, x)
        prior = st.gamma(self.alpha, scale=1.0 / self.beta)
        lower, upper = _bounds(self.alpha, self.beta, eps, log_z)
        self._init_logspace(
            lower,
            upper,
            _NODES,
            lambda theta: _loglik_closed_form(theta, x, eps),
            prior.logpdf,
            log_z,
        )
        self.log_evidence = log_z
        self.quadrature_total = self.integral

    def logpdf(self, theta) -> np.ndarray:
        """Normalised log density."""
        return exact_log_posterior(theta, **self._kwargs())

    def pdf(self, theta) -> np.ndarray:
        """Normalised density."""
        return np.exp(self.logpdf(theta))

    def _kwargs(self) -> dict:
        return {
            "alpha": self.alpha,
            "beta": self.beta,
            "epsilon": self.epsilon,
            "released": self.released,
        }

    def __repr__(self) -> str:
        return "ExactPosterior({})".format(
            ", ".join(f"{k}={v!r}" for k, v in self._kwargs().items())
        )


def naive_posterior(*, alpha: float = 25.0, beta: float = 1.0, released: float = RELEASED):
    """Return the naive posterior, which treats the release as the confidential count.

    Parameters
    ----------
    alpha, beta : float
        Gamma prior shape and rate.
    released : float
        The release, taken (wrongly) as an observed Poisson count.

    Returns
    -------
    scipy.stats frozen distribution
        ``Gamma(alpha + s_dp, rate = beta + 1)``, the conjugate update.

    Notes
    -----
    This ignores the privacy noise: it is the wrong posterior, shown for
    comparison as in Gong's Figures 1 and 3. It is undefined when
    ``alpha + s_dp <= 0`` (a very negative release).

    Examples
    --------
    >>> float(naive_posterior(alpha=25).mean())
    31.2
    """
    alpha, beta = _check_prior(alpha, beta)
    x = validate.finite("released", released)
    if not alpha + x > 0:
        raise ValueError(
            f"the naive posterior Gamma(alpha + released, beta + 1) is undefined for "
            f"alpha={alpha!r} and released={released!r} (alpha + released <= 0)"
        )
    return st.gamma(alpha + x, scale=1.0 / (beta + 1.0))


def count_support(
    *,
    alpha: float = 25.0,
    beta: float = 1.0,
    epsilon: float = EPSILON,
    released: float = RELEASED,
    tol: float = 1e-12,
) -> np.ndarray:
    r"""Return the counts ``0..U`` that hold all but ``tol`` of the count's posterior mass.

    Notes
    -----
    The posterior of the count is
    :math:`\Pr(s \mid s_{dp}) = \Pr(s)\, \eta(s_{dp} \mid s) / \pi(s_{dp})`,
    with :math:`\Pr(s)` negative binomial (see :func:`log_evidence`). For
    :math:`U + 1 \ge s_{dp}` the density :math:`\eta(s_{dp} \mid s)` decreases
    in ``s > U``, so

    .. math:: \Pr(s > U \mid s_{dp}) \le \eta(s_{dp} \mid U + 1) \Pr(s > U) / \pi(s_{dp}),

    and ``U`` is the smallest count that makes this bound at most ``tol``.
    Restricting the model to ``s <= U`` conditions the exact joint posterior
    on that event, which moves the posterior of ``theta`` by at most ``tol``
    in total variation.

    Examples
    --------
    >>> s = count_support(alpha=25)
    >>> int(s[0]), bool(s[-1] > RELEASED)
    (0, True)
    """
    alpha, beta = _check_prior(alpha, beta)
    eps = validate.positive_finite("epsilon", epsilon)
    x = validate.finite("released", released)
    tol = validate.positive_finite("tol", tol)
    log_z = _log_evidence(alpha, beta, eps, x)
    nb = st.nbinom(alpha, beta / (1.0 + beta))
    start = max(math.ceil(x) - 1, 0)
    size = 256
    while True:
        upper = np.arange(start, start + size)
        bound = _log_laplace(x, upper + 1.0, eps) + nb.logsf(upper) - log_z
        ok = np.flatnonzero(bound <= math.log(tol))
        if ok.size:
            return np.arange(int(upper[ok[0]]) + 1)
        start, size = start + size, 2 * size


def pymc_reference(
    *,
    alpha: float = 25.0,
    beta: float = 1.0,
    epsilon: float = EPSILON,
    released: float = RELEASED,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 2,
    rng=None,
    progressbar: bool = False,
    **nuts_kwargs,
):
    """NUTS reference posterior with the count summed out.

    The PyMC model is ``theta ~ Gamma(alpha, beta)`` and the marginal
    likelihood ``log sum_s Poisson(s | theta) eta(s_dp | s)`` over
    :func:`count_support` (posterior mass of the neglected counts
    ``<= 1e-12``), sampled by :func:`dpinfer.reference.sample_reference`.

    Parameters
    ----------
    alpha, beta, epsilon, released : float
        As in :class:`ExactPosterior`.
    draws, tune, chains, rng, progressbar, **nuts_kwargs
        As in :func:`dpinfer.reference.sample_reference`.

    Returns
    -------
    arviz.InferenceData
    """
    import pymc as pm

    from dpinfer.reference import sample_reference

    alpha, beta = _check_prior(alpha, beta)
    support = count_support(alpha=alpha, beta=beta, epsilon=epsilon, released=released)

    def build():
        theta = pm.Gamma("theta", alpha=alpha, beta=beta)
        return pm.Poisson.dist(theta)

    return sample_reference(
        build,
        mechanism(epsilon=epsilon),
        released,
        support=support,
        draws=draws,
        tune=tune,
        chains=chains,
        rng=rng,
        progressbar=progressbar,
        **nuts_kwargs,
    )


# quadrature nodes of the exact posterior, and the prior mass bound outside them
_NODES = 8001
_OUTSIDE = 1e-13


def _bounds(alpha, beta, eps, log_z) -> tuple[float, float]:
    """Prior quantiles outside which the posterior mass is below ``_OUTSIDE``."""
    prior = st.gamma(alpha, scale=1.0 / beta)
    p_out = _OUTSIDE * math.exp(min(log_z - math.log(eps / 2.0), 0.0))
    return max(float(prior.ppf(p_out)), 1e-300), float(prior.isf(p_out))
