"""Every choice (a string option) refuses a NumPy array with a TypeError naming the choices.

``value in ("analytic", "classical")`` on a NumPy array raises NumPy's "truth value of
an array is ambiguous" (or, for a one-element array, accepts it). Every choice goes
through :func:`dpinfer._validate.choice`; the tests call each public one with arrays and
a list holding a valid choice, and check that no other module spells its own check.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import dpinfer as dp
from dpinfer import _validate

from . import _api
from ._valid import choices

ROOT = Path(dp.__file__).parent

#: (entry of the sweep, parameter) -> a valid choice
CHOICES = {
    ("Gaussian.from_privacy", "calibration"): "classical",
    ("Thresholded", "publish"): "above",
    ("mcem", "mstep"): "auto",
    ("mcem", "schedule"): "auto",
    ("smc_abc", "simulations_per_particle"): "auto",
}
NEURAL_CHOICES = {
    ("neural.sppe", "noise"): "mc",
    ("neural.sppe", "settings"): "default",
    ("neural.sppe", "embedding"): "mlp",
    ("neural.sple", "noise"): "mc",
    ("neural.sple", "settings"): "default",
}


def _entries(names, entries):
    by_name = {entry.name: entry for entry in entries}
    return [(by_name[entry], param, valid) for (entry, param), valid in names.items()]


def _refused(entry, param, valid):
    for bad in choices(valid):
        kwargs = entry.valid() | {param: bad}
        with pytest.raises(TypeError, match=rf"^{re.escape(param)} must be one of .*'{valid}'"):
            entry.call(**kwargs)


@pytest.mark.parametrize(
    ("entry", "param", "valid"),
    _entries(CHOICES, _api.entries_without_files()),
    ids=[f"{e}-{p}" for e, p in CHOICES],
)
def test_an_array_where_a_choice_is_expected_names_the_parameter_and_the_choices(
    entry, param, valid, tmp_path
):
    _refused(entry, param, valid)


@pytest.mark.parametrize(("entry", "param"), list(NEURAL_CHOICES), ids=str)
def test_an_array_where_a_neural_choice_is_expected_names_the_choices(entry, param, tmp_path):
    pytest.importorskip("torch")
    from ._api_neural import neural_entries

    (found,) = _entries({(entry, param): NEURAL_CHOICES[entry, param]}, neural_entries(tmp_path))
    _refused(*found)


def _sir_run(simulator):
    from dpinfer.models import sir

    return sir.run(simulator=simulator)


def _poisson_count_loglik(method):
    from dpinfer.models.poisson_count import _likelihood

    return _likelihood.log_likelihood([3.0], method=method)


@pytest.mark.parametrize(
    ("call", "param", "valid"),
    [(_sir_run, "simulator", "exact"), (_poisson_count_loglik, "method", "sum")],
    ids=["sir-simulator", "poisson_count-method"],
)
def test_the_examples_choices_refuse_arrays(call, param, valid):
    for bad in choices(valid):
        with pytest.raises(TypeError, match=rf"^{param} must be one of"):
            call(bad)


def test_choice_takes_its_choices_and_refuses_unknown_strings_by_name():
    assert _validate.choice("publish", "above", ("at_least", "above")) == "above"
    with pytest.raises(ValueError, match=r"^publish must be one of 'at_least', 'above', got 'x'"):
        _validate.choice("publish", "x", ("at_least", "above"))
    with pytest.raises(TypeError, match=r"or a StagedSchedule, got int: 3$"):
        _validate.choice("schedule", 3, ("auto",), alternatives="a StagedSchedule")


def _spelled_choice_checks(path: Path) -> list[str]:
    """``x not in (...)`` / ``x in (...)`` tests of a name against string constants, raising."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
            continue
        ops, rights = node.test.ops, node.test.comparators
        strings = [
            c
            for c in getattr(rights[0], "elts", [])
            if isinstance(c, ast.Constant) and isinstance(c.value, str)
        ]
        constant_set = isinstance(rights[0], ast.Name) and rights[0].id.lstrip("_").isupper()
        argument = isinstance(node.test.left, ast.Name)  # a parameter, not x.dtype.kind
        raises = any(isinstance(n, ast.Raise) for n in ast.walk(node))
        if isinstance(ops[0], ast.NotIn) and argument and raises and (strings or constant_set):
            found.append(f"{path.parent.name}/{path.name}:{node.lineno}")
    return found


def test_no_module_spells_its_own_check_of_a_choice():
    import dpinfer.models

    # the file readers check what a saved file holds (a string read from it), not an argument
    allowed = {ROOT / "neural" / "_io.py"}
    roots = (ROOT, Path(dpinfer.models.__file__).parent)
    paths = sorted({p for root in roots for p in root.rglob("*.py")} - allowed)
    found = [hit for path in paths for hit in _spelled_choice_checks(path)]
    assert not found, f"choices checked without _validate.choice: {found}"
