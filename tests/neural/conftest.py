"""Torch runs single-threaded in these tests (restored afterwards).

On a shared two-core machine torch's default of one thread per core spends its
time waiting for the other; the determinism tests compare runs at the same
thread count either way.
"""

import pytest

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
