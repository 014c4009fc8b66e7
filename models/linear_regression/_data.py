r"""The linear regression example's data, statistics, model and mechanism.

See :mod:`dpinfer.models.linear_regression` for the example: ``n`` subjects
with predictors ``x ~ N(X_MEAN, I)`` and outcomes ``y | x ~ N(beta_0 + x beta,
2)``; nine clamped, normalised sufficient statistics (:data:`STATISTIC_NAMES`)
released with Laplace noise of scale ``sensitivity / epsilon``.

Examples
--------
>>> from dpinfer.models.linear_regression import _data as lrd
>>> lrd.STATISTIC_NAMES[3], lrd.sensitivity(n=1000)
('yty', 0.013)
"""

from __future__ import annotations

import math

import numpy as np
import scipy.stats as st

import dpinfer as dp
from dpinfer import validate
from dpinfer.random import RNGLike, as_generator

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
    n = validate.positive_int("n", n)
    p = validate.positive_int("p", p)
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
    c = validate.positive_finite("clamp", clamp)
    x = validate.numeric_array("x", x, confidential=True).astype(float, copy=False)
    y = validate.numeric_array("y", y, confidential=True).astype(float, copy=False)
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
    n = validate.positive_int("n", n)
    mean = validate.finite_array("x_mean", x_mean)
    if mean.ndim != 1:
        raise ValueError(f"x_mean must be a vector of length p, got shape {mean.shape}")
    p = mean.size
    beta = validate.finite_array("beta", beta)
    if beta.ndim != 2 or beta.shape[1] != p + 1:
        raise ValueError(f"beta must have shape (batch, {p + 1}), got shape {beta.shape}")
    sd = math.sqrt(validate.positive_finite("noise_variance", noise_variance))
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
    n = validate.positive_int("n", n)

    def simulate(params, rng):
        return simulate_statistics(params["beta"], rng=rng, n=n)

    return dp.Model(
        prior={"beta": st.multivariate_normal(np.zeros(P + 1), np.eye(P + 1))}, simulate=simulate
    )


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
    beta = validate.finite_array("beta", beta, shape=(P + 1,))
    n = validate.positive_int("n", n)
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


# --- internals ---------------------------------------------------------------------


def _check_data(x, y) -> tuple[np.ndarray, np.ndarray]:
    # confidential data: messages give shapes and positions, never values
    x = validate.finite_array("x", x, confidential=True)
    y = validate.finite_array("y", y, confidential=True)
    if x.ndim != 2 or x.shape[1] != P or y.shape != (x.shape[0],) or x.shape[0] < 1:
        raise ValueError(
            f"x must have shape (n, {P}) and y shape (n,) with n >= 1; got x of shape "
            f"{x.shape} and y of shape {y.shape}"
        )
    return x, y
