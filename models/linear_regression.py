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

Contents: the statistics (:func:`statistics`), a batched simulator
(:func:`simulate_statistics`, :func:`model`), the mechanism
(:func:`mechanism`), confidential data and releases at any ε
(:func:`confidential_data`, :func:`release`), the conjugate posteriors given
confidential statistics (:func:`confidential_posterior`) and the naive
posterior that treats the release as confidential (:func:`naive_posterior`),
and a PyMC data-augmentation reference (:func:`pymc_model`,
:func:`pymc_reference`, in ``_linear_regression_pymc`` and imported on first use).

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

import scipy.stats as st

import dpinfer as dp
from dpinfer._rng import RNGLike, as_seed_sequence
from dpinfer.example import (
    NUTS_DRAWS,
    Example,
    Option,
    Report,
    Result,
    between,
    distribution_rows,
    draw_rows,
    idata_draws,
    integer,
    nuts_note,
    nuts_options,
    smc_note,
    value_rows,
    vector,
)

from ._linear_regression_data import (
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
from ._linear_regression_posteriors import (
    GaussianPosterior,
    confidential_posterior,
    naive_posterior,
)
from ._linear_regression_pymc import pymc_model, pymc_reference
from ._regression_records import record_model

__all__ = [
    # data, statistics, model and mechanism
    "N",
    "P",
    "X_MEAN",
    "NOISE_VARIANCE",
    "CLAMP",
    "EPSILON",
    "TRUE_BETA",
    "STATISTIC_NAMES",
    "RELEASED_CODE",
    "RELEASED",
    "sensitivity",
    "SENSITIVITY",
    "statistics",
    "simulate_statistics",
    "model",
    "mechanism",
    "confidential_data",
    "release",
    # the record model, the Gaussian posteriors and the PyMC reference
    "record_model",
    "GaussianPosterior",
    "confidential_posterior",
    "naive_posterior",
    "pymc_model",
    "pymc_reference",
    "run",
]

EXAMPLE = Example(
    name="linear-regression",
    title="Linear regression from Laplace-noised sufficient statistics: SMC-ABC and DA-NUTS",
    paper="Xiong, Ju & Zhang (2023), Section 4.2",
    seconds=60,
    module=__name__,
    smallest={"particles": 100, "nuts_draws": 100},
    options=(
        Option(
            "released",
            RELEASED,
            "the nine released statistics (normalised: the statistics lie in [-1, 1])",
            vector(9, between(-5, 5, hint="the normalised statistics lie in [-1, 1]")),
            flag="--release",
        ),
        Option("epsilon", EPSILON, "privacy budget of the release", between(0.5, 100)),
        Option("particles", 2000, "SMC-ABC particles", integer(100, 20_000)),
        NUTS_DRAWS,
    ),
)


def run(
    *,
    released=RELEASED,
    epsilon: float = EPSILON,
    particles: int = 2000,
    nuts_draws: int = 1000,
    rng: RNGLike = None,
    progressbar: bool = True,
    verbose: bool = False,
) -> Result:
    """Fit exact SMC-ABC, the PyMC data-augmentation reference and the naive posterior of ``beta``.

    The two samplers draw from two seeds spawned from ``rng`` (SMC-ABC the
    first); the report compares them with the naive posterior and the truth.

    Parameters
    ----------
    released : array_like
        The nine released statistics (default :data:`RELEASED`, Xiong et al.'s ε = 10 release).
    epsilon : float
        Privacy budget of the release.
    particles : int
        SMC-ABC particles.
    nuts_draws : int
        Draws and tuning steps per chain (2 chains) of the NUTS reference.
    rng : seed, optional
        Root seed of both samplers.
    progressbar : bool
        Show dpinfer's progress bars.
    verbose : bool
        Show PyMC's progress bars too.

    Returns
    -------
    Result
        ``posterior`` is the SMC-ABC result; ``extra["reference"]`` the NUTS one.
    """
    seeds = as_seed_sequence(rng).spawn(2)
    mech = mechanism(epsilon=epsilon)
    released = mech._check_released(released)
    smc = dp.smc_abc(
        model(), mech, released, particles=particles, rng=seeds[0], progressbar=progressbar
    )
    nuts = nuts_options(
        draws=nuts_draws, tune=nuts_draws, progressbar=progressbar, verbose=verbose
    )
    reference = pymc_reference(released, epsilon=epsilon, rng=seeds[1], **nuts)
    naive = naive_posterior(released)
    naive_dists = {
        f"beta[{j}]": st.norm(naive.mean[j], naive.std[j]) for j in range(len(naive.mean))
    }
    rows = [
        *draw_rows("exact (smc_abc)", "exact", idata_draws(smc, ["beta"])),
        *draw_rows("PyMC data augmentation", "reference", idata_draws(reference, ["beta"])),
        *distribution_rows("naive (release as data)", "naive", naive_dists),
        *value_rows("truth", "truth", {"beta": TRUE_BETA}),
    ]
    smc_text, diagnostics = smc_note("smc_abc", smc, "smc")
    nuts_text, nuts_numbers = nuts_note("NUTS reference", reference, "reference")
    notes = [
        smc_text,
        nuts_text,
        f"naive: released Gram matrix projected to PSD: {naive.projected}",
        f"privacy: {mech.privacy} (sensitivity {SENSITIVITY:g} of the normalised statistics)",
    ]
    diagnostics.update(nuts_numbers)
    report = Report(
        "Bayesian linear regression from Laplace-noised sufficient statistics "
        "(Xiong et al. 2023, Section 4.2)",
        [
            f"n = {N}, x ~ N({X_MEAN}, I), y | x ~ N(x beta, {NOISE_VARIANCE:g}), beta ~ N(0, I); "
            f"clamped to +-{CLAMP:g}; epsilon = {epsilon:g}",
        ],
        rows,
        notes,
        diagnostics,
    )
    return Result(report, smc, extra={"reference": reference})
