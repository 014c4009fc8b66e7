"""The subtree passes on a dask cluster give the serial run's result, seed for seed."""

import numpy as np
import pytest

from dpinfer.census import pl94_variances, sample_posterior, synthetic_release, synthetic_state

distributed = pytest.importorskip("distributed")

AXES = {"votingage": 2, "hispanic": 2}


def test_dask_run_equals_the_serial_run():
    truth = synthetic_state(AXES, shape=(3, 2, 2, 3), mean_block=12, rng=4)
    release = synthetic_release(truth, pl94_variances(AXES), rng=5)
    options = {"draws": 30, "tune": 5, "chains": 2, "store_leaves": True, "progressbar": False}
    serial = sample_posterior(release, rng=9, **options)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False) as cluster:
        with distributed.Client(cluster) as client:
            parallel = sample_posterior(release, rng=9, executor=client, **options)
    for name in serial.mean:
        np.testing.assert_array_equal(serial.mean[name], parallel.mean[name])
        np.testing.assert_array_equal(serial.lower[name], parallel.lower[name])
    np.testing.assert_array_equal(
        serial.idata.posterior["leaf_counts"], parallel.idata.posterior["leaf_counts"]
    )
    # and a different seed gives a different run (the comparison can fail)
    other = sample_posterior(release, rng=10, **options)
    assert not np.array_equal(
        serial.idata.posterior["leaf_counts"], other.idata.posterior["leaf_counts"]
    )
