"""Reproducibility: the same seed gives the same draws under any executor.

Also: every accepted form of ``rng``, the global numpy random state left alone,
and the progress bar switch.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import scipy.stats as st

import dpinfer as dp

from ._helpers import global_state_equal

SIGMA = 1.0
S_DP = 1.3
SAMPLERS = ("rejection", "importance")


def _model():
    # A lambda simulator: executors receive it through cloudpickle.
    return dp.Model(
        prior={"theta": st.norm(0.0, 1.0)},
        simulate=lambda p, rng: p["theta"] + rng.standard_normal(p["theta"].shape),
    )


def _run(sampler, *, rng, executor=None, progressbar=False):
    kwargs = dict(rng=rng, batch_size=500, executor=executor, progressbar=progressbar)
    if sampler == "rejection":
        return dp.rejection_abc(_model(), dp.Gaussian(SIGMA), S_DP, draws=1500, **kwargs)
    return dp.importance_abc(_model(), dp.Gaussian(SIGMA), S_DP, draws=1700, **kwargs)


def _draws(idata):
    return idata.posterior["theta"].values


@pytest.fixture(scope="module")
def reference():
    """Serial draws for seed 2024, per sampler."""
    return {name: _run(name, rng=2024) for name in SAMPLERS}


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_same_seed_same_draws_serially(sampler, reference):
    again = _run(sampler, rng=2024)
    assert np.array_equal(_draws(again), _draws(reference[sampler]))
    assert (
        again.posterior.attrs["n_simulations"]
        == reference[sampler].posterior.attrs["n_simulations"]
    )


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_same_draws_with_a_thread_pool(sampler, reference):
    with ThreadPoolExecutor(2) as pool:
        idata = _run(sampler, rng=2024, executor=pool)
    assert np.array_equal(_draws(idata), _draws(reference[sampler]))


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_same_draws_with_a_process_pool(sampler, reference, process_pool):
    idata = _run(sampler, rng=2024, executor=process_pool)
    assert np.array_equal(_draws(idata), _draws(reference[sampler]))
    assert (
        idata.posterior.attrs["n_simulations"]
        == reference[sampler].posterior.attrs["n_simulations"]
    )


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_same_draws_on_a_dask_cluster(sampler, reference, dask_executor):
    idata = _run(sampler, rng=2024, executor=dask_executor)
    assert np.array_equal(_draws(idata), _draws(reference[sampler]))
    if sampler == "importance":
        for name in ("log_weight", "particle_theta"):
            assert np.array_equal(
                idata.sample_stats[name].values, reference[sampler].sample_stats[name].values
            )


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_different_seeds_give_different_draws(sampler, reference):
    other = _run(sampler, rng=2025)
    assert not np.array_equal(_draws(other), _draws(reference[sampler]))


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_int_seed_sequence_and_generator_are_all_accepted(sampler, reference):
    from_seq = _run(sampler, rng=np.random.SeedSequence(2024))
    assert np.array_equal(_draws(from_seq), _draws(reference[sampler]))  # int n == SeedSequence(n)
    first = _run(sampler, rng=np.random.default_rng(5))
    second = _run(sampler, rng=np.random.default_rng(5))
    assert np.array_equal(_draws(first), _draws(second))
    # One Generator used twice is consumed: the second run gets fresh randomness.
    gen = np.random.default_rng(5)
    a, b = _run(sampler, rng=gen), _run(sampler, rng=gen)
    assert np.array_equal(_draws(a), _draws(first))
    assert not np.array_equal(_draws(a), _draws(b))


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_rng_none_draws_fresh_entropy(sampler):
    a, b = _run(sampler, rng=None), _run(sampler, rng=None)
    assert not np.array_equal(_draws(a), _draws(b))
    assert a.posterior.attrs["seed"] != b.posterior.attrs["seed"]


@pytest.mark.parametrize("bad", [-1, 1.5, "7", True])
def test_invalid_rng_is_refused(bad):
    with pytest.raises((TypeError, ValueError), match="rng"):
        _run("rejection", rng=bad)


def test_global_numpy_random_state_is_untouched():
    before = np.random.get_state()  # noqa: NPY002
    _run("rejection", rng=3)
    _run("importance", rng=3)
    prior = dp.Prior({"theta": st.norm(0.0, 1.0), "k": st.poisson(4.0)})
    prior.sample(10, np.random.default_rng(3))
    dp.Model(prior, simulate=lambda p, rng: p["k"]).simulate_checked(
        prior.sample(5, np.random.default_rng(4)), np.random.default_rng(5), event_shape=()
    )
    assert global_state_equal(np.random.get_state(), before)  # noqa: NPY002


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_progressbar_false_prints_nothing(sampler, capsys):
    _run(sampler, rng=1, progressbar=False)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == ""


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_progressbar_true_runs_and_gives_the_same_draws(sampler, reference, capsys):
    idata = _run(sampler, rng=2024, progressbar=True)
    assert np.array_equal(_draws(idata), _draws(reference[sampler]))
    captured = capsys.readouterr()
    for text in (captured.out, captured.err):
        assert "Traceback" not in text
        assert "Error" not in text
        assert "Warning" not in text


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
