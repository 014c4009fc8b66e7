"""Every public entry point refuses bad input with an error naming the parameter.

The sweep calls each entry point of ``_api.all_entries()`` once per bad value of
each listed parameter (strings, bools, complex numbers, NaN, inf, values out of
range, wrong shapes, empty arrays, sizes like ``2**70``, wrong object types,
None), the other arguments tiny and valid, and classifies each call (see
``_harness``). It prints the tally and asserts 0 obscure and 0 silent calls.
The entries cover the package, ``dpinfer.outputs`` (output folders, written under a
temporary folder) and, when torch is installed, ``dpinfer.neural`` (``_api_neural``).
The companions check the classifier itself on planted functions, and that the
sweep lists every public callable.
"""

from __future__ import annotations

import importlib
import inspect
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpinfer as dp
from dpinfer import _validate

from . import _api, _cli, _harness
from ._api_outputs import OUTPUTS_NOT_ENTRY_POINTS
from ._harness import Entry, Param, classify, sweep, tally

MODULES = [
    "dpinfer",
    "dpinfer.mechanisms",
    "dpinfer.theory",
    "dpinfer.accounting",
    "dpinfer.audit",
    "dpinfer.compare",
    "dpinfer.distances",
    "dpinfer.samplers",
    "dpinfer.outputs",
]

# Public callables that take no user input to refuse: result containers built by the
# library, abstract bases, an exception class.
NOT_ENTRY_POINTS = {
    "AcceptanceRate",
    "AuditResult",
    "BoundaryEstimateWarning",
    "Comparison",
    "DegenerateDrawsWarning",
    "Distance",
    "GaussianVerification",
    "MCEMConvergenceWarning",
    "MCEMResult",
    "Mechanism",
    "PrecisionWarning",
    "ProfileWarning",
    "PublicDraws",
    "SBCResult",
    "SVTPrivacyLoss",
    "SVTResult",
    "SharedLatentWarning",
    "SimulationBudgetExceeded",
    *OUTPUTS_NOT_ENTRY_POINTS,
}


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    return sweep(_api.all_entries(tmp_path_factory.mktemp("sweep")))


def _assert_all_clear(outcomes, *, at_least: int) -> None:
    """Print the tally; require ``at_least`` calls, none obscure and none silent."""
    text = _harness.report(outcomes)
    print(text)
    counts = tally(outcomes)
    assert counts["calls"] > at_least
    assert counts["silent"] == 0 and counts["obscure"] == 0, text


def test_every_bad_value_is_refused_by_name(outcomes):
    _assert_all_clear(outcomes, at_least=2500)


def test_every_bad_command_line_value_is_refused_by_name(tmp_path):
    # each valid call reaches the (replaced) run, so a refusal is the option's own check
    outcomes = sweep(_cli.cli_entries(str(tmp_path / "out")))
    _assert_all_clear(outcomes, at_least=400)


def test_the_command_line_sweep_sees_an_accepted_value_as_silent(tmp_path):
    entry = _cli.cli_entries(str(tmp_path / "out"))[0]  # dpinfer mechanisms
    assert classify(lambda: entry.call(**{"--value": "40"}), "--value")[0] == "silent"


def _not_swept(modules, entries, not_entry_points) -> list[str]:
    swept = {entry.name.split("(")[0].split(".")[-1] for entry in entries}
    swept |= {entry.name.split(".")[0] for entry in entries}
    missing = []
    for module_name in modules:
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            if inspect.ismodule(obj) or not callable(obj) or name in not_entry_points:
                continue
            if name not in swept:
                missing.append(f"{module_name}.{name}")
    return missing


def test_the_sweep_covers_the_public_api(tmp_path):
    missing = _not_swept(MODULES, _api.all_entries(tmp_path), NOT_ENTRY_POINTS)
    assert not missing, f"public callables missing from the sweep: {missing}"


# --- the optional extra dpinfer.neural (torch) ----------------------------------------------


@pytest.fixture(scope="module")
def neural_entries(tmp_path_factory):
    pytest.importorskip("torch")
    from ._api_neural import neural_entries

    return neural_entries(tmp_path_factory.mktemp("neural"))


def test_every_bad_neural_value_is_refused_by_name(neural_entries):
    _assert_all_clear(sweep(neural_entries), at_least=600)


def test_the_sweep_covers_the_neural_api(neural_entries):
    from ._api_neural import NEURAL_NOT_ENTRY_POINTS

    missing = _not_swept(["dpinfer.neural"], neural_entries, NEURAL_NOT_ENTRY_POINTS)
    assert not missing, f"public callables missing from the sweep: {missing}"


# --- the classifier on planted functions ----------------------------------------------------


def _unvalidated_scale(scale=1.0):
    """A deliberately unvalidated toy: any scale goes through."""
    return {"scale": scale}


def _obscure_scale(scale=1.0):
    """A toy that fails inside NumPy, without naming its parameter."""
    return np.log(np.asarray(scale, dtype=float)) + math.sqrt(float(scale))


def _clear_scale(scale=1.0):
    return _validate.positive_finite("scale", scale)


@pytest.mark.parametrize(
    ("function", "expected"),
    [(_unvalidated_scale, "silent"), (_obscure_scale, "obscure"), (_clear_scale, "clear")],
)
def test_the_classifier_flags_planted_functions(function, expected):
    entry = Entry(function.__name__, function, dict, (Param("scale", "positive"),))
    verdicts = {o.verdict for o in sweep([entry])}
    # every bad value of the planted toy gets the planted verdict (the obscure toy turns
    # NaN into NaN silently, so it is obscure or silent, never clear)
    if expected == "obscure":
        assert "obscure" in verdicts and "clear" not in verdicts
    else:
        assert verdicts == {expected}


def test_a_parameter_the_entry_point_does_not_have_is_not_counted_as_clear():
    entry = Entry("toy", _clear_scale, dict, (Param("scael", "positive"),))
    assert {o.verdict for o in sweep([entry])} == {"obscure"}


def test_a_call_that_runs_too_long_counts_as_silent():
    def slow():
        while True:
            pass

    assert classify(slow, "n", seconds=0.05)[0] == "silent"


def test_the_valid_arguments_of_each_entry_are_accepted(tmp_path):
    # guards the sweep itself: a refusal only counts when the valid call goes through;
    # ``sweep`` makes this call for every entry, here it is checked for one cheap entry
    entry = next(e for e in _api.all_entries(tmp_path) if e.name == "Laplace")
    _harness.check_valid(entry)


# --- property-based: any non-positive or non-number scale is refused by name -------------

BAD_SCALARS = st.one_of(
    st.text(max_size=5),
    st.booleans(),
    st.complex_numbers(min_magnitude=1e-3, allow_nan=False, allow_infinity=False).filter(
        lambda z: z.imag != 0
    ),
    st.floats(max_value=0.0),
    st.sampled_from([math.nan, math.inf, -math.inf, None]),
)

POSITIVE_SCALARS = {
    "Laplace(scale)": lambda v: dp.Laplace(v),
    "Gaussian(sigma)": lambda v: dp.Gaussian(v),
    "Privacy(epsilon)": lambda v: dp.Privacy(epsilon=v if v != math.inf else -1.0),
    "laplace_epsilon(scale)": lambda v: dp.accounting.laplace_epsilon(v, 1.0),
    "svt_scale(epsilon)": lambda v: dp.accounting.svt_scale(v, 1.0, 2, resample=False),
    "flip_probability(b)": lambda v: dp.theory.flip_probability([0.1], v),
    "theorem2_tail_bound(a)": lambda v: dp.theory.theorem2_tail_bound(
        [0.1, 0.5], 0.2, 0.5, [1.0, 2.0], 2, v
    ),
}
NAMES = {"Laplace(scale)": "scale", "Gaussian(sigma)": "sigma", "Privacy(epsilon)": "epsilon"}


@pytest.mark.parametrize("target", list(POSITIVE_SCALARS))
@settings(max_examples=40, deadline=None)
@given(value=BAD_SCALARS)
def test_bad_scalars_are_refused_by_name(target, value):
    name = NAMES.get(target, target.split("(")[1].rstrip(")"))
    verdict, detail = classify(lambda: POSITIVE_SCALARS[target](value), name)
    assert verdict == "clear", f"{target} with {value!r}: {verdict} ({detail})"
