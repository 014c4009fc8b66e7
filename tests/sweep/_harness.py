"""Classify a call with a bad argument: refused clearly, obscurely, or accepted.

A call is *clear* when it raises :class:`ValueError` or :class:`TypeError` whose
message names the parameter, *obscure* when it raises anything else (or a message
that does not name it), and *silent* when it returns (or is still running when
the per-call time limit ends: a bad size must be refused up front, not after a
long run).
"""

from __future__ import annotations

import contextlib
import math
import signal
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

#: A call still running after this many seconds was not refused up front.
CALL_SECONDS = 2.0

HUGE = 2**70


class _StillRunning(BaseException):
    """Raised by the alarm inside a call that did not refuse its input in time."""


class _Other:
    """An object of no expected type."""

    def __repr__(self) -> str:
        return "<other object>"


OTHER = _Other()

# --- bad values per kind of parameter ------------------------------------------------------
_NOT_A_NUMBER = ["1", True, np.bool_(True), 1 + 1j, None, OTHER]
BAD: dict[str, list] = {
    # a positive finite real number (a scale, a sensitivity, epsilon)
    "positive": [*_NOT_A_NUMBER, math.nan, math.inf, -1.0, 0.0],
    # a positive number where inf means "no privacy" or "no limit"
    "positive_or_inf": [*_NOT_A_NUMBER, math.nan, -1.0, 0.0],
    "non_negative": [*_NOT_A_NUMBER, math.nan, math.inf, -1.0],
    "finite": [*_NOT_A_NUMBER, math.nan, math.inf, -math.inf],
    # a probability in (0, 1) (alpha levels, delta of approximate DP, fractions)
    "probability": [*_NOT_A_NUMBER, math.nan, -0.1, 0.0, 1.0, 1.5],
    # delta: [0, 1)
    "delta": [*_NOT_A_NUMBER, math.nan, -0.1, 1.0, 1.5],
    # an integer >= 1 in a formula or a loop limit (c, steps, max_stages)
    "count": ["3", True, 2.5, 1 + 1j, None, OTHER, math.nan, math.inf, 0, -1],
    # a sample size that allocates memory or runs a loop (draws, particles, batch_size)
    "size": ["3", True, 2.5, 1 + 1j, None, OTHER, math.nan, math.inf, 0, -1, HUGE],
    "flag": ["no", "yes", 0, 1, 2.5, None, OTHER, [True]],
    "rng": ["0", 1.5, -1, True, 1 + 1j, OTHER, [1, 2, 3.5]],
    "executor": ["process", 3, True, OTHER],
    "callable": [1.0, "f", OTHER],
    "callable_required": [None, 1.0, "f", OTHER],
    # an array of finite numbers with free shape
    "finite_array": ["abc", [True, False], [1 + 1j], [math.nan], [math.inf], [], OTHER, None],
    "mechanism": [1.0, "laplace", None, OTHER],
    "model": [1.0, "model", None, OTHER],
    "distance": [1.0, "l2", None, OTHER],
    "privacy": [1.0, "eps", None, OTHER],
    "event_shape": [True, -1, (2, -1), 2.5, "3", (HUGE,), OTHER],
}


@dataclass(frozen=True)
class Param:
    """One parameter of an entry point and the bad values it must refuse."""

    name: str
    kind: str = ""
    #: Extra bad values (wrong shapes, values out of a parameter's own range).
    extra: tuple = ()
    #: Text the message must contain (default: the parameter's name).
    named: str = ""
    #: None is a valid value (an optional setting).
    optional: bool = False
    #: An elementwise (NumPy-like) argument: an empty array gives an empty result.
    elementwise: bool = False

    def bad_values(self) -> list:
        values = [*BAD.get(self.kind, []), *self.extra]
        if self.optional:
            values = [v for v in values if v is not None]
        if self.elementwise:
            values = [v for v in values if not (isinstance(v, list) and not v)]
        return values


@dataclass(frozen=True)
class Entry:
    """A public entry point: a call with tiny valid arguments, and its parameters."""

    name: str
    call: Callable[..., object]
    valid: Callable[[], dict]
    params: tuple[Param, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class Outcome:
    entry: str
    param: str
    value: str
    verdict: str  # "clear", "obscure" or "silent"
    detail: str


@contextlib.contextmanager
def _time_limit(seconds: float):
    def alarm(signum, frame):
        raise _StillRunning

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def classify(call: Callable[[], object], named: str, *, seconds: float = CALL_SECONDS):
    """Return ``(verdict, detail)`` for one call that must refuse a bad ``named`` argument."""
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"), _time_limit(seconds):
            warnings.simplefilter("ignore")
            call()
    except _StillRunning:
        return "silent", f"still running after {seconds:g} s"
    except (ValueError, TypeError) as err:
        message = str(err)
        if "unexpected keyword argument" in message:  # the sweep's table is out of date
            return "obscure", f"not a parameter of this entry point: {message}"
        if named in message:
            return "clear", message
        return "obscure", f"{type(err).__name__}: {message}"
    except Exception as err:  # anything else is the obscure class by definition
        return "obscure", f"{type(err).__name__}: {err}"
    return "silent", "accepted"


def check_valid(entry: Entry) -> None:
    """Call ``entry`` with its valid arguments (no time limit): it must succeed.

    This keeps the sweep honest (a refusal counts only if the valid call is
    accepted) and does the one-off imports and compilations outside the limit.
    """
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        entry.call(**entry.valid())


def sweep(entries) -> list[Outcome]:
    """Call every entry with each bad value of each parameter, the others valid."""
    outcomes = []
    for entry in entries:
        check_valid(entry)
        for param in entry.params:
            for value in param.bad_values():
                kwargs = entry.valid()
                kwargs[param.name] = value

                def call(kwargs=kwargs):
                    return entry.call(**kwargs)

                verdict, detail = classify(call, param.named or param.name)
                outcomes.append(
                    Outcome(entry.name, param.name, _show(value), verdict, detail[:200])
                )
    return outcomes


def tally(outcomes) -> dict[str, int]:
    counts = {"calls": len(outcomes), "clear": 0, "obscure": 0, "silent": 0}
    for outcome in outcomes:
        counts[outcome.verdict] += 1
    return counts


def report(outcomes, *, limit: int = 60) -> str:
    """The tally and the first ``limit`` calls that were not refused clearly."""
    counts = tally(outcomes)
    lines = [
        "bad-input sweep: {calls} calls, {clear} clear, {obscure} obscure, {silent} silent".format(
            **counts
        )
    ]
    bad = [o for o in outcomes if o.verdict != "clear"]
    for o in bad[:limit]:
        lines.append(f"  {o.verdict:7s} {o.entry}({o.param}={o.value}): {o.detail}")
    if len(bad) > limit:
        lines.append(f"  ... and {len(bad) - limit} more")
    return "\n".join(lines)


def _show(value) -> str:
    text = repr(value)
    return text if len(text) < 40 else text[:37] + "..."
