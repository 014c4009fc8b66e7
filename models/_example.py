"""The shape every published example shares, and how ``dpinfer run`` finds them.

An example module in ``dpinfer.models`` holds the data, the model, the
mechanism and the references of one paper's example, plus

* ``EXAMPLE``, an :class:`Example`: its command-line name, paper, expected run
  time and :class:`Option` list (the release, the privacy budget, prior
  hyperparameters, sample sizes), each with a default and an argument check
  with its documented range (:func:`between`, :func:`integer`, :func:`vector`,
  :func:`yes_no`, :func:`choice`, :func:`subset`, :func:`folder`), shown in
  ``--help`` and applied by :meth:`Example.run` before anything is computed;
* ``run(*, <options>, rng=None, progressbar=True, verbose=False)``, returning a
  :class:`~dpinfer.models._report.Result` (a report, the posterior, a figure);
* optionally ``check_options(**options)``, which refuses a combination of
  options that cannot run (a predicted cost past a budget, a release
  implausible under the prior) with a ValueError naming the options and what
  to change; it must be cheap, as it runs before the output folder is touched.

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
            Option("epsilon", 1.0, "privacy budget", between(0.01, 10)),
            Option("draws", 2000, "posterior draws", integer(100, 10**5)),
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
>>> examples["poisson-count"].option("epsilon").range
'from 0.05 to 10'
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from ._example_checks import (
    between,
    choice,
    finite,
    folder,
    integer,
    positive,
    subset,
    vector,
    yes_no,
)

__all__ = [
    "Example",
    "Option",
    "between",
    "choice",
    "discover",
    "finite",
    "folder",
    "integer",
    "positive",
    "subset",
    "vector",
    "yes_no",
]

#: Examples expected to take longer than this many seconds say so before starting.
LONG_RUN_SECONDS = 20.0


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
    def range(self) -> str:
        """The documented valid values, in words (``from 0.02 to 10``)."""
        return getattr(self.check, "range", "")

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
    smallest : dict
        The cheapest setting: sample-size options at the low end of their
        ranges (for grid tests, :meth:`range_ends`).
    """

    name: str
    title: str
    paper: str
    seconds: float
    options: tuple[Option, ...] = ()
    module: str = field(default="", compare=False)
    smallest: dict = field(default_factory=dict, compare=False)

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

    def range_ends(self) -> list[tuple[str, dict]]:
        """Return ``(label, options)`` with each ranged option at its low and high end.

        The other options keep their defaults, sample sizes their :attr:`smallest`
        setting; a vector option has every entry at the end at once. Options in
        :attr:`smallest` (sample sizes) are left at it.

        Examples
        --------
        >>> from dpinfer.models._example import discover
        >>> ends = dict(discover()["poisson-count"].range_ends())
        >>> ends["epsilon=low"]["epsilon"], ends["epsilon=low"]["draws"]
        (0.05, 100)
        """
        base = {**self.defaults(), **self.smallest}
        cases = []
        for opt in self.options:
            bounds = getattr(opt.check, "bounds", None)
            if bounds is None or opt.name in self.smallest:
                continue
            for end, label in ((0, "low"), (1, "high")):
                value = [b[end] for b in bounds] if opt.size else bounds[end]
                cases.append((f"{opt.name}={label}", {**base, opt.name: value}))
        return cases

    def check(self, options: dict) -> dict:
        """Return ``options`` checked against every option's range (text or values).

        An option whose default is None (the example chooses) may be None.
        Raises ValueError or TypeError naming the option and its valid values;
        then the module's ``check_options`` (if any) sees every option, the
        defaults filled in, and refuses combinations that cannot run.
        """
        known = {opt.name: opt for opt in self.options}
        unknown = sorted(set(options) - set(known))
        if unknown:
            raise TypeError(
                f"{self.name} has no option {unknown[0]!r}; its options: {sorted(known)}"
            )
        checked = {
            name: value
            if value is None and known[name].default is None
            else known[name].parse(value)
            for name, value in options.items()
        }
        combination = getattr(importlib.import_module(self.module), "check_options", None)
        if combination is not None:
            combination(**{**self.defaults(), **checked})
        return checked

    def run(self, *, rng=None, progressbar: bool = True, verbose: bool = False, **options):
        """Check ``options`` (:meth:`check`), then call the example module's ``run``."""
        checked = self.check(options)
        module = importlib.import_module(self.module)
        return module.run(**checked, rng=rng, progressbar=progressbar, verbose=verbose)


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
