"""Maximum mean discrepancy with bounded kernels: exact and random-feature versions."""

from __future__ import annotations

import math
import numbers
from typing import cast

import numpy as np
from numpy.typing import ArrayLike

from .. import _validate
from .._rng import RNGLike, as_generator
from .base import DataDerived, Distance
from .kernels import GaussianKernel

__all__ = ["MMD", "RandomFeatureMMD"]

_GRAM_BUDGET = 2**24  # kernel entries held at once when batching exact MMD
_FEATURE_BUDGET = 2**19  # projections held at once by the random-feature MMD (cache-sized)


def as_datasets(pseudo, observed) -> tuple[np.ndarray, np.ndarray]:
    """Return ``observed`` as (N, d) and ``pseudo`` as (T, M, d) float arrays."""
    obs = _validate.confidential_numbers("observed", observed)
    obs = obs[:, None] if obs.ndim == 1 else obs
    pse = np.asarray(pseudo, dtype=float)
    pse = pse[..., None] if pse.ndim == 2 and obs.shape[1] == 1 else pse
    if obs.ndim != 2 or pse.ndim != 3 or pse.shape[2] != obs.shape[1]:
        raise ValueError(
            f"observed must be (N, d) or (N,) and pseudo (T, M, d) or (T, M); got shapes "
            f"{np.shape(observed)} and {np.shape(pseudo)}"
        )
    return pse, obs


class MMD(Distance):
    r"""Unsquared biased MMD with a bounded kernel (Park et al. 2021, Lemma 1).

    .. math:: \widehat{MMD}(X, Y) = \Big\| \frac1N \sum_i \phi(x_i)
              - \frac1M \sum_j \phi(y_j) \Big\|_{\mathcal H}

    Parameters
    ----------
    kernel : GaussianKernel or float
        A kernel with a ``bound`` attribute ``B_k`` and ``gram`` method, or a
        Gaussian kernel's bandwidth.

    Notes
    -----
    Replacing one of ``N`` observations moves the empirical mean embedding by at
    most ``2 sqrt(B_k) / N``, so by the triangle inequality the sensitivity is
    ``2 sqrt(B_k) / N`` (Lemma 1). Cost: ``O(T N M d)`` per call; pseudo-datasets
    are processed in batches sized to a fixed memory budget.
    """

    def __init__(self, kernel: GaussianKernel | float | DataDerived) -> None:
        if not hasattr(kernel, "gram"):
            if isinstance(kernel, bool) or not isinstance(kernel, numbers.Real | DataDerived):
                raise TypeError(
                    f"kernel must be a kernel (with a gram method) or a positive bandwidth, "
                    f"got {kernel!r}"
                )
            try:
                kernel = GaussianKernel(kernel)
            except ValueError as err:
                raise ValueError(f"kernel (a bandwidth): {err}") from None
        # a GaussianKernel, or a kernel of the user's with its gram, bound and bandwidth
        self.kernel = cast(GaussianKernel, kernel)

    def sensitivity(self, n_observations: int) -> float:
        """``2 sqrt(B_k) / N``."""
        return (
            2
            * math.sqrt(self.kernel.bound)
            / _validate.positive_int("n_observations", n_observations)
        )

    def settings(self) -> dict[str, float]:
        """Return the kernel bandwidth."""
        return {"bandwidth": self.kernel.bandwidth}

    def __call__(self, observed: ArrayLike, pseudo: ArrayLike) -> np.ndarray:
        """Distances from ``observed`` to each pseudo-dataset, shape ``(T,)``."""
        pse, obs = as_datasets(pseudo, observed)
        n, m = len(obs), pse.shape[1]
        k_xx = self.kernel.gram(obs, obs).mean()
        per_batch = max(1, _GRAM_BUDGET // max(1, m * (m + n)))
        out = np.empty(len(pse))
        for start in range(0, len(pse), per_batch):
            ys = pse[start : start + per_batch]
            k_yy = self.kernel.gram(ys, ys).mean(axis=(1, 2))
            k_xy = self.kernel.gram(obs[None], ys).mean(axis=(1, 2))
            out[start : start + per_batch] = np.sqrt(np.maximum(k_xx + k_yy - 2 * k_xy, 0.0))
        return out

    def __repr__(self) -> str:
        return f"MMD({self.kernel!r})"


class RandomFeatureMMD(Distance):
    r"""MMD with random Fourier features of a Gaussian kernel (cos/sin pairs).

    ``phi(x) = D^{-1/2} [cos(w_j x), sin(w_j x)]_{j=1..D}`` with
    ``w_j ~ N(0, I / l^2)`` drawn once from ``rng``, independently of any
    data. ``||phi(x)|| = 1``, so the feature kernel is bounded by ``B_k = 1``
    and the sensitivity is ``2 / N``, as for the exact MMD.

    Parameters
    ----------
    n_features : int
        Number of frequencies ``D`` (``2D`` features).
    bandwidth : float
        Gaussian kernel bandwidth ``l`` (from simulated data only).
    dim : int
        Dimension of one observation.
    rng : seed
        Draws the frequencies; public randomness.
    """

    def __init__(
        self, n_features: int, bandwidth: float | DataDerived, *, dim: int = 1, rng: RNGLike = None
    ) -> None:
        self.n_features = _validate.size("n_features", n_features, maximum=10**8)
        self.bandwidth = (
            bandwidth
            if isinstance(bandwidth, DataDerived)
            else (_validate.positive_finite("bandwidth", bandwidth))
        )
        self.dim = _validate.positive_int("dim", dim)
        gen = as_generator(rng)
        self.frequencies = gen.standard_normal((self.dim, self.n_features)) / float(bandwidth)

    def sensitivity(self, n_observations: int) -> float:
        """``2 / N`` (feature norm 1)."""
        return 2.0 / _validate.positive_int("n_observations", n_observations)

    def settings(self) -> dict[str, float]:
        """Return the kernel bandwidth."""
        return {"bandwidth": self.bandwidth}

    def mean_embedding(self, data: np.ndarray) -> np.ndarray:
        """Mean feature vector over the second-to-last axis: (..., M, d) -> (..., 2D)."""
        proj = data @ self.frequencies
        cos = np.cos(proj).mean(axis=-2)
        sin = np.sin(proj, out=proj).mean(axis=-2)
        return np.concatenate([cos, sin], axis=-1) / math.sqrt(self.n_features)

    def __call__(self, observed: ArrayLike, pseudo: ArrayLike) -> np.ndarray:
        """Distances from ``observed`` to each pseudo-dataset, shape ``(T,)``."""
        pse, obs = as_datasets(pseudo, observed)
        target = self.mean_embedding(obs)
        per_batch = max(1, _FEATURE_BUDGET // max(1, pse.shape[1] * self.n_features))
        out = np.empty(len(pse))
        for start in range(0, len(pse), per_batch):
            diff = self.mean_embedding(pse[start : start + per_batch]) - target
            out[start : start + per_batch] = np.sqrt(np.sum(diff**2, axis=-1))
        return out

    def __repr__(self) -> str:
        return (
            f"RandomFeatureMMD(n_features={self.n_features}, bandwidth={float(self.bandwidth)!r})"
        )
