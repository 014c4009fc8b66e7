r"""Naive Bayes log-linear model from Laplace-privatised cell proportions.

The example of Xiong, Ju and Zhang (2023, Supplement S3.3), after Karwa et al.
(2015). Each of ``n = 100`` records has a class :math:`y \in \{1, 2\}` and
``K = 2`` features :math:`x_k \in \{1, 2\}`, independent given the class:

.. math:: y \sim \mathrm{Categorical}(p_1, p_2), \qquad
          x_k \mid y = i \sim \mathrm{Categorical}(p^k_{i,1}, p^k_{i,2}).

Every probability vector has a Dirichlet(2, 2) prior. With two levels a
Dirichlet(2, 2) vector :math:`(q, 1 - q)` is :math:`q \sim \mathrm{Beta}(2, 2)`,
so the model has five free parameters (:data:`PARAMETER_NAMES`):
``p_class`` :math:`= p_1 = \Pr(y = 1)` and ``p_x{k}_y{i}``
:math:`= p^k_{i,1} = \Pr(x_k = 1 \mid y = i)`.

**Statistics.** The sufficient statistics are the ``K`` class-by-feature
tables :math:`n^k_{i,j} = \#\{y = i, x_k = j\}`, released as proportions
:math:`r^k_{i,j} = n^k_{i,j} / n`: eight numbers in the paper's order
(class ``i``, then feature ``k``, then level ``j``; :data:`CELL_NAMES`).

**Mechanism and neighbouring relation.** Neighbouring datasets differ by
*replacing* one record (``n`` is public). A replacement moves one count of
each of the ``K`` tables from one cell to another, so the l1 sensitivity of
the counts is ``2K = 4`` and that of the proportions ``2K / n``. Independent
Laplace noise of scale :math:`2K / (n\epsilon)` on each proportion, as in
the paper, gives ε-DP; :func:`mechanism` declares exactly this. (Under
add/remove-one neighbours ``n`` would itself be private and the sensitivity
of the counts would be ``K``; that is not the relation used here.)

**Exact likelihood.** Because the noise is independent across cells and the
tables are independent binomials given the class counts, the likelihood of
a release is a finite sum (:func:`log_likelihood`),

.. math:: \pi(r_{dp} \mid \theta) = \sum_{n_1 = 0}^{n} \binom{n}{n_1} p_1^{n_1}
          p_2^{n - n_1} \prod_{k} T^k_1(n_1)\, T^k_2(n - n_1), \qquad
          T^k_i(m) = \sum_{a = 0}^{m} \binom{m}{a} (p^k_{i,1})^a (p^k_{i,2})^{m - a}
          \eta(r^k_{dp,i,1} \mid a/n)\, \eta(r^k_{dp,i,2} \mid (m - a)/n),

which the PyMC reference (:func:`pymc_reference`) samples with NUTS: a
route to the posterior that simulates nothing, independent of ABC.

**Which sampler.** Exact SMC-ABC keeps one simulated table per particle, and
its moves need a fresh table within a few noise scales of the release in
all eight cells. At ε = 1 (noise scale 4 counts) that works and SMC agrees
with the reference (see the tests). At the paper's ε = 10 (scale 0.4 counts)
it does not: on :data:`RELEASED`, with 2000 particles, the final moves
accept almost nothing, about 40 distinct particles remain and the result is
far from the reference. Use :func:`pymc_reference` there.

**The package.** :mod:`._data` holds the data, the statistics, the model and
the mechanism; :mod:`._exact` the exact likelihood and its PyMC reference;
:mod:`._records` the exact posterior given confidential tables and the record
model of :func:`dpinfer.da_mcmc`; :mod:`._run` the command-line example and
its report. Every public name is imported here.

References
----------
.. [1] Xiong, Y., Ju, N. and Zhang, S. (2023). Simulation-based inference
   for privacy-protected data. Supplement S3.3.
.. [2] Karwa, V., Kifer, D. and Slavković, A. B. (2015). Private posterior
   distributions from variational approximations. arXiv:1511.07896.

Examples
--------
>>> from dpinfer.models import naive_bayes as nb
>>> nb.mechanism(epsilon=10).scale[0].round(4)
np.float64(0.004)
>>> y, x = nb.confidential_data(rng=1)
>>> nb.statistics(y, x).sum().round(6)  # each of the K tables sums to 1
np.float64(2.0)
"""

from __future__ import annotations

from ._data import (
    ALPHA,
    CELL_NAMES,
    EPSILON,
    N_FEATURES,
    PARAMETER_NAMES,
    RELEASED,
    TRUE_PARAMS,
    N,
    confidential_data,
    mechanism,
    model,
    naive_posterior,
    release,
    sensitivity,
    simulate_statistics,
    statistics,
)
from ._exact import log_likelihood, pymc_model, pymc_reference
from ._records import exact_posterior, record_model
from ._run import EXAMPLE, run

__all__ = [
    "ALPHA",
    "CELL_NAMES",
    "EPSILON",
    "EXAMPLE",
    "N",
    "N_FEATURES",
    "PARAMETER_NAMES",
    "RELEASED",
    "TRUE_PARAMS",
    "confidential_data",
    "exact_posterior",
    "log_likelihood",
    "mechanism",
    "model",
    "naive_posterior",
    "pymc_model",
    "pymc_reference",
    "record_model",
    "release",
    "run",
    "sensitivity",
    "simulate_statistics",
    "statistics",
]
