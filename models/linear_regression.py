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

import math
from dataclasses import dataclass

import numpy as np
import scipy.stats as st

import dpinfer as dp
from dpinfer import _validate
from dpinfer._rng import RNGLike, as_generator, as_seed_sequence

from ._example import Example, Option, between, integer, vector
from ._report import (
    Report,
    Result,
    distribution_rows,
    draw_rows,
    idata_draws,
    nuts_note,
    smc_note,
    value_rows,
)

__all__ = [
    "CLAMP",
    "EPSILON",
    "N",
    "NOISE_VARIANCE",
    "P",
    "RELEASED",
    "RELEASED_CODE",
    "SENSITIVITY",
    "STATISTIC_NAMES",
    "TRUE_BETA",
    "X_MEAN",
    "GaussianPosterior",
    "confidential_data",
    "confidential_posterior",
    "mechanism",
    "model",
    "naive_posterior",
    "pymc_model",  # noqa: F822 (module __getattr__)
    "pymc_reference",  # noqa: F822 (module __getattr__)
    "record_model",
    "release",
    "run",
    "sensitivity",
    "simulate_statistics",
    "statistics",
]

#: Number of subjects.
N = 100
#: Number of predictors (the design has an intercept too: ``beta`` has ``P + 1`` entries).
P = 2
#: Mean of the predictors (their covariance is the identity).
X_MEAN = (0.9, -1.17)
#: Variance of the outcome given the predictors (the paper's sigma^2 = 2).
NOISE_VARIANCE = 2.0
#: Predictors and outcomes are clamped to ``[-CLAMP, CLAMP]`` and divided by ``CLAMP``.
CLAMP = 10.0
#: Privacy-loss budget of the published release.
EPSILON = 10.0
#: The data-generating coefficients of Supplement S3.2.
TRUE_BETA = (-1.79, -2.89, -0.66)
#: Names of the nine statistics, in release order.
STATISTIC_NAMES = (
    "xty_0",
    "xty_1",
    "xty_2",
    "yty",
    "xtx_01",
    "xtx_02",
    "xtx_11",
    "xtx_12",
    "xtx_22",
)
#: The epsilon = 10 release as the authors' code prints it (multiplied by ``n``).
RELEASED_CODE = np.array(
    [-38.2440, -6.6783, 3.1997, 27.1985, 9.8835, -13.8503, 2.1882, -2.2884, 3.4092]
)
#: The epsilon = 10 release on the scale of the statistics (``RELEASED_CODE / n``).
RELEASED = RELEASED_CODE / N

REFERENCE = (
    "Xiong, Y., Ju, N. and Zhang, S. (2023). Simulation-based inference for "
    "privacy-protected data. Section 4.2 and Supplement S3.2; after Ju et al. (2022)."
)

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
        Option(
            "nuts_draws",
            1000,
            "draws and tuning steps per chain of the NUTS reference",
            integer(100, 10_000),
        ),
    ),
)

_CHUNK = 2048  # parameter sets simulated at once: (2048, 100, 2) predictors, 3.3 MB


def sensitivity(*, n: int = N, p: int = P) -> float:
    r"""Return the l1 sensitivity :math:`(p^2 + 3p + 3)/n` of the normalised statistics.

    Parameters
    ----------
    n : int, default 100
        Number of subjects (public).
    p : int, default 2
        Number of predictors.

    Returns
    -------
    float

    Notes
    -----
    Neighbouring datasets differ by replacing one subject. Each statistic is
    a mean of per-subject terms in ``[-1, 1]``, so one replacement moves it by
    at most ``2/n`` (``1/n`` for squares); Xiong et al. (2023) bound the sum
    over the statistics jointly by :math:`(p^2 + 3p + 3)/n`, tighter than the
    coordinate-wise :math:`(p^2 + 4p + 3)/n`.

    Examples
    --------
    >>> sensitivity()
    0.13
    """
    n = _validate.positive_int("n", n)
    p = _validate.positive_int("p", p)
    return (p * p + 3 * p + 3) / n


SENSITIVITY = sensitivity()


def statistics(x, y, *, clamp: float = CLAMP) -> np.ndarray:
    r"""Clamped, normalised sufficient statistics of a batch of datasets.

    Parameters
    ----------
    x : array_like
        Predictors, shape ``(*batch, n, p)``.
    y : array_like
        Outcomes, shape ``(*batch, n)``.
    clamp : float, default 10
        Clamping bound ``c``: values are clipped to ``[-c, c]`` and divided by ``c``.

    Returns
    -------
    numpy.ndarray
        Shape ``(*batch, k)`` with ``k = (p + 1) + 1 + (p + 1)(p + 2)/2 - 1``
        (9 for ``p = 2``): :math:`\tilde x^\top \tilde y / n`,
        :math:`\tilde y^\top \tilde y / n` and the upper triangle of
        :math:`\tilde x^\top \tilde x / n` row by row without its ``(0, 0)``
        entry, where :math:`\tilde x = (1, \mathrm{clip}(x)/c)`.

    Examples
    --------
    >>> x = np.array([[1.0, -2.0], [30.0, 0.0]])
    >>> y = np.array([5.0, -12.0])
    >>> statistics(x, y).round(3)
    array([-0.25 , -0.475, -0.05 ,  0.625,  0.55 , -0.1  ,  0.505, -0.01 ,
            0.02 ])
    """
    c = _validate.positive_finite("clamp", clamp)
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.ndim < 2 or y.shape != x.shape[:-1]:
        raise ValueError(
            f"x must have shape (*batch, n, p) and y shape (*batch, n); got x of shape "
            f"{x.shape} and y of shape {y.shape}"
        )
    n = x.shape[-2]
    xt = np.clip(x, -c, c) / c
    yt = np.clip(y, -c, c) / c
    design = np.concatenate([np.ones((*xt.shape[:-1], 1)), xt], axis=-1)
    xty = np.einsum("...ni,...n->...i", design, yt) / n
    yty = np.einsum("...n,...n->...", yt, yt)[..., None] / n
    xtx = np.einsum("...ni,...nj->...ij", design, design) / n
    rows, cols = np.triu_indices(design.shape[-1])
    return np.concatenate([xty, yty, xtx[..., rows[1:], cols[1:]]], axis=-1)


def simulate_statistics(
    beta,
    *,
    rng: RNGLike,
    n: int = N,
    x_mean=X_MEAN,
    noise_variance: float = NOISE_VARIANCE,
    clamp: float = CLAMP,
) -> np.ndarray:
    """Simulate one dataset per coefficient vector and return its statistics.

    Parameters
    ----------
    beta : array_like
        Coefficients (intercept first), shape ``(batch, p + 1)``.
    rng : None, int, SeedSequence or Generator
        Source of randomness.
    n : int, default 100
        Subjects per dataset.
    x_mean : array_like, default (0.9, -1.17)
        Mean of the predictors (identity covariance); its length is ``p``.
    noise_variance : float, default 2
        Variance of ``y`` given ``x``.
    clamp : float, default 10
        Clamping bound.

    Returns
    -------
    numpy.ndarray
        Shape ``(batch, 9)`` for ``p = 2`` (see :func:`statistics`).

    Notes
    -----
    Every dataset draws its own ``n`` predictor vectors and outcomes, in
    blocks of 2048 datasets so memory stays bounded; the draws of a block
    depend only on the generator's state, so a seed reproduces the output.

    Examples
    --------
    >>> simulate_statistics(np.zeros((4, 3)), rng=0).shape
    (4, 9)
    """
    gen = as_generator(rng)
    n = _validate.positive_int("n", n)
    mean = _validate.finite_array("x_mean", x_mean)
    if mean.ndim != 1:
        raise ValueError(f"x_mean must be a vector of length p, got shape {mean.shape}")
    p = mean.size
    beta = _validate.finite_array("beta", beta)
    if beta.ndim != 2 or beta.shape[1] != p + 1:
        raise ValueError(f"beta must have shape (batch, {p + 1}), got shape {beta.shape}")
    sd = math.sqrt(_validate.positive_finite("noise_variance", noise_variance))
    width = (p + 1) + 1 + (p + 1) * (p + 2) // 2 - 1
    out = np.empty((len(beta), width))
    for lo in range(0, len(beta), _CHUNK):
        b = beta[lo : lo + _CHUNK]
        out[lo : lo + len(b)] = statistics(*_subjects(b, n, gen, x_mean=mean, sd=sd), clamp=clamp)
    return out


def _subjects(beta, n, gen, *, x_mean=X_MEAN, sd=math.sqrt(NOISE_VARIANCE)):
    """Draw ``n`` unclamped subjects per coefficient vector: ``x (batch, n, p)``, ``y (batch, n)``.

    The model's one data-generating process, shared by :func:`simulate_statistics`
    and the record model's ``simulate_records``.
    """
    x = np.asarray(x_mean) + gen.standard_normal((len(beta), n, len(x_mean)))
    noise = sd * gen.standard_normal(x.shape[:2])
    return x, beta[:, :1] + np.einsum("bnj,bj->bn", x, beta[:, 1:]) + noise


def model(*, n: int = N) -> dp.Model:
    """Return the Bayesian model: ``beta ~ N(0, I_3)`` and the statistics' simulator.

    Parameters
    ----------
    n : int, default 100
        Subjects per simulated dataset.

    Returns
    -------
    dpinfer.Model
        Prior ``{"beta": multivariate_normal(0, I_3)}``; ``simulate(params, rng)``
        returns ``(batch, 9)`` statistics.

    Examples
    --------
    >>> m = model()
    >>> p = m.prior.sample(5, np.random.default_rng(0))
    >>> m.simulate(p, np.random.default_rng(1)).shape
    (5, 9)
    """
    n = _validate.positive_int("n", n)

    def simulate(params, rng):
        return simulate_statistics(params["beta"], rng=rng, n=n)

    return dp.Model(
        prior={"beta": st.multivariate_normal(np.zeros(P + 1), np.eye(P + 1))}, simulate=simulate
    )


def record_model(*, n: int = N) -> dp.RecordModel:
    r"""Return the regression as a :class:`dpinfer.RecordModel` of ``n`` subjects.

    Parameters
    ----------
    n : int, default 100
        Number of subjects; the per-record statistic is divided by it, so
        pass the same ``n`` to :func:`dpinfer.da_mcmc`.

    Returns
    -------
    dpinfer.RecordModel
        Prior ``beta ~ N(0, I_3)``; records of shape ``(batch, n, 3)``
        holding ``(x_1, x_2, y)``; the per-record statistic, shape
        ``(batch, n, 9)``, in the order of :data:`STATISTIC_NAMES`; the
        conjugate ``update`` and the complete-data ``loglik``.

    Notes
    -----
    Given the unclamped records the posterior of ``beta`` is the conjugate
    Gaussian of :func:`confidential_posterior`: precision
    :math:`I + X^\top X / \sigma^2`, mean :math:`(I + X^\top X/\sigma^2)^{-1}
    X^\top y / \sigma^2` with :math:`X = (1, x)`. The clamp acts on the
    statistics only, never on the model of the records.

    Examples
    --------
    >>> m, rng = record_model(), np.random.default_rng(0)
    >>> records = m.simulate_records({"beta": np.zeros((2, 3))}, 100, rng)
    >>> t = m.statistics(records)
    >>> records.shape, t.shape
    ((2, 100, 3), (2, 100, 9))
    >>> bool(np.allclose(t.sum(axis=1), statistics(records[..., :2], records[..., 2])))
    True
    """
    from ._regression_records import build

    return build(_validate.positive_int("n", n))


def mechanism(*, epsilon: float = EPSILON, n: int = N) -> dp.Laplace:
    """Return the Laplace mechanism of the nine statistics: scale ``sensitivity / epsilon``.

    Parameters
    ----------
    epsilon : float, default 10
        Privacy-loss budget (positive, finite).
    n : int, default 100
        Number of subjects (fixes the sensitivity ``13 / n``).

    Returns
    -------
    dpinfer.Laplace
        ``event_shape == (9,)``; ``privacy.epsilon == epsilon``.

    Examples
    --------
    >>> mech = mechanism(epsilon=10)
    >>> mech.event_shape, round(float(mech.scale[0]), 12), mech.privacy.epsilon
    ((9,), 0.013, 10.0)
    """
    sens = sensitivity(n=n)
    return dp.Laplace.from_privacy(
        epsilon=epsilon, sensitivity=sens, event_shape=(len(STATISTIC_NAMES),)
    )


def confidential_data(
    *, beta=TRUE_BETA, n: int = N, rng: RNGLike = None
) -> tuple[np.ndarray, np.ndarray]:
    """Draw a confidential dataset ``(x, y)`` from the model at coefficients ``beta``.

    Parameters
    ----------
    beta : array_like, default TRUE_BETA
        Coefficients, intercept first (length 3).
    n : int, default 100
        Number of subjects.
    rng : None, int, SeedSequence or Generator
        Source of randomness (None: fresh OS entropy).

    Returns
    -------
    x : numpy.ndarray
        Predictors, shape ``(n, 2)`` (unclamped).
    y : numpy.ndarray
        Outcomes, shape ``(n,)`` (unclamped).

    Examples
    --------
    >>> x, y = confidential_data(rng=1)
    >>> x.shape, y.shape
    ((100, 2), (100,))
    """
    beta = _validate.finite_array("beta", beta, shape=(P + 1,))
    n = _validate.positive_int("n", n)
    gen = as_generator(rng)
    x = np.asarray(X_MEAN) + gen.standard_normal((n, P))
    y = beta[0] + x @ beta[1:] + math.sqrt(NOISE_VARIANCE) * gen.standard_normal(n)
    return x, y


def release(x, y, *, epsilon: float, rng: RNGLike = None) -> np.ndarray:
    """Release the statistics of a confidential dataset through the ε-DP Laplace mechanism.

    Parameters
    ----------
    x, y : array_like
        Predictors ``(n, 2)`` and outcomes ``(n,)``, finite.
    epsilon : float
        Privacy-loss budget.
    rng : None, int, SeedSequence or Generator
        Source of the privacy noise; None (fresh OS entropy) for a real release.

    Returns
    -------
    numpy.ndarray
        The nine released statistics.

    Notes
    -----
    A floating-point release; see :class:`dpinfer.Laplace` for Mironov's
    (2012) caveat.

    Examples
    --------
    >>> x, y = confidential_data(rng=1)
    >>> release(x, y, epsilon=10.0, rng=2).shape
    (9,)
    """
    x, y = _check_data(x, y)
    mech = mechanism(epsilon=epsilon, n=len(y))
    return mech.release(statistics(x, y), rng=rng)


@dataclass(frozen=True)
class GaussianPosterior:
    """A Gaussian posterior of ``beta`` with a summary of how it was obtained.

    Attributes
    ----------
    mean : numpy.ndarray
        Posterior mean, shape ``(3,)``.
    cov : numpy.ndarray
        Posterior covariance, shape ``(3, 3)``.
    projected : bool
        Whether the Gram matrix had to be projected to the nearest positive
        semi-definite matrix (:func:`naive_posterior`).
    gram_eigenvalues : numpy.ndarray
        Eigenvalues of the Gram matrix ``x^T x / n`` used, before projection.
    """

    mean: np.ndarray
    cov: np.ndarray
    projected: bool = False
    gram_eigenvalues: np.ndarray | None = None

    @property
    def std(self) -> np.ndarray:
        """Posterior standard deviations."""
        return np.sqrt(np.diag(self.cov))

    def interval(self, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
        """Equal-tailed credible interval of each coefficient."""
        z = st.norm.ppf(0.5 + _validate.probability_open("level", level) / 2)
        return self.mean - z * self.std, self.mean + z * self.std

    def rvs(self, size: int, *, rng: RNGLike = None) -> np.ndarray:
        """Draw ``size`` coefficient vectors, shape ``(size, 3)``."""
        size = _validate.positive_int("size", size)
        return as_generator(rng).multivariate_normal(self.mean, self.cov, size=size)


def confidential_posterior(x, y) -> GaussianPosterior:
    r"""Return the conjugate posterior of ``beta`` given the confidential (unclamped) data.

    Parameters
    ----------
    x, y : array_like
        Predictors ``(n, 2)`` and outcomes ``(n,)``.

    Returns
    -------
    GaussianPosterior

    Notes
    -----
    With :math:`X = (1, x)`, known :math:`\sigma^2 = 2` and prior
    :math:`N(0, I)`: precision :math:`I + X^\top X / \sigma^2`, mean
    :math:`(I + X^\top X/\sigma^2)^{-1} X^\top y / \sigma^2`. This is the
    "confidential posterior given x" of Xiong et al.'s Table 1: what the
    analyst would find with the data themselves, before clamping and noise.

    Examples
    --------
    >>> x, y = confidential_data(n=100_000, rng=3)
    >>> bool(np.abs(confidential_posterior(x, y).mean - TRUE_BETA).max() < 0.05)
    True
    """
    x, y = _check_data(x, y)
    design = np.column_stack([np.ones(len(y)), x])
    return _conjugate(design.T @ design, design.T @ y, NOISE_VARIANCE)


def naive_posterior(released, *, n: int = N) -> GaussianPosterior:
    r"""Return the naive posterior, which takes a release for the clamped statistics.

    Parameters
    ----------
    released : array_like
        Nine statistics in the order of :data:`STATISTIC_NAMES`.
    n : int, default 100
        Number of subjects.

    Returns
    -------
    GaussianPosterior
        ``projected`` says whether the released Gram matrix was not positive
        semi-definite and was projected.

    Notes
    -----
    On the normalised scale :math:`\tilde y = \tilde x \tilde\beta + e/10`
    with :math:`\tilde\beta = D\beta`, :math:`D = \mathrm{diag}(1/10, 1, 1)`,
    and noise variance :math:`\sigma^2/100 = 0.02` (ignoring the clamp). The
    conjugate update with the released :math:`G = \tilde x^\top \tilde x / n`
    (``(0,0)`` entry 1) and :math:`b = \tilde x^\top \tilde y / n` is

    .. math:: \Lambda = I + \frac{n}{0.02} D G D, \qquad
              \mu = \Lambda^{-1} \frac{n}{0.02} D b,

    on the original scale of :math:`\beta`. A released :math:`G` may fail to
    be positive semi-definite; it is then replaced by its nearest positive
    semi-definite matrix in Frobenius norm (negative eigenvalues set to 0;
    Higham 1988), and :math:`\Lambda \succeq I` stays invertible. This
    ignores both the noise and the clamp: it is the wrong posterior, shown
    for comparison as in Xiong et al.'s Table 1, which it reproduces.

    References
    ----------
    .. [1] Higham, N. J. (1988). Computing a nearest symmetric positive
       semidefinite matrix. Linear Algebra Appl. 103, 103-118.

    Examples
    --------
    >>> lo, hi = naive_posterior(RELEASED).interval(0.95)
    >>> lo.round(2), hi.round(2)
    (array([-5.04, -6.57, -5.4 ]), array([-4.22, -5.9 , -4.79]))
    """
    s = _validate.finite_array("released", released, shape=(len(STATISTIC_NAMES),))
    n = _validate.positive_int("n", n)
    gram = _gram(s)
    eig, vec = np.linalg.eigh(gram)
    projected = bool(eig.min() < 0)
    if projected:
        gram = (vec * np.maximum(eig, 0.0)) @ vec.T
    scale = np.diag([1.0 / CLAMP, 1.0, 1.0])
    variance = NOISE_VARIANCE / CLAMP**2
    post = _conjugate(n * scale @ gram @ scale, n * scale @ s[:3], variance)
    return GaussianPosterior(post.mean, post.cov, projected, eig)


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
    from ._linear_regression_pymc import pymc_reference

    reference = pymc_reference(
        released,
        epsilon=epsilon,
        draws=nuts_draws,
        tune=nuts_draws,
        chains=2,
        rng=seeds[1],
        progressbar=progressbar and verbose,
    )
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


def __getattr__(name: str):
    # The PyMC data-augmentation model lives in its own module (imported on first use).
    if name in ("pymc_model", "pymc_reference"):
        from . import _linear_regression_pymc

        return getattr(_linear_regression_pymc, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --- internals ---------------------------------------------------------------------


def _gram(s: np.ndarray) -> np.ndarray:
    """Return the released ``x~^T x~ / n`` as a symmetric matrix with ``(0, 0)`` entry 1."""
    k = P + 1
    rows, cols = np.triu_indices(k)
    gram = np.zeros((k, k))
    gram[rows, cols] = np.concatenate([[1.0], s[4:]])
    return gram + np.triu(gram, 1).T


def _conjugate(xtx, xty, variance) -> GaussianPosterior:
    precision = np.eye(len(xty)) + xtx / variance
    chol = np.linalg.cholesky(precision)
    cov = np.linalg.inv(chol).T @ np.linalg.inv(chol)
    cov = (cov + cov.T) / 2
    return GaussianPosterior(cov @ xty / variance, cov)


def _check_data(x, y) -> tuple[np.ndarray, np.ndarray]:
    x = _validate.finite_array("x", x)
    y = _validate.finite_array("y", y)
    if x.ndim != 2 or x.shape[1] != P or y.shape != (x.shape[0],) or x.shape[0] < 1:
        raise ValueError(
            f"x must have shape (n, {P}) and y shape (n,) with n >= 1; got x of shape "
            f"{x.shape} and y of shape {y.shape}"
        )
    return x, y
