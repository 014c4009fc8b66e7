"""Executors shared by the samplers' reproducibility tests."""

import multiprocessing
from concurrent.futures import ProcessPoolExecutor

import pytest


@pytest.fixture(scope="module")
def process_pool():
    # spawn: fresh interpreters, as on macOS/Windows and Python >= 3.14 defaults.
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        yield pool


@pytest.fixture(scope="module")
def dask_executor():
    distributed = pytest.importorskip("dask.distributed")
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    client = distributed.Client(cluster)
    try:
        yield client.get_executor()
    finally:
        client.close()
        cluster.close()
