"""Weighted L2 distance between summary statistics, clipped to bound its sensitivity."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike

from .. import _validate
from .base import Distance

__all__ = ["ClippedL2"]


class ClippedL2(Distance):
    r"""``min(||W (s(Y*) - s(Y))||_2, C)`` with non-finite distances mapped to ``C``.

    Parameters
    ----------
    clip : float
        The bound ``C``; any change of the confidential data moves the distance
        by at most ``C``, which is the sensitivity (Park et al. 2021, end of
        Section 4).
    weights : array_like, optional
        Per-statistic weights ``W`` (default 1).
    summary : callable, optional
        Maps a batch of datasets ``(T, ...)`` to statistics ``(T, k)``, and
        the observed dataset (with a leading axis of 1) likewise. Default: the
        data are already statistics.

    Notes
    -----
    A NaN or infinite distance (a failed simulation) is set to ``C`` *before*
    any privacy noise, so it cannot slip past the clip.
    """

    def __init__(
        self, clip: float, *, weights: ArrayLike | None = None, summary: Callable | None = None
    ) -> None:
        self.clip = _validate.positive_finite("clip", clip)
        self.weights = _validate.weights("weights", weights)
        self.summary = _validate.optional_callable("summary", summary)

    def sensitivity(self, n_observations: int) -> float:
        """Return the clip bound ``C``, whatever the data size."""
        return self.clip

    def settings(self) -> dict[str, float]:
        """Return the clip bound."""
        return {"clip": self.clip}

    def __call__(self, observed: ArrayLike, pseudo: ArrayLike) -> np.ndarray:
        """Clipped distances, shape ``(T,)``."""
        obs = _validate.confidential_numbers("observed", observed)[None]
        pse = np.asarray(pseudo, dtype=float)
        if self.summary is not None:
            obs, pse = self.summary(obs), self.summary(pse)
        obs = obs.reshape(1, -1)
        pse = pse.reshape(len(pse), -1)
        if pse.shape[1] != obs.shape[1]:
            raise ValueError(
                f"pseudo statistics have {pse.shape[1]} entries, observed have {obs.shape[1]}"
            )
        diff = pse - obs
        if self.weights is not None:
            if self.weights.size not in (1, diff.shape[1]):
                raise ValueError(
                    f"weights has {self.weights.size} entries, the statistics have {diff.shape[1]}"
                )
            diff = diff * self.weights
        with np.errstate(invalid="ignore", over="ignore"):
            dist = np.sqrt(np.sum(diff**2, axis=1))
        return np.where(np.isfinite(dist), np.minimum(dist, self.clip), self.clip)

    def __repr__(self) -> str:
        return f"ClippedL2(clip={self.clip!r})"
