"""The shape every published example shares, and how ``dpinfer run`` finds them.

An example module in ``dpinfer.models`` holds the data, the model, the
mechanism and the references of one paper's example, plus

* ``EXAMPLE``, an :class:`Example`: its command-line name, paper, expected run
  time and :class:`Option` list (the release, the privacy budget, prior
  hyperparameters, sample sizes), each with a default and an argument check
  from :mod:`dpinfer._validate`;
* ``run(*, <options>, rng=None, progressbar=True, verbose=False)``, returning a
  :class:`~dpinfer.models._report.Result` (a report, the posterior, a figure).

:func:`discover` imports the modules of the package and collects every
``EXAMPLE``; a new example is one new module, nothing to register elsewhere:

.. code-block:: python

    EXAMPLE = Example(
        name="my-example",                       # dpinfer run my-example
        title="What the analysis shows",
        paper="Author (2024), Section 3",
        seconds=30,                              # at the defaults, one core
        module=__name__,
        options=(
            Option("released", RELEASED, "the release", vector(4), flag="--release"),
            Option("epsilon", 1.0, "privacy budget", positive),
            Option("draws", 2000, "posterior draws", integer(100)),
        ),
    )

    def run(*, released=RELEASED, epsilon=1.0, draws=2000, rng=None,
            progressbar=True, verbose=False) -> Result:
        idata = dp.smc_abc(model(), mechanism(epsilon), released, particles=draws,
                           rng=rng, progressbar=progressbar)
        rows = draw_rows("exact (smc_abc)", "exact", idata_draws(idata))
        rows += distribution_rows("naive", "naive", naive_posterior(released))
        return Result(Report("My example (Author 2024)", ["setting"], rows), idata)

The tests (``tests/test_cli_run.py``) ask for a small setting of every example
(``TINY``), with which it runs once end to end.

Examples
--------
>>> from dpinfer.models._example import discover
>>> examples = discover()
>>> examples["poisson-count"].paper
'Gong (2022), Section 5.1'
>>> examples["poisson-count"].option("epsilon").parse("0.5")
0.5
"""

from __future__ import annotations

import importlib
import math
import numbers
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import numpy as np

from dpinfer import _validate

__all__ = [
    "Example",
    "Option",
    "choice",
    "discover",
    "finite",
    "integer",
    "positive",
    "vector",
    "yes_no",
]

#: Examples expected to take longer than this many seconds say so before starting.
LONG_RUN_SECONDS = 20.0


# --- argument checks for options: each takes (name, text or value) -> value ----------


def positive(name: str, value) -> float:
    """Check a positive finite number."""
    return _validate.positive_finite(name, _number(name, value))


def finite(name: str, value) -> float:
    """Check a finite number."""
    x = _validate._real(name, _number(name, value))
    if not math.isfinite(x):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return x


def integer(minimum: int, maximum: int = 10**8) -> Callable[[str, Any], int]:
    """Check an integer in ``[minimum, maximum]`` (sample sizes: a summary needs several draws)."""

    def check(name: str, value) -> int:
        number = _integer(name, value)
        if not minimum <= number <= maximum:
            raise ValueError(
                f"{name} must be an integer from {minimum} to {maximum:,}, got {value!r}"
            )
        return number

    check.__doc__ = f"An integer from {minimum} to {maximum}."
    return check


def vector(size: int, element: Callable[[str, Any], Any] = finite) -> Callable:
    """Check a sequence of exactly ``size`` values, each checked by ``element``."""

    def check(name: str, value) -> np.ndarray:
        items = value.split() if isinstance(value, str) else list(np.ravel(value))
        if len(items) != size:
            raise ValueError(f"{name} must have {size} values, got {len(items)}: {value!r}")
        return np.asarray([element(f"{name}[{i}]", v) for i, v in enumerate(items)])

    check.size = size
    check.__doc__ = f"{size} values."
    return check


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


def choice(*values: str) -> Callable[[str, Any], str]:
    """One of the given strings."""

    def check(name: str, value) -> str:
        if value not in values:
            raise ValueError(f"{name} must be one of {', '.join(values)}; got {value!r}")
        return value

    check.choices = values
    check.__doc__ = f"One of {', '.join(values)}."
    return check


@dataclass(frozen=True)
class Option:
    """One setting of an example: a keyword of its ``run`` and a ``--flag`` of ``dpinfer run``.

    Attributes
    ----------
    name : str
        The keyword argument of ``run`` (``released``, ``epsilon``, ``alpha``, ...).
    default : object
        Its value in the paper's example.
    help : str
        One line for ``dpinfer run <example> --help``.
    check : callable
        ``check(name, value) -> value``: converts command-line text and
        refuses bad values with ``ValueError``/``TypeError`` naming the option.
    flag : str, optional
        The command-line flag; default ``--`` + ``name`` with ``-`` for ``_``.
    """

    name: str
    default: Any
    help: str
    check: Callable[[str, Any], Any]
    flag: str = ""

    @property
    def cli_flag(self) -> str:
        """The command-line flag of this option."""
        return self.flag or "--" + self.name.replace("_", "-")

    @property
    def size(self) -> int | None:
        """Number of values for a vector option, None for a scalar."""
        return getattr(self.check, "size", None)

    def parse(self, value):
        """Return ``value`` (text or a value) checked and converted."""
        return self.check(self.cli_flag.lstrip("-"), value)


@dataclass(frozen=True)
class Example:
    """Metadata of one published example, for ``dpinfer run``.

    Attributes
    ----------
    name : str
        Command-line name (``poisson-count``).
    title : str
        What the example is about, in a line.
    paper : str
        Short citation with the section (``Gong (2022), Section 5.1``).
    seconds : float
        Expected wall time with the default options on one core of a laptop.
    options : tuple of Option
        The settings a user may change.
    module : str
        The module that holds ``run`` (filled in by :func:`discover`).
    """

    name: str
    title: str
    paper: str
    seconds: float
    options: tuple[Option, ...] = ()
    module: str = field(default="", compare=False)

    @property
    def runtime(self) -> str:
        """The expected run time in words."""
        if self.seconds < 90:
            return f"about {max(5, round(self.seconds / 5) * 5):.0f} s"
        return f"about {round(self.seconds / 60):.0f} min"

    @property
    def long(self) -> bool:
        """Whether the example says how long it takes before starting."""
        return self.seconds > LONG_RUN_SECONDS

    def option(self, name: str) -> Option:
        """Return the option called ``name``."""
        for opt in self.options:
            if opt.name == name:
                return opt
        raise KeyError(f"{self.name} has no option {name!r}")

    def defaults(self) -> dict:
        """Return the keyword arguments of ``run`` at the paper's settings."""
        return {opt.name: opt.default for opt in self.options}

    def run(self, **kwargs):
        """Import the example's module and call its ``run`` with ``kwargs``."""
        return getattr(importlib.import_module(self.module), "run")(**kwargs)


def discover(
    package: str = "dpinfer.models", *, missing: dict | None = None
) -> dict[str, Example]:
    """Return every example of ``package`` by name, in alphabetical order.

    Imports each public module of the package and keeps those that define an
    ``EXAMPLE`` (an :class:`Example`) and a ``run`` function. A module that
    needs a package this installation lacks (an optional extra such as torch)
    is skipped; ``missing``, if given, receives its name and the import error.
    """
    found: dict[str, Example] = {}
    root = importlib.import_module(package)
    for info in pkgutil.iter_modules(root.__path__):
        if info.name.startswith("_"):
            continue
        try:
            module = importlib.import_module(f"{package}.{info.name}")
        except ModuleNotFoundError as err:
            if missing is not None:
                missing[f"{package}.{info.name}"] = str(err)
            continue
        example = _example_of(module)
        if example is not None:
            if example.name in found:
                raise RuntimeError(
                    f"two examples are called {example.name!r}: {found[example.name].module} "
                    f"and {module.__name__}"
                )
            found[example.name] = example
    return dict(sorted(found.items()))


def _example_of(module: ModuleType) -> Example | None:
    example = getattr(module, "EXAMPLE", None)
    if not isinstance(example, Example) or not callable(getattr(module, "run", None)):
        return None
    return Example(**{**example.__dict__, "module": module.__name__})


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
