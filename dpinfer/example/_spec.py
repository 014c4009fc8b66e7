"""An example's description, :class:`Example` and :class:`Option`, and :func:`discover`.

See :mod:`dpinfer.example` for how an example is written.

Examples
--------
>>> from dpinfer.example import discover
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
from typing import TYPE_CHECKING, Any

from .._rng import RNGLike

if TYPE_CHECKING:
    from ._rows import Result

__all__ = ["LONG_RUN_SECONDS", "Example", "Option", "discover"]

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

    Examples
    --------
    >>> from dpinfer.example import Option, integer
    >>> opt = Option("nuts_draws", 1000, "NUTS draws per chain", integer(100, 10_000))
    >>> opt.cli_flag, opt.range, opt.parse("200")
    ('--nuts-draws', 'an integer from 100 to 10,000', 200)
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

    def parse(self, value: object) -> Any:
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

    Examples
    --------
    >>> from dpinfer.example import Example, Option, between
    >>> demo = Example("demo", "a demo", "nobody (2025)", seconds=120,
    ...                options=(Option("epsilon", 1.0, "privacy budget", between(0.1, 10)),))
    >>> demo.runtime, demo.long, demo.defaults()
    ('about 2 min', True, {'epsilon': 1.0})
    >>> demo.check({"epsilon": "20"})
    Traceback (most recent call last):
    ...
    ValueError: epsilon must be from 0.1 to 10, got '20'
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
        >>> from dpinfer.example import discover
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

    def run(
        self,
        *,
        rng: RNGLike = None,
        progressbar: bool = True,
        verbose: bool = False,
        **options: Any,
    ) -> Result:
        """Check ``options`` (:meth:`check`), then call the example module's ``run``."""
        checked = self.check(options)
        module = importlib.import_module(self.module)
        return module.run(**checked, rng=rng, progressbar=progressbar, verbose=verbose)


def discover(
    package: str = "dpinfer.models", *, missing: dict | None = None
) -> dict[str, Example]:
    """Return every example of ``package`` by name, in alphabetical order.

    Imports each public module (or subpackage) of the package, by name, and
    keeps those that define an ``EXAMPLE`` (an :class:`Example`) and a ``run``
    function. A module that needs a package this installation lacks (an
    optional extra such as torch) is skipped.

    Parameters
    ----------
    package : str, default "dpinfer.models"
        The package holding the examples.
    missing : dict, optional
        Receives the name and the import error of each module skipped.

    Returns
    -------
    dict of str to Example
        With :attr:`Example.module` the module or package that holds ``run``.

    Examples
    --------
    >>> from dpinfer.example import discover
    >>> examples = discover()
    >>> examples["lalonde"].module
    'dpinfer.models.lalonde'
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
