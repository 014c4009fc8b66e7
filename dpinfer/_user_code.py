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
import os
import sys
import traceback
from collections.abc import Mapping
from types import FrameType

import numpy as np

__all__ = ["no_writes", "outside_domain", "outside_dpinfer", "read_only"]


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


@contextlib.contextmanager
def outside_domain(what: str, params: Mapping):
    """Re-raise a NumPy generator's refusal of its parameters inside the block, with context.

    A prior whose support is wider than the simulator's domain (a Cauchy prior on a
    Poisson rate) makes ``rng.poisson`` raise "lam < 0 or lam contains NaNs" deep in a
    sampler. The ValueError raised instead names ``what`` (the simulator), the size of
    the batch, and for each parameter the count and positions of its negative and
    non-finite draws, the usual cause, never their values.
    """
    try:
        yield
    except ValueError as err:
        if not _from_numpy_random(err):
            raise
        n = len(next(iter(params.values()))) if params else 0
        raise ValueError(
            f"{what} raised NumPy's ValueError({str(err)!r}) on a batch of {n} parameter sets"
            f"{_suspects(params)}. The prior draws values outside the simulator's domain: give "
            "the prior the simulator's support (a positive distribution for a rate, say, such "
            "as scipy.stats.halfcauchy instead of cauchy) or make the simulator accept them"
        ) from err


def _from_numpy_random(err: BaseException) -> bool:
    """Whether ``err`` was raised inside ``numpy.random`` (a generator checking its arguments)."""
    frames = traceback.extract_tb(err.__traceback__)
    return bool(frames) and "numpy/random" in frames[-1].filename.replace("\\", "/")


def _suspects(params: Mapping, shown: int = 3) -> str:
    """Where each parameter is negative or not finite (counts and positions, no values)."""
    parts = []
    for key, value in params.items():
        arr = np.asarray(value)
        if arr.dtype.kind not in "iuf" or arr.ndim == 0:
            continue
        rows = arr.reshape(len(arr), -1)
        with np.errstate(invalid="ignore"):
            checks = (("negative", (rows < 0).any(axis=1)), ("not finite", ~np.isfinite(rows)))
        for what, bad in checks:
            bad = bad.reshape(len(arr), -1).any(axis=1)
            if bad.any():
                count = int(bad.sum())
                where = ", ".join(str(i) for i in np.flatnonzero(bad)[:shown])
                noun = "position" if count == 1 else "positions"
                more = ", ..." if count > shown else ""
                parts.append(f"{key} is {what} in {count} of them ({noun} {where}{more})")
    return ("; " + "; ".join(parts)) if parts else ""


def outside_dpinfer() -> int:
    """Return the ``stacklevel`` that points a warning at the first caller outside dpinfer.

    For ``warnings.warn(..., stacklevel=outside_dpinfer())`` called in dpinfer: the
    warning then names the user's line, however deep in dpinfer it was raised.
    """
    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
    level = 1
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        level, frame = level + 1, frame.f_back
    return level
