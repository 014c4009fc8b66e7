"""Argument checks shared by the public API.

Every check names the parameter and the value received. Comparisons are
written so that NaN fails them (``not (x > 0)`` rather than ``x <= 0``).

Confidential data (what a curator releases, what a data owner's ABCDP run
reads) is the exception: the array checks take ``confidential=True``, and
their messages then name the parameter, the shape, the count and the first
positions of the offending entries, never a value (:func:`bad_entries`).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Collection

import numpy as np
from numpy.typing import ArrayLike


def positive_finite(name: str, value: object) -> float:
    """Return ``value`` as a float, or raise unless it is finite and > 0 (NaN fails).

    Parameters
    ----------
    name : str
        The parameter, named in the error message.
    value : real number
        What the caller passed.

    Returns
    -------
    float

    Raises
    ------
    TypeError
        If ``value`` is not a real number (a string, a bool).
    ValueError
        If it is 0, negative, infinite or NaN.

    Examples
    --------
    >>> from dpinfer.validate import positive_finite
    >>> positive_finite("scale", 2)
    2.0
    >>> positive_finite("scale", float("nan"))
    Traceback (most recent call last):
    ...
    ValueError: scale must be a positive finite number, got nan
    """
    x = _real(name, value)
    if not (x > 0 and math.isfinite(x)):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return x


def finite(name: str, value: object) -> float:
    """Return ``value`` as a float, or raise unless it is a finite real number.

    Parameters
    ----------
    name : str
        The parameter, named in the error message.
    value : real number
        What the caller passed.

    Returns
    -------
    float

    Raises
    ------
    TypeError
        If ``value`` is not a real number.
    ValueError
        If it is infinite or NaN.

    Examples
    --------
    >>> from dpinfer.validate import finite
    >>> finite("shift", -1)
    -1.0
    >>> finite("shift", "1")
    Traceback (most recent call last):
    ...
    TypeError: shift must be a real number, got '1'
    """
    x = _real(name, value)
    if not math.isfinite(x):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return x


def positive_or_inf(name: str, value: object) -> float:
    """Return ``value`` as a float, or raise unless it is > 0 (inf allowed)."""
    x = _real(name, value)
    if not x > 0:
        raise ValueError(f"{name} must be a positive number (inf allowed), got {value!r}")
    return x


def probability_open(name: str, value: object) -> float:
    """Return ``value`` as a float, or raise unless it lies in the open interval (0, 1).

    Parameters
    ----------
    name : str
        The parameter, named in the error message.
    value : real number
        What the caller passed.

    Returns
    -------
    float

    Raises
    ------
    TypeError
        If ``value`` is not a real number.
    ValueError
        If it is outside (0, 1) or NaN.

    Examples
    --------
    >>> from dpinfer.validate import probability_open
    >>> probability_open("p", 0.25)
    0.25
    >>> probability_open("p", 1)
    Traceback (most recent call last):
    ...
    ValueError: p must lie in the open interval (0, 1), got 1
    """
    x = _real(name, value)
    if not (0 < x < 1):
        raise ValueError(f"{name} must lie in the open interval (0, 1), got {value!r}")
    return x


def non_negative(name: str, value: object) -> float:
    """Return ``value`` as a float, or raise unless it is finite and >= 0.

    Parameters
    ----------
    name : str
        The parameter, named in the error message.
    value : real number
        What the caller passed.

    Returns
    -------
    float

    Raises
    ------
    TypeError
        If ``value`` is not a real number.
    ValueError
        If it is negative, infinite or NaN.

    Examples
    --------
    >>> from dpinfer.validate import non_negative
    >>> non_negative("shift", 0)
    0.0
    """
    x = _real(name, value)
    if not (x >= 0 and math.isfinite(x)):
        raise ValueError(f"{name} must be a non-negative finite number, got {value!r}")
    return x


def positive_int(name: str, value: object) -> int:
    """Return ``value`` as an int, or raise unless it is an integer >= 1.

    A float with an integral value (``3.0``) is accepted; a bool is not.

    Parameters
    ----------
    name : str
        The parameter, named in the error message.
    value : int or float
        What the caller passed.

    Returns
    -------
    int

    Raises
    ------
    TypeError
        If ``value`` is not a number, or is a bool.
    ValueError
        If it is below 1 or not a whole number.

    Examples
    --------
    >>> from dpinfer.validate import positive_int
    >>> positive_int("n", 3.0)
    3
    >>> positive_int("n", 2.5)
    Traceback (most recent call last):
    ...
    ValueError: n must be a positive integer, got 2.5
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral | float | np.floating):
        raise TypeError(f"{name} must be a positive integer, got {value!r}")
    # numbers.Integral's stubs declare no comparison with int, though every integral type has one
    if not (value >= 1 and float(value).is_integer()):  # type: ignore[operator]
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


#: The largest sample size, chunk size or count of simulations accepted: 2**40 draws of one
#: float64 each take 8 TiB, so a larger size cannot fit and is refused before any work.
MAX_SIZE = 2**40


def size(name: str, value: object, *, maximum: int = MAX_SIZE) -> int:
    """Return ``value`` as an int, or raise unless it is an integer in ``[1, maximum]``.

    For sizes that allocate memory or run work (draws, particles, batch sizes):
    a size that cannot fit is refused up front rather than after a long run.

    Parameters
    ----------
    name : str
        The parameter, named in the error message.
    value : int
    maximum : int, default MAX_SIZE
        The largest size accepted (:data:`MAX_SIZE`, 2**40, by default).

    Returns
    -------
    int

    Examples
    --------
    >>> size("draws", 1000)
    1000
    >>> size("draws", 2**70)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: draws must be at most 1,099,511,627,776 (larger cannot fit in memory), got ...
    """
    n = positive_int(name, value)
    if n > maximum:
        raise ValueError(
            f"{name} must be at most {maximum:,} (larger cannot fit in memory), got {value!r}"
        )
    return n


def non_negative_int(name: str, value: object, *, maximum: int = MAX_SIZE) -> int:
    """Return ``value`` as an int, or raise unless it is an integer in ``[0, maximum]``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral | float | np.floating):
        raise TypeError(f"{name} must be a non-negative integer, got {value!r}")
    # numbers.Integral's stubs declare no comparison with int, though every integral type has one
    if not (0 <= value <= maximum and float(value).is_integer()):  # type: ignore[operator]
        raise ValueError(f"{name} must be an integer from 0 to {maximum:,}, got {value!r}")
    return int(value)


def flag(name: str, value: object) -> bool:
    """Return ``value`` as a bool, or raise unless it is ``True`` or ``False``.

    ``"no"``, ``0``, ``None`` and the like are refused: a switch that silently
    reads any truthy object as on is a switch that cannot be trusted.

    Parameters
    ----------
    name : str
        The parameter, named in the error message.
    value : bool

    Returns
    -------
    bool

    Examples
    --------
    >>> from dpinfer.validate import flag
    >>> flag("progressbar", False)
    False
    >>> flag("progressbar", "no")
    Traceback (most recent call last):
    ...
    TypeError: progressbar must be a bool, got 'no'
    """
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{name} must be a bool, got {_short_repr(value)}")
    return bool(value)


def names(name: str, value: object, *, single: bool = False) -> list[str]:
    """Return a list of names from a sequence of strings (or one string when ``single``)."""
    if single and isinstance(value, str):
        return [value]
    if isinstance(value, str) or not isinstance(value, list | tuple):
        raise TypeError(f"{name} must be a list of names (strings), got {_short_repr(value)}")
    if not all(isinstance(v, str) and v for v in value):
        raise TypeError(f"{name} must hold non-empty strings, got {_short_repr(value)}")
    return list(value)


def choice(name: str, value: object, allowed: Collection[str], *, alternatives: str = "") -> str:
    """Return ``value``, or raise unless it is one of the strings ``allowed``.

    A non-string (a NumPy array, a list, None) raises :class:`TypeError` and an
    unknown string :class:`ValueError`, each naming ``name`` and the choices,
    where ``value in allowed`` would raise NumPy's "truth value of an array is
    ambiguous" or accept an array that equals a choice. ``alternatives``
    describes what else the parameter accepts (its caller handles those).

    Examples
    --------
    >>> choice("calibration", "classical", ("analytic", "classical"))
    'classical'
    >>> choice("calibration", np.array(["analytic"]), ("analytic", "classical"))
    Traceback (most recent call last):
    ...
    TypeError: calibration must be one of 'analytic', 'classical', got ndarray: array(['analytic'], dtype='<U8')
    """  # noqa: E501
    options = ", ".join(repr(str(a)) for a in allowed)
    what = f"one of {options}" + (f" or {alternatives}" if alternatives else "")
    if not isinstance(value, str):
        raise TypeError(f"{name} must be {what}, got {type(value).__name__}: {_short_repr(value)}")
    if value not in tuple(allowed):
        raise ValueError(f"{name} must be {what}, got {value!r}")
    return str(value)


def mapping(name: str, value: object) -> dict:
    """Return ``value`` as a dict (None: empty), or raise unless it is a mapping."""
    from collections.abc import Mapping

    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a dict, got {_short_repr(value)}")
    return dict(value)


def delta(name: str, value: object) -> float:
    """Return ``value`` as a float, or raise unless it lies in ``[0, 1)``."""
    x = _real(name, value)
    if not (0 <= x < 1):
        raise ValueError(f"{name} must lie in [0, 1), got {value!r}")
    return x


def optional_callable(name: str, value: object):
    """Return ``value``, or raise unless it is None or callable."""
    if value is not None and not callable(value):
        raise TypeError(f"{name} must be a callable (or None), got {_short_repr(value)}")
    return value


def executor(name: str, value: object):
    """Return ``value``, or raise unless it is None or has a ``submit`` method."""
    if value is not None and not callable(getattr(value, "submit", None)):
        raise TypeError(
            f"{name} must be a concurrent.futures.Executor (or have a submit method), "
            f"got {type(value).__name__}: {_short_repr(value)}"
        )
    return value


def instance(name: str, value: object, kind: type | tuple, what: str):
    """Return ``value``, or raise :class:`TypeError` unless it is an instance of ``kind``."""
    if not isinstance(value, kind):
        raise TypeError(f"{name} must be {what}, got {type(value).__name__}: {_short_repr(value)}")
    return value


def integer_sensitivity(value) -> int:
    """Return a sensitivity as an int, or raise unless it is a positive integer."""
    sens = positive_finite("sensitivity", value)
    if not sens.is_integer():
        raise ValueError(f"sensitivity must be a positive integer here, got {value!r}")
    return int(sens)


def non_empty(name: str, arr: np.ndarray) -> np.ndarray:
    """Return ``arr``, or raise unless it has at least one entry."""
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty, got shape {arr.shape}")
    return arr


def numeric_array(name: str, value: object, *, confidential: bool = False) -> np.ndarray:
    """Return ``value`` as an integer or float array, refusing strings, bools and the like.

    The one type rule of the public API: numbers, 0-d arrays and arrays of numbers
    are accepted; strings (``"2"``), bools (``True`` is not the number 1 here),
    complex numbers and other objects raise :class:`TypeError` naming ``name``.
    With ``confidential`` the message says what kind of object or array was
    passed (its type, dtype kind and shape, the positions of non-numbers), not
    its contents.

    Examples
    --------
    >>> numeric_array("scale", np.array(2.0)).dtype
    dtype('float64')
    >>> numeric_array("scale", "2")
    Traceback (most recent call last):
    ...
    TypeError: scale must be a number or an array of numbers, got '2'
    >>> numeric_array("value", [3, None, 4], confidential=True)
    Traceback (most recent call last):
    ...
    TypeError: value must hold numbers: 1 of 3 entries (shape (3,)) is not, at position [1]
    """
    expected = f"{name} must be a number or an array of numbers"
    try:
        arr = np.asarray(value)
    except ValueError:  # ragged nesting
        raise TypeError(f"{expected}, got {shown(value, confidential=confidential)}") from None
    if arr.dtype.kind in "iuf":
        return arr
    if arr.dtype.kind == "O":
        numbers_ = np.array([_is_number(x) for x in arr.ravel()], dtype=bool).reshape(arr.shape)
        if numbers_.all():
            return arr.astype(float)
        if confidential and arr.ndim:
            raise TypeError(bad_entries(name, ~numbers_, "hold numbers"))
    raise TypeError(f"{expected}, got {shown(value, confidential=confidential, arr=arr)}")


def finite_array(
    name: str, value: object, *, shape: tuple[int, ...] | None = None, confidential: bool = False
) -> np.ndarray:
    """Return ``value`` as a float array; raise if it is non-numeric, non-finite or misshapen.

    Parameters
    ----------
    name : str
        The parameter, named in the error message.
    value : array_like
        Numbers (strings, bools and other objects are refused, as by
        :func:`numeric_array`).
    shape : tuple of int, optional
        The shape ``value`` must have.
    confidential : bool, default False
        A message about non-finite entries gives their count and positions
        (:func:`bad_entries`), not the values.

    Returns
    -------
    numpy.ndarray
        Float64.

    Examples
    --------
    >>> from dpinfer.validate import finite_array
    >>> finite_array("y", [1, 2])
    array([1., 2.])
    >>> finite_array("y", [1.5, np.nan, 2.5], confidential=True)
    Traceback (most recent call last):
    ...
    ValueError: y must be finite: 1 of 3 entries (shape (3,)) is not, at position [1]
    """
    arr = numeric_array(name, value, confidential=confidential).astype(float, copy=False)
    if shape is not None and arr.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got shape {arr.shape}")
    finite = np.isfinite(arr)
    if not np.all(finite):
        if confidential:
            raise ValueError(bad_entries(name, ~finite, "be finite"))
        raise ValueError(f"{name} must be finite, got {abbreviated(arr)}")
    return arr


def confidential_data(name: str, value: object) -> np.ndarray:
    """Return confidential data as a non-empty float array of finite numbers.

    The check of what a data owner passes (observations, records): its
    messages name the parameter, the shape, the count and the positions of
    bad entries, never their values.

    Parameters
    ----------
    name : str
        The parameter, named in the error message.
    value : array_like

    Returns
    -------
    numpy.ndarray
        Float64, at least one entry.

    Examples
    --------
    >>> from dpinfer.validate import confidential_data
    >>> confidential_data("records", [[1.0, np.inf], [2.0, 3.0]])
    Traceback (most recent call last):
    ...
    ValueError: records must be finite: 1 of 4 entries (shape (2, 2)) is not, at position [0, 1]
    """
    return non_empty(name, finite_array(name, value, confidential=True))


def confidential_numbers(name: str, value: object) -> np.ndarray:
    """Return confidential data as a float array of numbers (NaN and inf allowed).

    For code that gives non-finite data a meaning (a clipped distance maps a
    non-finite record to its bound); messages never show a value.
    """
    return numeric_array(name, value, confidential=True).astype(float, copy=False)


def bad_entries(name: str, bad: ArrayLike, requirement: str, *, positions: int = 3) -> str:
    """Describe the entries of confidential ``name`` that fail a check, never their values.

    Parameters
    ----------
    name : str
        The parameter.
    bad : array_like of bool
        True where an entry fails; its shape is the parameter's shape.
    requirement : str
        What every entry must do, as in ``"{name} must {requirement}"``.
    positions : int, default 3
        How many positions are listed (the count covers all of them).

    Returns
    -------
    str
        The parameter, the requirement, the count of failing entries, the
        shape and the first ``positions`` positions.

    Examples
    --------
    >>> bad_entries("value", np.array([False, False, False, False, True]), "hold integers")
    'value must hold integers: 1 of 5 entries (shape (5,)) is not, at position [4]'
    >>> bad_entries("x", np.ones((2, 2), dtype=bool), "be finite", positions=2)
    'x must be finite: 4 of 4 entries (shape (2, 2)) are not, at positions [0, 0], [0, 1], ...'
    """
    bad = np.asarray(bad, dtype=bool)
    count = int(np.count_nonzero(bad))
    head = f"{name} must {requirement}: "
    if bad.ndim == 0:
        return head + "the single entry (shape ()) is not"
    where = [f"[{', '.join(str(int(i)) for i in idx)}]" for idx in np.argwhere(bad)[:positions]]
    more = ", ..." if count > positions else ""
    verb, noun = ("is", "position") if count == 1 else ("are", "positions")
    return (
        f"{head}{count} of {bad.size} entries (shape {bad.shape}) {verb} not, "
        f"at {noun} {', '.join(where)}{more}"
    )


def finite_vector(
    name: str, value: object, *, min_size: int = 1, confidential: bool = False
) -> np.ndarray:
    """Return ``value`` as a 1-d float array of at least ``min_size`` finite numbers.

    A number becomes an array of one value.

    Parameters
    ----------
    name : str
        The parameter, named in the error message.
    value : number or 1-d array_like
    min_size : int, default 1
    confidential : bool, default False
        Messages give counts and positions, not values.

    Returns
    -------
    numpy.ndarray
        Float64, 1-d.

    Examples
    --------
    >>> from dpinfer.validate import finite_vector
    >>> finite_vector("times", 2.0)
    array([2.])
    >>> finite_vector("times", [[1.0, 2.0]])
    Traceback (most recent call last):
    ...
    ValueError: times must be a number or a 1-d array, got shape (1, 2)
    """
    arr = finite_array(name, value, confidential=confidential)
    if arr.ndim > 1:
        raise ValueError(f"{name} must be a number or a 1-d array, got shape {arr.shape}")
    arr = arr.reshape(-1)
    if arr.size < min_size:
        got = f"{arr.size} value(s)" if confidential else abbreviated(arr)
        raise ValueError(f"{name} must hold at least {min_size} value(s), got {got}")
    return arr


def weights(name: str, value: object) -> np.ndarray | None:
    """Return None, or coordinate weights: a 1-d array of finite numbers >= 0, not all 0.

    A weight of 0 drops a coordinate; all zeros would make every distance 0.
    """
    if value is None:
        return None
    arr = finite_array(name, value)
    if arr.ndim > 1 or arr.size == 0:
        raise ValueError(
            f"{name} must be a number or a non-empty 1-d array, got shape {arr.shape}"
        )
    if not (np.all(arr >= 0) and np.any(arr > 0)):
        raise ValueError(f"{name} must be non-negative and not all zero, got {abbreviated(arr)}")
    return arr


def numeric_output(value: object, *, source: str, allow_bool: bool = False) -> np.ndarray:
    """Return what user code returned as an integer or float array, or say why it cannot be.

    ``source`` names the code (``"the simulator poisson_sim"``, ``"the prior"``).
    Booleans are refused rather than read as 0/1: a simulator that returns
    ``x > 0`` where a count was meant gives a silently wrong posterior, and
    NumPy subtracts and compares booleans as logical values. Object arrays,
    strings and complex numbers are refused too. ``allow_bool`` admits booleans
    where user code reads them next (records passed on to a statistic). The
    array returned is writable (a read-only one is copied).

    Examples
    --------
    >>> numeric_output(np.array([1, 2]), source="the simulator").dtype.kind
    'i'
    >>> numeric_output(np.array([True, False]), source="the simulator")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: the simulator returned an array of dtype bool; dpinfer needs numbers ...
    """
    try:
        arr = np.asarray(value)
    except ValueError:  # ragged
        raise TypeError(f"{source} returned a ragged sequence, not an array of numbers") from None
    if arr.dtype.kind in "iuf" or (allow_bool and arr.dtype.kind == "b"):
        # a read-only result (one of the read-only params handed back, np.broadcast_to) is
        # copied, so that the library may update what it keeps in place
        return arr if arr.flags.writeable else arr.copy()
    hint = (
        ": return x.astype(int) or x.astype(float) if 0/1 is meant"
        if arr.dtype.kind == "b"
        else ""
    )
    raise TypeError(
        f"{source} returned an array of dtype {arr.dtype}; dpinfer needs numbers (int or "
        f"float){hint}"
    )


def integer_array(name: str, value: object, *, confidential: bool = False) -> np.ndarray:
    """Return ``value`` as an int64 array, or raise unless every entry is an integer.

    With ``confidential`` the message gives the count and positions of the
    entries that are not integers, never their values. Integers beyond the
    int64 range are refused (by count and positions), never wrapped around.

    Examples
    --------
    >>> integer_array("value", np.array([37, 41, 12, 99, 7.5]), confidential=True)
    Traceback (most recent call last):
    ...
    ValueError: value must hold integers: 1 of 5 entries (shape (5,)) is not, at position [4]
    """
    arr = numeric_array(name, value, confidential=confidential)
    if arr.dtype.kind == "i":
        return arr.astype(np.int64)
    if arr.dtype.kind == "u":
        outside = arr > np.iinfo(np.int64).max
    else:
        as_float = np.asarray(arr, dtype=float)
        with np.errstate(invalid="ignore"):
            whole = np.isfinite(as_float) & (as_float == np.round(as_float))
        if not np.all(whole):
            if confidential:
                raise ValueError(bad_entries(name, ~whole, "hold integers"))
            raise ValueError(f"{name} must hold integers, got {abbreviated(arr)}")
        # 2**63 is a float64 but not an int64: astype would wrap such entries silently
        outside = (as_float >= 2.0**63) | (as_float < -(2.0**63))
    if np.any(outside):
        raise ValueError(
            bad_entries(name, outside, "hold integers in the int64 range [-2**63, 2**63)")
        )
    return arr.astype(np.int64)


def _real(name: str, value: object) -> float:
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


_KINDS = {
    "b": "bools",
    "c": "complex numbers",
    "U": "strings",
    "S": "byte strings",
    "O": "objects",
    "M": "dates",
    "m": "time spans",
    "V": "records",
}


def shown(value: object, *, confidential: bool = False, arr: np.ndarray | None = None) -> str:
    """``value`` as a message shows it: its repr, or for confidential data its kind only.

    ``arr`` is ``value`` as an array, when NumPy could make one.
    """
    if not confidential:
        return _short_repr(value)
    if value is None:
        return "None"
    if not isinstance(value, list | tuple | np.ndarray):
        return f"a {type(value).__name__}"
    if arr is None:
        return f"a ragged {type(value).__name__} (its items have different lengths)"
    kind = _KINDS.get(arr.dtype.kind, f"dtype {arr.dtype}")
    return f"an array of {kind} (shape {arr.shape})"


def abbreviated(arr: ArrayLike) -> str:
    """Return an array as an error message shows it: at most 120 characters.

    Long arrays keep their first and last two entries; for data that is not
    confidential only (a confidential array is described by :func:`bad_entries`).

    Parameters
    ----------
    arr : array_like

    Returns
    -------
    str

    Examples
    --------
    >>> from dpinfer.validate import abbreviated
    >>> abbreviated(np.arange(100.0))
    '[ 0.  1. ... 98. 99.]'
    """
    text = np.array2string(np.asarray(arr), threshold=6, edgeitems=2)
    return text if len(text) < 120 else text[:117] + "..."
