"""The Op's output arrays are filled again only once nothing else holds them."""

from __future__ import annotations

import cloudpickle
import numpy as np
import pytest

import dpinfer as dp
from dpinfer.marginal import _op, _output_pool
from dpinfer.marginal._families import POISSON
from dpinfer.marginal._forms import joined_form, packed, release_form
from dpinfer.marginal._op import MarginalLogp
from dpinfer.marginal._poisson import STATE

_TYPES = (np.float64, np.int64)


def test_a_set_no_one_holds_is_handed_out_again():
    pool = _output_pool.OutputPool()
    first = pool.take(5, _TYPES)
    ids = [id(x) for x in first]
    pool.keep(first)
    del first
    assert [id(x) for x in pool.take(5, _TYPES)] == ids


@pytest.mark.parametrize("hold", ["array", "view"])
def test_a_set_someone_holds_is_not_handed_out(hold):
    pool = _output_pool.OutputPool()
    first = pool.take(5, _TYPES)
    held = first[0] if hold == "array" else first[0][1:3]
    pool.keep(first)
    del first
    assert not any(np.shares_memory(held, x) for x in pool.take(5, _TYPES))


def test_another_size_or_type_gets_new_arrays():
    pool = _output_pool.OutputPool()
    pool.keep(pool.take(5, _TYPES))
    assert pool.take(6, _TYPES)[0].shape == (6,)
    assert pool.take(5, (np.float64, np.float64))[1].dtype == np.float64


def _evaluate(op, rates, inputs):
    storage = [[None] for _ in range(4)]
    op.perform(None, [rates, *inputs], storage)
    return storage[0][0]


def _held_result_after_another_evaluation():
    """A caller's log-likelihoods of one evaluation, and a copy taken then, after the next.

    The table has ``THREADED_CELLS`` cells, the fewest whose outputs the Op pools.
    """
    n = _op.THREADED_CELLS
    released = np.resize([3, 7, 12, 40], n)
    form = joined_form([release_form(dp.DiscreteGaussian(2.0), released, latent_discrete=True)])
    inputs = [np.zeros(n), *packed(*form), np.full((n, STATE), np.nan)]
    op = MarginalLogp(POISSON, 1e-10)
    held = _evaluate(op, np.resize([2.0, 6.0, 11.0, 35.0], n), inputs)
    copy = held.copy()
    _evaluate(op, np.resize([9.0, 1.0, 30.0, 3.0], n), inputs)
    return held, copy


def test_the_op_never_writes_a_result_its_caller_holds():
    held, copy = _held_result_after_another_evaluation()
    np.testing.assert_array_equal(held, copy)


def test_companion_a_pool_blind_to_references_is_caught(monkeypatch):
    # Planted bug: every set counted as free, so the next evaluation writes the held result
    monkeypatch.setattr(_output_pool, "_references", lambda arrays: _output_pool._ALONE)
    held, copy = _held_result_after_another_evaluation()
    assert not np.array_equal(held, copy)


def test_a_pickled_op_arrives_with_an_empty_pool():
    op = MarginalLogp(POISSON, 1e-10)
    op.outputs.keep(op.outputs.take(3, _TYPES))
    again = cloudpickle.loads(cloudpickle.dumps(op))  # as pm.sample sends a model to its chains
    assert again.outputs._sets == [] and again.outputs.take(3, _TYPES)[0].shape == (3,)
