"""A marginal Op's node answers parameters it evaluated lately without summing them again.

PyMC's NUTS evaluates the log-density again at the point each iteration starts from
(:mod:`dpinfer.marginal._recent`): those evaluations must cost no sweep and give the
results the node gave there, and nothing else may be answered from what it kept.
"""

from __future__ import annotations

import pickle
import types

import numpy as np
import pymc as pm
import pytensor
import pytest

import dpinfer as dp
from dpinfer.marginal import _group_op, _op, _recent
from dpinfer.marginal._recent import (
    BUDGET,
    EVALUATIONS,
    LONGEST,
    SKIPPED,
    WINDOW,
    WORTH,
    Recent,
)


def _releases(cells: int):
    return np.zeros(cells), np.zeros(3)


def _recent_of(cells: int) -> Recent:
    return Recent(*_releases(cells))


def _outputs(seed: int, n: int = 5):
    rng = np.random.default_rng(seed)
    return tuple(rng.normal(size=n) for _ in range(3))


def test_an_evaluation_is_found_at_exactly_its_parameters():
    recent = _recent_of(5)
    a, b = np.linspace(1.0, 2.0, 5), np.zeros(5)
    assert recent.find(a, b) is None
    recent.keep(a, b, _outputs(0))
    for got, want in zip(recent.find(a.copy(), b.copy()), _outputs(0), strict=True):
        np.testing.assert_array_equal(got, want)
    one_ulp = a.copy()
    one_ulp[3] = np.nextafter(one_ulp[3], np.inf)
    assert recent.find(one_ulp, b) is None
    assert recent.find(a, b + 1e-300) is None


def test_what_is_kept_and_what_is_found_are_copies():
    recent = _recent_of(5)
    a, b, outputs = np.ones(5), np.zeros(5), _outputs(1)
    recent.keep(a, b, outputs)
    a[:] = 2.0  # PyTensor may reuse its input and output arrays
    outputs[0][:] = np.nan
    recent.find(np.ones(5), b)[1][:] = np.nan  # and overwrite what it is given
    for got, want in zip(recent.find(np.ones(5), b), _outputs(1), strict=True):
        np.testing.assert_array_equal(got, want)
    assert recent.find(a, b) is None


def test_the_last_evaluations_are_kept_the_oldest_dropped():
    recent = _recent_of(5)
    points = [np.full(5, float(k)) for k in range(EVALUATIONS + 1)]
    for k, a in enumerate(points):
        recent.keep(a, np.zeros(5), _outputs(k))
    assert recent.find(points[0], np.zeros(5)) is None
    assert all(recent.find(a, np.zeros(5)) is not None for a in points[1:])


def test_a_table_whose_evaluations_exceed_the_budget_keeps_none():
    cells = BUDGET // (5 * 8) + 1  # one evaluation's copies would pass the budget
    recent = _recent_of(cells)
    a, b = np.ones(5), np.zeros(5)  # small arrays: the capacity follows the releases
    recent.keep(a, b, _outputs(2))
    assert recent.find(a, b) is None


def test_a_pickled_node_starts_with_nothing_kept():
    recent = _recent_of(5)
    recent.keep(np.ones(5), np.zeros(5), _outputs(3))
    copy = pickle.loads(pickle.dumps(recent))
    assert copy.find(np.ones(5), np.zeros(5)) is None
    copy.keep(np.ones(5), np.zeros(5), _outputs(3))
    assert copy.find(np.ones(5), np.zeros(5)) is not None


def test_a_node_given_other_releases_starts_afresh():
    # a node cloned with other inputs copies the first one's tag, and with it what it kept
    node = types.SimpleNamespace(tag=types.SimpleNamespace())
    form, table = _releases(5)
    first = _recent.recent_of(node, form, table)
    first.keep(np.ones(5), np.zeros(5), _outputs(5))
    assert _recent.recent_of(node, form, table) is first
    other = _recent.recent_of(node, form.copy(), table)
    assert other is not first and other.find(np.ones(5), np.zeros(5)) is None


class _FingerprintOnly(Recent):
    """Planted bug: parameters taken as equal when their fingerprints are."""

    def find(self, a, b):
        key = _recent._fingerprint(a, b)
        for kept_key, _, _, outputs in reversed(self._kept):
            if kept_key == key:
                return tuple(x.copy() for x in outputs)
        return None


def _colliding(a):
    """``a`` with two entries' bit patterns exchanged: the same sum of bits."""
    other = a.copy()
    other[[0, 1]] = other[[1, 0]]
    return other


def _tells_apart(kind) -> bool:
    """Whether a ``kind`` keeping one evaluation finds none at parameters with its fingerprint."""
    recent = kind(*_releases(5))
    a, b = np.linspace(1.0, 2.0, 5), np.zeros(5)
    recent.keep(a, b, _outputs(4))
    return recent.find(_colliding(a), b) is None


def test_parameters_with_the_same_fingerprint_are_told_apart():
    assert _tells_apart(Recent)


def test_companion_a_node_comparing_fingerprints_only_answers_another_point():
    assert not _tells_apart(_FingerprintOnly)


def _evaluate(recent: Recent, points, repeat_every: int) -> list[bool]:
    """Evaluate as the Op does, ``points`` with a repeat of the last one every so often.

    Returns, for each repeat, whether the node found it.
    """
    found = []
    for k, point in enumerate(points):
        for again in (False, True) if k % repeat_every == 0 else (False,):
            result = recent.find(point, np.zeros(5))
            if result is None:
                recent.keep(point, np.zeros(5), _outputs(k))
            if again:
                found.append(result is not None)
    return found


def _points(count: int):
    return [np.full(5, float(k)) for k in range(count)]


def test_a_node_whose_evaluations_come_again_often_keeps_them_throughout():
    # one evaluation in five comes again: above WORTH, in every window
    found = _evaluate(_recent_of(5), _points(8 * WINDOW), repeat_every=4)
    assert len(found) == 2 * WINDOW and all(found)


def test_a_node_whose_evaluations_rarely_come_again_stops_keeping_them_for_a_while():
    # one in 51 comes again, below WORTH: the first window keeps (and finds its repeats),
    # the next SKIPPED windows keep nothing, and the one after them keeps again
    recent = _recent_of(5)
    points = _points((SKIPPED + 2) * WINDOW)
    found = _evaluate(recent, points, repeat_every=50)
    windows = np.cumsum([2 if k % 50 == 0 else 1 for k in range(len(points))]) // WINDOW
    by_window = [[f for f, w in zip(found, windows[::50], strict=True) if w == window]
                 for window in range(SKIPPED + 2)]  # fmt: skip
    assert all(by_window) and all(by_window[0]) and all(by_window[-1])
    assert not any(sum(by_window[1:-1], []))


def _windows_kept(recent: Recent, repeats: list[int]) -> list[bool]:
    """Whether the node kept evaluations in each window, where window w repeats ``repeats[w]``.

    Each repeat evaluates a new point and then that point again, from the window's tenth
    evaluation on; the other evaluations are of new points.
    """
    kept, k = [], 0
    for count in repeats:
        found = []
        for e in range(WINDOW):
            k += 1
            again = 10 <= e < 10 + 2 * count and e % 2 == 1
            point = np.full(5, float(k - 1 if again else k))
            result = recent.find(point, np.zeros(5))
            if result is None:
                recent.keep(point, np.zeros(5), _outputs(k))
            if again:
                found.append(result is not None)
        kept.append(any(found))
    return kept


def _trials_when_rarely_found() -> list[int]:
    """The windows a node kept, of 150 in which its evaluations rarely came again."""
    rarely = 2  # repeats a window, below WORTH * WINDOW (21.3)
    kept = _windows_kept(_recent_of(5), [rarely] * 150)
    return [w for w, k in enumerate(kept) if k]


# kept in window 0, then after 3, 6, 12, 24, 48 and 48 (LONGEST) windows skipped
DOUBLING = [0, 4, 11, 24, 49, 98, 147]


def test_each_failed_trial_doubles_the_windows_skipped_after_it():
    assert 2 < WORTH * WINDOW < 40 and (SKIPPED, LONGEST) == (3, 48)
    assert _trials_when_rarely_found() == DOUBLING


def test_companion_a_node_skipping_the_same_windows_each_time_is_told_apart(monkeypatch):
    monkeypatch.setattr(_recent, "LONGEST", SKIPPED)
    assert _trials_when_rarely_found() != DOUBLING


def test_a_trial_that_succeeds_skips_the_shortest_time_after_the_next_failure():
    # windows 0 and 4 fail (4 is a trial); 11, a trial, succeeds, so 12 keeps too and fails
    repeats = [2] * 11 + [40] + [2] * 10
    kept = _windows_kept(_recent_of(5), repeats)
    assert [w for w, k in enumerate(kept) if k] == [0, 4, 11, 12, 13 + SKIPPED]


# ---- the Op in a compiled function, and under NUTS ----

RELEASED = np.array([3, 21, -9, 30, 6, 2, 14, 40])


def _model():
    with pm.Model() as model:
        mu = pm.Normal("mu", 2.5, 1.0)
        alpha = pm.Exponential("alpha", 0.2)
        latent = pm.NegativeBinomial.dist(mu=pm.math.exp(mu), alpha=alpha, shape=RELEASED.size)
        dp.to_pymc("y", latent, observed=[(dp.DiscreteGaussian(4.0), RELEASED)])
    return model


def _counted(monkeypatch, module, name: str) -> list[int]:
    """``[calls]``: how many times ``module.name`` is called from now on."""
    count = [0]
    real = getattr(module, name)

    def counting(*args):
        count[0] += 1
        real(*args)

    monkeypatch.setattr(module, name, counting)
    return count


@pytest.fixture
def counted_sweeps(monkeypatch):
    """The number of sweeps the Op has run since the test began."""
    return _counted(monkeypatch, _op, "sweep")


def test_a_compiled_function_gives_the_same_results_again_without_a_sweep(counted_sweeps):
    model = _model()
    f = model.compile_fn([model.logp(), model.dlogp()], inputs=model.value_vars, point_fn=False)
    start = model.initial_point()
    first = [start["mu"], start["alpha_log__"]]
    second = [start["mu"] + 0.3, start["alpha_log__"]]
    beside = [start["mu"], start["alpha_log__"] - 0.2]
    results = [f(*point) for point in (first, second, first, beside, first, first)]
    assert counted_sweeps[0] == 3
    for again in (results[2], results[4], results[5]):
        np.testing.assert_array_equal(again[0], results[0][0])
        np.testing.assert_array_equal(again[1], results[0][1])
    assert results[3][0] != results[0][0]


def _sweeps_and_steps(counted_sweeps, monkeypatch, evaluations):
    monkeypatch.setattr(_recent, "EVALUATIONS", evaluations)
    with _model():
        idata = pm.sample(
            draws=60, tune=60, chains=1, cores=1, random_seed=3, progressbar=False,
            compute_convergence_checks=False, discard_tuned_samples=False,
        )  # fmt: skip
    steps = int(idata.warmup_sample_stats["n_steps"].sum() + idata.sample_stats["n_steps"].sum())
    return counted_sweeps[0], steps


def test_nuts_sweeps_once_a_leapfrog_step(counted_sweeps, monkeypatch):
    # each of the 120 iterations starts where the last one's trajectory evaluated; a few
    # sweeps come before sampling (the initial point's checks)
    sweeps, steps = _sweeps_and_steps(counted_sweeps, monkeypatch, EVALUATIONS)
    assert steps <= sweeps <= steps + 5


def test_companion_a_node_that_keeps_nothing_sweeps_once_more_an_iteration(
    counted_sweeps, monkeypatch
):
    sweeps, steps = _sweeps_and_steps(counted_sweeps, monkeypatch, 0)
    assert not sweeps <= steps + 5
    assert sweeps >= steps + 120


def test_a_direct_call_without_a_node_keeps_nothing(counted_sweeps):
    model = _model()
    (node,) = {
        v.owner
        for v in pytensor.graph.traversal.ancestors([model.logp()])
        if v.owner is not None and isinstance(v.owner.op, _op.MarginalLogp)
    }
    a = np.full(RELEASED.size, 5.0)
    b = np.full(RELEASED.size, 0.5)
    form, table = (np.asarray(x.data) for x in node.inputs[2:4])
    state = np.full(node.inputs[4].get_value().shape, np.nan)
    for _ in range(2):
        node.op.perform(None, [a, b, form, table, state], [[None] for _ in range(4)])
    assert counted_sweeps[0] == 2


def test_a_group_totals_node_gives_the_same_results_again_without_a_sweep(monkeypatch):
    count = _counted(monkeypatch, _group_op, "group_sweep")
    released = np.array([[4, 9, 6], [12, 3, 1]])
    with pm.Model() as model:
        mu = pm.Normal("mu", 1.5, 1.0)
        latent = pm.Poisson.dist(mu=pm.math.exp(mu), shape=released.shape)
        dp.to_pymc(
            "y",
            latent,
            observed=[(dp.DiscreteGaussian(2.0), released)],
            totals=(np.array([0, 1])[:, None], np.array([20, 15])),
        )
    f = model.compile_fn([model.logp(), model.dlogp()], inputs=model.value_vars, point_fn=False)
    results = [f(x) for x in (1.5, 1.8, 1.5, 1.5)]
    assert count[0] == 2
    for again in results[2:]:
        np.testing.assert_array_equal(again[0], results[0][0])
        np.testing.assert_array_equal(again[1], results[0][1])
    assert results[1][0] != results[0][0]
