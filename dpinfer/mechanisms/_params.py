"""Parameter handling shared by the mechanism families."""

from __future__ import annotations

import math

import numpy as np

from .. import _validate
from .._numbers import (
    FLOAT_SCALE_MAX,
    FLOAT_SCALE_MIN,
    check_range,
    fsum_or_inf,
)
from ..accounting import Privacy, zcdp_gaussian


def noise_array(name: str, value, event_shape) -> tuple[np.ndarray, tuple[int, ...]]:
    """Validate a positive finite noise parameter and broadcast it to ``event_shape``.

    Returns the parameter array and the event shape (taken from the parameter
    when ``event_shape`` is None).
    """
    arr = _validate.numeric_array(name, value).astype(float)
    if arr.size == 0 or not np.all((arr > 0) & np.isfinite(arr)):
        raise ValueError(
            f"{name} must be positive and finite (0 is not 'no noise'), got {value!r}"
        )
    shape = arr.shape if event_shape is None else as_shape(event_shape)
    return broadcast_param(name, arr, shape), shape


def broadcast_param(name: str, arr: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Return a copy of ``arr`` broadcast to ``shape``, or raise a ValueError naming ``name``."""
    try:
        return np.broadcast_to(arr, shape).copy()
    except ValueError:
        raise ValueError(
            f"{name} of shape {arr.shape} does not broadcast to event_shape {shape}"
        ) from None


def check_float_scale(name: str, arr):
    """Refuse a Laplace or Gaussian scale outside the normal float64 numbers it can use."""
    return check_range(
        name,
        arr,
        FLOAT_SCALE_MIN,
        FLOAT_SCALE_MAX,
        why_low="it is a subnormal float64 (fewer than 53 significant bits), so its noise can "
        "be neither drawn nor scored faithfully",
        why_high="the noise's tails (up to 1024 times the scale) overflow float64",
    )


def calibrated(cls, name: str, value, targets: str, **kwargs):
    """Build ``cls(value, **kwargs)`` from a calibration, saying which targets failed."""
    arr = np.asarray(value, dtype=float)
    value = arr.item() if arr.ndim == 0 else arr  # a plain float, shown as one
    try:
        return cls(value, **kwargs)
    except ValueError as err:
        shown = value if arr.ndim == 0 else arr.tolist()
        raise ValueError(f"{targets} need {name}={shown!r}, which is refused: {err}") from None


def as_shape(event_shape) -> tuple[int, ...]:
    """Return ``event_shape`` as a tuple of positive ints (an int means ``(int,)``)."""
    if isinstance(event_shape, str) or not (
        np.ndim(event_shape) == 0 or isinstance(event_shape, tuple | list)
    ):
        raise TypeError(f"event_shape must be a tuple of non-negative ints, got {event_shape!r}")
    dims = (event_shape,) if np.ndim(event_shape) == 0 else tuple(event_shape)
    if not all(
        isinstance(d, int | np.integer) and not isinstance(d, bool) and d >= 0 for d in dims
    ):
        raise ValueError(f"event_shape must be a tuple of non-negative ints, got {event_shape!r}")
    dims = tuple(int(d) for d in dims)
    if 0 in dims:
        raise ValueError(
            "event_shape must have positive entries: a release of no cells has no noise and "
            f"no privacy guarantee to state, got {event_shape!r}"
        )
    if math.prod(dims) > _validate.MAX_SIZE:
        raise ValueError(
            f"event_shape must have at most {_validate.MAX_SIZE:,} entries, got {event_shape!r}"
        )
    return dims


def sensitivity_array(
    value, event_shape, *, integer: bool = False, l2: bool = False
) -> np.ndarray | None:
    """Validate a declared sensitivity: None, a positive scalar, or one per coordinate.

    With ``integer=True`` (the discrete families) every entry must be a whole
    number, except a scalar l2 bound (``l2=True``) on a release of several cells:
    the l2 norm of an integer change, such as ``sqrt(10)``, need not be whole.
    """
    if value is None:
        return None
    arr = _validate.numeric_array("sensitivity", value).astype(float)
    if not np.all((arr > 0) & np.isfinite(arr)):
        raise ValueError(f"sensitivity must be positive and finite, got {value!r}")
    if arr.ndim and arr.shape != tuple(event_shape):
        raise ValueError(
            f"sensitivity must be a scalar or have the event_shape {tuple(event_shape)}, "
            f"got shape {arr.shape}"
        )
    real_norm = l2 and not arr.ndim and math.prod(event_shape) > 1
    if integer and not real_norm and not np.all(arr == np.round(arr)):
        raise ValueError(
            f"sensitivity must be a positive integer here (or one per cell), got {value!r}"
        )
    return arr


def scalar_or_cells(arr: np.ndarray | None):
    """Return a 0-d sensitivity as a Python number (int when whole), else the array."""
    if arr is None:
        return None
    whole = bool(np.all(arr == np.round(arr)))
    if arr.ndim:
        return arr.astype(np.int64) if whole else arr
    return int(arr) if whole else float(arr)


def gaussian_rho(sigma: np.ndarray, sensitivity) -> float:
    """rho-zCDP of Gaussian noise: ``D^2 / (2 min sigma^2)``, or ``sum D_j^2 / (2 sigma_j^2)``.

    A scalar ``D`` bounds the l2 norm of the whole change (it may all fall on the
    least noisy cell); an array bounds each cell. ``inf`` beyond the float64 range
    (see :func:`dpinfer.accounting.zcdp_gaussian`).
    """
    if np.ndim(sensitivity):
        sens = np.asarray(sensitivity, float)
        with np.errstate(over="ignore", under="ignore", divide="ignore"):
            closed = sens**2 / (2 * sigma**2)
            # where a square under- or overflows, (D / sigma)^2 / 2 (inf beyond the range)
            ratio = sens / sigma
            safe = np.where(
                (sigma**2 >= FLOAT_SCALE_MIN) & np.isfinite(sens**2), closed, 0.5 * ratio * ratio
            )
        return fsum_or_inf(safe.ravel())
    return zcdp_gaussian(float(np.min(sigma)), float(sensitivity))


def budget_per_cell(
    name: str, budget, sensitivity, event_shape, *, integer: bool = False, l2: bool = False
):
    """Validate a privacy budget (epsilon or rho) per cell against a declared sensitivity.

    ``budget`` is a positive scalar or an array; ``sensitivity`` a positive scalar
    (a bound on the whole change) or one per cell. A per-cell sensitivity needs a
    per-cell budget (a scalar would be spent on every cell, multiplying the total);
    a per-cell budget with a scalar sensitivity is allowed (see the families'
    ``from_privacy``). ``event_shape`` None is the broadcast shape of the two.

    Returns
    -------
    (budget, sensitivity, event_shape)
        The budget broadcast to the event shape, the validated sensitivity
        (``sensitivity_array``) and the event shape.
    """
    arr = _validate.numeric_array(name, budget).astype(float)
    if arr.size == 0 or not np.all((arr > 0) & np.isfinite(arr)):
        raise ValueError(f"{name} must be positive and finite, got {budget!r}")
    sens_shape = np.shape(_validate.numeric_array("sensitivity", sensitivity))
    if event_shape is None:
        try:
            shape = np.broadcast_shapes(arr.shape, sens_shape)
        except ValueError:
            raise ValueError(
                f"{name} of shape {arr.shape} and sensitivity of shape {sens_shape} do not "
                "broadcast together"
            ) from None
    else:
        shape = as_shape(event_shape)
    sens = sensitivity_array(sensitivity, shape, integer=integer, l2=l2)
    if sens_shape and not arr.ndim:
        raise ValueError(
            f"{name} is a scalar but sensitivity is per cell: give {name} per cell too (the "
            f"split of the budget; the guarantee is their sum), got {name}={budget!r}"
        )
    return broadcast_param(name, arr, shape), sens, shape


def require_sensitivity(mechanism) -> np.ndarray:
    """Return the mechanism's declared sensitivity or explain why privacy is unknown."""
    if mechanism.sensitivity is None:
        raise ValueError(
            f"{type(mechanism).__name__} was built without a sensitivity, so it has no privacy "
            "guarantee to report; pass sensitivity=... (or use from_privacy)"
        )
    return mechanism.sensitivity


def compact(arr):
    """Return a parameter for a repr: its one value when every cell shares it, else a list."""
    if arr is None:
        return None
    arr = np.asarray(arr)
    if arr.size and np.all(arr == arr.reshape(-1)[0]):
        return arr.reshape(-1)[0].item()
    return arr.tolist()


def gaussian_privacy(mechanism, *, values: str):
    """Return the guarantee of Gaussian noise (continuous or discrete) for its sensitivity.

    rho-zCDP only without ``delta``; with it, the epsilon kept from calibration,
    else ``mechanism._epsilon_at_delta(rho, sensitivity, delta)``. ``values`` names what
    the neighbours change (see :func:`neighbouring`).
    """
    sens = require_sensitivity(mechanism)
    rho = gaussian_rho(mechanism.sigma, sens)
    text = neighbouring(sens, values=values, norm="l2")
    if mechanism.delta is None:
        return Privacy(rho=rho, neighbouring=text)
    eps = mechanism._calibrated_epsilon
    if eps is None:
        eps = mechanism._epsilon_at_delta(rho, sens, mechanism.delta)
    return Privacy(epsilon=eps, delta=mechanism.delta, rho=rho, neighbouring=text)


def neighbouring(sensitivity, *, values: str, norm: str) -> str:
    """Describe the neighbouring relation of a declared sensitivity (``Privacy.neighbouring``).

    ``values`` names what changes ("confidential values", "integer values");
    ``norm`` the norm a scalar sensitivity bounds ("l1", "l2").
    """
    if np.ndim(sensitivity):
        return f"{values} within {np.asarray(sensitivity).tolist()} coordinate-wise"
    return f"{values} within {norm} distance {sensitivity:g}"
