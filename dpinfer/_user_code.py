"""Calling user code (simulators, prior densities, log-likelihoods) with arrays dpinfer keeps.

A sampler hands the parameter sets it has drawn to the user's simulator and then stores
those same arrays as its draws. A simulator that changed them in place
(``p["theta"] *= 1.2``) would corrupt the stored draws without a sign. So user code gets
**read-only views** (no copy is made): writing into one raises at once, and
:func:`no_writes` turns NumPy's terse "read-only" error into one that names the function
and says what to do instead.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping

import numpy as np

__all__ = ["no_writes", "read_only"]


def read_only(value):
    """Return a read-only view of an array, or a new dict of read-only views of a dict's arrays.

    Anything that is not a NumPy array is returned as it is. The caller's
    arrays stay writable; only the views handed out are not.

    Examples
    --------
    >>> p = {"theta": np.array([1.0, 2.0])}
    >>> q = read_only(p)
    >>> q["theta"].flags.writeable, p["theta"].flags.writeable
    (False, True)
    """
    if isinstance(value, Mapping):
        return {key: _view(item) for key, item in value.items()}
    return _view(value)


def _view(value):
    if not isinstance(value, np.ndarray):
        return value
    view = value.view()
    view.flags.writeable = False
    return view


@contextlib.contextmanager
def no_writes(what: str, argument: str):
    """Re-raise NumPy's write-to-read-only error inside the block as a clear ValueError.

    ``what`` names the user's function ("the simulator f"), ``argument`` the
    argument it wrote into ("params").
    """
    try:
        yield
    except ValueError as err:
        if "read-only" not in str(err):
            raise
        raise ValueError(
            f"{what} wrote into its {argument} in place ({err}). dpinfer passes {argument} as "
            "read-only arrays because it keeps them (as the draws, for instance): compute new "
            'arrays instead, e.g. theta = params["theta"] * 1.2 rather than '
            'params["theta"] *= 1.2, or copy first with params["theta"].copy()'
        ) from err
