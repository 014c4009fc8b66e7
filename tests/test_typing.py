"""Every public callable of dpinfer has annotated parameters and return type.

The public names are the ``__all__`` of ``dpinfer`` and of each of its public modules (a
module whose dotted path has no part starting with ``_``). For a public function that is its
signature; for a public class, ``__init__``, ``__call__`` and every public method, class
method, static method and property that the class or one of its dpinfer base classes defines.
``self`` and ``cls`` are not counted. Names re-exported from outside dpinfer (a NumPy function,
a torch base class's methods) are not dpinfer's to annotate and are skipped, and so are the
examples (``dpinfer.models``, installed from ``models/``), which mypy does not check either.

Run as a script, this module prints the share of public parameters and returns annotated.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import sys
import textwrap
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest

import dpinfer

_CLASS_DUNDERS = ("__init__", "__call__")


@dataclass
class Coverage:
    """Parameters and returns of public callables, and the ones missing an annotation."""

    parameters: int = 0
    returns: int = 0
    checked: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)

    @property
    def annotated_parameters(self) -> int:
        return self.parameters - sum(": parameter " in m for m in self.missing)

    @property
    def annotated_returns(self) -> int:
        return self.returns - sum(m.endswith(": return") for m in self.missing)


def public_modules(package: types.ModuleType) -> Iterator[types.ModuleType]:
    """Yield ``package`` and each of its submodules with no private part in its name."""
    yield package
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            yield importlib.import_module(info.name)


def _is_own(obj: object, prefix: str) -> bool:
    return (getattr(obj, "__module__", None) or "").startswith(prefix)


def _functions_of(cls: type, prefix: str) -> Iterator[tuple[str, Callable, bool]]:
    """Yield (name, function, bound) for the public callables that ``cls`` defines.

    ``bound`` tells whether the first parameter is ``self``/``cls``.
    """
    for klass in cls.__mro__:
        if not _is_own(klass, prefix):
            continue
        for name, member in vars(klass).items():
            if name.startswith("_") and name not in _CLASS_DUNDERS:
                continue
            where = f"{klass.__module__}.{klass.__qualname__}.{name}"
            if isinstance(member, staticmethod):
                yield where, member.__func__, False
            elif isinstance(member, classmethod):
                yield where, member.__func__, True
            elif isinstance(member, property):
                for accessor in (member.fget, member.fset):
                    if accessor is not None:
                        yield where, accessor, True
            elif inspect.isfunction(member):
                yield where, member, True


def _public_functions(modules: list[types.ModuleType]) -> Iterator[tuple[str, Callable, bool]]:
    seen: set[int] = set()
    for module in modules:
        prefix = module.__name__.split(".")[0]
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if inspect.isclass(obj) and _is_own(obj, prefix):
                candidates = _functions_of(obj, prefix)
            elif inspect.isfunction(obj) and _is_own(obj, prefix):
                candidates = iter([(f"{obj.__module__}.{obj.__qualname__}", obj, False)])
            else:
                continue
            for where, function, bound in candidates:
                function = inspect.unwrap(function)
                if id(function) not in seen:
                    seen.add(id(function))
                    yield where, function, bound


def coverage(modules: list[types.ModuleType]) -> Coverage:
    """Count the annotated parameters and returns of the modules' public callables."""
    result = Coverage()
    for where, function, bound in _public_functions(modules):
        result.checked.append(where)
        annotations = inspect.get_annotations(function)
        parameters = list(inspect.signature(function, follow_wrapped=False).parameters)
        for name in parameters[1:] if bound else parameters:
            result.parameters += 1
            if name not in annotations:
                result.missing.append(f"{where}: parameter {name!r}")
        result.returns += 1
        if "return" not in annotations:
            result.missing.append(f"{where}: return")
    return result


@pytest.fixture(scope="module")
def dpinfer_coverage() -> Coverage:
    return coverage(list(public_modules(dpinfer)))


def test_public_callables_are_annotated(dpinfer_coverage):
    assert dpinfer_coverage.missing == []


def test_walk_reaches_the_public_api(dpinfer_coverage):
    # a walk that found nothing would pass the test above vacuously: it reaches functions,
    # constructors, methods, properties and class methods of every public subpackage
    expected = {
        "dpinfer.accounting._gaussian.gaussian_epsilon",
        "dpinfer.mechanisms.laplace.Laplace.__init__",
        "dpinfer.mechanisms.laplace.Laplace.from_privacy",
        "dpinfer.mechanisms.base.Mechanism.logpdf",
        "dpinfer.accounting._privacy.Privacy.notion",
        "dpinfer.samplers.rejection.rejection_abc",
        "dpinfer.marginal.to_pymc",
        "dpinfer.distances.mmd.MMD.__call__",
        "dpinfer.neural.sppe.sppe",
        "dpinfer._validate.positive_finite",  # public as dpinfer.validate.positive_finite
        "dpinfer.example._report.save_run",
        "dpinfer.audit.svt.svt_privacy_loss",
    }
    assert expected <= set(dpinfer_coverage.checked)
    assert dpinfer_coverage.returns > 300 and dpinfer_coverage.parameters > 900


_PLANTED = {
    "parameter": (
        """
        def release(x, *, rng: int = 0) -> int:
            return x
        """,
        ["planted.release: parameter 'x'"],
    ),
    "return": (
        """
        def release(x: int):
            return x
        """,
        ["planted.release: return"],
    ),
    "method": (
        """
        class Release:
            def __init__(self, x: int) -> None:
                self.x = x

            def score(self, y) -> int:
                return y

            @property
            def size(self):
                return 1
        """,
        ["planted.Release.score: parameter 'y'", "planted.Release.size: return"],
    ),
}


@pytest.mark.parametrize("kind", sorted(_PLANTED))
def test_planted_unannotated_callable_is_flagged(kind, monkeypatch):
    source, expected = _PLANTED[kind]
    module = types.ModuleType("planted")
    module.__all__ = ["Release" if kind == "method" else "release"]
    monkeypatch.setitem(sys.modules, "planted", module)
    # a function outside __all__ is not public, so is not flagged
    exec(textwrap.dedent(source) + "\ndef helper(z):\n    pass\n", module.__dict__)
    assert coverage([module]).missing == expected


if __name__ == "__main__":
    found = coverage(list(public_modules(dpinfer)))
    print(
        f"parameters annotated: {found.annotated_parameters}/{found.parameters} "
        f"({found.annotated_parameters / found.parameters:.1%}); "
        f"returns annotated: {found.annotated_returns}/{found.returns} "
        f"({found.annotated_returns / found.returns:.1%})"
    )
