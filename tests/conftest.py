"""Shared test fixtures, and what the suite needs to run in parallel (pytest-xdist).

``audit_table`` records the numbers of every empirical privacy audit (the lower
bound next to the claim); they are printed as a table at the end of the run and,
when ``DPINFER_AUDIT_TABLE`` names a file, written there as JSON lines. Each row
travels as a ``user_properties`` entry of the test's report, so the table is
complete whether tests run in this process or in xdist workers.

``make test`` runs ``pytest -n auto --dist loadscope``: each module (or class) runs
in one worker, so a module-scoped fixture (a NUTS reference, a process pool) is computed
once. (``--dist loadgroup`` with ``xdist_group`` marks would spread the other tests
of a module too, but pytest-xdist 3.8 cannot rename pytest 9's node ids, so its groups
are silently ignored.)

Workers take modules and classes in collection order, so the ones that take half a minute
or more (``SLOW_FIRST``) are collected first, slowest first: last, they would leave one
worker idle while the other finished them. pytest-xdist would reorder the scopes by their
number of tests (its ``--loadscope-reorder``, on by default), which puts a heavy scope of
one to four tests (an end-to-end run, a class of notebooks) last; ``pytest_configure``
turns that off.

The suite compiles many more numba kernels than it runs for long: it compiles them at
LLVM optimisation level 1 (``NUMBA_OPT``; about a fifth less CPU for the compiled-kernel
tests, the results the same) into a cache folder of its own, ``.numba-test-cache``
beside ``tests``, so that kernels compiled for the tests never serve a benchmark or a
user's run from the package's ``__pycache__``. Both are set before numba is imported
and pass to the processes the tests start (notebook kernels, forked scenarios).

Building and rewriting PyTensor graphs allocates many short-lived container objects, and
with Python's default threshold (700 allocations) the cyclic garbage collector runs through
the young generation tens of thousands of times a minute: the suite raises the threshold to
:data:`GC_THRESHOLD` (10-24% less CPU on graph-heavy modules; the notebook kernels take the
same). Garbage is still collected, in larger batches.
"""

from __future__ import annotations

import gc
import json
import os
import sys
from pathlib import Path

if "numba" in sys.modules:  # pragma: no cover - a plugin imported it: the settings came late
    raise RuntimeError("numba was imported before tests/conftest.py could configure it")
os.environ.setdefault("NUMBA_OPT", "1")
os.environ.setdefault("NUMBA_CACHE_DIR", str(Path(__file__).parent.parent / ".numba-test-cache"))

import pytest  # noqa: E402

#: Node-id prefixes of the modules and classes whose runs take half a minute or more,
#: slowest first (as measured by a whole run on 2 workers; the order matters, not the
#: figures: a new slow module goes in at its place).
SLOW_FIRST = (
    "tests/marginal/test_numba.py",
    "tests/marginal/test_group_totals.py",
    "tests/marginal/test_jax.py",
    "tests/marginal/test_jax_samplers.py",
    "tests/models/test_pageviews.py",
    "tests/neural/test_correctness.py",
    "tests/test_tutorials.py::TestNotebooks2",
    "tests/test_tutorials.py::TestNotebooks1",
    "tests/models/test_linear_regression.py",
    "tests/mechanisms/test_sparse_vector.py",
    "tests/abcdp/test_abcdp_audit.py",
    "tests/models/test_lalonde.py",
    "tests/samplers/test_da_mcmc_examples.py",
    "tests/test_tutorials.py::TestNotebooks3",
    "tests/calibration/test_sbc_neural.py",
    "tests/models/test_sir_posterior.py",
    "tests/mechanisms/test_mechanism_contract.py",
    "tests/test_tutorials.py::TestNotebooks0",
    "tests/test_outputs.py",
    "tests/samplers/test_smc_pseudo_marginal.py",
    "tests/models/test_smc_examples.py",
    "tests/test_cli_run.py::TestEndToEndLalonde",
    "tests/calibration/test_sbc_samplers.py",
    "tests/marginal/test_pymc.py",
    "tests/models/test_poisson_count.py",
    "tests/models/test_option_grid.py",
    "tests/marginal/test_quadrature.py",
    "tests/samplers/test_smc.py",
    "tests/models/test_naive_bayes.py",
    "tests/samplers/test_da_mcmc.py",
    "tests/samplers/test_mcem_lalonde.py",
    "tests/marginal/test_extremes.py",
    "tests/samplers/test_mcem_profile.py",
    "tests/models/test_doctests.py",
    "tests/models/test_county_rates.py",
    "tests/marginal/test_kernel.py",
)

#: Allocations between two collections of the youngest generation (Python's default: 700).
GC_THRESHOLD = 50_000

_AUDIT_ROWS: list[dict] = []
_IN_WORKER = False


@pytest.fixture(autouse=True)
def _no_earlier_data_derived_values(monkeypatch):
    """Start each test with none of the data-derived values earlier tests made.

    ABCDP's leak guard refuses a setting equal to a data-derived value made earlier in the
    process from a record of the observations (``dpinfer.distances._derived``). Across tests
    that is chance: a median heuristic of 1.0 from data with a zero row refused a clip of
    1.0 in an unrelated test, depending on which tests the worker had run before it.
    """
    from collections import deque

    from dpinfer.distances import _derived

    monkeypatch.setattr(_derived, "_RECENT", deque(maxlen=_derived._RECENT.maxlen))


@pytest.fixture
def audit_table(record_property):
    """Return ``record(mechanism, variant, result, claimed_epsilon, **extra)``."""

    def record(mechanism: str, variant: str, result, claimed_epsilon: float, **extra):
        row = {
            "mechanism": mechanism,
            "variant": variant,
            "claimed_epsilon": float(claimed_epsilon),
            "delta": float(result.delta),
            "epsilon_lower": float(result.epsilon_lower),
            "refuted": bool(result.refutes(claimed_epsilon)),
            "event": result.event,
            "direction": result.direction,
            "p_hat": float(result.p_hat),
            "q_hat": float(result.q_hat),
            "n_test": int(result.n_test),
            **extra,
        }
        record_property("audit", row)
        return row

    return record


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items):
    def rank(item) -> int:
        starts = [i for i, prefix in enumerate(SLOW_FIRST) if item.nodeid.startswith(prefix)]
        return starts[0] if starts else len(SLOW_FIRST)

    items.sort(key=rank)  # stable: the order within each rank is kept


def pytest_configure(config):
    global _IN_WORKER
    _IN_WORKER = hasattr(config, "workerinput")
    gc.set_threshold(GC_THRESHOLD, *gc.get_threshold()[1:])
    if hasattr(config.option, "loadscopereorder"):  # pytest-xdist: keep SLOW_FIRST's order
        config.option.loadscopereorder = False


def pytest_runtest_logreport(report):
    # An xdist worker passes its reports on to the controller, which records them.
    if _IN_WORKER or report.when != "call":
        return
    for name, row in report.user_properties:
        if name != "audit":
            continue
        _AUDIT_ROWS.append(row)
        path = os.environ.get("DPINFER_AUDIT_TABLE")
        if path:
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(row) + "\n")


def pytest_terminal_summary(terminalreporter):
    if not _AUDIT_ROWS:
        return
    terminalreporter.section("empirical privacy audits (lower bound vs claim)")
    terminalreporter.write_line(
        f"{'mechanism':<24} {'variant':<52} {'delta':>8} {'claimed eps':>11} "
        f"{'lower bound':>11}  verdict"
    )
    for row in _AUDIT_ROWS:
        verdict = "REFUTED" if row["refuted"] else "consistent"
        terminalreporter.write_line(
            f"{row['mechanism']:<24} {row['variant']:<52} {row['delta']:>8.0e} "
            f"{row['claimed_epsilon']:>11.4f} {row['epsilon_lower']:>11.4f}  {verdict}"
        )
