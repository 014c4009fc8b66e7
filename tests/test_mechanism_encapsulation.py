"""Outside ``dpinfer/mechanisms/`` nothing reads a mechanism's insides or asks for its class.

A consumer reads a mechanism through its public names (``check_released``,
``cell_form``, ``noise_scale``, ``Thresholded.cut``, ...), so a family can change
its insides, and a new family joins, without editing the samplers, the marginals,
the audits or the examples. The walk reads the source with :mod:`ast`:

- a *private member* is a ``_name`` (not a dunder) that a mechanism class defines
  (a method, a class attribute, or an attribute it sets on ``self``); reading
  ``x._name`` or ``getattr(x, "_name")`` on anything but ``self``, ``cls`` or
  ``super()`` (a subclass extending the family hooks in its own body) is a read
  of the insides;
- ``isinstance``/``issubclass`` against a concrete mechanism class, or a test of
  ``type(x)``, is a dispatch on the family. Checking that an argument is a
  :class:`~dpinfer.Mechanism` at all (the interface every family implements) is
  not; family-specific code registers its families (``functools.singledispatch``)
  instead.

Companions plant both kinds of read in a small source tree and the walk must find
them.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import dpinfer

REPOSITORY = Path(dpinfer.__file__).parent.parent
MECHANISMS = REPOSITORY / "dpinfer" / "mechanisms"
#: the trees whose code consumes mechanisms (tests excepted: some test the insides)
CONSUMERS = ("dpinfer", "models", "benchmarks")
#: the interface: an argument may be checked against it
INTERFACE = "Mechanism"
_OWN = ("self", "cls")


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _defines(node: ast.ClassDef, name: str) -> bool:
    return any(isinstance(item, ast.FunctionDef) and item.name == name for item in node.body)


def _base_names(node: ast.ClassDef) -> set[str]:
    return {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases}


def mechanism_insides(root: Path) -> tuple[set[str], set[str]]:
    """``(classes, private)``: the mechanism classes under ``root`` and their private names.

    A mechanism class is ``Mechanism``, a class that states a ``privacy``
    guarantee (the sparse vector technique, which is no ``Mechanism``), or a class
    whose bases (by name) lead to one.
    """
    defs = {}
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                defs[node.name] = node
    classes = {INTERFACE} | {name for name, node in defs.items() if _defines(node, "privacy")}
    grown = True
    while grown:
        grown = False
        for name, node in defs.items():
            if name not in classes and _base_names(node) & classes:
                classes.add(name)
                grown = True
    private = set()
    for name in classes & set(defs):
        for item in defs[name].body:
            if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                private.add(item.name)
            elif isinstance(item, ast.Assign | ast.AnnAssign):
                targets = item.targets if isinstance(item, ast.Assign) else [item.target]
                private.update(t.id for t in targets if isinstance(t, ast.Name))
        for node in ast.walk(defs[name]):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.ctx, ast.Store)
                and isinstance(node.value, ast.Name)
                and node.value.id == "self"
            ):
                private.add(node.attr)
    private = {name for name in private if _private(name)}
    return classes, private


def _own(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id in _OWN
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"
    )


def _class_names(node: ast.expr) -> set[str]:
    return {
        n.id if isinstance(n, ast.Name) else n.attr
        for n in ast.walk(node)
        if isinstance(n, ast.Name | ast.Attribute)
    }


def _is_type_of(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "type"
    )


def reads(source: str, classes: set[str], private: set[str]) -> list[str]:
    """The reads of mechanisms' insides in ``source`` (see the module notes), one line each."""
    families = classes - {INTERFACE}
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in private and not _own(node.value):
            found.append(f"line {node.lineno}: reads {ast.unparse(node)}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            args, name = node.args, node.func.id
            if name == "getattr" and len(args) >= 2 and not _own(args[0]):
                attr = args[1]
                if isinstance(attr, ast.Constant) and attr.value in private:
                    found.append(f"line {node.lineno}: reads {ast.unparse(node)}")
            if name in ("isinstance", "issubclass") and len(args) == 2:
                if _class_names(args[1]) & families:
                    found.append(f"line {node.lineno}: dispatches on {ast.unparse(node)}")
        elif isinstance(node, ast.Compare) and any(
            map(_is_type_of, [node.left, *node.comparators])
        ):
            if _class_names(node) & families:
                found.append(f"line {node.lineno}: dispatches on {ast.unparse(node)}")
    return found


def _consumer_reads(repository: Path, mechanisms: Path, trees) -> list[str]:
    classes, private = mechanism_insides(mechanisms)
    found = []
    for tree in trees:
        for path in sorted((repository / tree).rglob("*.py")):
            if mechanisms in path.parents:
                continue
            name = path.relative_to(repository)
            found += [f"{name} {r}" for r in reads(path.read_text(), classes, private)]
    return found


def test_no_consumer_reads_a_mechanisms_insides():
    found = _consumer_reads(REPOSITORY, MECHANISMS, CONSUMERS)
    assert found == [], "reads of mechanisms' insides:\n" + "\n".join(found)


def test_the_walk_sees_the_mechanisms():
    classes, private = mechanism_insides(MECHANISMS)
    assert {"Laplace", "DiscreteGaussian", "Thresholded", "SparseVector"} <= classes
    assert {"_check_released", "_cut", "_log_density", "_publishes", "_log1p_p"} <= private


# --- planted companions -------------------------------------------------------------------

_PLANTED_MECHANISMS = {
    "base.py": """
        class Mechanism:
            def _check_released(self, released):
                return released
    """,
    "noise.py": """
        from .base import Mechanism

        class Noise(Mechanism):
            _table = ()

            def __init__(self):
                self._cut = 1
    """,
}


def _tree(tmp_path: Path, consumer: str) -> Path:
    mechanisms = tmp_path / "pkg" / "mechanisms"
    mechanisms.mkdir(parents=True)
    for name, text in _PLANTED_MECHANISMS.items():
        (mechanisms / name).write_text(textwrap.dedent(text))
    (tmp_path / "pkg" / "consumer.py").write_text(textwrap.dedent(consumer))
    return mechanisms


def _found(tmp_path: Path, consumer: str) -> list[str]:
    mechanisms = _tree(tmp_path, consumer)
    return _consumer_reads(tmp_path, mechanisms, ["pkg"])


def test_planted_private_reads_are_found(tmp_path):
    found = _found(
        tmp_path,
        """
        def start(mech, released):
            released = mech._check_released(released)
            return released, mech._cut, getattr(mech, "_table"), mech._unrelated
        """,
    )
    assert [f.split(": ", 1)[1] for f in found] == [
        "reads mech._check_released",
        "reads mech._cut",
        "reads getattr(mech, '_table')",
    ]


def test_planted_family_dispatch_is_found(tmp_path):
    found = _found(
        tmp_path,
        """
        from .mechanisms.base import Mechanism
        from .mechanisms.noise import Noise

        def score(mech):
            if not isinstance(mech, Mechanism):  # the interface: allowed
                raise TypeError(type(mech).__name__)
            if isinstance(mech, (int, Noise)) or type(mech) is Noise:
                return 1
        """,
    )
    assert [f.split(": ", 1)[1] for f in found] == [
        "dispatches on isinstance(mech, (int, Noise))",
        "dispatches on type(mech) is Noise",
    ]


def test_a_subclass_extends_the_hooks_in_its_own_body(tmp_path):
    found = _found(
        tmp_path,
        """
        from .mechanisms.noise import Noise

        class Fraction(Noise):
            def _check_released(self, released):
                return super()._check_released(released) + self._cut
        """,
    )
    assert found == []
