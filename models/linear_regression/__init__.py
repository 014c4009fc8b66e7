r"""Bayesian linear regression from Laplace-privatised sufficient statistics.

The example of Xiong, Ju and Zhang (2023, Section 4.2 and Supplement S3.2),
after Ju et al. (2022). Each of ``n = 100`` subjects has ``p = 2`` predictors
``x_i ~ N((0.9, -1.17), I_2)`` and an outcome

.. math:: y_i \mid x_i \sim N(\beta_0 + x_i^\top \beta_{1:2},\; \sigma^2 = 2),

with prior :math:`\beta \sim N(0, I_3)`. The "2" of the paper is read as the
*variance* :math:`\sigma^2` (its supplement writes :math:`\sigma^2 = 2`, and
this reading reproduces its naive posterior to two decimals; see
:func:`naive_posterior`). The distribution of the predictors is part of the
model: they are random, and the simulator draws new ones for every parameter
set, so the distribution of the statistics depends on :math:`\beta` alone.

**Clamping and normalisation.** Predictors and outcomes are clamped to
``[-10, 10]`` and divided by 10, so every entry of
:math:`\tilde x_i = (1, \mathrm{clip}(x_i)/10)` and :math:`\tilde y_i =
\mathrm{clip}(y_i)/10` lies in ``[-1, 1]`` (the intercept column stays 1).

**Statistics.** Nine numbers, each divided by ``n`` (the order of the authors'
code, :data:`STATISTIC_NAMES`): :math:`\tilde x^\top \tilde y` (3),
:math:`\tilde y^\top \tilde y` (1) and the five free entries of
:math:`\tilde x^\top \tilde x` at ``(0,1), (0,2), (1,1), (1,2), (2,2)``; the
``(0,0)`` entry is ``n / n = 1`` and is not released.

**Mechanism.** Independent Laplace noise of scale :math:`\Delta / \epsilon`
on each statistic, :math:`\Delta = (p^2 + 3p + 3)/n = 0.13`: the l1
sensitivity claimed by Xiong et al. for neighbouring datasets that differ by
*replacing* one subject (``n`` is public). It is a valid bound: the largest l1
change of the nine per-subject terms over ``[-1, 1]^3`` is about ``9.4``
(grid search, ``tests/models/test_linear_regression.py``), below ``13``.

**The release.** The authors' code prints the ε = 10 release multiplied by
``n``; :data:`RELEASED_CODE` holds those numbers and :data:`RELEASED` them
divided by ``n = 100``, which puts them on the scale of the statistics: they
equal the vector :math:`s^o_{dp,vec}` of Supplement S3.2 and lie within a
few noise scales of statistics simulated at the true
:math:`\beta^* = (-1.79, -2.89, -0.66)`.

**The package.** :mod:`._data` holds the statistics (:func:`statistics`),
a batched simulator (:func:`simulate_statistics`, :func:`model`), the
mechanism (:func:`mechanism`), confidential data and releases at any ε
(:func:`confidential_data`, :func:`release`); :mod:`._posteriors` the
conjugate posteriors given confidential statistics
(:func:`confidential_posterior`) and the naive posterior that treats the
release as confidential (:func:`naive_posterior`); :mod:`._pymc` a PyMC
data-augmentation reference (:func:`pymc_model`, :func:`pymc_reference`);
:mod:`._records` the record model of :func:`dpinfer.da_mcmc`
(:func:`record_model`); :mod:`._run` the command-line example and its report.
Every public name is imported here.

**Which sampler.** Exact SMC-ABC (``dp.smc_abc(model(), mechanism(), RELEASED)``)
uses the Laplace density as its kernel, with one simulated dataset per
particle. Up to ε = 10 it agrees with the PyMC reference (the tests check it)
at a fraction of the cost. When the noise is much smaller than the sampling
variability of the statistics its moves stop being accepted: final-stage
acceptance is about 1% at ε = 30 and 0.1% at ε = 100, and the population
degenerates. There record-level data augmentation is the tool:
``dp.da_mcmc(record_model(), mechanism(epsilon=100), released, n=N)`` imputes
the 100 records and mixes best exactly when the noise is small (the tests
check it against the PyMC data-augmentation reference at ε = 100, which also
mixes, with much slower steps).

References
----------
.. [1] Xiong, Y., Ju, N. and Zhang, S. (2023). Simulation-based inference
   for privacy-protected data. Section 4.2, Supplement S3.2.
.. [2] Ju, N., Awan, J., Gong, R. and Rao, V. (2022). Data augmentation MCMC
   for Bayesian inference from privatized data. NeurIPS.

Examples
--------
>>> from dpinfer.models import linear_regression as lr
>>> lr.RELEASED.shape, round(lr.SENSITIVITY, 2)
((9,), 0.13)
>>> post = lr.naive_posterior(lr.RELEASED)
>>> post.mean.round(2)
array([-4.63, -6.23, -5.1 ])
"""

from __future__ import annotations

from ._data import (
    CLAMP,
    EPSILON,
    NOISE_VARIANCE,
    RELEASED,
    RELEASED_CODE,
    SENSITIVITY,
    STATISTIC_NAMES,
    TRUE_BETA,
    X_MEAN,
    N,
    P,
    confidential_data,
    mechanism,
    model,
    release,
    sensitivity,
    simulate_statistics,
    statistics,
)
from ._posteriors import GaussianPosterior, confidential_posterior, naive_posterior
from ._pymc import pymc_model, pymc_reference
from ._records import record_model
from ._run import EXAMPLE, run

__all__ = [
    "CLAMP",
    "EPSILON",
    "EXAMPLE",
    "GaussianPosterior",
    "N",
    "NOISE_VARIANCE",
    "P",
    "RELEASED",
    "RELEASED_CODE",
    "SENSITIVITY",
    "STATISTIC_NAMES",
    "TRUE_BETA",
    "X_MEAN",
    "confidential_data",
    "confidential_posterior",
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
