"""Invalid parameters raise ValueError (or TypeError) naming the parameter and the value.

One table lists every raw constructor and ``from_privacy`` with valid arguments;
every parameter it takes is then replaced by each bad value of its kind.
NaN must fail too: checks are written ``not (x > 0)``, never ``x <= 0``.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import dpinfer as dp
from dpinfer import accounting

NAN, INF = math.nan, math.inf

CONSTRUCTORS = {
    "Laplace": (dp.Laplace, dict(scale=1.0, sensitivity=1.0)),
    "Laplace.from_privacy": (dp.Laplace.from_privacy, dict(epsilon=1.0, sensitivity=1.0)),
    "Gaussian": (dp.Gaussian, dict(sigma=1.0, sensitivity=1.0, delta=1e-5)),
    "Gaussian.from_privacy": (
        dp.Gaussian.from_privacy,
        dict(epsilon=0.5, delta=1e-5, sensitivity=1.0),
    ),
    "Gaussian.from_privacy[classical]": (
        dp.Gaussian.from_privacy,
        dict(epsilon=0.5, delta=1e-5, sensitivity=1.0, calibration="classical"),
    ),
    "DiscreteLaplace": (dp.DiscreteLaplace, dict(scale=1.0, sensitivity=1)),
    "DiscreteLaplace.from_privacy": (
        dp.DiscreteLaplace.from_privacy,
        dict(epsilon=1.0, sensitivity=1),
    ),
    "DiscreteGaussian": (dp.DiscreteGaussian, dict(sigma=2.0, sensitivity=1, delta=1e-5)),
    "DiscreteGaussian.from_privacy": (
        dp.DiscreteGaussian.from_privacy,
        dict(epsilon=1.0, delta=1e-5, sensitivity=1),
    ),
    "BinomialRelease": (dp.BinomialRelease, dict(n=10, m=5.0, population=20, length=2)),
    "BinomialRelease.from_privacy": (
        dp.BinomialRelease.from_privacy,
        dict(epsilon=1.0, n=10, population=20, length=2),
    ),
    "SparseVector": (dp.SparseVector, dict(threshold=0.0, scale=1.0, c=2, sensitivity=1.0)),
    "SparseVector.from_privacy": (
        dp.SparseVector.from_privacy,
        dict(epsilon=1.0, threshold=0.0, c=2, sensitivity=1.0),
    ),
}

POSITIVE = [0, 0.0, -1, -1.5, NAN, INF]
BAD = {
    "epsilon": POSITIVE,
    "scale": POSITIVE,
    "sigma": POSITIVE,
    "sensitivity": POSITIVE,
    "m": POSITIVE,
    "delta": [0, 0.0, 1, 1.0, -0.1, 1.5, NAN, INF],
    "n": [0, -3, 2.5, NAN],
    "population": [0, -1, 0.5],
    "length": [0, -2, 1.5],
    "c": [0, -1, 1.5, NAN],
    "threshold": [NAN, INF, -INF],
}

CASES = [
    pytest.param(fn, kwargs, name, bad, id=f"{label}-{name}={bad!r}")
    for label, (fn, kwargs) in CONSTRUCTORS.items()
    for name in kwargs
    if name in BAD
    for bad in BAD[name]
]


@pytest.mark.parametrize(("fn", "kwargs", "name", "bad"), CASES)
def test_bad_parameter_raises_value_error_naming_it(fn, kwargs, name, bad):
    with pytest.raises(ValueError, match=rf"\b{name}\b.*got .*{re.escape(repr(bad))}"):
        fn(**{**kwargs, name: bad})


@pytest.mark.parametrize(("label", "entry"), CONSTRUCTORS.items(), ids=list(CONSTRUCTORS))
def test_valid_table_entries_construct(label, entry):
    # the base of every bad case above is valid, so each ValueError there is its bad value's
    fn, kwargs = entry
    assert type(fn(**kwargs)).__name__ == label.split(".")[0]


TYPE_CASES = [
    (dp.Laplace.from_privacy, dict(epsilon=1.0, sensitivity=1.0), "epsilon"),
    (dp.Gaussian, dict(sigma=1.0, delta=1e-5), "sensitivity"),
    (dp.DiscreteLaplace, dict(scale=1.0), "sensitivity"),
    (dp.BinomialRelease, dict(n=10, m=5.0, population=20, length=2), "n"),
    (dp.SparseVector, dict(threshold=0.0, scale=1.0, c=2, sensitivity=1.0), "c"),
]


@pytest.mark.parametrize(
    ("fn", "kwargs", "name", "bad"),
    [
        (fn, kwargs, name, bad)
        for fn, kwargs, name in TYPE_CASES
        for bad in ("1", None, True)
        if not (bad is None and name == "sensitivity")  # None = no privacy claim: valid
    ],
)
def test_non_numbers_raise_naming_the_parameter(fn, kwargs, name, bad):
    with pytest.raises((TypeError, ValueError), match=rf"\b{name}\b"):
        fn(**{**kwargs, name: bad})


def test_integer_sensitivity_required_by_discrete_mechanisms():
    for fn, kwargs in (
        (dp.DiscreteLaplace, dict(scale=1.0)),
        (dp.DiscreteLaplace.from_privacy, dict(epsilon=1.0)),
        (dp.DiscreteGaussian, dict(sigma=1.0, delta=1e-5)),
        (dp.DiscreteGaussian.from_privacy, dict(epsilon=1.0, delta=1e-5)),
    ):
        with pytest.raises(ValueError, match=r"sensitivity must be a positive integer.*got 1\.5"):
            fn(**kwargs, sensitivity=1.5)


def test_gaussian_calibration_name_is_checked():
    with pytest.raises(ValueError, match="calibration must be one of .*got 'exact'"):
        dp.Gaussian.from_privacy(epsilon=1.0, delta=1e-5, sensitivity=1.0, calibration="exact")


def test_sparse_vector_resample_must_be_a_bool():
    with pytest.raises(TypeError, match="resample must be a bool, got 'yes'"):
        dp.SparseVector(0.0, scale=1.0, c=1, sensitivity=1.0, resample="yes")


# --- shapes of parameters ------------------------------------------------------------------


def test_noise_vector_must_broadcast_to_event_shape():
    with pytest.raises(ValueError, match=r"scale of shape \(2,\) does not broadcast .*\(3,\)"):
        dp.Laplace([1.0, 2.0], event_shape=(3,))
    with pytest.raises(ValueError, match=r"sigma of shape \(2,\) does not broadcast .*\(3,\)"):
        dp.Gaussian([1.0, 2.0], event_shape=(3,))


def test_noise_vector_entries_are_all_checked():
    with pytest.raises(ValueError, match=r"scale must be positive and finite.*got \[1\.0, 0\.0\]"):
        dp.Laplace([1.0, 0.0])
    with pytest.raises(ValueError, match=r"sigma must be positive and finite.*nan"):
        dp.Gaussian(np.array([1.0, np.nan]))


def test_sensitivity_vector_must_match_event_shape():
    with pytest.raises(ValueError, match=r"sensitivity must be a scalar or have the event_shape"):
        dp.Laplace([1.0, 2.0, 3.0], sensitivity=[1.0, 1.0])


@pytest.mark.parametrize("bad", [(-1,), (2.5,), ("a",)])
def test_event_shape_is_checked(bad):
    for fn, kwargs in (
        (dp.Laplace.from_privacy, dict(epsilon=1.0, sensitivity=1.0)),
        (dp.DiscreteLaplace, dict(scale=1.0)),
        (dp.DiscreteGaussian, dict(sigma=1.0)),
    ):
        with pytest.raises(ValueError, match=rf"event_shape must be .*{re.escape(repr(bad))}"):
            fn(**kwargs, event_shape=bad)


# --- the Privacy dataclass -----------------------------------------------------------------


@pytest.mark.parametrize("bad", [0, -1, NAN])
def test_privacy_epsilon_is_checked(bad):
    with pytest.raises(ValueError, match=rf"epsilon must be a positive number.*got {bad!r}"):
        dp.Privacy(epsilon=bad)


@pytest.mark.parametrize("bad", [1, -0.1, NAN, INF])
def test_privacy_delta_is_checked(bad):
    with pytest.raises(ValueError, match=rf"delta must lie in \[0, 1\), got {bad!r}"):
        dp.Privacy(epsilon=1.0, delta=bad)


@pytest.mark.parametrize("bad", [0, -1, NAN])
def test_privacy_rho_is_checked(bad):
    message = rf"rho must be a positive number \(inf allowed\), got {bad!r}"
    with pytest.raises(ValueError, match=message):
        dp.Privacy(epsilon=1.0, delta=1e-6, rho=bad)


def test_privacy_infinite_rho_means_no_guarantee_and_is_allowed():
    # a rho beyond the float64 range (a sigma tiny next to the sensitivity) is inf, as epsilon
    assert dp.Privacy(epsilon=INF, delta=1e-6, rho=INF).rho == INF


def test_privacy_infinite_epsilon_means_no_guarantee_and_is_allowed():
    assert dp.Privacy(epsilon=INF).notion == "pure"
    assert str(dp.Privacy(epsilon=0.5, delta=1e-6, rho=0.1)) == "(0.5, 1e-06)-DP, 0.1-zCDP"


# --- one type rule: numbers and 0-d arrays, never strings or bools ------------------------------

MECHANISMS = {
    "Laplace": dp.Laplace(2.0, sensitivity=1.0),
    "Gaussian": dp.Gaussian(1.0),
    "DiscreteLaplace": dp.DiscreteLaplace(2.0, sensitivity=1),
    "DiscreteGaussian": dp.DiscreteGaussian(2.0),
}
NOT_NUMBERS = ["47", np.array("47"), ["4", "7"], True, np.array([True, False]), b"4", 1 + 2j]


@pytest.mark.parametrize("mech", list(MECHANISMS.values()), ids=list(MECHANISMS))
@pytest.mark.parametrize("bad", NOT_NUMBERS, ids=repr)
def test_release_and_logpdf_refuse_what_is_not_a_number(mech, bad):
    with pytest.raises(TypeError, match=r"value must be a number or an array of numbers"):
        mech.release(bad, rng=1)
    with pytest.raises(TypeError, match=r"value must be a number or an array of numbers"):
        mech.logpdf(40, bad)
    with pytest.raises(TypeError, match=r"released must be a number or an array of numbers"):
        mech.logpdf(bad, [40])


@pytest.mark.parametrize("mech", list(MECHANISMS.values()), ids=list(MECHANISMS))
@pytest.mark.parametrize("good", [40, 40.0, np.int64(40), np.float32(40.0), np.array(40)])
def test_numbers_and_zero_dimensional_arrays_are_accepted(mech, good):
    assert np.shape(mech.release(good, rng=1)) == ()
    assert mech.logpdf(good, [good]).shape == (1,)


@pytest.mark.parametrize(
    ("fn", "kwargs", "name"),
    [
        (dp.Laplace, dict(scale=1.0), "scale"),
        (dp.Laplace, dict(scale=1.0, sensitivity=1.0), "sensitivity"),
        (dp.Gaussian, dict(sigma=1.0), "sigma"),
        (dp.DiscreteLaplace, dict(scale=1.0), "scale"),
        (dp.DiscreteGaussian, dict(sigma=1.0), "sigma"),
        (dp.Laplace.from_privacy, dict(epsilon=1.0, sensitivity=1.0), "sensitivity"),
        (dp.DiscreteLaplace.from_privacy, dict(epsilon=1.0, sensitivity=1), "epsilon"),
    ],
)
@pytest.mark.parametrize("bad", ["2", np.array("2"), True, [1.0, "2"]], ids=repr)
def test_parameters_refuse_strings_and_bools(fn, kwargs, name, bad):
    # Laplace(scale="2") used to be accepted as 2.0 while from_privacy(epsilon="0.5") was not.
    with pytest.raises(TypeError, match=rf"\b{name}\b"):
        fn(**{**kwargs, name: bad})


def test_zero_dimensional_array_parameters_are_numbers():
    assert dp.Laplace(np.array(2.0), sensitivity=np.array(1.0)).privacy.epsilon == 0.5
    assert dp.DiscreteLaplace(np.array(2.0), sensitivity=np.int64(1)).privacy.epsilon == 0.5


def test_sparse_vector_queries_must_be_numbers():
    svt = dp.SparseVector(0.0, scale=1.0, c=1, sensitivity=1.0)
    with pytest.raises(TypeError, match="queries must be a number or an array of numbers"):
        svt.run(["0.1", "0.2"], rng=1)


# --- every from_privacy requires the sensitivity ------------------------------------------------


@pytest.mark.parametrize(
    ("fn", "kwargs"),
    [
        (dp.Laplace.from_privacy, dict(epsilon=0.5)),
        (dp.Gaussian.from_privacy, dict(epsilon=0.5, delta=1e-5)),
        (dp.DiscreteLaplace.from_privacy, dict(epsilon=0.5)),
        (dp.DiscreteGaussian.from_privacy, dict(epsilon=0.5, delta=1e-5)),
        (dp.SparseVector.from_privacy, dict(epsilon=0.5, threshold=0.0, c=1)),
    ],
)
def test_from_privacy_requires_the_sensitivity(fn, kwargs):
    # A default of 1 would silently claim a count query; the guarantee is only as true as
    # the declared sensitivity, so every family asks for it.
    with pytest.raises(TypeError, match="sensitivity"):
        fn(**kwargs)


# --- event shapes with no cells, sensitivities beyond the float64 integers -----------------------


@pytest.mark.parametrize("event_shape", [0, (0,), (2, 0), (0, 3)], ids=str)
@pytest.mark.parametrize(
    "make",
    [
        lambda es: dp.Laplace(1.0, sensitivity=1.0, event_shape=es),
        lambda es: dp.Gaussian(1.0, sensitivity=1.0, delta=1e-6, event_shape=es),
        lambda es: dp.DiscreteLaplace(1.0, sensitivity=1, event_shape=es),
        lambda es: dp.DiscreteGaussian(1.0, sensitivity=1, event_shape=es),
        lambda es: dp.DiscreteGaussian.from_privacy(
            epsilon=1.0, delta=1e-5, sensitivity=1, event_shape=es
        ),
        lambda es: dp.DiscreteLaplace.from_privacy(epsilon=1.0, sensitivity=1, event_shape=es),
        lambda es: dp.Gaussian.from_zcdp(rho=0.5, sensitivity=1.0, event_shape=es),
    ],
    ids=["Laplace", "Gaussian", "DiscreteLaplace", "DiscreteGaussian", "DG.from_privacy",
         "DL.from_privacy", "G.from_zcdp"],
)  # fmt: skip
def test_an_event_shape_of_no_cells_is_refused_when_the_mechanism_is_built(make, event_shape):
    # built, such a mechanism failed only in .privacy, with NumPy's "zero-size array to
    # reduction operation minimum which has no identity"
    with pytest.raises(ValueError, match=r"event_shape must have positive entries.*no cells"):
        make(event_shape)


@pytest.mark.parametrize("bits", [40, 53, 62, 70, 200])
@pytest.mark.parametrize("sigma", [1.0, 3.7, 1e5])
def test_a_huge_sensitivity_has_a_discrete_gaussian_guarantee_without_a_huge_array(bits, sigma):
    # the exact delta(epsilon) summed the pmf from -2**(bits - 1) on: 4 TiB at 2**40,
    # "Maximum allowed size exceeded" at 2**70
    sens = 2**bits
    eps = dp.DiscreteGaussian(sigma, sensitivity=sens, delta=1e-6).privacy.epsilon
    rho = accounting.zcdp_gaussian(sigma, sens)
    # from the mean privacy loss rho (delta would be about 1/2 there) to the zCDP bound,
    # which it is where float64 cannot hold Theorem 7's thresholds to a lattice step
    cap = accounting.zcdp_to_approx(rho, 1e-6)
    assert rho <= eps <= cap
    assert (eps == cap) == (sens * 2.0**-52 > 1e-3 * min(sigma, 1.0))
