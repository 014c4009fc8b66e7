"""Faulty user code is caught with a clear error or warning.

Simulators returning booleans or objects, drawing from NumPy's global random state
(serially or in a worker) and given parameters outside their domain by a wide prior, for
every sampler of the registry that runs a simulator (``samplers/_sampler_registry.py``);
priors returning NaN or the wrong shape, hung chunks (``parallel.with_timeout``) and
exception classes that cannot travel back from a spawned worker (defined in
``__main__``). Each check comes with a companion showing the correct variant goes through.
"""

from __future__ import annotations

import multiprocessing
import re
import threading
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np
import pytest
import scipy.stats as st
from samplers import _sampler_registry  # tests/ is on the path
from samplers._sampler_registry import SAMPLERS, Problem, by_name, theta_draws

import dpinfer as dp
from dpinfer import parallel

MECH = dp.Laplace(1.0)

FAULTY = [case for case in SAMPLERS if case.supports("faulty_user_code")]
THREADED = [case for case in FAULTY if case.supports("executors")]
REJECTION = by_name("rejection_abc")


def poisson_counts(p, rng):
    return rng.poisson(p["theta"])


def poisson_positive(p, rng):
    return rng.poisson(p["theta"]) > 0  # a bool where a count was meant


def poisson_objects(p, rng):
    return rng.poisson(p["theta"]).astype(object)


def poisson_from_the_global_state(p, rng):
    return np.random.poisson(p["theta"])  # noqa: NPY002 - the fault under test


def _run(case, simulate, **options):
    return case.run(Problem(simulate=simulate), rng=0, **options)


def _finite_draws(result) -> bool:
    return bool(np.all(np.isfinite(theta_draws(result))))


def _rejection(model):
    """Rejection ABC on ``model`` with a prior of its own."""
    return dp.rejection_abc(
        model, MECH, 3.0, draws=8, chains=2, rng=0, batch_size=50, progressbar=False
    )


# --- simulator outputs of the wrong dtype ------------------------------------------------


@pytest.mark.parametrize("case", FAULTY, ids=str)
def test_a_simulator_returning_objects_is_refused_by_name(case):
    with pytest.raises(TypeError, match="simulator .*poisson_objects returned .*dtype object"):
        _run(case, poisson_objects)


@pytest.mark.parametrize("case", FAULTY, ids=str)
def test_a_simulator_returning_booleans_is_refused_unless_they_are_records(case):
    if case.boolean_simulations:  # a binary attribute of a record: accepted
        assert _finite_draws(_run(case, poisson_positive))
    else:
        with pytest.raises(TypeError, match="simulator .*poisson_positive returned .*dtype bool"):
            _run(case, poisson_positive)


@pytest.mark.parametrize("case", FAULTY, ids=str)
def test_companion_the_same_simulator_returning_counts_runs(case):
    assert _finite_draws(_run(case, poisson_counts))


# --- prior draws -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sample", "message"),
    [
        (lambda n, rng: {"mu": np.full(n, np.nan)}, r"prior of 'mu' returned non-finite draws"),
        (lambda n, rng: {"mu": rng.normal(size=n + 1)}, r"prior of 'mu' returned draws of shape"),
        (lambda n, rng: {"mu": rng.normal(size=n) > 0}, r"prior of 'mu' returned .*dtype bool"),
    ],
    ids=["nan", "shape", "bool"],
)
def test_bad_prior_draws_are_named_as_coming_from_the_prior(sample, message):
    model = dp.Model(
        prior=dp.Prior(sample), simulate=lambda p, rng: rng.poisson(3.0, len(p["mu"]))
    )
    with pytest.raises((ValueError, TypeError), match=message):
        _rejection(model)


def test_companion_a_finite_prior_of_the_right_shape_runs():
    model = dp.Model(
        prior=dp.Prior(lambda n, rng: {"mu": rng.gamma(3.0, size=n)}),
        simulate=lambda p, rng: rng.poisson(p["mu"]),
    )
    assert _rejection(model).posterior["mu"].shape == (2, 4)


def test_prior_logpdf_must_be_callable_and_only_for_a_sample_function():
    with pytest.raises(TypeError, match="logpdf must be a callable"):
        dp.Prior(lambda n, rng: {"mu": rng.normal(size=n)}, logpdf=1.0)
    with pytest.raises(ValueError, match="drop logpdf="):
        dp.Prior({"mu": st.norm(0, 1)}, logpdf=lambda p: p["mu"])


# --- NumPy's global random state in a worker ---------------------------------------------


def _global_draw(i, rng):
    return np.random.random()  # noqa: NPY002 - the fault under test


def _rng_draw(i, rng):
    return rng.random()


def test_a_task_drawing_from_the_global_state_in_a_worker_is_warned_about():
    with ThreadPoolExecutor(2) as pool, pytest.warns(parallel.GlobalRandomStateWarning) as rec:
        parallel.map_chunks(_global_draw, np.random.SeedSequence(0), 4, executor=pool)
    assert len(rec) == 1 and "not reproducible under process or dask" in str(rec[0].message)


def test_companion_a_task_drawing_from_its_rng_is_not_warned_about(recwarn):
    with ThreadPoolExecutor(2) as pool:
        parallel.map_chunks(_rng_draw, np.random.SeedSequence(0), 4, executor=pool)
    assert not [w for w in recwarn if issubclass(w.category, parallel.GlobalRandomStateWarning)]


# a simulator ignoring its rng never settles MCEM's staged schedule: no convergence, as said
@pytest.mark.filterwarnings("ignore::dpinfer.MCEMConvergenceWarning")
@pytest.mark.parametrize("case", THREADED, ids=str)
def test_a_sampler_whose_simulator_uses_the_global_state_warns_on_an_executor(case):
    with ThreadPoolExecutor(2) as pool, pytest.warns(parallel.GlobalRandomStateWarning):
        _run(case, poisson_from_the_global_state, executor=pool)


# a simulator ignoring its rng never settles MCEM's staged schedule: no convergence, as said
@pytest.mark.filterwarnings("ignore::dpinfer.MCEMConvergenceWarning")
@pytest.mark.parametrize("case", FAULTY, ids=str)
def test_a_serial_run_whose_simulator_uses_the_global_state_warns(case):
    with pytest.warns(parallel.GlobalRandomStateWarning, match="same rng= does not give") as rec:
        _run(case, poisson_from_the_global_state)
    # pointed at the call of the sampler (here in the registry's adapter), not at dpinfer
    assert rec[0].filename == _sampler_registry.__file__


def test_a_serial_run_whose_prior_uses_the_global_state_warns():
    prior = dp.Prior(lambda n, rng: {"theta": np.random.gamma(3.0, size=n)})  # noqa: NPY002
    model = dp.Model(prior=prior, simulate=poisson_counts)
    with pytest.warns(parallel.GlobalRandomStateWarning):
        _rejection(model)


@pytest.mark.parametrize("case", FAULTY, ids=str)
def test_companion_a_serial_run_drawing_from_its_rng_does_not_warn(case, recwarn):
    _run(case, poisson_counts)
    assert not [w for w in recwarn if issubclass(w.category, parallel.GlobalRandomStateWarning)]


# --- a prior wider than the simulator's domain --------------------------------------------

FROM_THE_PRIOR = [case for case in FAULTY if case.draws_from_the_prior]


def _run_with_prior(case, prior):
    return case.run(Problem(simulate=poisson_counts, theta_prior=prior), rng=0)


@pytest.mark.parametrize("case", FROM_THE_PRIOR, ids=str)
def test_a_prior_outside_the_simulators_domain_names_the_simulator_and_positions(case):
    # a Cauchy rate goes negative: NumPy's bare "lam < 0 or lam contains NaNs" before
    with pytest.raises(ValueError) as err:
        _run_with_prior(case, st.cauchy(0.5, 1.0))
    message = str(err.value)
    assert re.match(
        r"the (record )?simulator (of pseudo-datasets )?poisson_counts raised", message
    )
    assert "raised NumPy's ValueError('lam < 0" in message
    assert re.search(r"theta is negative in \d+ of them \(positions? \d+", message)
    assert "halfcauchy" in message


@pytest.mark.parametrize("case", FROM_THE_PRIOR, ids=str)
def test_companion_a_prior_within_the_simulators_domain_runs(case):
    assert _finite_draws(_run_with_prior(case, st.halfcauchy(0.0, 3.0)))


def test_other_errors_of_the_simulator_pass_through_as_they_are():
    def broken(p, rng):
        raise ValueError("the simulator's own message")

    with pytest.raises(ValueError, match="^the simulator's own message$"):
        _run(REJECTION, broken)


# --- per-chunk timeout -------------------------------------------------------------------


RELEASE = threading.Event()


def _hangs_at_chunk_2(i, rng):
    if i == 2:
        RELEASE.wait(30)  # hangs until the test releases it
    return i


def test_a_hung_chunk_raises_a_timeout_naming_it():
    RELEASE.clear()
    with ThreadPoolExecutor(2) as pool:
        timed = parallel.with_timeout(pool, 0.2)
        try:
            with pytest.raises(parallel.ChunkTimeoutError, match="chunk 2 did not finish"):
                parallel.map_chunks(
                    _hangs_at_chunk_2, np.random.SeedSequence(0), 4, executor=timed
                )
        finally:
            RELEASE.set()


def test_companion_a_timed_executor_gives_the_serial_result():
    serial = _run(REJECTION, poisson_counts)
    with ThreadPoolExecutor(2) as pool:
        timed = _run(REJECTION, poisson_counts, executor=parallel.with_timeout(pool, 60))
    np.testing.assert_array_equal(serial.posterior["theta"], timed.posterior["theta"])


@pytest.mark.parametrize("timeout", [0, -1.0, float("nan"), "5", True])
def test_with_timeout_checks_its_timeout(timeout):
    with ThreadPoolExecutor(1) as pool, pytest.raises((TypeError, ValueError), match="timeout"):
        parallel.with_timeout(pool, timeout)


# --- exceptions that cannot travel back from a spawned worker -----------------------------

# A class as a script's ``__main__`` defines it: cloudpickle sends it to the worker by
# value, and the worker's instance cannot be pickled back by reference.
MainError = type("MainError", (Exception,), {"__module__": "__main__"})


def _raise_main_error(i, rng):
    if i == 1:
        raise MainError(f"bad simulation in chunk {i}")
    return i


def _raise_value_error(i, rng):
    if i == 1:
        raise ValueError("an importable exception")
    return i


@pytest.fixture(scope="module")
def spawn_pool():
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        yield pool


def test_an_exception_class_from_main_surfaces_as_a_clear_error(spawn_pool):
    with pytest.raises(parallel.ChunkError, match="chunk 1 raised __main__.MainError") as info:
        parallel.map_chunks(_raise_main_error, np.random.SeedSequence(0), 3, executor=spawn_pool)
    assert "bad simulation in chunk 1" in str(info.value)
    assert "traceback in the worker" in str(info.value)


def test_companion_an_importable_exception_comes_back_as_itself(spawn_pool):
    with pytest.raises(ValueError, match="an importable exception"):
        parallel.map_chunks(_raise_value_error, np.random.SeedSequence(0), 3, executor=spawn_pool)


def test_the_global_state_is_detected_in_a_process_worker(spawn_pool):
    with pytest.warns(parallel.GlobalRandomStateWarning):
        parallel.map_chunks(_global_draw, np.random.SeedSequence(0), 2, executor=spawn_pool)
