"""The import graph of a package from its source: every import, function-level ones included.

:func:`import_graph` parses each module with :mod:`ast` (no module is imported), resolves
relative imports, and records an edge to the module an import statement loads:
``from .a import b`` reaches the submodule ``a.b`` when there is one, else ``a``; an
import inside a function counts as much as one at the top of the file (it is the same
dependency, only deferred). A parent package's ``__init__`` that Python runs first is
not an edge: every module would otherwise depend on the package's public API.

:func:`circles` lists the strongly connected components with more than one module
(Tarjan), each as a sorted list: an import circle, however long.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Import:
    """One import statement of ``module``: what it loads, where, and whether at the top."""

    module: str
    target: str
    line: int
    top_level: bool
    type_only: bool = False  # under ``if TYPE_CHECKING:``: read by type checkers, never run


def modules(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` file of the package at ``root``."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def imports(root: Path) -> list[Import]:
    """Every import of the package at ``root`` that loads one of its own modules."""
    known = modules(root)
    out = []
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text(), filename=str(path))
        top = {id(node) for node in tree.body}
        typing = {id(node) for block in tree.body if _type_checking(block) for node in block.body}
        for node in ast.walk(tree):
            for target in _targets(node, package, known):
                if target != name:
                    imp = Import(name, target, node.lineno, id(node) in top, id(node) in typing)
                    out.append(imp)
    return out


def _type_checking(node) -> bool:
    """Whether ``node`` is ``if TYPE_CHECKING:`` (or ``if typing.TYPE_CHECKING:``)."""
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (at the top or in a function)."""
    graph = {name: set() for name in modules(root)}
    for imp in imports(root):
        graph[imp.module].add(imp.target)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = counter
                counter += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph.get(child, ())))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def _targets(node, package: str, known: dict) -> list[str]:
    if isinstance(node, ast.Import):
        return [t for t in (_owner(a.name, known) for a in node.names) if t]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:
        parts = package.split(".") if package else []
        base = parts[: len(parts) - (node.level - 1)]
        source = ".".join([*base, node.module] if node.module else base)
    else:
        source = node.module or ""
    targets = []
    for alias in node.names:
        submodule = f"{source}.{alias.name}"
        target = submodule if submodule in known else _owner(source, known)
        if target:
            targets.append(target)
    return targets


def _owner(name: str, known: dict) -> str | None:
    """The longest known module that ``name`` is or lies in (None outside the package)."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def top_level_packages(root: Path) -> dict[str, set[str]]:
    """Module -> the outside packages (first name) it imports at its top level."""
    out = {}
    for name, path in modules(root).items():
        tree = ast.parse(path.read_text(), filename=str(path))
        found = set()
        for node in tree.body:
            if isinstance(node, ast.Import):
                found.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                found.add(node.module.split(".")[0])
        found.discard(root.name)
        out[name] = found
    return out


def loads(root: Path, packages: set[str]) -> set[str]:
    """The package's modules whose import loads one of ``packages`` (through its top level)."""
    outside = top_level_packages(root)
    top = {name: set() for name in outside}
    for imp in imports(root):
        if imp.top_level:
            top[imp.module].add(imp.target)
    heavy = {name for name, found in outside.items() if found & packages}
    grew = True
    while grew:
        grew = False
        for name, targets in top.items():
            if name not in heavy and targets & heavy:
                heavy.add(name)
                grew = True
    return heavy
