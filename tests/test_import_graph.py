"""dpinfer's import graph is a tree: no module reaches itself, function-level imports included.

The walker (``tests/_import_graph.py``) reads the source, so an import inside a function
counts: deferring an import hides a circle at import time, not in the design. A
function-level import of a dpinfer module is allowed only where it defers an optional or
heavy dependency that ``import dpinfer`` must not load (the module it imports loads one
of ``HEAVY`` at its top level); an import under ``if TYPE_CHECKING:`` is read by type
checkers only, never run, so it defers nothing (it stays an edge of the graph).
Companions plant a circle and a needless deferred import in a small package written for
the test, and the checks must find them.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from _import_graph import circles, import_graph, imports, loads

import dpinfer

ROOT = Path(dpinfer.__file__).parent
#: what ``import dpinfer`` does not load: PyMC and PyTensor (model building), ArviZ and
#: xarray (results), matplotlib (figures), torch and zuko (dpinfer.neural), dask
HEAVY = {"pymc", "pytensor", "arviz", "xarray", "matplotlib", "torch", "zuko", "dask"}


def _deferred_light_imports(root: Path) -> list[str]:
    heavy = loads(root, HEAVY)
    return [
        f"{imp.module} (line {imp.line}) imports {imp.target} inside a function"
        for imp in imports(root)
        if not imp.top_level and not imp.type_only and imp.target not in heavy
    ]


def test_dpinfer_has_no_import_circle():
    found = circles(import_graph(ROOT))
    assert found == [], "import circles (function-level imports included):\n" + "\n".join(
        " -> ".join(c) for c in found
    )


def test_function_level_imports_only_defer_heavy_dependencies():
    assert _deferred_light_imports(ROOT) == []


def test_import_dpinfer_loads_none_of_the_heavy_packages():
    code = f"import sys, dpinfer; print(sorted(m for m in {sorted(HEAVY)!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "pkg"
    (root / "sub").mkdir(parents=True)
    for name, text in {"__init__.py": "", "sub/__init__.py": "", **files}.items():
        (root / name).write_text(textwrap.dedent(text))
    return root


PLANTED = {
    "a.py": "from . import b\n",
    "b.py": """
        def f():
            from .sub.c import x  # deferred: hidden at import time
            return x
        """,
    "sub/c.py": "from ..a import y\nx = 1\n",
    "d.py": "import pkg.sub.c\n",
}


def test_companion_a_circle_through_a_function_level_import_is_found(tmp_path):
    root = _package(tmp_path, PLANTED)
    assert circles(import_graph(root)) == [["pkg.a", "pkg.b", "pkg.sub.c"]]


def test_companion_the_same_package_without_the_back_edge_has_no_circle(tmp_path):
    root = _package(tmp_path, {**PLANTED, "sub/c.py": "x = 1\n"})
    assert circles(import_graph(root)) == []
    assert import_graph(root)["pkg.d"] == {"pkg.sub.c"}


@pytest.mark.parametrize(
    ("heavy", "flagged"),
    [("import json\n", True), ("import pytensor\n", False)],
    ids=["light", "pytensor"],
)
def test_companion_a_needless_deferred_import_is_flagged(tmp_path, heavy, flagged):
    root = _package(tmp_path, {**PLANTED, "sub/c.py": heavy + "x = 1\n"})
    found = _deferred_light_imports(root)
    assert (found == ["pkg.b (line 3) imports pkg.sub.c inside a function"]) is flagged
    assert found == [] or flagged


def test_companion_an_import_for_type_checkers_only_is_not_deferred(tmp_path):
    typed = "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from .sub.c import x\n"
    root = _package(tmp_path, {**PLANTED, "b.py": typed, "sub/c.py": "x = 1\n"})
    assert _deferred_light_imports(root) == []
    assert import_graph(root)["pkg.b"] == {"pkg.sub.c"}  # still an edge of the graph
