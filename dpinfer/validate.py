"""Argument checks for code built on dpinfer, with the library's messages.

Each check takes the parameter's ``name`` and the ``value`` received, returns
the value converted (a float, an int, a float array) and otherwise raises
:class:`ValueError` or :class:`TypeError` naming the parameter and the value.
Comparisons are written so that NaN fails them. Confidential data (what a
curator releases, a data owner's records) is the exception: with
``confidential=True`` a message names the parameter, the shape, the count and
the positions of the offending entries, never a value (:func:`bad_entries`).

Scalars: :func:`finite`, :func:`positive_finite`, :func:`non_negative`,
:func:`probability_open`, :func:`positive_int`, :func:`size`, :func:`flag`,
:func:`choice`. Arrays: :func:`numeric_array`, :func:`finite_array`,
:func:`finite_vector`, :func:`integer_array`, :func:`confidential_data`.
Messages: :func:`bad_entries`, :func:`abbreviated`.

Examples
--------
>>> from dpinfer import validate
>>> def simulate(params, n, *, rate=1.0):
...     n = validate.positive_int("n", n)
...     rate = validate.positive_finite("rate", rate)
...     return n * rate
>>> simulate({}, 3, rate=0.5)
1.5
>>> simulate({}, 3, rate=0)
Traceback (most recent call last):
...
ValueError: rate must be a positive finite number, got 0
"""

from ._validate import (
    MAX_SIZE,
    abbreviated,
    bad_entries,
    choice,
    confidential_data,
    finite,
    finite_array,
    finite_vector,
    flag,
    integer_array,
    non_negative,
    numeric_array,
    positive_finite,
    positive_int,
    probability_open,
    size,
)

__all__ = [
    "MAX_SIZE",
    "abbreviated",
    "bad_entries",
    "choice",
    "confidential_data",
    "finite",
    "finite_array",
    "finite_vector",
    "flag",
    "integer_array",
    "non_negative",
    "numeric_array",
    "positive_finite",
    "positive_int",
    "probability_open",
    "size",
]
