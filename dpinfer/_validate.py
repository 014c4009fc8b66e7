"""Argument checks shared by the public API.

Every check names the parameter and the value received. Comparisons are
written so that NaN fails them (``not (x > 0)`` rather than ``x <= 0``).
"""

from __future__ import annotations

import math
import numbers

import numpy as np


def positive_finite(name: str, value) -> float:
    """Return ``value`` as a float, or raise unless it is finite and > 0."""
    x = _real(name, value)
    if not (x > 0 and math.isfinite(x)):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return x


def finite(name: str, value) -> float:
    """Return ``value`` as a float, or raise unless it is a finite real number."""
    x = _real(name, value)
    if not math.isfinite(x):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return x


def positive_or_inf(name: str, value) -> float:
    """Return ``value`` as a float, or raise unless it is > 0 (inf allowed)."""
    x = _real(name, value)
    if not x > 0:
        raise ValueError(f"{name} must be a positive number (inf allowed), got {value!r}")
    return x


def probability_open(name: str, value) -> float:
    """Return ``value`` as a float, or raise unless it lies in (0, 1)."""
    x = _real(name, value)
    if not (0 < x < 1):
        raise ValueError(f"{name} must lie in the open interval (0, 1), got {value!r}")
    return x


def non_negative(name: str, value) -> float:
    """Return ``value`` as a float, or raise unless it is finite and >= 0."""
    x = _real(name, value)
    if not (x >= 0 and math.isfinite(x)):
        raise ValueError(f"{name} must be a non-negative finite number, got {value!r}")
    return x


def positive_int(name: str, value) -> int:
    """Return ``value`` as an int, or raise unless it is an integer >= 1."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral | float | np.floating):
        raise TypeError(f"{name} must be a positive integer, got {value!r}")
    if not (value >= 1 and float(value).is_integer()):
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def integer_sensitivity(value) -> int:
    """Return a sensitivity as an int, or raise unless it is a positive integer."""
    sens = positive_finite("sensitivity", value)
    if not sens.is_integer():
        raise ValueError(f"sensitivity must be a positive integer here, got {value!r}")
    return int(sens)


def numeric_array(name: str, value) -> np.ndarray:
    """Return ``value`` as an integer or float array, refusing strings, bools and the like.

    The one type rule of the public API: numbers, 0-d arrays and arrays of numbers
    are accepted; strings (``"2"``), bools (``True`` is not the number 1 here),
    complex numbers and other objects raise :class:`TypeError` naming ``name``.

    Examples
    --------
    >>> numeric_array("scale", np.array(2.0)).dtype
    dtype('float64')
    >>> numeric_array("scale", "2")
    Traceback (most recent call last):
    ...
    TypeError: scale must be a number or an array of numbers, got '2'
    """
    arr = np.asarray(value)
    if arr.dtype.kind in "iuf":
        return arr
    if arr.dtype.kind == "O" and all(_is_number(x) for x in arr.ravel()):
        return arr.astype(float)
    raise TypeError(f"{name} must be a number or an array of numbers, got {_short_repr(value)}")


def finite_array(name: str, value, *, shape: tuple[int, ...] | None = None) -> np.ndarray:
    """Return ``value`` as a float array; raise if it is non-numeric, non-finite or misshapen."""
    arr = numeric_array(name, value).astype(float, copy=False)
    if shape is not None and arr.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {_short(arr)}")
    return arr


def integer_array(name: str, value) -> np.ndarray:
    """Return ``value`` as an int64 array, or raise unless every entry is an integer."""
    arr = numeric_array(name, value)
    if arr.dtype.kind in "iu":
        return arr.astype(np.int64)
    as_float = np.asarray(arr, dtype=float)
    if not np.all(np.isfinite(as_float)) or np.any(as_float != np.round(as_float)):
        raise ValueError(f"{name} must hold integers, got {_short(arr)}")
    return as_float.astype(np.int64)


def _real(name: str, value) -> float:
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iuf":
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    return float(value)


def _is_number(x) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool | np.bool_)


def _short_repr(value) -> str:
    text = repr(value)
    return text if len(text) < 120 else text[:117] + "..."


def _short(arr: np.ndarray) -> str:
    text = np.array2string(np.asarray(arr), threshold=6, edgeitems=2)
    return text if len(text) < 120 else text[:117] + "..."
