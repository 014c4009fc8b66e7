r"""Gaussian posteriors of the linear regression's coefficients: confidential and naive.

See :mod:`dpinfer.models.linear_regression`. Both are conjugate updates of the
prior ``beta ~ N(0, I_3)``: with the confidential data themselves
(:func:`confidential_posterior`), or with a release taken for the clamped
statistics (:func:`naive_posterior`, the wrong posterior shown for comparison).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.stats as st

from dpinfer import validate
from dpinfer.random import RNGLike, as_generator

from ._data import (
    CLAMP,
    NOISE_VARIANCE,
    STATISTIC_NAMES,
    N,
    P,
    _check_data,
)

__all__ = ["GaussianPosterior", "confidential_posterior", "naive_posterior"]


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
        z = st.norm.ppf(0.5 + validate.probability_open("level", level) / 2)
        return self.mean - z * self.std, self.mean + z * self.std

    def rvs(self, size: int, *, rng: RNGLike = None) -> np.ndarray:
        """Draw ``size`` coefficient vectors, shape ``(size, 3)``."""
        size = validate.positive_int("size", size)
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
    >>> from dpinfer.models.linear_regression import TRUE_BETA, confidential_data
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
    >>> from dpinfer.models.linear_regression import RELEASED
    >>> lo, hi = naive_posterior(RELEASED).interval(0.95)
    >>> lo.round(2), hi.round(2)
    (array([-5.04, -6.57, -5.4 ]), array([-4.22, -5.9 , -4.79]))
    """
    s = validate.finite_array("released", released, shape=(len(STATISTIC_NAMES),))
    n = validate.positive_int("n", n)
    gram = _gram(s)
    eig, vec = np.linalg.eigh(gram)
    projected = bool(eig.min() < 0)
    if projected:
        gram = (vec * np.maximum(eig, 0.0)) @ vec.T
    scale = np.diag([1.0 / CLAMP, 1.0, 1.0])
    variance = NOISE_VARIANCE / CLAMP**2
    post = _conjugate(n * scale @ gram @ scale, n * scale @ s[:3], variance)
    return GaussianPosterior(post.mean, post.cov, projected, eig)


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
