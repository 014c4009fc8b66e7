"""Classify a call with a bad argument: refused clearly, obscurely, or accepted.

A call is *clear* when it raises :class:`ValueError` or :class:`TypeError` whose
message names the parameter, *obscure* when it raises anything else (or a message
that does not name it), and *silent* when it returns (or is still running when
the per-call time limit ends: a bad size must be refused up front, not after a
long run). For a confidential parameter (what a curator releases, what a data
owner's run reads) a call is *leaky* when its message shows any value the bad
argument carries, in any of the usual formattings (:func:`secret_texts`).
"""

from __future__ import annotations

import contextlib
import math
import numbers
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

#: Distinctive values carried by bad confidential arguments: a message that shows one of
#: them (repr, str, %g, scientific, the integer part, ...) has leaked the data.
SECRET_FLOAT, SECRET_INT = 123456.789, 987654321
_S, _I = SECRET_FLOAT, SECRET_INT
_CONFIDENTIAL_NON_NUMBERS = [
    [_I, None, _S],  # a non-number among numbers (object array)
    ["987654321", "123456.789", "12"],  # strings
    [[_I], [_S, _S]],  # ragged
    [complex(_I, 1.0), _S, _S],
    np.array([True, False, True]),
    "123456.789",
]
_CONFIDENTIAL = [
    np.array([_I, np.nan, _S]),  # NaN among data
    np.array([_I, np.inf, _S]),
    [_I, -math.inf, _S],
    *_CONFIDENTIAL_NON_NUMBERS,
]

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
    "event_shape": [True, -1, (2, -1), 2.5, "3", (HUGE,), OTHER, 0, (0,), (2, 0)],
    # confidential data (checked with ``Param.confidential``): each value carries secrets
    "confidential": _CONFIDENTIAL,
    # where non-finite data has a meaning (a clipped distance maps it to its bound)
    "confidential_numbers": _CONFIDENTIAL_NON_NUMBERS,
    "confidential_integers": [*_CONFIDENTIAL, np.array([_I, _S, _I]), [_I, _I + 0.5, _I]],
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
    #: Confidential data: a message that shows a value the argument carries is a leak.
    confidential: bool = False

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
    verdict: str  # "clear", "obscure", "silent" or "leaky"
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


def classify(call: Callable[[], object], named: str, *, seconds: float = CALL_SECONDS, secrets=()):
    """Return ``(verdict, detail)`` for one call that must refuse a bad ``named`` argument.

    ``secrets``: texts no message may contain (the formattings of confidential values).
    """
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"), _time_limit(seconds):
            warnings.simplefilter("ignore")
            call()
    except _StillRunning:
        return "silent", f"still running after {seconds:g} s"
    except Exception as err:
        shown = sorted(s for s in secrets if s in str(err))
        if shown:
            return "leaky", f"shows {shown[:3]}: {type(err).__name__}: {err}"
        return _refusal(err, named)
    return "silent", "accepted"


def _refusal(err: Exception, named: str):
    if isinstance(err, ValueError | TypeError):
        message = str(err)
        if "unexpected keyword argument" in message:  # the sweep's table is out of date
            return "obscure", f"not a parameter of this entry point: {message}"
        if named in message:
            return "clear", message
    # anything else is the obscure class by definition
    return "obscure", f"{type(err).__name__}: {err}"


def secret_texts(value) -> set[str]:
    """Every usual formatting of the distinctive numbers, strings and bools in ``value``.

    Numbers of magnitude 1000 or more count (so small valid entries beside them do
    not), as ``repr``, ``str``, ``%g``, ``%.Ng``/``%.Ne`` (N = 3..10), with thousands
    separators and as the integer part; strings of 5 characters or more as themselves
    (and as the number they spell); bools as ``True`` and ``False``.
    """
    texts: set[str] = set()
    for leaf in _leaves(value):
        if isinstance(leaf, bool | np.bool_):
            texts |= {"True", "False"}
        elif isinstance(leaf, str) and len(leaf) >= 5:
            texts.add(leaf)
            with contextlib.suppress(ValueError):
                texts |= _formattings(float(leaf))
        elif isinstance(leaf, numbers.Complex):
            texts |= _formattings(complex(leaf).real) | _formattings(complex(leaf).imag)
    return texts


def _leaves(value):
    if isinstance(value, np.ndarray):
        yield from _leaves(value.tolist())
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _leaves(item)
    elif hasattr(value, "returns"):  # a planted sampler: what it returns is the data
        yield from _leaves(value.returns)
    else:
        yield value


def _formattings(x: float) -> set[str]:
    x = abs(x)
    if not (math.isfinite(x) and x >= 1000):
        return set()
    texts = {repr(x), str(x), f"{x:g}", f"{x:,}", str(int(x)), f"{int(x):,}"}
    texts |= {f"{x:.{p}e}" for p in range(3, 11)} | {f"{x:.{p}g}" for p in range(3, 11)}
    return texts


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

                secrets = secret_texts(value) if param.confidential else ()
                verdict, detail = classify(call, param.named or param.name, secrets=secrets)
                outcomes.append(
                    Outcome(entry.name, param.name, _show(value), verdict, detail[:200])
                )
    return outcomes


def tally(outcomes) -> dict[str, int]:
    counts = {"calls": len(outcomes), "clear": 0, "obscure": 0, "silent": 0, "leaky": 0}
    for outcome in outcomes:
        counts[outcome.verdict] += 1
    return counts


def report(outcomes, *, limit: int = 60) -> str:
    """The tally and the first ``limit`` calls that were not refused clearly."""
    counts = tally(outcomes)
    lines = [
        "bad-input sweep: {calls} calls, {clear} clear, {obscure} obscure, {silent} silent, "
        "{leaky} leaky".format(**counts)
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
