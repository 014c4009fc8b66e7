"""The examples use public dpinfer names only, as a user's own model would; the library never
imports them.

Every import in ``models/`` (module level or inside a function), every attribute read on an
imported dpinfer name and every ``importlib.import_module("...")`` of a constant is resolved to
its dotted path; a path with a component that starts with ``_`` is private. Inside an example
package ``models/<example>/`` the package's own private submodules and names are its own; those
of ``dpinfer``, of ``dpinfer.models`` and of another example are not. A name that a dpinfer
package re-exports is taken from the package, not from the file that implements it
(``dpinfer.distances.Distance``, not ``dpinfer.distances.base.Distance``). The library,
``dpinfer/``, must not import ``dpinfer.models`` at all: ``dpinfer run`` finds the examples by
the package's name (:func:`dpinfer.example.discover`).
"""

from __future__ import annotations

import ast
import importlib
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Use:
    """One name a module takes from another: ``path`` is the dotted path, ``line`` its line."""

    path: str
    line: int


def module_name(path: Path, root: Path, package: str) -> str:
    """Return the import name of the file ``path`` of ``root``, installed as ``package``."""
    parts = [*package.split("."), *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def uses(source: str, module: str, *, is_package: bool) -> list[Use]:
    """Return every dotted path that ``source``, the module ``module``, takes from dpinfer."""
    tree = ast.parse(source)
    here = module if is_package else module.rpartition(".")[0]
    found: list[Use] = []
    bound: dict[str, str] = {}  # local name -> the dotted path it was imported as
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.append(Use(alias.name, node.lineno))
                local = alias.asname or alias.name.partition(".")[0]
                bound[local] = alias.name if alias.asname else local
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node.module, node.level, here)
            for alias in node.names:
                path = f"{base}.{alias.name}"
                found.append(Use(path, node.lineno))
                bound[alias.asname or alias.name] = path
        elif isinstance(node, ast.Call) and _is_import_call(node.func) and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                found.append(Use(arg.value, node.lineno))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            base = bound.get(node.value.id)
            if base is not None and node.attr.startswith("_") and not node.attr.startswith("__"):
                found.append(Use(f"{base}.{node.attr}", node.lineno))
    return [u for u in found if u.path == "dpinfer" or u.path.startswith("dpinfer.")]


def _absolute(module: str | None, level: int, here: str) -> str:
    if level == 0:
        return module or ""
    parts = here.split(".")
    base = parts[: len(parts) - (level - 1)]
    return ".".join([*base, *([module] if module else [])])


def _is_import_call(func: ast.expr) -> bool:
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name in ("import_module", "__import__")


def private_uses(source: str, module: str, *, is_package: bool) -> list[Use]:
    """Return the private dotted paths an example module uses, its own package's excepted."""
    parts = module.split(".")
    # dpinfer.models.<example>.<...>: the example package; a single module has none
    own = ".".join(parts[:3]) if len(parts) > 3 or (is_package and len(parts) == 3) else None
    return [
        use
        for use in uses(source, module, is_package=is_package)
        if (any(p.startswith("_") for p in use.path.split(".")) or _past_its_package(use.path))
        and not (own is not None and (use.path + ".").startswith(own + "."))
    ]


def _past_its_package(path: str) -> bool:
    """Whether ``path`` takes a name from a submodule of a dpinfer package that re-exports it."""
    parts = path.split(".")
    if parts[:2] == ["dpinfer", "models"]:
        return False
    for end in range(2, len(parts) - 1):
        try:
            package = importlib.import_module(".".join(parts[:end]))
        except ImportError:
            return False
        if hasattr(package, "__path__") and parts[-1] in getattr(package, "__all__", ()):
            return True
    return False


def library_uses_of_the_examples(source: str, module: str, *, is_package: bool) -> list[Use]:
    """Return the uses of ``dpinfer.models`` by a library module."""
    return [
        use
        for use in uses(source, module, is_package=is_package)
        if use.path == "dpinfer.models" or use.path.startswith("dpinfer.models.")
    ]


def _files(folder: str, package: str):
    root = ROOT / folder
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        yield path, module_name(path, root, package), path.name == "__init__.py"


EXAMPLE_FILES = list(_files("models", "dpinfer.models"))
LIBRARY_FILES = list(_files("dpinfer", "dpinfer"))


def test_the_example_files_are_all_read():
    names = {name for _, name, _ in EXAMPLE_FILES}
    assert {
        "dpinfer.models.lalonde._run",
        "dpinfer.models.sir",
        "dpinfer.models.pageviews",
    } <= names
    assert len(EXAMPLE_FILES) >= 40
    every = [u.path for p, n, pkg in EXAMPLE_FILES for u in uses(p.read_text(), n, is_package=pkg)]
    assert "dpinfer.example.Example" in every and "dpinfer.random.as_seed_sequence" in every


@pytest.mark.parametrize(
    ("path", "module", "is_package"), EXAMPLE_FILES, ids=[n for _, n, _ in EXAMPLE_FILES]
)
def test_an_example_imports_public_dpinfer_names_only(path, module, is_package):
    found = private_uses(path.read_text(), module, is_package=is_package)
    assert not found, "\n".join(f"{path.relative_to(ROOT)}:{u.line}: {u.path}" for u in found)


def test_the_library_never_imports_the_examples():
    found = [
        f"{path.relative_to(ROOT)}:{use.line}: {use.path}"
        for path, module, is_package in LIBRARY_FILES
        for use in library_uses_of_the_examples(path.read_text(), module, is_package=is_package)
    ]
    assert len(LIBRARY_FILES) > 100
    assert not found, "\n".join(found)


PLANTED = """
import dpinfer as dp
from dpinfer._rng import as_generator
from dpinfer import _validate
from dpinfer.samplers import _common as common
from .._budget import plan_sampler
from ..lalonde._exact import _fit
from ._data import _check_params
from . import _kernels
import importlib

def later():
    from dpinfer.distances.base import Distance
    return dp._rng.as_seed_sequence, importlib.import_module("dpinfer.models._survey")
"""


def test_companion_planted_private_imports_are_all_caught():
    found = {
        u.path for u in private_uses(PLANTED, "dpinfer.models.planted._run", is_package=False)
    }
    assert found == {
        "dpinfer._rng.as_generator",
        "dpinfer._validate",
        "dpinfer.samplers._common",
        "dpinfer.models._budget.plan_sampler",
        "dpinfer.models.lalonde._exact._fit",
        "dpinfer.distances.base.Distance",
        "dpinfer._rng",
        "dpinfer.models._survey",
    }


def test_companion_a_public_name_is_taken_from_its_package():
    source = "from dpinfer.distances.precomputed import PrecomputedDistances\n"
    found = private_uses(source, "dpinfer.models.planted", is_package=False)
    assert [u.path for u in found] == ["dpinfer.distances.precomputed.PrecomputedDistances"]
    assert not private_uses(
        "from dpinfer.distances import PrecomputedDistances\n",
        "dpinfer.models.planted",
        is_package=False,
    )


def test_companion_a_single_module_example_has_no_private_siblings():
    source = "from ._sir_model import model\nfrom . import _report\n"
    found = {u.path for u in private_uses(source, "dpinfer.models.sir", is_package=False)}
    assert found == {"dpinfer.models._sir_model.model", "dpinfer.models._report"}


def test_companion_a_library_import_of_an_example_is_caught():
    source = "def f():\n    from .models import sir\n    from .models._report import save_run\n"
    found = library_uses_of_the_examples(source, "dpinfer._run_command", is_package=False)
    assert [u.path for u in found] == ["dpinfer.models.sir", "dpinfer.models._report.save_run"]
