"""No message about confidential data shows a value of it.

What a curator releases (``release``, ``SparseVector.run``, the audits of query
streams) and what a data owner's ABCDP run reads (``observed``, distances to it,
records) is confidential: an error about it names the parameter, the shape, the
count and the positions of the offending entries, never the values. The sweep calls
every entry point of ``_api_confidential`` with bad arguments that carry distinctive
values (123456.789, 987654321: NaN or inf beside them, non-integers, strings, bools,
ragged and complex lists, wrong shapes, out-of-range entries) and asserts that each
call is refused with a ValueError/TypeError naming the parameter whose message shows
none of them in any usual formatting (``_harness.secret_texts``). The companions plant
leaking messages, and check that the table lists every such entry point.
"""

from __future__ import annotations

import importlib
import inspect

import numpy as np
import pytest

import dpinfer as dp
from dpinfer import _validate
from dpinfer.mechanisms.base import Mechanism

from . import _harness
from ._api_analyst import _abcdp_args
from ._api_confidential import SF, SI, C, confidential_entries
from ._harness import Entry, classify, secret_texts, sweep, tally
from ._valid import OBS

MODULES = [
    "dpinfer",
    "dpinfer.mechanisms",
    "dpinfer.theory",
    "dpinfer.audit",
    "dpinfer.distances",
    "dpinfer.samplers",
]

#: Parameter names that carry confidential data wherever they appear in the public API.
CONFIDENTIAL_NAMES = {"observed", "data", "queries", "neighbour", "records", "distances"}

#: Public parameters of those names that are not confidential, or not checked here.
NOT_CONFIDENTIAL = {
    # a result container that public_distances builds from checked distances
    ("PublicDraws", "distances"),
    # the release a PyMC likelihood observes: public
    ("Mechanism.to_pymc", "observed"),
    ("Laplace.to_pymc", "observed"),
    ("Gaussian.to_pymc", "observed"),
    ("DiscreteLaplace.to_pymc", "observed"),
    ("DiscreteGaussian.to_pymc", "observed"),
    ("BinomialRelease.to_pymc", "observed"),
    ("Thresholded.to_pymc", "observed"),
    ("to_pymc", "observed"),
    # a building block of __call__, also applied to (possibly non-finite) pseudo-data;
    # it formats nothing into a message
    ("RandomFeatureMMD.mean_embedding", "data"),
    # called by da_mcmc on imputed records, whose messages give shapes only
    ("RecordModel.complete_loglik", "records"),
    ("RecordModel.draw_update", "records"),
    # the result svt_privacy_loss builds from streams it has checked
    ("SVTPrivacyLoss", "queries"),
    ("SVTPrivacyLoss", "neighbour"),
}


@pytest.fixture(scope="module")
def outcomes():
    return sweep(confidential_entries())


def test_no_message_about_confidential_data_shows_a_value(outcomes):
    text = _harness.report(outcomes)
    print(text)
    counts = tally(outcomes)
    assert counts["calls"] > 400
    assert counts["clear"] == counts["calls"], text


# --- the reproductions of issue 19, section 3 -----------------------------------------------


@pytest.mark.parametrize("mechanism", [dp.DiscreteLaplace(2.0), dp.DiscreteGaussian(2.0)])
def test_a_non_integer_release_names_count_shape_and_position(mechanism):
    with pytest.raises(ValueError) as err:
        mechanism.release(np.array([37, 41, 12, 99, 7.5]))
    assert str(err.value) == (
        "value must hold integers: 1 of 5 entries (shape (5,)) is not, at position [4]"
    )


def test_abcdp_with_a_nan_observation_names_its_position_not_the_observations():
    observed = OBS.copy()
    observed[3, 0] = np.nan
    args = _abcdp_args(epsilon_total=1.0, epsilon_abc=0.2, c=2)()
    with pytest.raises(ValueError) as err:
        dp.abcdp(**{**args, "observed": observed})
    # the whole message: parameter, requirement, count, shape, position; no observation
    assert str(err.value) == (
        "observed must be finite: 1 of 10 entries (shape (10, 1)) is not, at position [3, 0]"
    )


def test_analysts_public_inputs_still_show_their_values():
    # a release is public: its message keeps the value received
    with pytest.raises(ValueError, match=r"released must hold integers, got \[2.5\]"):
        dp.DiscreteLaplace(1.0, event_shape=(1,)).logpdf([2.5], [[2]])


# --- the companions: the sweep sees a leak, and lists every confidential entry point --------


def _planted(show):
    """A toy check of a confidential ``value`` whose message shows it as ``show`` does."""

    def check(value=None):
        if value is not None:  # None: the valid call
            raise ValueError(f"value must be finite, got {show(value)}")

    return check


def _first_secret_number(value) -> float:
    for leaf in _harness._leaves(value):
        try:
            x = abs(complex(leaf).real if isinstance(leaf, complex) else float(leaf))
        except (TypeError, ValueError):
            continue
        if np.isfinite(x) and x >= 1000:
            return x
    return np.nan


LEAKS = {
    "repr": repr,
    "numpy array": lambda v: np.asarray(v, dtype=object),
    "abbreviated array": lambda v: _validate.abbreviated(np.asarray(v, dtype=object)),
    "%g": lambda v: f"{_first_secret_number(v):g}",
    "%.4g": lambda v: f"{_first_secret_number(v):.4g}",
    "integer part": lambda v: str(int(_first_secret_number(v))),
    "scientific": lambda v: np.format_float_scientific(_first_secret_number(v)),
}


@pytest.mark.parametrize("leak", list(LEAKS))
def test_the_sweep_flags_a_message_that_shows_a_value(leak):
    entry = Entry(f"toy({leak})", _planted(LEAKS[leak]), dict, (C("value", "confidential"),))
    verdicts = [o.verdict for o in sweep([entry])]
    # every bad value carries distinctive numbers except the bools; "repr" shows those too
    assert verdicts.count("leaky") >= len(verdicts) - 1, verdicts


def test_the_sweep_passes_a_message_that_shows_no_value():
    def check(value=None):
        if value is not None:  # None: the valid call
            arr = np.asarray(value, dtype=object)
            raise ValueError(_validate.bad_entries("value", np.ones(arr.shape, bool), "be clean"))

    entry = Entry("toy(clean)", check, dict, (C("value", "confidential"),))
    assert {o.verdict for o in sweep([entry])} == {"clear"}


def test_secret_texts_cover_the_usual_formattings():
    texts = secret_texts(np.array([SI, np.nan, SF]))
    for shown in ("123456.789", "123456", "1.23457e+05", "1.2346e+05", "987654321", "9.877e+08"):
        assert shown in texts
    assert classify(lambda: _planted(repr)(5.5), "value", secrets=texts)[0] == "clear"


def _public_callables():
    """``(qualified name, callable)`` of every public function, class and public method."""
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            if inspect.ismodule(obj) or not callable(obj):
                continue
            yield name, obj
            if inspect.isclass(obj):
                for attr, member in inspect.getmembers(obj, callable):
                    if attr == "__call__" or not attr.startswith("_"):
                        yield f"{name}.{attr}", member


def _signature_names(fn) -> list[str]:
    try:
        return list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return []


def _swept_names() -> set[tuple[str, str]]:
    out = set()
    for entry in confidential_entries():
        parts = entry.name.split("(")[0].split(".")
        while parts[0] in {"distances", "audit", "theory"}:
            parts = parts[1:]
        out |= {(".".join(parts), p.name) for p in entry.params if p.confidential}
    return out


def test_every_confidential_entry_point_is_swept():
    callables = dict(_public_callables())
    required = {
        (name, param)
        for name, fn in callables.items()
        for param in _signature_names(fn)
        if param in CONFIDENTIAL_NAMES and not getattr(fn, "__isabstractmethod__", False)
    }
    mechanisms = importlib.import_module("dpinfer.mechanisms")
    for name in mechanisms.__all__:
        cls = getattr(mechanisms, name)
        if inspect.isclass(cls) and issubclass(cls, Mechanism) and not inspect.isabstract(cls):
            required |= {(f"{name}.release", "value"), (f"{name}.release_from_uniform", "u")}
    swept = _swept_names()
    # a method inherited from a swept class is the same function: swept too
    swept_functions = {(callables[name], p) for name, p in swept if name in callables}
    missing = sorted(
        (name, p)
        for name, p in required - NOT_CONFIDENTIAL
        if (name, p) not in swept and (callables.get(name), p) not in swept_functions
    )
    assert not missing, f"confidential parameters missing from the sweep: {missing}"
