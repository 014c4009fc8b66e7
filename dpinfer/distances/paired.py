"""Record-paired, clipped and averaged distance: sensitivity ``C / n`` for ``n`` records."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from .. import _validate
from .base import Distance

__all__ = ["PairedClippedL2"]

_BLOCK_ENTRIES = 2**20  # statistics held at once when computing distances block by block


class PairedClippedL2(Distance):
    r"""Mean over records of a clipped weighted L2 distance, records paired by index.

    The confidential data are ``n`` records ``y*_1..y*_n`` (each a vector of
    ``k`` statistics) and every pseudo-dataset is ``n`` simulated records
    ``y_1..y_n``:

    .. math::

        \rho(Y^*, Y) = \frac1n \sum_{i=1}^n \min\big(d(y^*_i, y_i),\ C\big),
        \qquad d(y^*, y) = \Big(\sum_k \big(w_k\, r_k(y^*, y)\big)^2\Big)^{1/2},

    with :math:`r_k = y_k - y^*_k`, or the relative error
    :math:`(y_k - y^*_k) / y^*_k` for the statistics listed in ``relative``.
    A pair whose distance is not finite (NaN statistics, a relative error
    against 0) counts as :math:`C`.

    Parameters
    ----------
    clip : float
        The bound ``C`` of each pair's distance.
    weights : array_like, optional
        Weights ``w_k`` of the ``k`` statistics (default 1).
    relative : sequence of int, optional
        Indices of the statistics compared by relative error.

    Notes
    -----
    Neighbouring datasets have the same number ``n`` of records and differ in
    one of them (replacement); the pseudo-records are public. Replacing
    ``y*_i`` changes only the ``i``-th term, which lies in ``[0, C]``, so
    :math:`|\rho(Y^*, Y) - \rho(Y^{*\prime}, Y)| \le C / n`: the sensitivity
    is ``C / n`` (Park et al. 2021, Section 6.3, where ``C = 200``). Clipping
    each pair before averaging is what bounds it; clipping the average
    instead would give ``C``. Pseudo-datasets are processed in blocks, so
    memory stays bounded whatever their number.

    Examples
    --------
    >>> import numpy as np
    >>> from dpinfer.distances import PairedClippedL2
    >>> dist = PairedClippedL2(10.0, weights=[1.0, 2.0], relative=[1])
    >>> observed = np.array([[0.0, 1.0], [5.0, 2.0]])
    >>> pseudo = np.array([[[3.0, 1.0], [5.0, 3.0]]])  # one pseudo-dataset of 2 records
    >>> dist.pairwise(observed, pseudo)
    array([[3., 1.]])
    >>> dist(observed, pseudo), dist.sensitivity(2)
    (array([2.]), 5.0)
    """

    def __init__(
        self, clip: float, *, weights: ArrayLike | None = None, relative: Sequence[int] = ()
    ) -> None:
        self.clip = _validate.positive_finite("clip", clip)
        self.weights = _validate.weights("weights", weights)
        if self.weights is not None and self.weights.ndim != 1:
            raise ValueError(f"weights must be one-dimensional, got shape {self.weights.shape}")
        indices = _validate.integer_array("relative", relative)
        if indices.ndim != 1:
            raise ValueError(f"relative must be a list of coordinate indices, got {relative!r}")
        self.relative = tuple(int(k) for k in indices)
        if any(k < 0 for k in self.relative):
            raise ValueError(f"relative must hold non-negative indices, got {relative!r}")

    def sensitivity(self, n_observations: int) -> float:
        """Return ``C / n``."""
        return self.clip / _validate.positive_int("n_observations", n_observations)

    def settings(self) -> dict[str, float]:
        """Return the clip bound."""
        return {"clip": self.clip}

    def pairwise(self, observed: ArrayLike, pseudo: ArrayLike) -> np.ndarray:
        """Unclipped distances of the paired records, shape ``(T, n)`` (``inf`` if not finite).

        Parameters
        ----------
        observed : array_like
            ``(n, k)`` records.
        pseudo : array_like
            ``(T, n, k)`` pseudo-datasets of ``n`` records each.
        """
        obs, pse = self._check(observed, pseudo)
        out = np.empty(pse.shape[:2])
        step = max(1, _BLOCK_ENTRIES // max(1, obs.size))
        for start in range(0, len(pse), step):
            out[start : start + step] = self._pairs(obs, pse[start : start + step])
        return out

    def __call__(self, observed: ArrayLike, pseudo: ArrayLike) -> np.ndarray:
        """Mean clipped distance of each pseudo-dataset to the records, shape ``(T,)``."""
        obs, pse = self._check(observed, pseudo)
        out = np.empty(len(pse))
        step = max(1, _BLOCK_ENTRIES // max(1, obs.size))
        for start in range(0, len(pse), step):
            pairs = self._pairs(obs, pse[start : start + step])
            out[start : start + step] = np.minimum(pairs, self.clip).mean(axis=1)
        return out

    def _pairs(self, obs: np.ndarray, pse: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            diff = pse - obs
            if self.relative:
                cols = list(self.relative)
                diff[..., cols] /= obs[:, cols]
            if self.weights is not None:
                diff *= self.weights
            dist = np.sqrt(np.sum(diff**2, axis=-1))
        return np.where(np.isfinite(dist), dist, np.inf)

    def _check(self, observed, pseudo) -> tuple[np.ndarray, np.ndarray]:
        obs = _validate.confidential_numbers("observed", observed)
        pse = np.asarray(pseudo, dtype=float)
        if obs.ndim != 2 or pse.ndim != 3 or pse.shape[1:] != obs.shape:
            raise ValueError(
                "observed must be (n, k) records and pseudo (T, n, k) pseudo-datasets of as "
                f"many records, got shapes {obs.shape} and {pse.shape}"
            )
        k = obs.shape[1]
        if self.weights is not None and self.weights.size != k:
            raise ValueError(f"weights has {self.weights.size} entries, the records have {k}")
        if any(j >= k for j in self.relative):
            raise ValueError(f"relative indices {self.relative} out of range for {k} statistics")
        return obs, pse

    def __repr__(self) -> str:
        return f"PairedClippedL2(clip={self.clip!r}, relative={self.relative!r})"
