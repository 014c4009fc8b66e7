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

from . import _checks, _likelihood, _mle, _run
from ._likelihood import (
    ALPHAS,
    EPSILON,
    RELEASED,
    evidence,
    log_evidence,
    log_likelihood,
    mechanism,
    model,
)
from ._mle import exact_mle, likelihood, mle, naive_mle
from ._posterior import (
    ExactPosterior,
    count_support,
    exact_log_posterior,
    exact_posterior_cdf,
    exact_posterior_pdf,
    exact_posterior_quantiles,
    naive_posterior,
    pymc_reference,
)
from ._run import LOG_ACCEPTANCE_FLOOR, check_options, run, run_example

# the example's description (``dpinfer run``), its settings, and what tests and benchmarks reach
EXAMPLE = _run.EXAMPLE
REFERENCE = _likelihood.REFERENCE
IMPORTANCE_TARGET_ESS = _checks.IMPORTANCE_TARGET_ESS
IMPORTANCE_MAX_SIMULATIONS = _checks.IMPORTANCE_MAX_SIMULATIONS
IMPORTANCE_ROUND = _checks.IMPORTANCE_ROUND
MCEM_SCHEDULES = _checks.MCEM_SCHEDULES
_sampler_plan = _run._sampler_plan
_shared_likelihood = _mle._shared_likelihood

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
