"""The shared interface of privacy mechanisms: ``Mechanism``.

A mechanism is the public noise distribution ``eta(s_dp | s)`` of a release
``s_dp`` given a confidential value ``s``. A family writes its formula once,
in :meth:`Mechanism._log_density` (elementwise, over an array namespace so the
same expression serves numpy and PyTensor), :meth:`Mechanism._sample`,
:meth:`Mechanism._quantile` (the inverse CDF behind ``release_from_uniform``) and
:attr:`Mechanism.privacy`. Shapes, validation and ``rng`` handling live
here; the array namespaces in :mod:`._namespaces`, the PyMC plumbing in
:mod:`._pymc`, the additive families' base in :mod:`._additive`.
"""

from __future__ import annotations

import abc
import copy
import math
from typing import TYPE_CHECKING, Self

import numpy as np
from numpy.typing import ArrayLike

from .. import _validate
from .._rng import RNGLike, as_generator
from ..accounting import Privacy
from ._namespaces import NUMPY, pytensor_namespace
from ._numerics import beyond_float, float_spacing
from ._pymc import observe

if TYPE_CHECKING:
    from pytensor.tensor.variable import TensorVariable

__all__ = ["Mechanism", "Privacy"]

# Below this fraction of the noise scale, float64 rounding of a value moves a Laplace
# log-density by at most 0.01 nats (a Gaussian one by 0.01 |z|): a 1% change of a weight,
# under the Monte Carlo error of any run with an ESS below 10,000.
RESOLUTION_FRACTION = 0.01


class Mechanism(abc.ABC):
    """Base class of additive-noise and count-release mechanisms.

    Subclasses set :attr:`event_shape` and implement ``_log_density``,
    ``_sample``, ``privacy`` and ``log_max_density``; ``_quantile`` (the
    inverse CDF) gives them :meth:`release_from_uniform`.

    Attributes
    ----------
    event_shape : tuple of int
        Shape of one release (``()`` for a scalar).
    discrete : bool
        Whether confidential values and published cells are integers (then
        ``logpdf`` is a log-pmf).

    Notes
    -----
    **The per-cell interface.** The cells of a release are independent given the
    confidential value, and ``log eta(y | s) = sum_j log eta_j(y_j | s_j)``. An
    analysis that integrates the confidential value out cell by cell
    (``sum_s p(s_j | theta) eta_j(y_j | s)``) needs the terms, not the sum; on
    numpy arrays:

    - ``_cell_log_density(released, s, cells=None)``: ``log eta_j(y_j | s)``
      elementwise, never summed over cells. ``released`` is a release as
      ``logpdf`` accepts it (for :class:`~dpinfer.Thresholded`, NaN at
      suppressed cells: their term is ``log P(Y_j below T_j | s)``, so one call
      covers both kinds of cell). Without ``cells``, ``s`` has the shape
      ``(..., *event_shape)``; with ``cells`` (int array of flat, C-order cell
      indices) ``s`` has the shape of ``cells`` and entry ``i`` is a candidate
      for cell ``cells[i]`` (ragged windows, one flat array).
    - ``_cell_log_cdf(cut, s, cells=None)`` (additive families): ``log
      P(Y_j <= cut_j | s)`` elementwise, accurate in both tails; with
      :meth:`_cell_log_max` (the per-cell ``sup_s``) it bounds the mass that a
      window of ``s`` leaves out.
    - ``_at_cells(cells)``: the same mechanism restricted to the flat cells
      ``cells`` (its per-cell parameters gathered), event shape ``cells.shape``.

    Per-cell parameters are the attributes named in ``_cell_params`` (scalars or
    event-shaped arrays).
    """

    event_shape: tuple[int, ...] = ()
    discrete: bool = False
    _cell_params: tuple[str, ...] = ()

    # --- the family writes these -------------------------------------------------
    @abc.abstractmethod
    def _log_density(self, xp, released, value):
        """Elementwise log density; ``xp`` is the numpy or PyTensor namespace."""

    @abc.abstractmethod
    def _sample(self, value: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Draw releases for an array of confidential values (same shape)."""

    @property
    @abc.abstractmethod
    def privacy(self) -> Privacy:
        """The guarantee for the declared sensitivity."""

    @property
    @abc.abstractmethod
    def log_max_density(self) -> float:
        """``log sup eta(s_dp | s)`` over releases and confidential values."""

    # --- generic faces ------------------------------------------------------------
    def release(self, value: ArrayLike, *, rng: RNGLike = None) -> np.ndarray:
        """Release ``value`` through the mechanism (the curator's side).

        Parameters
        ----------
        value : array_like
            Confidential value(s) of shape ``(*batch, *event_shape)``.
        rng : None, int, SeedSequence or Generator, optional
            Source of the privacy noise. None (the default) is what a real
            release must use: the discrete mechanisms then draw every bit
            from the operating system's cryptographic generator; the float
            mechanisms seed a fresh PCG64 from OS entropy for each call (see
            their Notes). A seed or Generator is for tests and research.

        Returns
        -------
        numpy.ndarray
            The release(s), same shape as ``value``.
        """
        value = self._check_value(value)
        if not self.discrete:
            self._check_resolution(value)
        out = self._sample(value, self._noise_source(rng))
        if out.dtype.kind == "f" and np.any(np.isinf(out)):  # NaN: a suppressed cell
            overflowed = _validate.bad_entries(
                "value", np.isinf(out), "stay within float64 once the noise is added"
            )
            raise OverflowError(f"{overflowed}: values that large leave no room for the noise")
        return out

    @property
    def noise_scale(self) -> np.ndarray | None:
        """The noise scale of each cell (``event_shape``), or None for non-additive noise.

        The scale ``b`` of Laplace noise, ``sigma`` of Gaussian noise, the scale
        of the discrete families; a release whose float64 rounding is coarser than a
        hundredth of it carries no noise worth the name (see :meth:`release`).
        """
        return self._noise_scale

    @property
    def has_inverse_cdf(self) -> bool:
        """Whether the family defines its inverse CDF, so :meth:`release_from_uniform` works."""
        return _writer(type(self), "_quantile") is not Mechanism

    @property
    def _noise_scale(self) -> np.ndarray | None:
        """The noise scale of each coordinate (``event_shape``), or None for non-additive noise."""
        return None

    def _check_resolution(self, value: np.ndarray) -> None:
        """Refuse a float release whose rounding at ``value`` would swallow the noise.

        The message names the count and positions of the entries, never their values.
        """
        scale = self._noise_scale
        if scale is None:
            return
        coarse = float_spacing(value) > RESOLUTION_FRACTION * scale
        if np.any(coarse):
            family = type(self).__name__
            requirement = (
                f"be small enough that float64 rounding stays below 1/100 of the {family} noise"
            )
            raise ValueError(
                f"{_validate.bad_entries('value', coarse, requirement)}; there the noise would be "
                "rounded away and the release would not carry its privacy guarantee. Release "
                "integers with the discrete family, or subtract a public offset from the values."
            )

    def _noise_source(self, rng: RNGLike):
        """Return what :meth:`_sample` draws from; families with their own bits override it."""
        return as_generator(rng)

    def release_from_uniform(self, value: ArrayLike, u: ArrayLike) -> np.ndarray:
        r"""Release ``value`` as a function of uniforms: the inverse CDF, coordinate-wise.

        Parameters
        ----------
        value : array_like
            Confidential value(s) of shape ``(*batch, *event_shape)``.
        u : array_like
            Uniforms in the open interval ``(0, 1)``, of shape
            ``(*batch_u, *event_shape)``; ``value`` and ``u`` broadcast together
            (for instance ``value[:, None]`` against ``u`` of shape
            ``(n, copies, *event_shape)`` gives several releases of each value).

        Returns
        -------
        numpy.ndarray
            The releases, of the broadcast shape; integers for discrete families.

        Notes
        -----
        The coordinates of a release are independent given the confidential
        value, so coordinate :math:`j` is
        :math:`F_j^{-1}(u_j) = \min\{x : F_j(x \mid s) \ge u_j\}` with
        :math:`F_j` the CDF of the release's coordinate :math:`j` given
        :math:`s`. With :math:`u \sim U(0, 1)^{\text{event}}` the result has the
        law of :meth:`release`; with randomised quasi-Monte Carlo points it
        gives the nested RQMC estimators of Xiong, Ju and Zhang (2023,
        Section 3.3). This face is for simulation by the analyst: a curator's
        real release uses :meth:`release` (for the discrete families, their exact
        samplers).

        Examples
        --------
        >>> import dpinfer as dp
        >>> mech = dp.Laplace(2.0)
        >>> mech.release_from_uniform(10.0, [0.5, 0.25, 0.75]).round(4)
        array([10.    ,  8.6137, 11.3863])
        """
        value = self._check_value(value)
        u = self._check_uniform(u)
        try:
            shape = np.broadcast_shapes(value.shape, u.shape)
        except ValueError:
            raise ValueError(
                f"value of shape {value.shape} and u of shape {u.shape} do not broadcast together"
            ) from None
        return self._quantile(np.broadcast_to(value, shape), np.broadcast_to(u, shape))

    def _quantile(self, value: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Inverse CDF of each coordinate at ``u`` given ``value`` (same shapes)."""
        raise NotImplementedError(
            f"{type(self).__name__} does not define its inverse CDF (_quantile), so it has "
            "no release_from_uniform"
        )

    def logpdf(self, released: ArrayLike, value: ArrayLike) -> np.ndarray:
        """Log density of a release given confidential values (the analyst's side).

        Parameters
        ----------
        released : array_like
            One release, of shape ``event_shape``.
        value : array_like
            Confidential values of shape ``(*batch, *event_shape)``.

        Returns
        -------
        numpy.ndarray
            ``log eta(released | value)`` of shape ``batch``.

        Notes
        -----
        Exact for any int64 or float64 ``released`` and ``value``: the difference
        is taken within 2 units in the last place without overflowing (see
        :mod:`dpinfer.mechanisms._numerics`) and divided by the noise scale before
        it is squared, so the result is ``-inf`` only where the log-density itself
        is beyond the float64 range. Integers outside the int64 range are refused.
        """
        released = self._check_released(released)
        value = self._check_value(value)
        # a log-density beyond the float64 range is -inf, its correct rounding: no warning
        with np.errstate(over="ignore"):
            terms = self._log_density(NUMPY, released, value)
            return self._sum_event(np.asarray(terms, dtype=float))

    def log_max_density_at(self, released: ArrayLike) -> float:
        """``log sup_s eta(released | s)``: the bound rejection ABC divides by.

        Translation families attain :attr:`log_max_density` at every release;
        families whose supremum depends on the release override this.
        """
        self._check_released(released)
        return self.log_max_density

    def cell_form(
        self, released: ArrayLike, *, rows: bool = False, name: str = "released"
    ) -> np.ndarray | None:
        """Return the per-cell form of a release, for compiled consumers, or None.

        Parameters
        ----------
        released : array_like
            One release, of shape ``event_shape`` (checked as :meth:`logpdf` checks it).
        rows : bool, default False
            Whether ``released`` is several releases stacked, of shape
            ``(*rows, *event_shape)``: their forms follow one another (C order),
            as one call per release would give them, in one vectorised pass.
        name : str, default "released"
            The parameter that error messages name.

        Returns
        -------
        numpy.ndarray or None
            The noise law of every cell of ``released`` as a record of named
            numbers (dtype :data:`dpinfer.noise.form.CELL`, one record per cell,
            flat): the log-density is the sum over the cells of the compiled
            :func:`dpinfer.noise.terms.term`. None for a family
            without one, and for a subclass that rewrites the density but not
            the form (which would otherwise be scored by its parent's formula).

        Examples
        --------
        >>> import dpinfer as dp
        >>> form = dp.DiscreteGaussian(2.0, event_shape=(3,)).cell_form([4, 9, 6])
        >>> form["released"], form["scale"]
        (array([4., 9., 6.]), array([2., 2., 2.]))
        """
        released = self._check_released(released, name, rows=rows)
        if _writer(type(self), "_cell_form") is not _writer(type(self), "_log_density"):
            return None
        return self._cell_form(released)

    def _cell_form(self, released) -> np.ndarray | None:
        """Return the family's per-cell form of a checked release (see :meth:`cell_form`)."""
        return None

    # --- the per-cell interface (see the class Notes) --------------------------------
    def _cell_log_density(self, released, s, cells=None) -> np.ndarray:
        """``log eta_j(released_j | s)`` elementwise (not summed over cells), on numpy arrays."""
        released = self._check_released(released)
        mech, released = self._cells_of(released, cells)
        return np.asarray(mech._log_density(NUMPY, released, np.asarray(s)), dtype=float)

    def _at_cells(self, cells) -> Self:
        """Return a copy with its per-cell parameters gathered at the flat indices ``cells``."""
        cells = np.asarray(cells)
        k = max(1, math.prod(self.event_shape))
        inside = cells.size == 0 or 0 <= cells.min() <= cells.max() < k
        if cells.dtype.kind not in "iu" or not inside:
            raise ValueError(
                f"cells must be integer indices of the {k} cells (flat, C order), got shape "
                f"{cells.shape} of dtype {cells.dtype}"
            )
        out = copy.copy(self)
        names = self._cell_params
        if np.ndim(getattr(self, "sensitivity", 0)):  # per-cell bounds follow their cells
            names = (*names, "sensitivity")
        for name in names:
            value = getattr(self, name)
            if value is not None:
                flat = np.broadcast_to(np.asarray(value), self.event_shape).reshape(-1)
                setattr(out, name, flat[cells])
        out.event_shape = cells.shape
        return out

    def _cells_of(self, released: np.ndarray, cells):
        """``(mechanism, released)`` for the cells ``cells``, or as they are for None."""
        if cells is None:
            return self, released
        return self._at_cells(cells), released.reshape(-1)[np.asarray(cells)]

    def to_pymc(
        self,
        name: str,
        value: TensorVariable | ArrayLike,
        *,
        observed: ArrayLike,
        totals: tuple[ArrayLike, ArrayLike] | None = None,
        tol: float = 1e-10,
    ) -> TensorVariable:
        """Add this mechanism's density as a likelihood term to the PyMC model in context.

        Parameters
        ----------
        name : str
            Name of the observed variable.
        value : TensorVariable or array_like
            Either the confidential value as a variable of the model (or any
            tensor) of shape ``event_shape``: the density of the release given
            it is added. Or an *unregistered* univariate PyMC distribution of
            the confidential value of every cell (``pm.Poisson.dist(mu=lam)``):
            the confidential value is then summed (or integrated) out cell by
            cell, exactly, by :func:`dpinfer.to_pymc`.
        observed : array_like
            The release: of shape ``event_shape``; with a distribution, of the
            cells' shape (ending in ``event_shape``). For
            :class:`~dpinfer.Thresholded`, NaN at suppressed cells.
        totals : (array_like, array_like), optional
            With a distribution: exact totals of the latent counts over groups
            of cells, ``(groups, values)`` (see :func:`dpinfer.to_pymc`).
        tol : float, default 1e-10
            With a distribution: the bound on each cell's neglected mass,
            relative to its likelihood (see :func:`dpinfer.to_pymc`).

        Returns
        -------
        TensorVariable
            The observed variable; ``pm.logp`` of it equals :meth:`logpdf`
            (with a tensor value) or the per-cell marginal log-likelihood.

        Raises
        ------
        ValueError
            If ``value`` (a tensor, array or distribution) does not have the
            shape required, naming both shapes; a shape known only when the
            model runs is checked then. If a release of a mechanism other than
            :class:`~dpinfer.Thresholded` holds NaN.

        Notes
        -----
        Posterior predictive draws of the returned variable
        (``pm.sample_posterior_predictive``, ``pm.draw``) are releases: the
        confidential value (drawn from the distribution, or the variable's
        value) plus fresh noise of this mechanism, never confidential values
        themselves (a suppressed cell of a :class:`~dpinfer.Thresholded`
        release is drawn at its cut, as PyMC holds it).

        The same cells released by several mechanisms are one call of
        :func:`dpinfer.to_pymc` with every release; a call of this method per
        release over one distribution sums a latent value out per release, as
        if each release came from confidential values of its own, and warns
        with :class:`~dpinfer.SharedLatentWarning`.

        Examples
        --------
        >>> import numpy as np, pymc as pm, dpinfer as dp
        >>> mech = dp.DiscreteGaussian.from_privacy(epsilon=1.0, delta=1e-6, sensitivity=1)
        >>> with pm.Model():
        ...     rate = pm.Exponential("rate", 0.1)
        ...     obs = mech.to_pymc("cases", pm.Poisson.dist(mu=rate, shape=3),
        ...                        observed=np.array([4, 9, 6]))
        """
        return observe(self, name, value, observed=observed, totals=totals, tol=tol)

    def _as_observed(self, released: np.ndarray) -> np.ndarray:
        """Return a release as a PyMC observed variable holds it (see :class:`Thresholded`)."""
        return released

    def _pymc_log_terms(self, observed: np.ndarray):
        """Return the observed array PyMC holds and the PyTensor log-density terms ``(x, v)``."""
        pt_ns = pytensor_namespace()
        return observed, lambda x, v: self._log_density(pt_ns, x, v)

    # --- shape handling -----------------------------------------------------------
    def check_released(self, released: ArrayLike, *, name: str = "released") -> np.ndarray:
        """Return one release as :meth:`logpdf` reads it, or raise naming what is wrong.

        Parameters
        ----------
        released : array_like
            One release, of shape ``event_shape``.
        name : str, default "released"
            The parameter that error messages name.

        Returns
        -------
        numpy.ndarray
            int64 for the discrete families (and integers beyond ``2**53``), float64
            otherwise; for :class:`~dpinfer.Thresholded`, float64 with NaN at
            suppressed cells.

        Raises
        ------
        ValueError
            A shape other than ``event_shape``, a value the family cannot release
            (NaN, non-finite, non-integer for a discrete family, out of range).
        """
        return self._check_released(released, name)

    def check_value(self, value: ArrayLike) -> np.ndarray:
        """Return confidential values ``(*batch, *event_shape)`` as :meth:`logpdf` reads them.

        Errors name the shape and the positions of bad entries, never their values.
        """
        return self._check_value(value)

    def _check_released(
        self, released, name: str = "released", *, rows: bool = False
    ) -> np.ndarray:
        """Return the release as int64 (discrete families) or float64, checked.

        Integers stay int64 where float64 would round them (beyond ``2**53``), so
        that :meth:`logpdf` is exact for every int64 release. With ``rows``, a
        stack of releases ``(*rows, *event_shape)``, each checked alike.
        """
        arr = _validate.numeric_array(name, released)
        if arr.dtype.kind == "f" and np.isnan(arr).any():
            raise ValueError(nan_release_message(self, name, np.isnan(arr)))
        keep_int = arr.dtype.kind in "iu" and (self.discrete or beyond_float(arr))
        if not keep_int:
            arr = _validate.finite_array(name, arr)
        self._check_release_shape(name, arr, rows=rows)
        if self.discrete or keep_int:
            arr = _validate.integer_array(name, arr)
        return arr

    def _check_value(self, value) -> np.ndarray:
        # the confidential value: messages give shapes, counts and positions, never values
        arr = _validate.numeric_array("value", value, confidential=True)
        if arr.dtype.kind in "iu":  # int64, refusing (not wrapping) uint64 beyond it
            arr = _validate.integer_array("value", arr, confidential=True)
        else:
            arr = arr.astype(float, copy=False)
        self._check_event_axes("value", arr)
        if arr.dtype.kind == "f":
            arr = _validate.finite_array("value", arr, confidential=True)
        if self.discrete and arr.dtype.kind == "f":
            arr = _validate.integer_array("value", arr, confidential=True)
        return arr

    def _check_uniform(self, u) -> np.ndarray:
        # the uniforms are the noise of a release: shown no more than the value itself
        arr = _validate.finite_array("u", u, confidential=True)
        self._check_event_axes("u", arr)
        inside = (arr > 0) & (arr < 1)
        if not np.all(inside):
            raise ValueError(
                _validate.bad_entries("u", ~inside, "lie in the open interval (0, 1)")
            )
        return arr

    def _check_release_shape(self, name: str, arr: np.ndarray, *, rows: bool) -> None:
        """Refuse a release not of ``event_shape`` (with ``rows``: not ending in it)."""
        if rows:
            self._check_event_axes(name, arr)
        elif arr.shape != self.event_shape:
            raise ValueError(
                f"{name} must have shape {self.event_shape} (the mechanism's event_shape), "
                f"got shape {arr.shape}"
            )

    def _check_event_axes(self, name: str, arr: np.ndarray) -> None:
        k = len(self.event_shape)
        if arr.ndim < k or arr.shape[arr.ndim - k :] != self.event_shape:
            raise ValueError(
                f"{name} must have shape (*batch, {', '.join(map(str, self.event_shape))}) "
                f"ending in the mechanism's event_shape {self.event_shape}, "
                f"got shape {arr.shape}"
            )

    def _sum_event(self, terms: np.ndarray) -> np.ndarray:
        k = len(self.event_shape)
        return terms.sum(axis=tuple(range(terms.ndim - k, terms.ndim))) if k else terms

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self._repr_params().items())
        return f"{type(self).__name__}({params})"

    def _repr_params(self) -> dict:
        return {}


def _writer(cls: type, name: str) -> type:
    """Return the class of ``cls``'s method resolution order that defines ``name``."""
    return next(c for c in cls.__mro__ if name in vars(c))


def nan_release_message(mechanism: Mechanism, name: str, nan) -> str:
    """Say where a release of a mechanism that publishes every cell has NaN, and what fits."""
    kind = type(mechanism).__name__
    return (
        _validate.bad_entries(name, nan, "hold numbers, not NaN")
        + f". A {kind} release publishes every cell; for a release whose suppressed cells "
        f"are NaN, use dp.Thresholded({kind}(...), threshold=...), whose density scores a "
        "suppressed cell as a noisy value below the threshold"
    )
