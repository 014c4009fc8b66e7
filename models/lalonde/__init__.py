r"""Earnings of the NSW job-training experiment from DP summary statistics (Gong 2022, 5.2).

The Lalonde NSW data, Dehejia-Wahba sample (185 treated, 260 control; 1978
earnings ``y`` in $1k). The model (Gong 2022, Appendix F) is

.. math:: y_i \mid z_i, \theta \sim N(\mu + \tau z_i,\ \sigma_t^2 z_i + \sigma_c^2 (1 - z_i)),

with the sufficient statistic :math:`s = (\bar y_t, \bar y_c, s_t^2, s_c^2)`
(group means and unbiased sample variances), generated as

.. math:: \bar y_t \sim N(\mu + \tau, \sigma_t^2 / n_t),\quad
          \bar y_c \sim N(\mu, \sigma_c^2 / n_c),\quad
          s_g^2 \sim \frac{\sigma_g^2}{n_g - 1} \chi^2_{n_g - 1}.

**Priors, and our reading of them.** Gong writes :math:`\tau \sim N(0, 5)`,
:math:`\mu \sim N(4, 5)` and :math:`\sigma_t, \sigma_c \sim Gamma(2, 0.2)`
and fitted the model in RStan. We read them in Stan's conventions: the second
argument of a normal is the *standard deviation* (5, not a variance of 5), and
``Gamma(2, 0.2)`` is shape 2 and *rate* 0.2 (mean 10, sd about 7.1 in $1k),
a prior on the standard deviations :math:`\sigma_t, \sigma_c` (not on the
variances).

**The release.** Income is clamped to [0, 100] $1k and both groups are public
and larger than 100 people, so replacing one person's income moves a group
mean by at most 1 and a group variance by at most 100 ($1k squared):
sensitivities (1, 1, 100, 100). Laplace noise of scales (3, 3, 6, 6) (Gong's
inverse bandwidths 1/3, 1/3, 1/6, 1/6) spends epsilon = 1/3 on each mean and
100/6 on each variance. Under Gong's neighbouring relation (one person's income
changes, group membership is public) only one group's two statistics move,
so the release is (1/3 + 100/6) = 17-DP; :meth:`Laplace.privacy` of
:func:`mechanism` reports the conservative sum over all four coordinates,
34, which also covers a change in both groups. Gong notes this is a
deliberately inefficient budget; the clamping range exceeds every observed
income (max $60.3k) so the clamp does not change the statistics and no
truncation correction is needed.

**The package.** :mod:`._data` holds the data, the model and the release;
:mod:`._reference` the NUTS posteriors (PyMC reference, statistics observed
exactly, naive); :mod:`._exact` the exact log-likelihood by one-dimensional
integrals; :mod:`._mle` the maximum likelihood fits; :mod:`._run` the
command-line example and its report. Every public name is imported here.
:mod:`.survey` is a second, smaller model on the same convolutions (the mean
and variance of one survey's incomes), a test bed for Monte Carlo EM.

Examples
--------
>>> from dpinfer.models import lalonde
>>> [round(float(v), 3) for v in lalonde.confidential_statistics()]
[6.349, 4.555, 61.896, 30.072]
"""

from __future__ import annotations

from ._data import (
    N_CONTROL,
    N_TREATED,
    PARAMETERS,
    REFERENCE,
    SCALES,
    SENSITIVITIES,
    STATISTICS,
    confidential_statistics,
    load_data,
    mechanism,
    model,
    prior,
    release,
    simulate_statistics,
)
from ._exact import exact_log_likelihood, exact_mle
from ._mle import MLE_MAX_ITERATIONS, MLE_SCHEDULE, likelihood, mle, naive_mle
from ._reference import naive_posterior, naive_statistics, pymc_reference, statistics_posterior
from ._run import EXAMPLE, MEAN_RANGE, PILOT_SIMULATIONS, VARIANCE_RANGE, run, run_example

__all__ = [
    "EXAMPLE",
    "MEAN_RANGE",
    "MLE_MAX_ITERATIONS",
    "MLE_SCHEDULE",
    "N_CONTROL",
    "N_TREATED",
    "PARAMETERS",
    "PILOT_SIMULATIONS",
    "REFERENCE",
    "SCALES",
    "SENSITIVITIES",
    "STATISTICS",
    "VARIANCE_RANGE",
    "confidential_statistics",
    "exact_log_likelihood",
    "exact_mle",
    "likelihood",
    "load_data",
    "mechanism",
    "mle",
    "model",
    "naive_mle",
    "naive_posterior",
    "naive_statistics",
    "prior",
    "pymc_reference",
    "release",
    "run",
    "run_example",
    "simulate_statistics",
    "statistics_posterior",
]
