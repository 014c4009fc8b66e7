"""Releases that suppress the cells whose noisy value falls below a threshold."""

from __future__ import annotations

from typing import Self

import numpy as np
from numpy.typing import ArrayLike

from .. import _validate
from ._additive import AdditiveNoise, exact_gap
from ._namespaces import NUMPY, pytensor_namespace
from ._numerics import difference
from ._params import broadcast_param, compact
from .base import Mechanism, Privacy

__all__ = ["Thresholded"]

_PUBLISH = ("at_least", "above")
_EXACT_FLOAT = 2.0**53  # integers beyond this are not all floats


class Thresholded(Mechanism):
    r"""A noisy release whose cells below a threshold are suppressed (published as NaN).

    The curator adds the noise of ``mechanism`` to every cell, then publishes
    a cell only when its noisy value is at least its threshold (or strictly
    above it); the other cells are suppressed, NaN in the released array, as
    in Wikimedia's pageviews by country.

    Parameters
    ----------
    mechanism : Laplace, Gaussian, DiscreteLaplace or DiscreteGaussian
        The noise added to each cell (an additive family, any event shape,
        per-cell scales allowed).
    threshold : float or array_like
        The threshold :math:`T`, scalar or one per cell.
    publish : {'at_least', 'above'}, default 'at_least'
        ``'at_least'`` publishes a cell whose noisy value :math:`y` has
        :math:`y \ge T`; ``'above'`` only when :math:`y > T`. (Wikimedia's
        documentation says "above" while its files behave as "at least".)

    Notes
    -----
    *Releases* are float arrays, also for the discrete families (NaN marks a
    suppressed cell); :meth:`logpdf`, :meth:`to_pymc` (``observed=``) and the
    samplers take such arrays. A published value below its threshold is
    impossible: its density is 0. In PyMC a suppressed cell is held at its cut
    (PyMC would impute a NaN) and a constant mask selects its term, a log-CDF
    expression with finite gradients far in both tails (the discrete Gaussian's
    is an Op, piecewise constant in the confidential value).

    *Density.* With :math:`X_j` the noise of cell :math:`j`, a published cell
    contributes the inner density :math:`\eta_j(y_j \mid s_j)` and a suppressed
    one the probability of suppression

    .. math:: P(Y_j \text{ suppressed} \mid s_j) = P(X_j \le c_j - s_j),

    with :math:`c_j = T_j` for the continuous families (where :math:`<` and
    :math:`\le` agree), and for integer releases the largest suppressed value:
    :math:`c_j = \lceil T_j \rceil - 1` (``'at_least'``) or
    :math:`\lfloor T_j \rfloor` (``'above'``). The density is with respect to
    counting measure on the suppressed state times the inner family's measure on
    published values, so it is the exact ABC kernel (Gong 2022) of the release as
    published. The log-probabilities of suppression keep their digits far in both
    tails (1e-300, or within 1e-17 of 1).

    *Privacy* is the inner mechanism's. Suppression looks only at the noisy
    value and a public threshold fixed in advance, never at the confidential
    data, so the published array is a function of the inner release:
    post-processing, which cannot weaken a differential privacy guarantee
    (Dwork & Roth 2014, Proposition 2.1). (A threshold computed from the
    confidential data would not be covered.)

    References
    ----------
    .. [1] Dwork and Roth (2014). The algorithmic foundations of differential
       privacy, Proposition 2.1.
    .. [2] Gong (2022). Exact inference with approximate computation for
       differentially private data via perturbations. Journal of Privacy and
       Confidentiality 12(2).

    Examples
    --------
    Wikimedia's lower-risk tier: discrete Gaussian noise at rho = 0.015 (l2
    sensitivity sqrt(10)), cells published when the noisy count is at least 90:

    >>> import math
    >>> import dpinfer as dp
    >>> noise = dp.DiscreteGaussian.from_zcdp(
    ...     rho=0.015, sensitivity=math.sqrt(10), event_shape=(4,)
    ... )
    >>> mech = dp.Thresholded(noise, threshold=90)
    >>> str(mech.privacy)
    '0.015-zCDP'
    >>> released = mech.release([40, 85, 300, 1200], rng=1)
    >>> mech.suppressed(released)  # doctest: +SKIP
    array([ True,  True, False, False])
    >>> mech.logpdf([np.nan, 95, 310, 1190], [[40, 85, 300, 1200]]).round(3)
    array([-11.924])
    """

    def __init__(
        self, mechanism: AdditiveNoise, *, threshold: ArrayLike, publish: str = "at_least"
    ) -> None:
        if isinstance(mechanism, Thresholded) or not isinstance(mechanism, AdditiveNoise):
            raise TypeError(
                "mechanism must be an additive noise mechanism (Laplace, Gaussian, "
                f"DiscreteLaplace or DiscreteGaussian), got {type(mechanism).__name__}: "
                f"{mechanism!r}"
            )
        publish = _validate.choice("publish", publish, _PUBLISH)
        self.mechanism = mechanism
        self.event_shape = mechanism.event_shape
        self.publish = publish
        self.threshold = _threshold_array(threshold, self.event_shape)
        self._cut = self._largest_suppressed(self.threshold)

    _cell_params = ("threshold", "_cut")

    @property
    def discrete(self) -> bool:  # type: ignore[override]
        """Whether confidential values and published cells are integers (the inner family's)."""
        return self.mechanism.discrete

    def _largest_suppressed(self, threshold: np.ndarray) -> np.ndarray:
        """``c_j``: a noisy value ``y`` is suppressed exactly when ``y <= c_j`` (see Notes)."""
        if not self.discrete:
            return threshold
        cut = np.floor(threshold) if self.publish == "above" else np.ceil(threshold) - 1
        if np.all(np.abs(threshold) < 2.0**62):  # exact integers, also beyond 2**53
            whole = np.floor(threshold) if self.publish == "above" else np.ceil(threshold)
            cut = whole.astype(np.int64) - (self.publish != "above")
        return cut

    def _publishes(self, y) -> np.ndarray:
        y = np.asarray(y, dtype=float)
        with np.errstate(invalid="ignore"):
            return y > self.threshold if self.publish == "above" else y >= self.threshold

    def suppressed(self, released: ArrayLike) -> np.ndarray:
        """Which cells of a release are suppressed (NaN), as a boolean array of the event shape."""
        return np.isnan(self._check_released(released))

    @property
    def cut(self) -> np.ndarray:
        """The cut :math:`c_j` of each cell: a noisy value is suppressed when at most it.

        The threshold itself for the continuous families; for integer releases
        the largest suppressed value (see Notes), int64 where it is exact.

        Examples
        --------
        >>> import dpinfer as dp
        >>> noise = dp.DiscreteLaplace(2.0, event_shape=(2,))
        >>> dp.Thresholded(noise, threshold=[9.5, 10]).cut
        array([9, 9])
        >>> dp.Thresholded(noise, threshold=[9.5, 10], publish="above").cut
        array([ 9, 10])
        """
        return self._cut

    # --- the curator's side -----------------------------------------------------------
    @property
    def _noise_scale(self):
        return self.mechanism._noise_scale

    def _noise_source(self, rng):
        return self.mechanism._noise_source(rng)

    def _sample(self, value, rng):
        return self._suppress(self.mechanism._sample(value, rng))

    def _quantile(self, value, u):
        return self._suppress(self.mechanism._quantile(value, u))

    def _suppress(self, y: np.ndarray) -> np.ndarray:
        keep = self._publishes(y)
        if self.discrete and np.any(keep & (np.abs(y) > _EXACT_FLOAT)):
            bad = np.argwhere(keep & (np.abs(y) > _EXACT_FLOAT))[:5].tolist()
            raise ValueError(
                "a published cell exceeds 2**53 in magnitude and cannot be written exactly "
                f"in a float array (positions {bad}); release such values without a threshold"
            )
        return np.where(keep, y, np.nan)

    # --- the analyst's side -----------------------------------------------------------
    def _log_density(self, xp, released, value):
        if xp is not NUMPY:
            raise NotImplementedError("Thresholded builds its PyTensor terms in _pymc_log_terms")
        released = np.asarray(released, dtype=float)
        value = np.asarray(value)
        shape = np.broadcast_shapes(released.shape, value.shape)
        mask = np.isnan(released)
        safe = np.where(mask, self._cut, released)
        inner = np.asarray(self.mechanism._log_density(NUMPY, safe, value), dtype=float)
        out = np.where(self._publishes(safe) | mask, np.broadcast_to(inner, shape), -np.inf)
        if mask.any():
            k = mask.size
            flat = out.reshape(*shape[: len(shape) - mask.ndim], k)
            idx = np.flatnonzero(mask)
            values = np.broadcast_to(value, shape).reshape(flat.shape)[..., idx]
            flat[..., idx] = self._at_cells(idx)._log_suppressed(values)
        return out

    def _log_suppressed(self, s) -> np.ndarray:
        """``log P(cell j suppressed | s)`` for every cell (``s`` of shape ``(..., *event)``)."""
        gap = exact_gap(self._cut, s)
        return np.asarray(self.mechanism._log_noise_cdf(NUMPY, gap), dtype=float)

    def _cell_log_suppressed(self, s, cells=None) -> np.ndarray:
        """``log P(Y_j below its threshold | s)`` elementwise, whatever was released.

        The per-cell interface of :class:`~dpinfer.Mechanism` (see its Notes):
        the term a suppressed cell contributes, as a function of candidates
        ``s`` of shape ``(..., *event_shape)`` or, with ``cells``, of the shape
        of ``cells``.
        """
        mech = self if cells is None else self._at_cells(cells)
        return mech._log_suppressed(np.asarray(s))

    def _cell_form(self, released):
        """Return the inner form at the published values and cuts, suppressed cells marked."""
        suppressed = np.isnan(released)
        values = np.where(suppressed, self._cut, released)
        self._refuse_impossible(suppressed, values)
        inner = values.astype(np.int64 if self.discrete else float)
        form = self.mechanism._cell_form(inner)
        if form is None:  # an inner family without a per-cell form
            return None
        form["suppressed"] = suppressed.reshape(-1)
        return form

    def _refuse_impossible(self, suppressed: np.ndarray, values: np.ndarray) -> None:
        """Refuse published cells below the threshold: their density is 0 whatever ``s`` is."""
        impossible = ~suppressed & ~self._publishes(values)
        if impossible.any():
            raise ValueError(
                "released has published cells below the threshold, impossible under this "
                f"mechanism (positions {np.argwhere(impossible)[:5].tolist()}); check "
                f"threshold= and publish={self.publish!r}"
            )

    def _at_cells(self, cells) -> Self:
        out = super()._at_cells(cells)
        out.mechanism = self.mechanism._at_cells(cells)
        return out

    def _as_observed(self, released: np.ndarray) -> np.ndarray:
        """Put a suppressed cell (NaN) at its cut: PyMC would impute a NaN observation."""
        cut = np.broadcast_to(self._cut, self.event_shape)
        return np.where(np.isnan(released), cut, released)

    def _pymc_log_terms(self, observed: np.ndarray):
        import pytensor.tensor as pt

        pt_ns = pytensor_namespace()
        mask = np.isnan(observed)
        # PyMC would impute NaN observations: suppressed cells hold their cut instead, and
        # the mask (a constant) picks their terms
        safe = np.where(mask, self._cut, observed)
        impossible = ~mask & ~self._publishes(safe)
        cut, inner = self._cut, self.mechanism

        def terms(x, v):
            x = pt.switch(mask, safe, x)
            published = pt.switch(impossible, -np.inf, inner._log_density(pt_ns, x, v))
            gap = difference(pt_ns, cut, v)  # neither wraps nor rounds int64 values
            return pt.switch(mask, inner._log_noise_cdf(pt_ns, gap), published)

        return safe.astype(np.int64) if self.discrete else safe, terms

    @property
    def log_max_density(self) -> float:
        """``log sup`` of the density: per cell, the inner supremum or 1 (suppression)."""
        return float(np.sum(np.maximum(self.mechanism._cell_log_max(), 0.0)))

    def log_max_density_at(self, released: ArrayLike) -> float:
        """``log sup_s eta(released | s)``: the inner supremum over published cells.

        A suppressed cell's probability tends to 1 as its confidential value
        decreases, so it adds ``log 1 = 0``. A published value below its
        threshold has density 0 whatever ``s`` is: such a release is refused.
        """
        released = self._check_released(released)
        mask = np.isnan(released)
        self._refuse_impossible(mask, np.where(mask, self._cut, released))
        return float(np.sum(self.mechanism._cell_log_max()[~mask]))

    @property
    def privacy(self) -> Privacy:
        """The inner mechanism's guarantee: suppression is post-processing (see Notes)."""
        return self.mechanism.privacy

    # --- shapes -----------------------------------------------------------------------
    def _check_released(
        self, released, name: str = "released", *, rows: bool = False
    ) -> np.ndarray:
        raw = _validate.numeric_array(name, released)
        arr = raw.astype(float)
        if raw.dtype.kind in "iu":
            # a thresholded release is a float array (NaN marks a suppressed cell): an integer
            # beyond 2**53 that float64 cannot carry would be rounded, and its density with it
            inexact = np.zeros(arr.shape, dtype=bool)
            big = np.abs(arr) >= 2.0**53
            inexact[big] = [int(f) != int(i) for f, i in zip(arr[big], raw[big], strict=True)]
            if np.any(inexact):
                raise ValueError(
                    _validate.bad_entries(name, inexact, "be integers that float64 holds exactly")
                    + " (a thresholded release is a float array: the release refuses such cells)"
                )
        self._check_release_shape(name, arr, rows=rows)
        if np.any(np.isinf(arr)):
            raise ValueError(
                f"{name} must be finite or NaN (a suppressed cell), got inf at positions "
                f"{np.argwhere(np.isinf(arr))[:5].tolist()}"
            )
        published = arr[~np.isnan(arr)]
        if self.discrete and np.any(published != np.round(published)):
            raise ValueError(f"{name} must hold integers or NaN (a suppressed cell)")
        return arr

    def _repr_params(self):
        threshold = compact(self.threshold)
        return {"mechanism": self.mechanism, "threshold": threshold, "publish": self.publish}


def _threshold_array(threshold, event_shape) -> np.ndarray:
    arr = _validate.numeric_array("threshold", threshold).astype(float)
    if arr.size == 0 or not np.all(np.isfinite(arr)):
        raise ValueError(f"threshold must be finite, got {threshold!r}")
    return broadcast_param("threshold", arr, event_shape)
