"""Every mechanism's log-density is exact for any int64 or float64 input, whatever its size.

Issue 19: ``DiscreteGaussian(1.0).logpdf(0, [4_000_000_000])`` was +1.2e18 (the int64
square of the difference overflowed; at 2**62 it wrapped to -0.92), and converting
int64 values to float64 before subtracting lost their low bits. One generic property
walks the registry: releases and confidential values drawn by hypothesis over the whole
int64 and float64 ranges (mixed, huge, tiny, boundary values), scored by ``logpdf``,
by the PyTensor expression behind ``to_pymc`` and by the compiled cell form of
``da_mcmc``, against each row's ``exact`` reference (rationals, rounded once).

Tolerance: the log-density is a sum of terms (per coordinate, a normaliser and the
part that depends on the inputs); each is computed to a few units in the last place,
so the total must lie within ``1e-13 * (1 + magnitude)`` of the reference, where
``magnitude`` is the sum of the terms' absolute values. The ``1 +`` is an absolute
1e-13 nats, a relative error of 1e-13 in the density itself. An infinite reference
(a log-density beyond the float64 range) must be met by the same infinity.

A planted copy with the old int64 square must fail the same check.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from _mechanism_registry import CASES
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import dpinfer as dp
from dpinfer.mechanisms._namespaces import pytensor_namespace
from dpinfer.samplers.da._da_kernels import log_density

RTOL = 1e-13
INT64 = st.integers(-(2**63), 2**63 - 1)
FLOAT64 = st.floats(allow_nan=False, allow_infinity=False, width=64)
# integer-valued floats in the int64 range (2**63 - 1 rounds to 2**63, which is not)
INTEGRAL_FLOAT = INT64.map(float).filter(lambda x: x < 2.0**63)
EXAMPLES = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])

ADDITIVE = [c for c in CASES if c.translation]


def _numbers(discrete: bool):
    """Numbers of one kind: int64, or float64 (integer-valued for discrete families)."""
    return st.sampled_from([INT64, INTEGRAL_FLOAT if discrete else FLOAT64])


def _reference(case, mech, released, values) -> tuple[np.ndarray, np.ndarray]:
    """Reference log-densities and magnitudes for a batch of values, coordinate by coordinate."""
    r = np.reshape(np.asarray(released, dtype=object), -1)
    rows = [np.reshape(np.asarray(v, dtype=object), -1) for v in values]
    ref, mag = [], []
    for row in rows:
        terms = [case.exact(mech, j, _python(r[j]), _python(row[j])) for j in range(r.size)]
        ref.append(_sum(t for t, _ in terms))
        mag.append(abs(_sum(-m for _, m in terms)))
    return np.array(ref), np.array(mag)


def _sum(terms) -> float:
    """The exact sum of log-density terms rounded once; -inf beyond the float64 range."""
    terms = list(terms)
    try:
        return math.fsum(terms)
    except (OverflowError, ValueError):  # partial sums beyond the range, or -inf terms
        return -math.inf


def _python(x):
    return int(x) if isinstance(x, int | np.integer) else float(x)


def assert_exact(got, ref, magnitude, what: str) -> None:
    got = np.asarray(got, dtype=float)
    infinite = ~np.isfinite(ref)
    assert np.all(got[infinite] == ref[infinite]), f"{what}: {got} against {ref}"
    err = np.abs(got[~infinite] - ref[~infinite])
    bound = RTOL * (1 + magnitude[~infinite])
    assert np.all(err <= bound), f"{what}: {got} against {ref} (error {err}, bound {bound})"


def check_logpdf(case, mech, released, values) -> None:
    """The property: ``logpdf`` within the tolerance of the exact reference."""
    ref, mag = _reference(case, mech, released, values)
    assert_exact(mech.logpdf(released, values), ref, mag, f"{case.name}.logpdf")


def _batch(draw, mech, kinds):
    """A release and 4 confidential values of the mechanism's event shape.

    Each is one array of one kind (int64 or float64), drawn from ``kinds``. Half the
    time the values lie within 100 of the release, however large it is: there the
    difference cancels, and any rounding of the inputs shows.
    """
    k = max(1, math.prod(mech.event_shape))
    released = draw(st.lists(draw(kinds), min_size=k, max_size=k))
    element = draw(kinds)
    if draw(st.booleans()):
        rows = [[_near(draw, r, element) for r in released] for _ in range(4)]
    else:
        rows = draw(st.lists(st.lists(element, min_size=k, max_size=k), min_size=4, max_size=4))
    shape = mech.event_shape
    return _as_array(released).reshape(shape), _as_array(rows).reshape(4, *shape)


def _near(draw, r, element):
    """A number of ``element``'s kind within about 100 of ``r`` (clipped to the int64 range)."""
    if element is FLOAT64:
        return r + draw(st.floats(-100, 100))
    n = min(max(int(r) + draw(st.integers(-100, 100)), -(2**63)), 2**63 - 1)
    return n if element is INT64 else min(float(n), float(2**63 - 1024))


def _as_array(xs) -> np.ndarray:
    flat = np.ravel(np.asarray(xs, dtype=object))
    return np.asarray(xs, dtype=np.int64 if isinstance(flat[0], int) else float)


@pytest.mark.parametrize("case", ADDITIVE, ids=lambda c: c.name)
def test_logpdf_is_exact_for_any_int64_or_float64_input(case):
    mech = case.make(case.event_shapes[-1])

    @EXAMPLES
    @given(data=st.data())
    def prop(data):
        released, values = _batch(data.draw, mech, _numbers(mech.discrete))
        check_logpdf(case, mech, released, values)

    prop()


@pytest.mark.parametrize("case", ADDITIVE, ids=lambda c: c.name)
def test_pytensor_density_is_exact_for_int64_and_float64_input(case):
    # the expression to_pymc hands to PyMC: PyTensor's int64 arithmetic wraps like NumPy's
    import pytensor.tensor as pt

    mech = case.make(case.event_shapes[-1])
    shape = mech.event_shape
    big = [2**62, -(2**62), 4_000_000_000, 2**63 - 1, -(2**63), 2**53 + 1, 3]
    for released, values in [
        (np.full(shape, 0, np.int64), np.array(big, np.int64)),
        (np.full(shape, 2**62 + 1, np.int64), np.array(big, np.int64)),
        (np.full(shape, 1e300 if not mech.discrete else 2.0**62), np.array(big, np.int64)),
    ]:
        if mech.discrete and released.dtype.kind == "f":
            released = released.astype(np.int64)
        values = np.broadcast_to(values.reshape(-1, *([1] * len(shape))), (len(big), *shape))
        pt_ns = pytensor_namespace()
        expr = mech._log_density(pt_ns, pt.as_tensor(released), pt.as_tensor(values))
        got = np.asarray(expr.eval(), dtype=float)
        got = got.reshape(len(big), -1).sum(axis=1)
        ref, mag = _reference(case, mech, released, values)
        assert_exact(got, ref, mag, f"{case.name} in PyTensor")


@pytest.mark.parametrize("case", ADDITIVE, ids=lambda c: c.name)
def test_compiled_cell_form_is_exact_for_float64_input(case):
    # da_mcmc scores running sums (float64) through the numba kernel of the cell form
    mech = case.make(case.event_shapes[-1])

    @EXAMPLES
    @given(data=st.data())
    def prop(data):
        kinds = st.just(INTEGRAL_FLOAT if mech.discrete else FLOAT64)
        released, values = _batch(data.draw, mech, kinds)
        form = mech.cell_form(released)
        got = log_density(form, np.ascontiguousarray(values.reshape(len(values), -1)))
        ref, mag = _reference(case, mech, released, values)
        assert_exact(got, ref, mag, f"{case.name} cell form")

    prop()


@st.composite
def _binomial_release(draw):
    """A binomial release with up to 2**40 trials and population, a release and 4 curves."""
    length = draw(st.integers(1, 3))
    n = draw(st.integers(1, 2**40))
    population = draw(st.integers(1, 2**40))
    m = draw(st.floats(1e-3, 1e12))
    mech = dp.BinomialRelease(n=n, m=m, population=population, length=length)
    counts = [draw(st.integers(0, n)) for _ in range(length)]
    curves = [[draw(st.integers(0, population)) for _ in range(length)] for _ in range(4)]
    return mech, np.array(counts, np.int64), np.array(curves, np.int64)


@EXAMPLES
@given(_binomial_release())
def test_binomial_logpdf_is_exact_up_to_the_size_limits(drawn):
    # the binomial release's inputs are bounded by n and the population (at most 2**40 each)
    mech, released, values = drawn
    case = next(c for c in CASES if c.name == "BinomialRelease")
    check_logpdf(case, mech, released, values)
    check_logpdf(case, mech, released, values.astype(float))


# --- the reproductions of issue 19, and the planted bug ------------------------------------


def test_discrete_gaussian_at_four_billion_is_minus_eight_quintillion():
    mech = dp.DiscreteGaussian(1.0, sensitivity=1)
    log_norm = float(mech.logpdf(0, [0])[0])
    assert mech.logpdf(0, [4_000_000_000])[0] == pytest.approx(log_norm - 8e18, rel=1e-15)
    assert mech.logpdf(0, [2**62])[0] == pytest.approx(log_norm - 2.0**123, rel=1e-15)
    # the int64 difference itself would overflow here
    assert mech.logpdf(2**62, [-(2**62)])[0] == pytest.approx(-(2.0**125), rel=1e-15)
    # a continuous family with an int64 value beyond 2**53: one unit apart is 1/b nats
    laplace = dp.Laplace(1.0)
    assert laplace.logpdf(2.0**62, [2**62 + 1])[0] == pytest.approx(-1 - math.log(2), abs=1e-15)


def _with_old_int64_square(mech):
    """The planted bug: the discrete Gaussian's former formula, the square taken in int64."""

    class Planted(type(mech)):
        def _log_density(self, xp, released, value):
            return self._log_norm - xp.square(released - value) / (2 * self.sigma**2)

    planted = type(mech).__new__(Planted)
    planted.__dict__.update(mech.__dict__)
    return planted


def test_planted_int64_square_fails_the_exactness_check():
    case = next(c for c in CASES if c.name == "DiscreteGaussian")
    planted = _with_old_int64_square(case.make(()))
    with pytest.raises(AssertionError, match="DiscreteGaussian.logpdf"):
        check_logpdf(case, planted, np.int64(0), np.array([4_000_000_000]))

    # stop at the first failure (no shrinking); derandomized, so that whether the search finds
    # the bug does not depend on the run (unseeded, one fresh-clone run in some tens missed it)
    @settings(EXAMPLES, phases=[Phase.generate], derandomize=True, database=None)
    @given(data=st.data())
    def prop(data):
        released, values = _batch(data.draw, planted, _numbers(True))
        with np.errstate(over="ignore"):
            check_logpdf(case, planted, released, values)

    # the generic search finds it on its own
    with pytest.raises(AssertionError, match="DiscreteGaussian.logpdf"):
        prop()


def test_int64_inputs_beyond_their_range_are_refused_not_wrapped():
    mech = dp.DiscreteGaussian(1.0)
    with pytest.raises(ValueError, match=r"value must hold integers in the int64 range"):
        mech.logpdf(0, [1e19])  # a float integer beyond 2**63 wrapped to -2**63 before
    with pytest.raises(ValueError, match=r"value must hold integers in the int64 range"):
        mech.logpdf(0, np.array([2**64 - 1], dtype=np.uint64))  # wrapped to -1 before
    with pytest.raises(ValueError, match=r"released must hold integers in the int64 range"):
        mech.logpdf(2.0**63, [0])
    # uint64 within range is read exactly
    largest = np.array([2**63 - 1], dtype=np.uint64)
    assert mech.logpdf(2**63 - 1, largest)[0] == mech.logpdf(0, [0])[0]
