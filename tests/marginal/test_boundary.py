"""What ``to_pymc`` refuses or warns about at its boundary, in dpinfer's words.

Shapes: a tensor value, an unregistered distribution (through ``mechanism.to_pymc``
and ``dp.to_pymc``) or one of its parameters whose shape does not fit the release
is refused with a ValueError naming the parameter and both shapes, when the model is
built if the shape is known then, else at the first evaluation (never PyTensor's
"Alloc static input type ...", "Size length is incompatible ..." or "SpecifyShape"
first). Releases: NaN in a release of a mechanism that publishes every cell points to
``dp.Thresholded``; a confidential value that is NaN, inf or complex is refused without
being shown. Repeated releases of the same cells through two calls warn.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pymc as pm
import pytest

import dpinfer as dp

LAPLACE = dp.Laplace(1.0, event_shape=(3,))
DISCRETE = dp.DiscreteGaussian(2.0, event_shape=(3,))
RELEASED = np.array([4, 9, 6])


def _evaluate(model):
    return model.compile_logp()(model.initial_point())


@pytest.mark.parametrize("shape", [(4,), (2, 3), ()], ids=str)
def test_a_tensor_value_of_another_shape_names_value_and_both_shapes(shape):
    with pm.Model(), pytest.raises(ValueError) as err:
        LAPLACE.to_pymc("y", pm.Normal("s", shape=shape), observed=np.zeros(3))
    assert str(err.value) == (
        f"value has shape {shape}, which must equal the mechanism's event_shape (3,)"
    )


def test_a_value_shape_known_only_when_the_model_runs_is_refused_at_the_first_evaluation():
    with pm.Model() as model:
        size = pm.Data("size", np.ones(3))
        value = pm.Normal("s", shape=size.shape)
        LAPLACE.to_pymc("y", value, observed=np.array([0.5, -1.0, 2.0]))
    assert np.isfinite(_evaluate(model))  # the right length evaluates
    pm.set_data({"size": np.ones(4)}, model=model)
    with pytest.raises(ValueError, match=r"^value has shape \(4,\), which must equal the mech"):
        model.compile_logp()({"s": np.zeros(4)})


def _through_mechanism(dist):
    DISCRETE.to_pymc("y", dist, observed=RELEASED)


def _through_to_pymc(dist):
    dp.to_pymc("y", dist, observed=[(DISCRETE, RELEASED)])


@pytest.mark.parametrize("add", [_through_mechanism, _through_to_pymc], ids=["method", "to_pymc"])
@pytest.mark.parametrize(
    ("make", "shape"),
    [
        (lambda: pm.Poisson.dist(mu=np.ones(4)), (4,)),  # PyTensor: "Alloc static input ..."
        (lambda: pm.Poisson.dist(mu=np.ones((2, 3))), (2, 3)),  # "Size length is ..."
        (lambda: pm.Poisson.dist(mu=1.0, shape=4), (4,)),  # accepted today: size ignored
        (lambda: pm.Poisson.dist(mu=1.0, size=(2, 3)), (2, 3)),
    ],
    ids=["mu4", "mu2x3", "shape4", "size2x3"],
)
def test_a_distribution_of_another_shape_names_dist_and_both_shapes(add, make, shape):
    with pm.Model(), pytest.raises(ValueError) as err:
        add(make())
    assert str(err.value) == (
        f"dist (Poisson) has shape {shape}, which must broadcast to the released cells' shape (3,)"
    )


def test_a_distribution_that_broadcasts_to_the_cells_is_accepted():
    with pm.Model() as scalar:
        dp.to_pymc("y", pm.Poisson.dist(mu=5.0), observed=[(DISCRETE, RELEASED)])
    with pm.Model() as full:
        dp.to_pymc("y", pm.Poisson.dist(mu=np.full(3, 5.0)), observed=[(DISCRETE, RELEASED)])
    assert _evaluate(scalar) == pytest.approx(_evaluate(full), rel=1e-12)


def _data_sized_poisson(length, *, through_size):
    with pm.Model() as model:
        data = pm.Data("data", np.full(length, 5.0))
        if through_size:
            dist = pm.Poisson.dist(mu=5.0, shape=data.shape)
        else:
            dist = pm.Poisson.dist(mu=data)
        dp.to_pymc("y", dist, observed=[(DISCRETE, RELEASED)])
    return model


@pytest.mark.parametrize(
    ("through_size", "named"),
    [(False, "a parameter of dist (Poisson)"), (True, "dist (Poisson) size")],
    ids=["parameter", "size"],
)
def test_a_distribution_shape_known_only_when_the_model_runs_is_refused_first(through_size, named):
    right = _data_sized_poisson(3, through_size=through_size)
    assert np.isfinite(_evaluate(right))
    wrong = _data_sized_poisson(4, through_size=through_size)
    # PyTensor would raise its AssertionError "SpecifyShape: dim 0 of input has shape 4"
    # (a parameter) or nothing at all (a size): the first error is dpinfer's
    with pytest.raises(ValueError, match="^" + re.escape(f"{named} has shape (4,), which must")):
        _evaluate(wrong)


def test_the_run_time_check_keeps_the_value_and_the_gradient():
    def model(data):
        with pm.Model() as m:
            rate = pm.Exponential("rate", 0.1)
            mu = rate * (pm.Data("pop", np.array([1.0, 2.0, 3.0])) if data else [1.0, 2.0, 3.0])
            dp.to_pymc("y", pm.Poisson.dist(mu=mu), observed=[(DISCRETE, RELEASED)])
        return m

    point = {"rate_log__": np.log(2.5)}
    checked, static = model(True), model(False)
    assert checked.compile_logp()(point) == pytest.approx(static.compile_logp()(point), 1e-12)
    assert checked.compile_dlogp()(point) == pytest.approx(static.compile_dlogp()(point), 1e-12)


@pytest.mark.parametrize("through_method", [True, False], ids=["method", "to_pymc"])
def test_a_nan_release_of_a_plain_mechanism_points_to_thresholded(through_method):
    released = np.array([4, np.nan, 6])
    with pm.Model(), pytest.raises(ValueError) as err:
        if through_method:
            DISCRETE.to_pymc("y", pm.Poisson.dist(mu=5.0), observed=released)
        else:
            dp.to_pymc("y", pm.Poisson.dist(mu=5.0), observed=[(DISCRETE, released)])
    message = str(err.value)
    assert "at position [1]" in message and "dp.Thresholded(DiscreteGaussian(...)" in message


def test_a_nan_release_observed_through_a_tensor_value_points_to_thresholded():
    with pm.Model(), pytest.raises(ValueError, match=r"position \[1\].*dp\.Thresholded"):
        LAPLACE.to_pymc("y", pm.Normal("s", shape=3), observed=np.array([1.0, np.nan, 2.0]))


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf, 1 + 2j, "1.5"], ids=repr)
def test_a_confidential_value_that_is_not_a_finite_number_is_refused(value):
    secret = 123456.789
    with pm.Model(), pytest.raises((ValueError, TypeError)) as err:
        dp.Laplace(1.0, event_shape=(2,)).to_pymc(
            "y", np.array([secret, value], dtype=object), observed=np.zeros(2)
        )
    assert "value" in str(err.value) and "123456" not in str(err.value)


@pytest.mark.parametrize("shape", [(2,), (2, 3)], ids=str)
def test_a_confidential_value_array_of_another_shape_is_refused(shape):
    message = f"value has shape {shape}, which must equal the mechanism's event_shape (3,)"
    with pm.Model(), pytest.raises(ValueError, match=re.escape(message)):
        LAPLACE.to_pymc("y", np.ones(shape), observed=np.zeros(3))


def _shared(calls):
    first, second = dp.DiscreteGaussian(2.0), dp.DiscreteLaplace(1.5)
    y1, y2 = np.array([10, 14, 7]), np.array([12, 11, 9])
    with pm.Model() as model, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lam = pm.Gamma("lam", 2.0, 0.2)
        calls(lam, first, second, y1, y2)
    shared = [w for w in caught if issubclass(w.category, dp.SharedLatentWarning)]
    return model, shared


def test_two_calls_over_one_latent_expression_warn_with_the_fix():
    def twice(lam, first, second, y1, y2):
        first.to_pymc("a", pm.Poisson.dist(mu=lam, shape=3), observed=y1)
        second.to_pymc("b", pm.Poisson.dist(mu=lam, shape=3), observed=y2)

    _, shared = _shared(twice)
    assert len(shared) == 1
    message = str(shared[0].message)
    assert "'a' and 'b'" in message and "observed=[(mechanism_1, released_1)," in message
    assert shared[0].filename == __file__  # pointed at the user's call


def test_one_call_with_both_releases_and_two_different_latents_do_not_warn():
    def once(lam, first, second, y1, y2):
        dp.to_pymc("ab", pm.Poisson.dist(mu=lam, shape=3), observed=[(first, y1), (second, y2)])

    def different(lam, first, second, y1, y2):
        first.to_pymc("a", pm.Poisson.dist(mu=lam * [1.0, 2.0, 3.0]), observed=y1)
        second.to_pymc("b", pm.Poisson.dist(mu=lam * [3.0, 2.0, 1.0]), observed=y2)

    for calls in (once, different):
        assert _shared(calls)[1] == []
