"""Reproducibility, for every sampler of the registry: the same seed gives the same run.

The same run serially, again, from a ``SeedSequence`` of the seed, under a thread pool,
a process pool and a dask cluster; every accepted form of ``rng``, with numpy's global
random state left alone; ``rng=None`` drawing fresh entropy; and the progress bar
switch. "The same run" is every draw, weight, per-stage and per-chain record and
simulation count (:func:`outcome`); a companion shows the comparison sees one changed
draw. Each sampler runs on the registry's cheap problem, with settings that split its
simulations over several executor tasks (checked with a counting thread pool).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pymc  # noqa: F401 - here, outside any test: PyMC binds sys.stderr when first imported
import pytest

import dpinfer as dp

from ._helpers import global_state_equal
from ._sampler_registry import SAMPLERS, by_name, family, result_data, theta_draws

SEED = 2024
EXECUTOR_CASES = [case for case in SAMPLERS if case.supports("executors")]
PROCESS_CASES = [case for case in SAMPLERS if case.supports("process_executors")]
REPRODUCIBLE = [case for case in SAMPLERS if case.supports("reproducibility")]
MULTI_CHAIN = [case for case in REPRODUCIBLE if case.options.get("chains", 1) > 1]


def _timing(key: str) -> bool:
    return key == "created_at" or key.endswith("_seconds")


def outcome(result) -> dict[str, np.ndarray]:
    """Everything a run returns but its timings, by name: draws, weights, diagnostics, attrs."""
    result = result_data(result)
    if isinstance(result, dp.MCEMResult):
        arrays = {f"trace.{k}": v.values for k, v in result.trace.data_vars.items()}
        arrays["estimate"] = np.array(list(result.estimate.values()))
        arrays["observed_information"] = result.observed_information
        attrs = result.attrs
    else:
        arrays = {
            f"{group}.{name}": values.values
            for group in result.groups()
            for name, values in result[group].data_vars.items()
        }
        attrs = result.posterior.attrs
    arrays.update({f"attrs.{k}": np.asarray(v) for k, v in attrs.items() if not _timing(k)})
    return arrays


def seed_of(result) -> str:
    result = result_data(result)
    attrs = result.attrs if isinstance(result, dp.MCEMResult) else result.posterior.attrs
    return attrs["seed"]


def assert_same_run(a, b):
    first, second = outcome(a), outcome(b)
    assert set(first) == set(second)
    for name, values in first.items():
        np.testing.assert_array_equal(second[name], values, err_msg=name)


def same_run(a, b) -> bool:
    try:
        assert_same_run(a, b)
    except AssertionError:
        return False
    return True


class CountingPool(ThreadPoolExecutor):
    """A thread pool counting the tasks submitted to it."""

    def __init__(self, workers):
        super().__init__(workers)
        self.submitted = 0

    def submit(self, fn, /, *args, **kwargs):
        self.submitted += 1
        return super().submit(fn, *args, **kwargs)


class GlobalStateKept:
    """Fails on leaving the block if numpy's legacy global random state moved inside it."""

    def __enter__(self):
        self.saved = np.random.get_state()  # noqa: NPY002 - the state under guard
        np.random.seed(12345)  # noqa: NPY002 - a known state to compare against
        self.before = np.random.get_state()  # noqa: NPY002
        return self

    def __exit__(self, *exc):
        moved = not global_state_equal(np.random.get_state(), self.before)  # noqa: NPY002
        np.random.set_state(self.saved)  # noqa: NPY002
        if exc[0] is None:
            assert not moved, "numpy's global random state was advanced"


@pytest.fixture(scope="module")
def reference():
    """``reference(case)``: the serial run for ``SEED``, made once per sampler."""
    runs = {}

    def serial(case):
        if case.name not in runs:
            runs[case.name] = case.run(rng=SEED)
        return runs[case.name]

    return serial


@pytest.mark.parametrize("case", REPRODUCIBLE, ids=str)
def test_same_seed_same_run_from_an_int_and_its_seed_sequence(case, reference, capsys):
    with GlobalStateKept():
        from_sequence = case.run(rng=np.random.SeedSequence(SEED))  # int n == SeedSequence(n)
    captured = capsys.readouterr()  # progressbar=False prints nothing
    assert captured.out == "" and captured.err == ""
    assert_same_run(from_sequence, reference(case))
    assert seed_of(reference(case)) == str(SEED)


@pytest.mark.parametrize("case", REPRODUCIBLE, ids=str)
def test_another_seed_gives_another_run(case, reference):
    assert not np.array_equal(theta_draws(case.run(rng=SEED + 1)), theta_draws(reference(case)))


@pytest.mark.parametrize("case", REPRODUCIBLE, ids=str)
def test_a_generator_is_accepted_and_consumed(case):
    with GlobalStateKept():
        fresh = case.run(rng=np.random.default_rng(5))
        generator = np.random.default_rng(5)
        first, second = case.run(rng=generator), case.run(rng=generator)
    assert_same_run(first, fresh)
    # one Generator used twice is consumed: the second run gets fresh randomness
    assert not np.array_equal(theta_draws(first), theta_draws(second))


@pytest.mark.parametrize("case", REPRODUCIBLE, ids=str)
def test_rng_none_draws_fresh_entropy(case):
    with GlobalStateKept():
        a, b = case.run(rng=None), case.run(rng=None)
    assert seed_of(a) != seed_of(b)
    assert not np.array_equal(theta_draws(a), theta_draws(b))


@pytest.mark.parametrize("case", REPRODUCIBLE, ids=str)
def test_progressbar_true_runs_and_gives_the_same_run(case, reference, capsys):
    assert_same_run(case.run(rng=SEED, progressbar=True), reference(case))
    captured = capsys.readouterr()
    for text in (captured.out, captured.err):
        assert "Traceback" not in text and "Error" not in text and "Warning" not in text


@pytest.mark.parametrize("case", MULTI_CHAIN, ids=str)
def test_chains_are_distinct_runs_not_copies(case, reference):
    theta = theta_draws(reference(case))
    assert len(theta) == case.options["chains"]
    assert not np.array_equal(theta[0], theta[1])


def test_companion_the_comparison_sees_one_changed_draw(reference):
    case = REPRODUCIBLE[0]
    changed = reference(case).copy()
    changed.posterior["theta"].values[0, 0] += 1e-12
    assert not same_run(changed, reference(case))
    assert same_run(reference(case).copy(), reference(case))


def test_companion_the_global_state_guard_sees_one_global_draw():
    with pytest.raises(AssertionError, match="global random state was advanced"):
        with GlobalStateKept():
            np.random.random()  # noqa: NPY002 - the planted fault


# --- executors ----------------------------------------------------------------------------


@pytest.mark.parametrize("case", EXECUTOR_CASES, ids=str)
def test_same_run_with_a_thread_pool_that_gets_several_tasks(case, reference):
    with CountingPool(2) as pool:
        run = case.run(rng=SEED, executor=pool, **case.several_tasks)
    assert pool.submitted >= 2, f"{case}'s settings make {pool.submitted} task"
    serial = case.run(rng=SEED, **case.several_tasks) if case.several_tasks else reference(case)
    assert_same_run(run, serial)


def test_companion_a_run_in_one_chunk_makes_one_task():
    # the task count above is no formality: settings with one chunk give one task
    with CountingPool(2) as pool:
        by_name("importance_abc").run(rng=SEED, executor=pool, batch_size=10_000)
    assert pool.submitted == 1


@pytest.mark.parametrize("case", PROCESS_CASES, ids=str)
def test_same_run_with_a_process_pool(case, reference, process_pool):
    assert_same_run(case.run(rng=SEED, executor=process_pool), reference(case))


@pytest.mark.parametrize("case", PROCESS_CASES, ids=str)
def test_same_run_on_a_dask_cluster(case, reference, dask_executor):
    assert_same_run(case.run(rng=SEED, executor=dask_executor), reference(case))


@pytest.mark.parametrize("case", [c for c in PROCESS_CASES if c in family("smc")], ids=str)
def test_one_smc_chain_sends_its_chunks_to_the_executor(case, process_pool):
    # with several chains each chain is one task; one chain splits its simulations
    serial = case.run(rng=SEED, chains=1)
    assert theta_draws(serial).shape[0] == 1
    assert_same_run(case.run(rng=SEED, chains=1, executor=process_pool), serial)


@pytest.mark.parametrize("bad", [-1, 1.5, "7", True])
def test_invalid_rng_is_refused(bad):
    # every sampler's, in the bad-input sweep (tests/sweep)
    with pytest.raises((TypeError, ValueError), match="rng"):
        by_name("rejection_abc").run(rng=bad)


# --- the tuberculosis record setup (ABCDP, Park et al. 2021, Section 6.3) -------------------
# A numba simulator whose chunks each simulate n pseudo-records per draw and keep only the
# clipped averaged distance: the same seed gives the same public draws and distances, and
# the same ABCDP output, whichever executor runs the chunks.


def _tuberculosis_abcdp(executor=None):
    from dpinfer.models import tuberculosis as tb

    observed = tb.confidential_records(8, rng=0)
    # the same proposals, chunks, seed and executor for the public draws and for abcdp
    public = dict(n_proposals=24, batch_size=6, rng=3, executor=executor, progressbar=False)
    params, dist = tb.public_draws(observed, **public)
    out = dp.abcdp(
        observed,
        tb.distance(),
        model=tb.model(n_records=8),
        epsilon_total=1.0,
        epsilon_abc=tb.EPSILON_ABC,
        c=3,
        privacy_rng=4,
        **public,
    )
    return params, dist.values, out.sample_stats["query_index"].values


@pytest.fixture(scope="module")
def tuberculosis_reference():
    return _tuberculosis_abcdp()


def _same_tuberculosis_run(run, reference):
    params, distances, accepted = run
    assert np.array_equal(distances, reference[1]) and np.array_equal(accepted, reference[2])
    assert all(np.array_equal(params[k], reference[0][k]) for k in params)


def test_tuberculosis_record_setup_with_a_process_pool(tuberculosis_reference, process_pool):
    _same_tuberculosis_run(_tuberculosis_abcdp(process_pool), tuberculosis_reference)


def test_tuberculosis_record_setup_on_a_dask_cluster(tuberculosis_reference, dask_executor):
    _same_tuberculosis_run(_tuberculosis_abcdp(dask_executor), tuberculosis_reference)
