r"""A Poisson count released through the Laplace mechanism (Gong 2022, Section 5.1).

The analyst models a confidential count ``s ~ Poisson(theta)`` with the prior
``theta ~ Gamma(alpha, beta)`` (shape ``alpha``, rate ``beta = 1``), and sees
only ``s_dp = s + Lap(1 / epsilon)``, the epsilon-DP Laplace release of the
count (sensitivity 1). Gong's example has ``epsilon = 0.2``, ``s_dp = 37.4``
and ``alpha`` in ``{2, 5, 25, 50, 75}``.

Everything about this posterior is available in closed form or by exact
finite sums, which makes it the reference example for exact ABC:

* the likelihood of the release, by Appendix E's incomplete gamma formula
  (:func:`log_likelihood`, ``method="incomplete_gamma"``) or by summing over
  the count (``method="sum"``);
* the evidence ``pi(s_dp)`` (:func:`evidence`): ``theta`` integrates out
  analytically, the count is negative binomial a priori, and a sum over the
  count remains;
* hence the normalised posterior density (:func:`exact_posterior_pdf`), and
  its CDF, quantiles and moments by one-dimensional quadrature
  (:class:`ExactPosterior`);
* the naive posterior that treats ``s_dp`` as the count
  (:func:`naive_posterior`), conjugate ``Gamma(alpha + s_dp, beta + 1)``;
* a PyMC reference with the count summed out (:func:`pymc_reference`).

Examples
--------
>>> from dpinfer.models import poisson_count as pc
>>> post = pc.ExactPosterior(alpha=25)
>>> round(post.mean(), 2), round(float(pc.naive_posterior(alpha=25).mean()), 2)
(28.58, 31.2)
>>> round(pc.evidence(alpha=25) / (pc.EPSILON / 2), 4)  # rejection ABC's acceptance rate
0.1616
"""

from __future__ import annotations

import dataclasses
import functools
import math
import warnings

import numpy as np
import scipy.special as sc
import scipy.stats as st
from scipy.integrate import cumulative_simpson, simpson
from scipy.interpolate import CubicHermiteSpline
from scipy.optimize import brentq

import dpinfer as dp
from dpinfer import _validate
from dpinfer._rng import as_seed_sequence

from ._budget import SamplerPlan, plan_sampler
from ._example import Example, Option, between, choice, integer
from ._report import (
    Report,
    Result,
    density_figure,
    distribution_rows,
    draw_rows,
    idata_draws,
    mle_interval_notes,
    mle_rows,
    save_run,
)

__all__ = [
    "ALPHAS",
    "EPSILON",
    "LOG_ACCEPTANCE_FLOOR",
    "RELEASED",
    "ExactPosterior",
    "count_support",
    "evidence",
    "exact_log_posterior",
    "exact_mle",
    "exact_posterior_cdf",
    "exact_posterior_pdf",
    "exact_posterior_quantiles",
    "likelihood",
    "log_evidence",
    "log_likelihood",
    "mechanism",
    "mle",
    "model",
    "naive_mle",
    "naive_posterior",
    "pymc_reference",
    "check_options",
    "run",
    "run_example",
]

#: The release of Gong's Section 5.1.
RELEASED = 37.4
#: The privacy-loss budget of the Laplace release (scale ``1 / EPSILON``).
EPSILON = 0.2
#: The prior shapes of Gong's Table 1 and Figures 1 and 3 (rate 1).
ALPHAS = (2, 5, 25, 50, 75)

REFERENCE = (
    "Gong, R. (2022). Exact inference with approximate computation for differentially "
    "private data via perturbations. Journal of Privacy and Confidentiality 12(2), "
    "Section 5.1 and Appendix E."
)

EXAMPLE = Example(
    name="poisson-count",
    title="A Poisson count released with Laplace noise: exact posterior and MLE",
    paper="Gong (2022), Section 5.1",
    seconds=10,
    module=__name__,
    smallest={"draws": 100, "mle_schedule": "off"},
    options=(
        Option(
            "released",
            RELEASED,
            "the Laplace release s_dp of the count",
            between(-1000, 10**6, hint="the example's counts are at most 10^6"),
            flag="--release",
        ),
        Option(
            "epsilon",
            EPSILON,
            "privacy-loss budget (Laplace scale 1/epsilon)",
            between(
                0.05,
                10,
                hint="below 0.05 the noise (Laplace scale above 20) swamps a count of this "
                "size and Monte Carlo EM needs hundreds of iterations; above 10 the release "
                "is the count to within rounding",
            ),
        ),
        Option("alpha", 25.0, "shape of the Gamma prior on theta", between(0.1, 1000)),
        Option("beta", 1.0, "rate of the Gamma prior on theta", between(0.001, 1000)),
        Option(
            "draws",
            10_000,
            "rejection ABC's posterior draws (when rejection would exceed its budget, "
            "importance ABC's target effective sample size, at most 2000)",
            integer(100, 100_000),
        ),
        Option(
            "mle_schedule",
            "auto",
            "MCEM schedule: ascent-based, Gong's stages up to 10^7 simulations, or off "
            "(no Monte Carlo EM; the exact and naive MLEs remain)",
            choice("auto", "staged", "off"),
        ),
    ),
)

#: Below this log acceptance rate of rejection ABC (closed-form evidence over the largest
#: Laplace density) a release is refused as implausible under the prior, before anything
#: runs: the closed-form posterior's quadrature bounds its neglected mass by
#: 1e-13 * exp(-log rate), which must stay a normal double.
LOG_ACCEPTANCE_FLOOR = -600.0
#: Importance ABC (when rejection would exceed its budget): the effective sample size
#: it simulates rounds for, at most, and the particles it may keep in memory.
IMPORTANCE_TARGET_ESS = 2000
IMPORTANCE_MAX_SIMULATIONS = 5 * 10**5
#: Importance ABC's particles per round at least (fewer, larger rounds run faster).
IMPORTANCE_ROUND = 50_000
#: The Monte Carlo EM schedules of :func:`run`, capped so that a fit that stalls (a
#: boundary MLE, a noise that swamps the count) ends, flagged as not converged.
MCEM_SCHEDULES = {
    "auto": dp.AscentSchedule(max_iterations=50, max_size=10**6),
    "staged": dp.StagedSchedule(max_iterations=50),
}

# Relative truncation error allowed in the sums over the count.
_SUM_TOL = 1e-15


def model(*, alpha: float = 25.0, beta: float = 1.0) -> dp.Model:
    """Return the Bayesian model of the confidential count.

    Parameters
    ----------
    alpha, beta : float
        Shape and rate of the Gamma prior on ``theta`` (Gong: ``beta = 1``).

    Returns
    -------
    dpinfer.Model
        Prior ``{"theta": Gamma(alpha, rate=beta)}``; simulator ``Poisson(theta)``.

    Examples
    --------
    >>> import numpy as np
    >>> m = model(alpha=25)
    >>> m.simulate(m.prior.sample(3, np.random.default_rng(0)), np.random.default_rng(1)).shape
    (3,)
    """
    alpha, beta = _check_prior(alpha, beta)
    return dp.Model(
        prior={"theta": st.gamma(alpha, scale=1.0 / beta)},
        simulate=_simulate_count,
        loglik=_count_loglik,
    )


def mechanism(*, epsilon: float = EPSILON) -> dp.Laplace:
    """Return the epsilon-DP Laplace mechanism of a count: scale ``1/epsilon``, sensitivity 1.

    Examples
    --------
    >>> mechanism().scale
    array(5.)
    """
    return dp.Laplace.from_privacy(epsilon=epsilon, sensitivity=1.0)


def log_likelihood(
    theta,
    *,
    released: float = RELEASED,
    epsilon: float = EPSILON,
    method: str = "incomplete_gamma",
) -> np.ndarray:
    r"""Log-likelihood of the release, ``log pi(s_dp | theta)``, normalised in ``s_dp``.

    Parameters
    ----------
    theta : array_like
        Poisson means (positive).
    released, epsilon : float
        The release and the privacy-loss budget of its Laplace mechanism.
    method : {"incomplete_gamma", "sum"}
        Appendix E's closed form, or the sum over the count (truncated where
        the neglected terms are provably below ``1e-15`` of the total).

    Returns
    -------
    numpy.ndarray
        Same shape as ``theta``.

    Notes
    -----
    With :math:`k = \lfloor s_{dp} \rfloor` (Gong 2022, Appendix E, extended
    to integer and negative releases),

    .. math::

        \pi(s_{dp} \mid \theta) = \frac{\epsilon}{2} \Big[
            e^{\theta (e^{\epsilon} - 1) - \epsilon s_{dp}} F_{\theta e^{\epsilon}}(k)
          + e^{\theta (e^{-\epsilon} - 1) + \epsilon s_{dp}}
            \big(1 - F_{\theta e^{-\epsilon}}(k)\big) \Big],

    where :math:`F_\lambda` is the Poisson(λ) CDF, i.e. the regularised upper
    incomplete gamma function :math:`\Gamma(k+1, \lambda) / \Gamma(k+1)`, and
    :math:`1 - F_\lambda(k) = \gamma(k+1, \lambda) / \Gamma(k+1)`. For a
    non-integer release :math:`k + 1 = \lceil s_{dp} \rceil`, Gong's form.

    Examples
    --------
    >>> a = log_likelihood([20.0, 37.0], method="incomplete_gamma")
    >>> b = log_likelihood([20.0, 37.0], method="sum")
    >>> bool(np.allclose(a, b, rtol=1e-12))
    True
    """
    theta = _check_theta(theta)
    x = _validate.finite("released", released)
    eps = _validate.positive_finite("epsilon", epsilon)
    if method == "incomplete_gamma":
        return _loglik_closed_form(theta, x, eps)
    if method == "sum":
        return _loglik_sum(theta, x, eps)
    raise ValueError(f"method must be 'incomplete_gamma' or 'sum', got {method!r}")


def log_evidence(
    *,
    alpha: float = 25.0,
    beta: float = 1.0,
    epsilon: float = EPSILON,
    released: float = RELEASED,
) -> float:
    r"""Log of the evidence ``pi(s_dp)``, by an exact sum over the count.

    Notes
    -----
    Under the prior ``Gamma(alpha, beta)`` the count is negative binomial,
    :math:`\Pr(s) = \binom{s + \alpha - 1}{s} p^{\alpha} (1 - p)^{s}` with
    :math:`p = \beta / (1 + \beta)`, so

    .. math:: \pi(s_{dp}) = \sum_{s \ge 0} \Pr(s)\, \frac{\epsilon}{2}
              e^{-\epsilon |s_{dp} - s|}.

    The sum stops at the first ``U >= s_dp`` where the bound
    :math:`\frac{\epsilon}{2} e^{-\epsilon (U + 1 - s_{dp})} \Pr(s > U)` on
    the remainder is below ``1e-15`` of the partial sum. No quadrature over
    ``theta`` is involved, so this is an independent check of the acceptance
    rate of rejection ABC, ``pi(s_dp) / (epsilon / 2)`` (Gong 2022, Appendix B).
    """
    alpha, beta = _check_prior(alpha, beta)
    x = _validate.finite("released", released)
    eps = _validate.positive_finite("epsilon", epsilon)
    return _log_evidence(alpha, beta, eps, x)


def evidence(
    *,
    alpha: float = 25.0,
    beta: float = 1.0,
    epsilon: float = EPSILON,
    released: float = RELEASED,
) -> float:
    """Return the evidence ``pi(s_dp)`` (see :func:`log_evidence`).

    Examples
    --------
    >>> acceptance = evidence(alpha=25) / (EPSILON / 2)  # rejection ABC's acceptance rate
    >>> 0.1 < acceptance < 0.2
    True
    """
    return math.exp(log_evidence(alpha=alpha, beta=beta, epsilon=epsilon, released=released))


def exact_log_posterior(
    theta,
    *,
    alpha: float = 25.0,
    beta: float = 1.0,
    epsilon: float = EPSILON,
    released: float = RELEASED,
    method: str = "incomplete_gamma",
) -> np.ndarray:
    r"""Normalised log posterior density ``log pi(theta | s_dp)``.

    .. math:: \log \pi_0(\theta) + \log \pi(s_{dp} \mid \theta) - \log \pi(s_{dp}),

    with the likelihood of :func:`log_likelihood` (``method``) and the
    evidence of :func:`log_evidence`; nothing is normalised numerically.
    """
    alpha, beta = _check_prior(alpha, beta)
    theta = _check_theta(theta)
    log_prior = st.gamma.logpdf(theta, alpha, scale=1.0 / beta)
    return (
        log_prior
        + log_likelihood(theta, released=released, epsilon=epsilon, method=method)
        - log_evidence(alpha=alpha, beta=beta, epsilon=epsilon, released=released)
    )


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


class ExactPosterior:
    r"""The exact posterior of ``theta`` given the release, as a frozen distribution.

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
    exact density as derivative) between grid points. Since
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
        self.epsilon = _validate.positive_finite("epsilon", epsilon)
        self.released = _validate.finite("released", released)
        self.log_evidence = _log_evidence(self.alpha, self.beta, self.epsilon, self.released)
        grid = _quadrature(self.alpha, self.beta, self.epsilon, self.released)
        self._u, self._g, self._cdf, self._spline, self.quadrature_total, self._mom = grid

    def logpdf(self, theta) -> np.ndarray:
        """Normalised log density."""
        return exact_log_posterior(theta, **self._kwargs())

    def pdf(self, theta) -> np.ndarray:
        """Normalised density."""
        return np.exp(self.logpdf(theta))

    def cdf(self, theta) -> np.ndarray:
        """Posterior CDF (quadrature; see Notes)."""
        theta = np.asarray(theta, dtype=float)
        out = np.empty(theta.shape)
        pos = theta > 0
        u = np.log(np.where(pos, theta, 1.0))
        inside = self._spline(np.clip(u, self._u[0], self._u[-1]))
        out[...] = np.where(u <= self._u[0], 0.0, np.where(u >= self._u[-1], 1.0, inside))
        out[~pos] = 0.0
        return np.clip(out, 0.0, 1.0)

    def ppf(self, q) -> np.ndarray:
        """Posterior quantiles, inverting the CDF by Brent's method."""
        q = np.asarray(q, dtype=float)
        if not np.all((q > 0) & (q < 1)):
            raise ValueError(f"q must lie in (0, 1), got {q!r}")
        flat = [self._ppf_one(v) for v in q.ravel()]
        return np.asarray(flat).reshape(q.shape)

    def mean(self) -> float:
        """Posterior mean (quadrature)."""
        return self._mom[0]

    def std(self) -> float:
        """Posterior standard deviation (quadrature)."""
        return self._mom[1]

    def _ppf_one(self, q: float) -> float:
        i = int(np.clip(np.searchsorted(self._cdf, q), 1, len(self._u) - 1))
        lo, hi = self._u[i - 1], self._u[i]
        u = brentq(lambda v: float(self._spline(v)) - q, lo, hi, xtol=1e-14)
        return math.exp(u)

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
    x = _validate.finite("released", released)
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
    eps = _validate.positive_finite("epsilon", epsilon)
    x = _validate.finite("released", released)
    tol = _validate.positive_finite("tol", tol)
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


def run(
    *,
    released: float = RELEASED,
    epsilon: float = EPSILON,
    alpha: float = 25.0,
    beta: float = 1.0,
    draws: int = 10_000,
    mle_schedule: str = "auto",
    rng=None,
    progressbar: bool = True,
    verbose: bool = False,
) -> Result:
    """Reproduce Gong's Figure 1 (and Table 1's acceptance rate) for one prior.

    Runs exact rejection ABC and compares it with the exact posterior (closed
    form), the naive one and the prior; its acceptance rate with the evidence
    computed by summation; and the maximum likelihood estimate by Monte Carlo
    EM with the Louis information with the exact and naive MLEs.

    The cost of rejection ABC is known before it runs: its acceptance rate is
    the closed-form evidence over the largest Laplace density. When
    ``draws`` would need more than
    :data:`~dpinfer.models._budget.REJECTION_BUDGET` simulations, exact
    importance ABC runs instead (:func:`dpinfer.importance_abc`, with a Gamma
    proposal matched to the closed-form posterior, variance doubled, until an
    ESS of ``min(draws, 2000)``), and the report says so. A release whose
    acceptance rate is below ``exp(LOG_ACCEPTANCE_FLOOR)`` is refused before
    anything runs, with what to change.

    Parameters
    ----------
    released, epsilon : float
        The release and its privacy-loss budget (Gong: 37.4 and 0.2).
    alpha, beta : float
        Shape and rate of the Gamma prior (Gong: 25 and 1).
    draws : int, default 10_000
        Posterior draws of rejection ABC (importance ABC: its target ESS is
        ``min(draws, IMPORTANCE_TARGET_ESS)``, in rounds of at least
        ``IMPORTANCE_ROUND`` particles, at most ``IMPORTANCE_MAX_SIMULATIONS``).
    mle_schedule : {"auto", "staged", "off"}, default "auto"
        Sample sizes of the MCEM fit (:data:`MCEM_SCHEDULES`, started at the
        naive MLE ``max(s_dp, 1)``): ascent-based, Gong's Appendix E stages
        (up to ``10^7`` simulations), or no MCEM fit. A fit that has not
        converged when its schedule ends is flagged in the table.
    rng : None, int, SeedSequence or Generator
        Root seed of the sampler and of the MCEM fit.
    progressbar : bool, default True
        Show progress bars.
    verbose : bool, default False
        Unused (nothing here runs PyMC's sampler); part of every example's ``run``.

    Returns
    -------
    Result
        ``posterior`` is the sampler's result; the figure is Gong's Figure 1.

    Raises
    ------
    ValueError
        Before any simulation, when the release is implausible under the prior
        (see :data:`LOG_ACCEPTANCE_FLOOR`).
    """
    seeds = as_seed_sequence(rng).spawn(2)
    mech = mechanism(epsilon=epsilon)
    plan = _sampler_plan(alpha, beta, epsilon, released, draws)
    exact = ExactPosterior(alpha=alpha, beta=beta, epsilon=epsilon, released=released)
    prior = st.gamma(alpha, scale=1.0 / beta)
    idata = _sample(
        plan, model(alpha=alpha, beta=beta), mech, released, exact, seeds[0], progressbar
    )
    abc = idata_draws(idata)["theta"]
    notes, diagnostics, flag = _abc_checks(plan, idata, abc, exact)
    label = "rejection ABC" if plan.method == "rejection_abc" else "importance ABC"
    rows = [
        *distribution_rows("exact (closed form)", "exact", {"theta": exact}),
        *(dataclasses.replace(r, flag=flag) for r in draw_rows(label, "exact", {"theta": abc})),
        *distribution_rows("prior", "prior", {"theta": prior}),
    ]
    if mle_schedule != "off":
        mcem_rows, mcem_notes, numbers = _mcem(
            epsilon, released, mle_schedule, seeds[1], progressbar
        )
        rows += mcem_rows
        notes += mcem_notes
        diagnostics.update(numbers)
    else:
        notes.append("MCEM: not run (--mle-schedule off)")
    rows += [
        *_mle_row(
            "MLE: exact (closed form)", "reference", exact_mle(epsilon=epsilon, released=released)
        ),
        *_mle_row("MLE: naive (s_dp as the count)", "naive", naive_mle(released=released)),
    ]
    curves = [("exact posterior", exact.pdf, {"color": "tab:green", "lw": 2})]
    try:
        naive = naive_posterior(alpha=alpha, beta=beta, released=released)
    except ValueError as err:
        notes.append(f"no naive posterior: {err}")
    else:
        rows[2:2] = distribution_rows("naive (s_dp as the count)", "naive", {"theta": naive})
        curves.append(("naive posterior", naive.pdf, {"color": "tab:red", "ls": ":", "lw": 2}))
    curves.append(("prior", prior.pdf, {"color": "tab:blue", "ls": "--", "lw": 1.5}))
    report = Report(
        "Poisson count with a Laplace release (Gong 2022, Section 5.1)",
        [
            f"prior theta ~ Gamma({alpha:g}, rate {beta:g}); s ~ Poisson(theta); "
            f"s_dp = s + Lap(1/epsilon), epsilon = {epsilon:g}; s_dp = {released:g}"
        ],
        rows,
        notes,
        diagnostics,
    )
    title = (
        rf"Gamma({alpha:g}, {beta:g}) prior, $\epsilon$ = {epsilon:g}, $s_{{dp}}$ = {released:g}"
    )
    figure = functools.partial(
        density_figure,
        draws=(f"{label} draws", abc),
        curves=curves,
        xlabel=r"$\theta$",
        title=title,
        marks=[("$s_{dp}$", released)],
        support=(0.0, math.inf),
    )
    return Result(report, idata, figure)


def check_options(*, released, epsilon, alpha, beta, draws, **_) -> None:
    """Refuse, before anything runs, a release implausible under the prior.

    Rejection ABC's acceptance rate is the closed-form evidence over the
    largest Laplace density; below ``exp(LOG_ACCEPTANCE_FLOOR)`` the message
    says which options to change. ``dpinfer run`` calls this first.

    Examples
    --------
    >>> check_options(released=37.4, epsilon=0.2, alpha=25.0, beta=1.0, draws=1000)
    >>> check_options(released=1e6, epsilon=0.2, alpha=25, beta=1, draws=9)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: the release 1e+06 is implausible under the prior Gamma(25, rate 1) ...
    """
    _sampler_plan(alpha, beta, epsilon, released, draws)


def run_example(out_dir, *, seed=None, progressbar: bool = True, **options) -> str:
    """Run :func:`run` (keyword ``options``) into ``out_dir`` and return the console summary.

    Writes ``posterior.nc`` (the ABC result), ``summary.csv``, ``summary.json``,
    ``poisson_count.png`` and ``manifest.json`` (last); see
    :func:`dpinfer.models._report.save_run`. This is ``dpinfer run poisson-count``.
    """
    result, manifest = save_run(
        EXAMPLE, out_dir, {**EXAMPLE.defaults(), **options}, seed=seed, progressbar=progressbar
    )
    return result.report.table() + f"\nwrote {', '.join(manifest['files'])} to {out_dir}"


def _mle_row(label: str, role: str, fit: dict) -> list:
    return mle_rows(label, role, {"theta": fit["estimate"]}, {"theta": fit["standard_error"]})


def _sampler_plan(alpha, beta, epsilon, released, draws) -> SamplerPlan:
    """Rejection ABC's cost from the closed-form evidence; refuse an implausible release."""
    alpha, beta = _check_prior(alpha, beta)
    log_rate = _log_evidence(alpha, beta, epsilon, released) - math.log(epsilon / 2.0)
    if not log_rate >= LOG_ACCEPTANCE_FLOOR:
        raise ValueError(
            f"the release {released:g} is implausible under the prior Gamma({alpha:g}, rate "
            f"{beta:g}) at epsilon = {epsilon:g}: its evidence is exp({log_rate:.4g}) times "
            "the largest Laplace density, so rejection ABC would need about "
            f"exp({-log_rate:.4g}) simulations per draw and the closed-form posterior's "
            f"quadrature is not reliable (the limit is exp({LOG_ACCEPTANCE_FLOOR:g})). Choose "
            "--alpha and --beta so that the prior mean alpha/beta is nearer the release, or "
            "check --release and --epsilon"
        )
    return plan_sampler(log_rate, draws, fallback="importance_abc", source="closed-form evidence")


def _sample(plan, model_, mech, released, exact, seed, progressbar):
    """Run the planned sampler: rejection ABC, or importance ABC with a matched proposal."""
    if plan.method == "rejection_abc":
        return dp.rejection_abc(
            model_,
            mech,
            released,
            draws=plan.draws,
            max_simulations=plan.max_simulations,
            rng=seed,
            progressbar=progressbar,
        )
    options = {
        "draws": max(plan.draws, IMPORTANCE_ROUND),
        "proposal": {"theta": _proposal(exact)},
    }
    target = min(plan.draws, IMPORTANCE_TARGET_ESS)
    try:
        return dp.importance_abc(
            model_,
            mech,
            released,
            **options,
            target_ess=target,
            max_simulations=IMPORTANCE_MAX_SIMULATIONS,
            rng=seed,
            progressbar=progressbar,
        )
    except dp.SimulationBudgetExceeded:
        # one round only; the report gives its ESS and the check flags a poor result
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return dp.importance_abc(
                model_, mech, released, **options, rng=seed, progressbar=progressbar
            )


def _proposal(exact):
    """Return a Gamma with the exact posterior's mean, twice its variance, shape <= alpha.

    Its right tail (rate ``mean / (2 var) <= (beta + 1) / 2``) and its left tail (shape at
    most the prior's) are heavier than the posterior's, so the importance weights are
    bounded in both tails.
    """
    mean, var = exact.mean(), 2.0 * exact.std() ** 2
    shape = min(mean * mean / var, exact.alpha)
    return st.gamma(shape, scale=mean / shape)


def _abc_checks(plan, idata, abc, exact) -> tuple[list[str], dict, str]:
    """Check the sampler against the closed forms: mean (z on the ESS), evidence, cost."""
    attrs = idata.posterior.attrs
    n_sim = int(attrs["n_simulations"])
    rejection = plan.method == "rejection_abc"
    ess = float(abc.size if rejection else idata.attrs["ess_kish"])
    z = (float(np.mean(abc)) - exact.mean()) / (exact.std() / math.sqrt(ess))
    # |z| > 4.5 happens with probability 7e-6 for a correct sampler; below an ESS of
    # 100 the weights are too uneven for the z test or the summary to be trusted
    flag = "" if abs(z) <= 4.5 else f"disagrees with the closed form (z = {z:+.1f})"
    if ess < 100:
        flag = f"ESS only {ess:.0f}: unreliable, see the closed form"
    expected = math.exp(plan.log_acceptance)
    diagnostics = {
        "sampler": plan.method,
        "n_simulations": n_sim,
        "acceptance_rate_exact": expected,
        "predicted_rejection_simulations": plan.expected_simulations,
        "ess": ess,
        "mean_z": z,
        "log_evidence_abc": float(attrs["log_evidence"]),
        "log_evidence_exact": exact.log_evidence,
    }
    notes = [plan.note]
    if rejection:
        rate = float(attrs["acceptance_rate"])
        se = math.sqrt(expected * (1 - expected) / n_sim)
        ks = st.kstest(abc, exact.cdf)
        notes += [
            f"rejection ABC: {abc.size} draws from {n_sim:,} simulations; KS test against "
            f"the exact CDF: D = {ks.statistic:.4f}, p = {ks.pvalue:.3f}",
            f"acceptance rate {rate:.4%} (s.e. {se:.4%}); evidence / max eta by summation "
            f"{expected:.4%} (z = {(rate - expected) / se:+.2f})",
        ]
        diagnostics.update(
            acceptance_rate=rate, ks_statistic=float(ks.statistic), ks_pvalue=float(ks.pvalue)
        )
    else:
        notes.append(
            f"importance ABC: {n_sim:,} particles from a Gamma proposal matched to the exact "
            f"posterior (variance doubled), Kish ESS {ess:,.0f}; mean {np.mean(abc):.4g} "
            f"against the exact {exact.mean():.4g} (z = {z:+.2f} on the ESS)"
        )
    notes.append(
        f"log evidence: ABC {float(attrs['log_evidence']):.5f}, exact {exact.log_evidence:.5f}"
    )
    return notes, diagnostics, flag


def _mcem(epsilon, released, schedule, seed, progressbar) -> tuple[list, list, dict]:
    """Fit the MLE by MCEM; return its row (flagged unless converged), notes and numbers.

    The notes give the fit and its Wald and profile-likelihood intervals.
    """
    fit = mle(
        epsilon=epsilon,
        released=released,
        start=max(released, 1.0),
        schedule=MCEM_SCHEDULES[schedule],
        rng=seed,
        progressbar=progressbar,
    )
    flag = "" if fit.converged else "not converged"
    rows = mle_rows(
        "MLE: Monte Carlo EM + Louis", "exact", fit.estimate, fit.standard_error, flag=flag
    )
    note = (
        f"MCEM: {fit.attrs['schedule']} schedule from the naive MLE, {fit.iterations} "
        f"iterations, {fit.n_simulations:,} simulations, Monte Carlo s.e. of theta "
        f"{fit.monte_carlo_se['theta']:.2g}; converged: {fit.converged}"
    )
    numbers = {
        "mcem_iterations": fit.iterations,
        "mcem_simulations": fit.n_simulations,
        "mcem_converged": bool(fit.converged),
    }
    interval_notes, interval_numbers = mle_interval_notes(fit, progressbar=progressbar)
    return rows, [note, *interval_notes], {**numbers, **interval_numbers}


# --- maximum likelihood (Gong 2022, Section 4 and Appendix E) -----------------------


def likelihood() -> dp.Likelihood:
    """Return the Poisson log-likelihood from PyMC, with score and Hessian by autodiff.

    Declares the exponential family: sufficient statistic ``b(s) = s`` and
    the M-step ``theta = E(s | s_dp, theta_t)`` (Gong 2022, eqs. 4.2-4.3).

    Examples
    --------
    >>> import numpy as np
    >>> lik = likelihood()
    >>> float(lik.hessian(np.array([37.4]), {"theta": np.array([37.4])})[0, 0, 0])
    -0.026737967914438502
    """
    import pymc as pm

    return dp.Likelihood.from_pymc(
        lambda p: pm.Poisson.dist(mu=p["theta"]),
        params=["theta"],
        support={"theta": "positive"},
        exponential_family=dp.ExponentialFamily(statistic=_identity, maximize=_poisson_mle),
    )


def mle(
    *,
    epsilon: float = EPSILON,
    released: float = RELEASED,
    start: float = 1.0,
    schedule="staged",
    rng=None,
    progressbar: bool = False,
    **kwargs,
) -> dp.MCEMResult:
    """Maximum likelihood estimate of ``theta`` from the release, by Monte Carlo EM.

    Parameters
    ----------
    epsilon, released : float
        The privacy budget and the release (Gong: 0.2 and 37.4).
    start : float, default 1.0
        Starting value (Gong's ``theta^(1) = 1``).
    schedule : {"staged", "auto"} or schedule, default "staged"
        Gong's Appendix E stages, or the ascent-based schedule.
    rng, progressbar, **kwargs
        Passed to :func:`dpinfer.mcem`.

    Returns
    -------
    dpinfer.MCEMResult
        Gong reports ``theta = 37.237`` and observed information ``1.582e-2``
        (naive: 37.4 and ``2.674e-2``).

    Examples
    --------
    >>> fit = mle(schedule="auto", rng=1)
    >>> round(fit.estimate["theta"]), round(float(fit.observed_information[0, 0]), 3)
    (37, 0.016)
    """
    model_ = dp.Model(
        prior={"theta": st.gamma(25.0)}, simulate=_simulate_count, likelihood=_shared_likelihood()
    )
    return dp.mcem(
        model_,
        mechanism(epsilon=epsilon),
        released,
        start={"theta": start},
        schedule=schedule,
        rng=rng,
        progressbar=progressbar,
        **kwargs,
    )


def naive_mle(*, released: float = RELEASED) -> dict:
    """Return the naive MLE, which treats the release as the count: ``theta = s_dp``.

    Returns
    -------
    dict
        ``estimate``, ``information`` (``s_dp / theta^2 = 1 / s_dp``) and
        ``standard_error``.

    Examples
    --------
    >>> naive_mle()["information"]  # Gong: 2.674e-2
    0.026737967914438502
    """
    released = float(released)
    if not (released > 0 and math.isfinite(released)):
        return {"estimate": math.nan, "information": math.nan, "standard_error": math.nan}
    return {
        "estimate": released,
        "information": 1.0 / released,
        "standard_error": math.sqrt(released),
    }


def exact_mle(*, epsilon: float = EPSILON, released: float = RELEASED) -> dict:
    """Return the MLE and observed information of the exact log-likelihood (no Monte Carlo).

    Maximises :func:`log_likelihood` (Appendix E's closed form, exact far in the
    tails too; ``tests/models`` check it against the sum over the count) with
    scipy, and differentiates it twice numerically: the reference for
    :func:`mle`. A release near or below 0 can put the maximum at the boundary
    ``theta = 0``: the estimate is then 0, without information or standard error.

    Examples
    --------
    >>> ref = exact_mle()
    >>> round(ref["estimate"], 3), round(ref["information"], 5)  # Gong: 37.237, 1.582e-2
    (37.237, 0.01582)
    """
    from scipy.optimize import minimize_scalar

    def loglik(theta):
        return float(log_likelihood(np.array([theta]), released=released, epsilon=epsilon)[0])

    res = minimize_scalar(
        lambda x: -loglik(x),
        bounds=(1e-6, 3 * max(released, 1.0) + 60.0 / epsilon),
        method="bounded",
        options={"xatol": 1e-10},
    )
    theta = float(res.x)
    if theta < 1e-5:
        # the likelihood rises toward theta = 0 (a release near or below 0): the MLE is the
        # boundary, without a standard error (as MCEM reports it)
        return {"estimate": 0.0, "information": math.nan, "standard_error": math.nan}
    h = 1e-3 * theta
    info = -(loglik(theta + h) - 2 * loglik(theta) + loglik(theta - h)) / h**2
    se = info**-0.5 if info > 0 and math.isfinite(info) else math.nan
    return {"estimate": theta, "information": info, "standard_error": se}


@functools.cache
def _shared_likelihood() -> dp.Likelihood:
    # one instance, so its compiled PyTensor functions are reused across fits
    return likelihood()


def _identity(s):
    return s


def _poisson_mle(mean):
    return {"theta": float(mean[0])}


# --- internals ---------------------------------------------------------------------


#: Above this mean the count is drawn from its normal approximation, capped at 2**62
#: (NumPy's Poisson sampler refuses means above about 1e19; the approximation's total
#: variation error is below 1e-6, and such counts are never near a release of the example).
_POISSON_NORMAL_ABOVE = 1e12


def _simulate_count(params, rng):
    theta = np.asarray(params["theta"], dtype=float)
    huge = theta > _POISSON_NORMAL_ABOVE
    if not np.any(huge):
        return rng.poisson(theta)
    # a sampler's random walk may propose such means in a vague prior's tail
    counts = rng.poisson(np.where(huge, 0.0, theta))
    big = np.minimum(theta[huge], 2.0**62)
    normal = np.round(big + np.sqrt(big) * rng.standard_normal(big.shape))
    counts[huge] = np.minimum(normal, 2.0**62).astype(np.int64)
    return counts


def _count_loglik(s, params):
    return st.poisson.logpmf(s, params["theta"])


def _log_laplace(x, s, eps):
    return math.log(eps / 2.0) - eps * np.abs(x - s)


def _loglik_closed_form(theta, x, eps):
    k = math.floor(x)
    up, down = theta * math.exp(eps), theta * math.exp(-eps)
    with np.errstate(divide="ignore"):
        if k < 0:
            below = np.full(theta.shape, -np.inf)
            above_tail = np.zeros(theta.shape)
        else:
            below = _log_poisson_cdf(k, up)  # F_{theta e^eps}(k)
            above_tail = _log_poisson_sf(k, down)  # 1 - F_{theta e^-eps}(k)
    first = (up - theta) - eps * x + below
    second = (down - theta) + eps * x + above_tail
    return math.log(eps / 2.0) + np.logaddexp(first, second)


# Below this log probability the regularised incomplete gamma functions lose relative
# precision and then underflow to 0; the Poisson tail is summed term by term instead.
_LOG_TAIL_DIRECT = -600.0


def _log_poisson_cdf(k: int, lam) -> np.ndarray:
    """``log P(N <= k)`` for ``N ~ Poisson(lam)``, exact far in the lower tail too."""
    lam = np.asarray(lam, dtype=float)
    with np.errstate(divide="ignore"):
        out = np.atleast_1d(np.log(sc.gammaincc(k + 1, lam)))
    far = ~(out > _LOG_TAIL_DIRECT)
    if np.any(far):
        out[far] = _log_tail_sum(np.arange(k, -1, -1), np.atleast_1d(lam)[far])
    return out.reshape(lam.shape)


def _log_poisson_sf(k: int, lam) -> np.ndarray:
    """``log P(N > k)`` for ``N ~ Poisson(lam)``, exact far in the upper tail too."""
    lam = np.asarray(lam, dtype=float)
    with np.errstate(divide="ignore"):
        out = np.atleast_1d(np.log(sc.gammainc(k + 1, lam)))
    flat = np.atleast_1d(lam)
    far = ~(out > _LOG_TAIL_DIRECT) & (flat > 0)
    if np.any(far):
        ratio = float(np.max(flat[far])) / (k + 2)  # bounds every later term ratio
        size = _terms_needed(ratio)
        out[far] = _log_tail_sum(np.arange(k + 1, k + 1 + size), flat[far], ratio=ratio)
    return out.reshape(lam.shape)


def _log_tail_sum(counts: np.ndarray, lam: np.ndarray, *, ratio: float | None = None):
    """``log sum_s Poisson(s | lam)`` over a tail, from its largest term outward.

    The terms decrease geometrically away from the mean (ratio at most ``k / lam``
    in the lower tail, ``lam / (k + 2)`` in the upper one), and only a tail below
    ``exp(-600)`` comes here, so the mean is far and the ratio below 1: the terms
    kept leave a remainder below ``exp(-40)`` of the sum.
    """
    if ratio is None:  # lower tail: counts k, k-1, ..., 0
        ratio = float(counts[0]) / float(np.min(lam))
        counts = counts[: _terms_needed(ratio)]
    return sc.logsumexp(st.poisson.logpmf(counts[None, :], lam[:, None]), axis=1)


def _terms_needed(ratio: float) -> int:
    if not ratio < 1:  # a tail below exp(-600) is never this close to the mean
        raise RuntimeError(f"Poisson tail series with term ratio {ratio!r} >= 1")
    if ratio <= 0:
        return 1
    return int(math.ceil(40.0 / -math.log(ratio))) + 1


def _loglik_sum(theta, x, eps):
    flat = theta.ravel()
    out = np.empty(flat.shape)
    upper = max(math.ceil(x), 0) + 64
    for start in range(0, flat.size, 512):
        th = flat[start : start + 512]
        while True:
            s = np.arange(upper + 1)
            terms = st.poisson.logpmf(s[None, :], th[:, None]) + _log_laplace(x, s, eps)
            total = sc.logsumexp(terms, axis=1)
            tail = _log_laplace(x, upper + 1.0, eps) + st.poisson.logsf(upper, th)
            if np.all(tail - total <= math.log(_SUM_TOL)):
                break
            upper *= 2
        out[start : start + th.size] = total
    return out.reshape(theta.shape)


@functools.lru_cache(maxsize=64)
def _log_evidence(alpha, beta, eps, x):
    nb = st.nbinom(alpha, beta / (1.0 + beta))
    upper = max(math.ceil(x), 0) + 256
    while True:
        s = np.arange(upper + 1)
        total = float(sc.logsumexp(nb.logpmf(s) + _log_laplace(x, s, eps)))
        tail = _log_laplace(x, upper + 1.0, eps) + float(nb.logsf(upper))
        if tail - total <= math.log(_SUM_TOL):
            return total
        upper *= 2


@functools.lru_cache(maxsize=64)
def _quadrature(alpha, beta, eps, x, n=8001, tol=1e-13):
    log_z = _log_evidence(alpha, beta, eps, x)
    prior = st.gamma(alpha, scale=1.0 / beta)
    p_out = tol * math.exp(min(log_z - math.log(eps / 2.0), 0.0))
    lo = max(float(prior.ppf(p_out)), 1e-300)
    hi = float(prior.isf(p_out))
    u = np.linspace(math.log(lo), math.log(hi), n)
    theta = np.exp(u)
    log_pdf = prior.logpdf(theta) + _loglik_closed_form(theta, x, eps) - log_z
    g = np.exp(log_pdf + u)  # density of u = log(theta)
    cdf = cumulative_simpson(g, x=u, initial=0.0)
    total = float(cdf[-1])
    cdf, g = cdf / total, g / total
    spline = CubicHermiteSpline(u, cdf, g)
    mean = float(simpson(g * theta, x=u))
    second = float(simpson(g * theta**2, x=u))
    return u, g, cdf, spline, total, (mean, math.sqrt(max(second - mean**2, 0.0)))


def _check_prior(alpha, beta) -> tuple[float, float]:
    return _validate.positive_finite("alpha", alpha), _validate.positive_finite("beta", beta)


def _check_theta(theta) -> np.ndarray:
    arr = np.asarray(theta, dtype=float)
    if not np.all(arr > 0):
        raise ValueError("theta must be positive (Poisson means)")
    return arr
