"""The kernel's state between evaluations: Poisson cells with Gaussian releases on the fast path.

``marginal_sweep`` keeps each cell's last mode and the constants of its releases; a
Poisson cell whose releases are all published Gaussian ones (discrete or continuous) is then
summed by ``dpinfer.marginal._poisson`` from the first evaluation of a cell (no mode yet) on.
These tests run it from fresh and warm states, including stale ones (the mode of parameters
far from the present ones), against the independent wide-window sums of ``_brute``, check
that every state gives the same sums, and that the Op never reuses a state left by other
releases.
"""

from __future__ import annotations

import functools

import numba as nb
import numpy as np
import pytest

import dpinfer as dp
from dpinfer.marginal import _poisson as P
from dpinfer.marginal import _sweep
from dpinfer.marginal._families import POISSON
from dpinfer.marginal._forms import joined_form, kernel_form, packed, release_form
from dpinfer.marginal._op import MarginalLogp
from dpinfer.marginal._sweep import BATCH, sweep_cells

from ._brute import log_marginal
from ._recompiled import sweep_with

TOL = 1e-10
GAUSSIANS = {
    "discrete gaussian": [(dp.DiscreteGaussian(3.0), 37)],
    "gaussian": [(dp.Gaussian(0.7), 37.4)],
    "twice": [(dp.DiscreteGaussian(1.0), 41), (dp.DiscreteGaussian(5.0), 30)],
    # wide, but summed term by term: ._fourier takes the cells wider than WIDE (7.5) counts
    "wide": [(dp.DiscreteGaussian(7.0), 37)],
}
# extreme and ordinary rates: NUTS warm-up goes far from the data
RATES = [1e-8, 0.3, 37.0, 38.5, 900.0, 4e5]


@functools.cache
def reference(mech, rate):
    """The brute-force log-likelihood of a Poisson cell at ``rate`` with ``GAUSSIANS[mech]``."""
    return log_marginal("poisson", rate, 0, GAUSSIANS[mech])


def constants(pairs, cells=1):
    """The joined form of the releases and its log-CDF tables, for ``cells`` equal cells."""
    forms = [
        release_form(m, np.full((cells, *m.event_shape), r), latent_discrete=True)
        for m, r in pairs
    ]
    return joined_form(forms)


def sweep(rates, pairs, state, tol=TOL, *, cells=sweep_cells):
    """The sweep (``cells``) of a Poisson latent at ``rates``: (logp, score, terms)."""
    rates = np.asarray(rates, dtype=float)
    n = rates.size
    out = [np.empty(n) for _ in range(3)]
    terms = np.empty(n, dtype=np.int64)
    form = kernel_form(*constants(pairs, n))
    cells(POISSON, rates, np.zeros(n), *form, tol, state, *out, terms, 0, n)
    return out[0], out[1], terms


def fresh(n):
    return np.full((n, P.STATE), np.nan)


def anchored(state):
    """Per row, whether its constants are those of its mode's anchor (the fast path's)."""
    anchors = [P.anchor(mode, step) for mode, step in state[:, [P.MODE, P.STEP]]]
    return state[:, P.AT] == anchors


@pytest.mark.parametrize("mech", GAUSSIANS)
@pytest.mark.parametrize("start", [1e-8, 37.0, 4e5])
def test_warm_states_give_the_brute_force_sums(mech, start):
    pairs = GAUSSIANS[mech]
    state = fresh(len(RATES))
    sweep(np.full(len(RATES), start), pairs, state)  # every cell's mode is that of `start`
    logp, _, _ = sweep(RATES, pairs, state)
    for rate, value in zip(RATES, logp, strict=True):
        exact = reference(mech, rate)
        assert abs(value - exact) <= 2 * TOL + 1e-12 * abs(exact), rate
    # the cells that did not need to walk far took the fast path: its constants are set
    assert np.all(state[:, P.STEP] > 0)
    again, _, _ = sweep(RATES, pairs, state)
    assert np.all(anchored(state))
    np.testing.assert_allclose(again, logp, rtol=0, atol=2 * TOL)  # both within tol


@pytest.mark.parametrize("mech", ["discrete gaussian", "gaussian", "twice"])
@pytest.mark.parametrize("rate", [0.3, 37.0, 900.0])
def test_warm_scores_are_the_gradient_of_the_exact_log_likelihood(mech, rate):
    pairs = GAUSSIANS[mech]
    state = fresh(1)
    sweep([rate], pairs, state)
    _, score, _ = sweep([rate], pairs, state)
    assert anchored(state)[0]  # the fast path
    h = 1e-5 * rate
    fd = (reference(mech, rate + h) - reference(mech, rate - h)) / (2 * h)
    assert score[0] == pytest.approx(fd, rel=1e-5, abs=1e-7)


def test_cells_off_the_fast_path_keep_the_general_sum():
    # a release on a bounded support and a suppressed discrete Laplace cell take the general
    # path, warm or not (a suppressed discrete Gaussian one has its own: test_suppressed.py)
    cases = [
        [(dp.BinomialRelease(n=200, m=50, population=1000, length=1), 9)],
        [(dp.Thresholded(dp.DiscreteLaplace(2.0), threshold=10), np.nan)],
        [(dp.DiscreteLaplace(4.0), 37)],
    ]
    for pairs in cases:
        state = fresh(1)
        for rate in (37.0, 900.0):
            logp, _, _ = sweep([rate], pairs, state)
            assert state[0, P.STEP] == -1.0
            reference = log_marginal("poisson", rate, 0, pairs)
            assert abs(logp[0] - reference) <= 2 * TOL + 1e-12 * abs(reference)


def test_the_fast_path_takes_the_terms_its_bound_needs():
    # the window follows the noise: about +-6.5 sigma at tol 1e-10 for sigma 1
    pairs = [(dp.DiscreteGaussian(1.0), 70)]
    state = fresh(1)
    sweep([70.0], pairs, state)
    _, _, terms = sweep([70.0], pairs, state)
    assert 10 <= terms[0] <= 20
    _, _, loose = sweep([70.0], pairs, state, tol=1e-3)
    assert loose[0] < terms[0]


@pytest.mark.parametrize("mech", ["discrete gaussian", "wide"])
def test_where_the_checks_start_does_not_decide_where_the_sum_stops(mech):
    # the first ceil(z SD) terms a side are added untested; with SD shrunk to nothing (one term
    # a side) every further term is added by the bound, and the sum is still exact within tol
    # (SD's sign kept: a wide cell summed over every other term stays on that path)
    pairs = GAUSSIANS[mech]
    state = fresh(len(RATES))
    sweep(RATES, pairs, state)
    logp, _, terms = sweep(RATES, pairs, state)
    state[:, P.SD] = np.copysign(1e-300, state[:, P.SD])
    early, _, early_terms = sweep(RATES, pairs, state)
    for rate, value in zip(RATES, early, strict=True):
        exact = reference(mech, rate)
        assert abs(value - exact) <= 2 * TOL + 1e-12 * abs(exact), rate
    assert np.all(early_terms <= terms)  # the untested terms overshoot, never fall short
    np.testing.assert_allclose(early, logp, rtol=0, atol=2 * TOL)


def _first_and_stale_sums(cells=sweep_cells, mech="twice"):
    """Whether the first evaluation at ``RATES`` left every cell on the fast path (its constants
    at its mode's anchor), and whether stale states (modes of far rates) gave the same sums
    there."""
    pairs = GAUSSIANS[mech]
    first = fresh(len(RATES))
    sums = sweep(RATES, pairs, first, cells=cells)
    fast = bool(np.all(anchored(first)))
    stale = []
    for start in (1e-8, 37.0, 4e5):
        state = fresh(len(RATES))
        sweep(np.full(len(RATES), start), pairs, state, cells=cells)
        stale.append(sweep(RATES, pairs, state, cells=cells))
    same = all(np.array_equal(a, b) for other in stale for a, b in zip(sums, other, strict=True))
    return fast, same


@pytest.mark.parametrize("mech", GAUSSIANS)
def test_the_first_evaluation_is_on_the_fast_path_and_any_state_gives_its_sums(mech):
    # the same bits: the state only decides where the search starts
    assert _first_and_stale_sums(mech=mech) == (True, True)


@nb.njit(error_model="numpy")
def _ready_for_known_modes(lam, form, n, j, row):
    return row[P.MODE] >= 0.0 and P.ready(lam, form, n, j, row)


def test_companion_a_first_evaluation_left_to_the_general_sum_is_caught():
    # Planted bug: the sweep (run by the interpreter) sends a cell without a mode yet to the
    # general sum, whose terms are not the fast path's; the same sweep without it passes
    assert _first_and_stale_sums(sweep_with()) == (True, True)
    assert _first_and_stale_sums(sweep_with(ready=_ready_for_known_modes)) == (False, False)


def _anchors_along(rates, cells=sweep_cells):
    """Along ``rates``: whether a warm cell's constants were always at the anchor of its mode
    (found from a fresh state), and the anchors and the modes it went through."""
    pairs = GAUSSIANS["discrete gaussian"]  # B = 1/9: from mode 9 on, anchors by threes
    warm, anchors, modes, right = fresh(1), set(), set(), True
    for rate in rates:
        sweep([rate], pairs, warm, cells=cells)
        first = fresh(1)
        sweep([rate], pairs, first)
        right &= warm[0, P.AT] == P.anchor(first[0, P.MODE], first[0, P.STEP])
        anchors.add(warm[0, P.AT])
        modes.add(first[0, P.MODE])
    return right, anchors, modes


# down and up again, 2.5% a step: the modes from 22 to 40 (the release, 37, pulls them)
ALONG = np.concatenate([np.geomspace(50.0, 4.0, 100), np.geomspace(4.0, 50.0, 100)])


def test_a_wide_cells_constants_follow_its_mode_by_threes():
    right, anchors, modes = _anchors_along(ALONG)
    assert right
    shared = [a for a in anchors if a >= P.GRID_FROM]
    assert len([m for m in modes if m >= P.GRID_FROM]) > 2 * len(shared) > 10


@nb.njit(error_model="numpy")
def _stays_above_its_lowest_mode(lam, row):
    s, up, step = row[P.AT], row[P.UP], row[P.STEP]
    _, highest = P._modes_at(s, step)
    return s >= 0.0 and not P._rises(lam, up * step if highest > s else up, highest)


def test_companion_a_stay_that_forgets_the_anchors_lowest_mode_is_caught():
    # Planted bug: the sweep (run by the interpreter) keeps a cell's constants while its mode
    # is below the anchor's lowest; the same sweep without it passes
    assert _anchors_along(ALONG, sweep_with())[0]
    assert not _anchors_along(ALONG, sweep_with(stays=_stays_above_its_lowest_mode))[0]


def _alone(rates, pairs):
    """Each cell's warm log-likelihood swept on its own."""
    sums = []
    for rate in rates:
        alone = fresh(1)
        sweep([rate], pairs, alone)
        sums.append(sweep([rate], pairs, alone)[0][0])
    return np.array(sums)


def test_a_cell_sums_the_same_alone_and_among_others():
    pairs = GAUSSIANS["twice"]
    state = fresh(len(RATES))
    sweep(RATES, pairs, state)
    together, _, _ = sweep(RATES, pairs, state)
    np.testing.assert_array_equal(together, _alone(RATES, pairs))


# a batch of logarithms and a part, cells on the general sum (subnormal rates) among them
_MIXED = np.resize(RATES + [5e-324, 1e-310], 2 * BATCH + 7)


def _batch_against_alone(cells=sweep_cells):
    """Each cell's log-likelihood in one warm sweep of ``_MIXED``, and swept on its own."""
    pairs = GAUSSIANS["twice"]
    state = fresh(_MIXED.size)
    sweep(_MIXED, pairs, state, cells=cells)
    return sweep(_MIXED, pairs, state, cells=cells)[0], _alone(_MIXED, pairs)


def test_a_batch_of_cells_takes_their_logarithms_each_at_its_own_cell():
    # the formula itself is checked against the brute-force sums above
    together, alone = _batch_against_alone()
    np.testing.assert_array_equal(together, alone)


@nb.njit(error_model="numpy")
def _logs_one_cell_late(cells, lam, power, rest, total, count, logp):
    _sweep._logs(np.minimum(cells + 1, logp.size - 1), lam, power, rest, total, count, logp)


def test_companion_logarithms_given_to_the_next_cell_are_caught():
    # Planted bug: the sweep (run by the interpreter) with its batch's logarithms written one
    # cell late; the same sweep without it passes
    together, alone = _batch_against_alone(sweep_with())
    np.testing.assert_array_equal(together, alone)
    together, alone = _batch_against_alone(sweep_with(_logs=_logs_one_cell_late))
    assert not np.array_equal(together, alone)


def op_logp(op, rate, pairs, state):
    """``op.perform`` on one cell: (log-likelihood, the state output)."""
    node_inputs = [np.array([rate]), np.zeros(1), *packed(*constants(pairs)), state]
    storage = [[None] for _ in range(4)]
    op.perform(None, node_inputs, storage)
    return storage[0][0][0], storage[3][0]


def test_the_op_threads_the_state_it_is_given():
    # the state is an input and an output of the Op (updated in place), never kept on it:
    # two tables share one Op and keep their own states
    op = MarginalLogp(POISSON, TOL)
    first = [(dp.DiscreteGaussian(1.0), 40)]
    second = [(dp.DiscreteGaussian(1.0), 400)]
    states = {id(first): fresh(1), id(second): fresh(1)}
    for pairs in (first, first, second, second, first):
        state = states[id(pairs)]
        logp, out = op_logp(op, 41.0, pairs, state)
        assert out is state
        assert logp == pytest.approx(log_marginal("poisson", 41.0, 0, pairs), abs=2 * TOL)
    # from its second evaluation on, each cell is summed from its own kept mode
    assert all(anchored(state)[0] for state in states.values())
    assert op == MarginalLogp(POISSON, TOL) and not hasattr(op, "_state")


def test_a_model_keeps_each_tables_state_in_its_graph():
    # the state is a shared variable of the compiled graph, which the evaluations update in
    # place; it moves the work, not the result (beyond the sums' tolerance)
    import pymc as pm

    mech = dp.DiscreteGaussian(1.0)
    with pm.Model() as model:
        rate = pm.Gamma("rate", 40.0, 1.0)
        mech.to_pymc("y", pm.Poisson.dist(rate, shape=2), observed=np.array([40, 44]))
    logp = model.compile_logp(vars=[model["y"]], sum=False)
    (state,) = [v for v in logp.f.get_shared() if v.name == "marginal_state"]
    assert np.isnan(state.get_value()).all()
    first = logp({"rate_log__": np.log(41.0)})[0]
    kept = state.get_value(borrow=True)
    assert not np.isnan(kept[:, P.MODE]).any()  # the modes found, kept for the next call
    # (the same point again is answered from the node's last evaluations: a nearby one)
    second = logp({"rate_log__": np.log(41.1)})[0]
    assert np.array_equal(kept[:, P.AT], kept[:, P.MODE])  # summed from them
    for rate, got in ((41.0, first), (41.1, second)):
        reference = [log_marginal("poisson", rate, 0, [(mech, r)]) for r in (40, 44)]
        np.testing.assert_allclose(got, reference, atol=2 * TOL)


def test_companion_a_state_of_other_releases_is_caught():
    # Planted bug: the state left by releases at 40 reused for releases at 400 (what the Op's
    # check prevents). The comparison with the brute-force sum above must catch it.
    first = [(dp.DiscreteGaussian(1.0), 40)]
    second = [(dp.DiscreteGaussian(1.0), 400)]
    state = fresh(1)
    sweep([41.0], first, state)
    sweep([41.0], first, state)
    stale, _, _ = sweep([41.0], second, state)
    assert abs(stale[0] - log_marginal("poisson", 41.0, 0, second)) > 1.0


def test_a_sampler_walk_on_the_in_place_check_sums_as_the_mode_search():
    # A sampler's trajectory: small steps keep most modes where they were, jumps move them.
    # A cell that ``stays`` must sum, bit for bit, as one whose mode is searched for afresh.
    pairs = GAUSSIANS["twice"]
    rng = np.random.default_rng(3)
    rates, state, in_place = np.array(RATES), fresh(len(RATES)), 0
    for step in range(30):
        scale = 1.0 if step % 10 == 9 else 0.01  # every tenth step a jump
        rates = rates * np.exp(scale * rng.standard_normal(rates.size))
        stayed = np.array([P.stays(rate, row) for rate, row in zip(rates, state, strict=True)])
        warm, warm_score, _ = sweep(rates, pairs, state)
        searched = fresh(len(RATES))
        sweep(rates, pairs, searched)  # the general sum, which finds each mode
        cold, cold_score, _ = sweep(rates, pairs, searched)  # then the search from it
        assert np.array_equal(warm[stayed], cold[stayed])
        assert np.array_equal(warm_score[stayed], cold_score[stayed])
        in_place += stayed.sum()
    assert in_place > len(RATES) * 20  # the in-place check decided most cells


@pytest.mark.parametrize(
    ("rate", "expected"),
    [(37.0, True), (38.0, True), (60.0, False), (20.0, False), (np.nan, False), (np.inf, False)],
)
def test_the_in_place_check_refuses_a_mode_that_moves(rate, expected):
    pairs = GAUSSIANS["discrete gaussian"]
    state = fresh(1)
    sweep([37.0], pairs, state)
    sweep([37.0], pairs, state)
    assert P.stays(rate, state[0]) is expected
    if expected:  # where it says so, the search agrees: the mode stays
        mode = state[0, P.MODE]
        sweep([rate], pairs, state)
        assert state[0, P.MODE] == mode


def test_a_subnormal_rate_leaves_the_fast_path_and_sums_exactly():
    # A cell at mode 0 passes the in-place check at 1e-8; at a subnormal rate (NUTS warm-up
    # reached 1.1e-310) 1 / rate overflows, and the fast path summed 0 * inf = NaN terms for
    # 10^8 steps before giving up: the general sum takes such a rate.
    pairs = GAUSSIANS["discrete gaussian"]
    state = fresh(1)
    sweep([1e-8], pairs, state)
    sweep([1e-8], pairs, state)
    assert P.stays(1e-8, state[0]) and not P.stays(1e-310, state[0])
    logp, score, _ = sweep([1e-310], pairs, state)
    assert abs(logp[0] - reference("discrete gaussian", 1e-310)) <= 2 * TOL
    assert np.isfinite(score[0])


def test_a_tiny_rate_at_mode_zero_with_a_negative_release_sums_exactly():
    # At mode 0 the left side has no terms, but exp(B (mode - 1) - A) / rate overflows for a
    # release far below 0 and a rate of 1e-300: its zero terms must not become 0 * inf.
    pairs = [(dp.DiscreteGaussian(1.0), -50)]
    state = fresh(1)
    sweep([1e-8], pairs, state)
    sweep([1e-8], pairs, state)
    assert P.stays(1e-300, state[0]) and state[0, P.MODE] == 0
    logp, score, _ = sweep([1e-300], pairs, state)
    assert abs(logp[0] - log_marginal("poisson", 1e-300, 0, pairs)) <= 2 * TOL
    assert np.isfinite(score[0])


# rates a step moves by far more than 8 counts: from tiny to large (the reference sums a window
# of 60 sd: 4e5 is its largest cheap rate), and back
JUMPS = [1e-8, 0.3, 900.0, 2e3, 6e3, 4e5, 37.0, 1e-8]


@pytest.mark.parametrize("mech", ["discrete gaussian", "gaussian", "twice", "wide"])
def test_a_mode_that_moves_far_is_jumped_to_on_the_fast_path(mech):
    # A cell whose mode moved more than 8 counts is found by Newton's method and a walk, not
    # the general sum; the sums stay those of the brute force, the scores its gradient.
    pairs = GAUSSIANS[mech]
    state = fresh(1)
    sweep([JUMPS[0]], pairs, state)
    for before, rate in zip(JUMPS[:-1], JUMPS[1:], strict=True):
        logp, score, _ = sweep([rate], pairs, state)
        assert anchored(state)[0], (before, rate)  # the fast path summed it
        searched = fresh(1)
        sweep([rate], pairs, searched)  # the general sum's mode, found by its own search
        assert state[0, P.MODE] == searched[0, P.MODE]
        exact = reference(mech, rate)
        assert abs(logp[0] - exact) <= 2 * TOL + 1e-12 * abs(exact), rate
        if rate > 1.0:
            h = 1e-5 * rate
            fd = (reference(mech, rate + h) - reference(mech, rate - h)) / (2 * h)
            assert score[0] == pytest.approx(fd, rel=1e-5, abs=1e-7), rate


def test_companion_a_cell_on_the_general_sum_is_told_from_the_fast_path():
    # Planted failure of the check above: a subnormal rate takes the general sum, which finds
    # the mode but leaves the fast path's constants at the last one, so AT != MODE
    pairs = GAUSSIANS["wide"]
    state = fresh(1)
    sweep([900.0], pairs, state)
    sweep([900.0], pairs, state)
    sweep([1e-310], pairs, state)
    assert state[0, P.AT] != state[0, P.MODE]


@pytest.mark.parametrize("mech", GAUSSIANS)
def test_a_moved_mode_takes_the_constants_of_the_two_separate_reads(mech):
    """``_gaussian_terms`` is ``_gaussian_ratio`` and ``_mechanisms`` in one pass, bit for bit.

    A moved mode's constants come from it; the state's promise that it never changes a
    result rests on their being the numbers the general sum reads.
    """
    from dpinfer.marginal._kernels import _gaussian_ratio, _gaussian_terms, _mechanisms

    form, table = kernel_form(*constants(GAUSSIANS[mech], 3))
    for j in range(3):
        for s in (0.0, 1.0, 36.0, 37.0, 1e6):
            a, b, published = _gaussian_terms(form, 3, j, s)
            assert (a, b) == _gaussian_ratio(form, 3, j)
            assert published == _mechanisms(form, table, 3, j, s)
