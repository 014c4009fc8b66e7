"""The argument checks of example options (see :mod:`dpinfer.models._example`).

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

from dpinfer import _validate


def positive(name: str, value) -> float:
    """Check a positive finite number."""
    return _validate.positive_finite(name, _number(name, value))


def finite(name: str, value) -> float:
    """Check a finite number."""
    x = _validate._real(name, _number(name, value))
    if not math.isfinite(x):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return x


positive.range, positive.bounds = "a positive number", None
finite.range, finite.bounds = "a finite number", None


def between(low: float, high: float, *, hint: str = "") -> Callable[[str, Any], float]:
    """Check a finite number in ``[low, high]``; ``hint`` says why, or what to do instead."""
    return _ranged(finite, low, high, "", hint)


def integer(minimum: int, maximum: int = 10**8, *, hint: str = "") -> Callable[[str, Any], int]:
    """Check an integer in ``[minimum, maximum]`` (sample sizes: a summary needs several draws)."""
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
    """Check a sequence of exactly ``size`` values, each checked by ``element``.

    ``element`` is one check for every value, or a sequence of ``size`` checks,
    one per position (a release of statistics with different ranges).
    """
    elements = tuple(element) if isinstance(element, Sequence) else (element,) * size
    if len(elements) != size:
        raise ValueError(f"element must be one check or {size} checks, got {len(elements)}")

    def check(name: str, value) -> np.ndarray:
        items = value.split() if isinstance(value, str) else list(np.ravel(value))
        if len(items) != size:
            raise ValueError(f"{name} must have {size} values, got {len(items)}: {value!r}")
        return np.asarray([elements[i](f"{name}[{i}]", v) for i, v in enumerate(items)])

    check.size = size
    if len(set(elements)) == 1:
        text = f"{size} values, each {elements[0].range}"
    else:
        text = f"{size} values: " + ", ".join(f"[{i}] {e.range}" for i, e in enumerate(elements))
    bounds = [getattr(e, "bounds", None) for e in elements]
    return _described(check, text, None if None in bounds else bounds)


def yes_no(name: str, value) -> bool:
    """Check a switch: True/False, or yes/no (true/false) on the command line."""
    if isinstance(value, bool | np.bool_):
        return bool(value)
    text = str(value).strip().lower() if isinstance(value, str) else None
    if text in ("yes", "true"):
        return True
    if text in ("no", "false"):
        return False
    raise ValueError(f"{name} must be yes or no, got {value!r}")


yes_no.range, yes_no.bounds = "yes or no", None


def choice(*values: str) -> Callable[[str, Any], str]:
    """One of the given strings."""

    def check(name: str, value) -> str:
        if value not in values:
            raise ValueError(f"{name} must be one of {', '.join(values)}; got {value!r}")
        return value

    check.choices = values
    return _described(check, "one of " + ", ".join(values), None)


def subset(*values: str) -> Callable[[str, Any], tuple[str, ...]]:
    """Check a comma-separated subset of the given strings: at least one, each once."""
    text = "a comma-separated subset of " + ",".join(values)

    def check(name: str, value) -> tuple[str, ...]:
        items = list(value) if isinstance(value, list | tuple) else str(value).split(",")
        chosen = tuple(dict.fromkeys(str(item).strip() for item in items))
        if not chosen or any(c not in values for c in chosen):
            raise ValueError(f"{name} must be {text}, got {value!r}")
        return chosen

    check.choices = values
    check.several = True
    return _described(check, text, None)


def folder(*required: str, holding: str) -> Callable[[str, Any], str]:
    """Check an existing folder (not a symbolic link) with a file of each of ``required``.

    Each item of ``required`` names one file or alternatives joined by ``|``
    (``"table.csv|table.parquet"``); ``holding`` says what the folder holds, in words.
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

    check.requires = required
    return _described(check, text, None)


def _is(kind: Callable[[int], bool], path: str) -> bool:
    """Whether ``path`` exists and is of ``kind``, a symbolic link being of no other kind."""
    try:
        return kind(os.lstat(path).st_mode)
    except (OSError, ValueError):
        return False


def _described(check: Callable, range_text: str, bounds) -> Callable:
    check.range = range_text
    check.bounds = bounds
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
