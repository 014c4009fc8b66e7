"""The argument checks of example options (see :mod:`dpinfer.example`).

Each check takes ``(name, text or value)`` and returns the value, converted and
checked, or raises ValueError/TypeError naming the option; ``check.range`` says
the valid values in words, and one attribute lists them for the tests and the
command line: ``check.bounds`` the ends of a range, ``check.choices`` the words
allowed (with ``check.several`` when a comma-separated subset of them is), or
``check.requires`` the files a folder must hold.
"""

from __future__ import annotations

import math
import numbers
import os
import stat
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import _validate


def positive(name: str, value: object) -> float:
    """Check a positive finite number (text or a number).

    Examples
    --------
    >>> from dpinfer.example import positive
    >>> positive("scale", "2.5")
    2.5
    >>> positive("scale", "0")
    Traceback (most recent call last):
    ...
    ValueError: scale must be a positive finite number, got 0.0
    """
    return _validate.positive_finite(name, _number(name, value))


def finite(name: str, value: object) -> float:
    """Check a finite number (text or a number).

    Examples
    --------
    >>> from dpinfer.example import finite
    >>> finite("shift", "-1.5")
    -1.5
    """
    x = _validate._real(name, _number(name, value))
    if not math.isfinite(x):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return x


def _attach(check: Callable, **attributes: object) -> None:
    """Set what a check says of its values: ``range``, ``bounds``, ``size``, ``choices``.

    Each is optional (readers use ``getattr``): a check of the user's own may have none.
    """
    for key, value in attributes.items():
        setattr(check, key, value)


_attach(positive, range="a positive number", bounds=None)
_attach(finite, range="a finite number", bounds=None)


def between(low: float, high: float, *, hint: str = "") -> Callable[[str, Any], float]:
    """Return the check of a finite number in ``[low, high]``.

    Parameters
    ----------
    low, high : float
        The documented range, ends included.
    hint : str, optional
        Added to the error message: why the range, or what to do instead.

    Returns
    -------
    callable
        ``check(name, value) -> float``, with ``check.range`` (the range in
        words) and ``check.bounds`` (``(low, high)``).

    Examples
    --------
    >>> from dpinfer.example import between
    >>> check = between(0.05, 10, hint="epsilon is a privacy budget")
    >>> check.range, check("epsilon", "0.5")
    ('from 0.05 to 10', 0.5)
    >>> check("epsilon", 20)
    Traceback (most recent call last):
    ...
    ValueError: epsilon must be from 0.05 to 10, got 20: epsilon is a privacy budget
    """
    return _ranged(finite, low, high, "", hint)


def integer(minimum: int, maximum: int = 10**8, *, hint: str = "") -> Callable[[str, Any], int]:
    """Return the check of an integer in ``[minimum, maximum]`` (a sample size, a count).

    Parameters
    ----------
    minimum : int
        The smallest value (a summary needs several draws).
    maximum : int, default 10**8
    hint : str, optional
        Added to the error message.

    Returns
    -------
    callable
        ``check(name, value) -> int``, with ``check.range`` and ``check.bounds``.

    Examples
    --------
    >>> from dpinfer.example import integer
    >>> integer(100)("draws", "500")
    500
    >>> integer(100)("draws", "2.5")
    Traceback (most recent call last):
    ...
    ValueError: draws must be an integer, got '2.5'
    """
    return _ranged(_integer, minimum, maximum, "an integer ", hint)


def _ranged(convert: Callable, low, high, kind: str, hint: str) -> Callable:
    text = f"{kind}from {_bound(low)} to {_bound(high)}"

    def check(name: str, value):
        x = convert(name, value)
        if not low <= x <= high:
            raise ValueError(
                f"{name} must be {text}, got {value!r}" + (f": {hint}" if hint else "")
            )
        return x

    return _described(check, text, (low, high))


def vector(size: int, element: Callable | Sequence[Callable] = finite) -> Callable:
    """Return the check of a sequence of exactly ``size`` values, each checked by ``element``.

    Parameters
    ----------
    size : int
        The number of values (on the command line, that many after the flag).
    element : callable or sequence of callables, default finite
        One check for every value, or ``size`` checks, one per position (a
        release of statistics with different ranges).

    Returns
    -------
    callable
        ``check(name, value) -> numpy.ndarray`` (text is split at spaces), with
        ``check.size``, ``check.range`` and ``check.bounds`` (per position).

    Examples
    --------
    >>> from dpinfer.example import between, vector
    >>> check = vector(2, between(0, 1))
    >>> check("release", "0.2 0.7")
    array([0.2, 0.7])
    >>> check("release", "0.2 1.5")
    Traceback (most recent call last):
    ...
    ValueError: release[1] must be from 0 to 1, got '1.5'
    """
    elements = tuple(element) if isinstance(element, Sequence) else (element,) * size
    if len(elements) != size:
        raise ValueError(f"element must be one check or {size} checks, got {len(elements)}")

    def check(name: str, value) -> np.ndarray:
        items = value.split() if isinstance(value, str) else list(np.ravel(value))
        if len(items) != size:
            raise ValueError(f"{name} must have {size} values, got {len(items)}: {value!r}")
        return np.asarray([elements[i](f"{name}[{i}]", v) for i, v in enumerate(items)])

    _attach(check, size=size)
    ranges = [getattr(e, "range", "") for e in elements]
    if len(set(elements)) == 1:
        text = f"{size} values, each {ranges[0]}"
    else:
        text = f"{size} values: " + ", ".join(f"[{i}] {r}" for i, r in enumerate(ranges))
    bounds = [getattr(e, "bounds", None) for e in elements]
    return _described(check, text, None if None in bounds else bounds)


def yes_no(name: str, value: object) -> bool:
    """Check a switch: True/False, or yes/no (true/false) on the command line.

    Examples
    --------
    >>> from dpinfer.example import yes_no
    >>> yes_no("full", "yes"), yes_no("full", False)
    (True, False)
    """
    if isinstance(value, bool | np.bool_):
        return bool(value)
    text = str(value).strip().lower() if isinstance(value, str) else None
    if text in ("yes", "true"):
        return True
    if text in ("no", "false"):
        return False
    raise ValueError(f"{name} must be yes or no, got {value!r}")


_attach(yes_no, range="yes or no", bounds=None)


def choice(*values: str) -> Callable[[str, Any], str]:
    """Return the check of one of the given strings (``check.choices`` lists them).

    Examples
    --------
    >>> from dpinfer.example import choice
    >>> choice("approx", "exact")("simulator", "exact")
    'exact'
    """

    def check(name: str, value) -> str:
        if value not in values:
            raise ValueError(f"{name} must be one of {', '.join(values)}; got {value!r}")
        return value

    _attach(check, choices=values)
    return _described(check, "one of " + ", ".join(values), None)


def subset(*values: str) -> Callable[[str, Any], tuple[str, ...]]:
    """Return the check of a comma-separated subset of the given strings: at least one, each once.

    Examples
    --------
    >>> from dpinfer.example import subset
    >>> subset("naive", "gls", "posterior")("methods", "gls, naive,gls")
    ('gls', 'naive')
    """
    text = "a comma-separated subset of " + ",".join(values)

    def check(name: str, value) -> tuple[str, ...]:
        items = list(value) if isinstance(value, list | tuple) else str(value).split(",")
        chosen = tuple(dict.fromkeys(str(item).strip() for item in items))
        if not chosen or any(c not in values for c in chosen):
            raise ValueError(f"{name} must be {text}, got {value!r}")
        return chosen

    _attach(check, choices=values, several=True)
    return _described(check, text, None)


def folder(*required: str, holding: str) -> Callable[[str, Any], str]:
    """Return the check of an existing folder (not a symbolic link) holding ``required``.

    Parameters
    ----------
    *required : str
        Each names one file, or alternatives joined by ``|``
        (``"table.csv|table.parquet"``); the folder must hold one of each.
    holding : str
        What the folder holds, in words (``check.range``).

    Returns
    -------
    callable
        ``check(name, value) -> str``, with ``check.range`` and ``check.requires``.
    """
    text = f"a folder holding {holding}"

    def check(name: str, value) -> str:
        if not isinstance(value, str | os.PathLike):
            raise TypeError(f"{name} must be {text}, got {type(value).__name__}")
        path = os.fspath(value)
        if not (path and _is(stat.S_ISDIR, path)):
            raise ValueError(f"{name} must be {text}; {path!r} is not a folder")
        for item in required:
            names = item.split("|")
            if not any(_is(stat.S_ISREG, os.path.join(path, n)) for n in names):
                raise ValueError(f"{name} must be {text}; {path!r} has no {' or '.join(names)}")
        return path

    _attach(check, requires=required)
    return _described(check, text, None)


def _is(kind: Callable[[int], bool], path: str) -> bool:
    """Whether ``path`` exists and is of ``kind``, a symbolic link being of no other kind."""
    try:
        return kind(os.lstat(path).st_mode)
    except (OSError, ValueError):
        return False


def _described(check: Callable, range_text: str, bounds) -> Callable:
    _attach(check, range=range_text, bounds=bounds)
    check.__doc__ = range_text[0].upper() + range_text[1:] + "."
    return check


def _bound(x: float) -> str:
    if float(x).is_integer() and abs(x) >= 1000:
        return f"{int(x):,}"
    return f"{x:g}"


def _number(name: str, value):
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            raise ValueError(f"{name} must be a number, got {value!r}") from None
    return value


def _integer(name: str, value) -> int:
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            raise ValueError(f"{name} must be an integer, got {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    return int(value)
