"""Bad input to RecordModel and da_mcmc: clear errors naming the argument and the value."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as st

import dpinfer as dp

MECH = dp.Laplace(1.0)


def _simulate(params, n, rng):
    return (rng.random((len(params["p"]), n)) < params["p"][:, None]).astype(np.int64)


def _update(records, rng):
    ones = records.sum(axis=1)
    return {"p": rng.beta(2 + ones, 2 + records.shape[1] - ones)}


def _model(**overrides):
    parts = {
        "prior": {"p": st.beta(2, 2)},
        "simulate": _simulate,
        "statistic": lambda x: x,
        "update": _update,
    }
    parts.update(overrides)
    return dp.RecordModel(
        parts.pop("prior"), parts.pop("simulate"), parts.pop("statistic"), **parts
    )


def _run(model=None, mechanism=MECH, released=5.2, **kwargs):
    settings = {"n": 10, "draws": 5, "tune": 2, "chains": 2, "rng": 0, "progressbar": False}
    settings.update(kwargs)
    return dp.da_mcmc(model or _model(), mechanism, released, **settings)


def test_the_valid_call_runs():
    assert _run().posterior["p"].shape == (2, 5)


@pytest.mark.parametrize(
    "simulate",
    [
        lambda p, n, rng: rng.random(len(p["p"])),  # one value per parameter set
        lambda p, n, rng: rng.random((n, len(p["p"]))),  # axes swapped
        lambda p, n, rng: rng.random((len(p["p"]), n + 1)),  # one record too many
    ],
    ids=["no-record-axis", "swapped", "wrong-n"],
)
def test_record_simulator_of_the_wrong_shape(simulate):
    with pytest.raises(ValueError, match=r"simulate must return records with leading axes"):
        _run(_model(simulate=simulate))


def test_statistic_summed_over_records_is_refused():
    with pytest.raises(ValueError, match=r"statistic must return one statistic per record"):
        _run(_model(statistic=lambda x: x.sum(axis=1)))


def test_statistic_whose_sum_does_not_fit_the_release():
    pair = _model(statistic=lambda x: np.stack([x, 1 - x], axis=-1))
    with pytest.raises(ValueError, match=r"per-record statistic gives released statistics"):
        _run(pair)
    bad_summary = _model(
        statistic=lambda x: np.stack([x, 1 - x], axis=-1), summary=lambda t: t[:, :1]
    )
    with pytest.raises(ValueError, match=r"summary must return shape"):
        _run(bad_summary)


def test_statistic_must_be_numeric_and_finite():
    with pytest.raises(TypeError, match="statistic must return numbers"):
        _run(_model(statistic=lambda x: x.astype(str)))
    with pytest.raises(ValueError, match=r"statistic\(records\) must be finite for every record"):
        _run(_model(statistic=lambda x: np.where(x == 1, np.nan, 0.0)))


@pytest.mark.parametrize("n", [0, -3, 2.5, float("nan")])
def test_n_not_a_positive_integer(n):
    with pytest.raises(ValueError, match=r"n must be a positive integer, got"):
        _run(n=n)


@pytest.mark.parametrize("n", ["10", True, None])
def test_n_of_the_wrong_type(n):
    with pytest.raises(TypeError, match=r"n must be a positive integer, got"):
        _run(n=n)


@pytest.mark.parametrize("released", [[5.2, 1.0], np.ones((1, 1)), float("nan"), np.inf])
def test_release_of_the_wrong_shape_or_not_finite(released):
    with pytest.raises(ValueError, match="released must"):
        _run(released=released)


@pytest.mark.parametrize(
    ("name", "value", "error"),
    [
        ("draws", 0, ValueError),
        ("draws", 2.5, ValueError),
        ("chains", 0, ValueError),
        ("chains", "4", TypeError),
        ("tune", -1, ValueError),
        ("tune", True, TypeError),
        ("theta_steps", 0, ValueError),
        ("init_datasets", 0, ValueError),
    ],
)
def test_bad_counts(name, value, error):
    with pytest.raises(error, match=name):
        _run(**{name: value})


def test_wrong_types_of_model_and_mechanism():
    with pytest.raises(TypeError, match="record_model must be a dpinfer.RecordModel"):
        dp.da_mcmc(dp.Model({"p": st.beta(2, 2)}, lambda p, rng: p["p"]), MECH, 5.2, n=10)
    with pytest.raises(TypeError, match="mechanism must be a dpinfer Mechanism"):
        dp.da_mcmc(_model(), "laplace", 5.2, n=10)


def test_record_model_construction_errors():
    with pytest.raises(ValueError, match="needs update= .* or loglik="):
        _model(update=None)
    with pytest.raises(TypeError, match="simulate must be callable"):
        _model(simulate=np.zeros(3))
    with pytest.raises(TypeError, match="summary must be callable or None"):
        _model(summary="identity")


def test_update_and_loglik_outputs_are_checked():
    with pytest.raises(ValueError, match=r"update must return a dict with the parameters"):
        _run(_model(update=lambda x, rng: {"q": np.ones(len(x))}))
    with pytest.raises(ValueError, match=r"update returned 'p' of shape"):
        _run(_model(update=lambda x, rng: {"p": np.full(len(x), np.nan)}))
    with pytest.raises(ValueError, match=r"loglik must return one value per dataset"):
        _run(_model(update=None, loglik=lambda x, p: np.zeros((len(x), 2))))


def test_a_discrete_mechanism_refuses_a_non_integer_statistic():
    halves = _model(statistic=lambda x: x / 2)
    with pytest.raises(ValueError, match="does not suit the mechanism"):
        _run(halves, mechanism=dp.DiscreteLaplace(1.0), released=3)


class _UniformNoise(dp.Laplace):
    """Noise uniform on [-scale, scale]: zero density beyond (a test family)."""

    def _log_density(self, xp, released, value):
        inside = np.abs(np.asarray(released) - np.asarray(value)) <= self.scale
        return np.where(inside, -np.log(2 * self.scale), -np.inf)


def test_an_impossible_release_is_reported():
    # Every dataset of ten records has a count in 0..10; the release 25 +- 1 is impossible.
    with pytest.raises(ValueError, match="positive mechanism density at the release"):
        _run(mechanism=_UniformNoise(1.0), released=25.0)


def test_a_subclass_with_its_own_density_is_not_scored_by_the_parent_formula():
    # _UniformNoise inherits Laplace's coordinate form but not its density: the generic
    # route must be used, and every imputed count stays within the noise's support.
    idata = _run(mechanism=_UniformNoise(1.0), released=5.2, draws=50)
    assert idata.attrs["record_kernel"] == "speculative blocks"
    s = idata.posterior["s_confidential"].values
    assert np.all(np.abs(s - 5.2) <= 1.0)


def test_a_random_walk_on_the_simplex_is_refused():
    def simulate(params, n, rng):
        w = params["w"]
        return (rng.random((len(w), n)) < w[:, :1]).astype(np.int64)

    model = dp.RecordModel(
        {"w": st.dirichlet([1.0, 1.0, 1.0])},
        simulate,
        lambda x: x,
        loglik=lambda x, p: x.sum(1) * np.log(p["w"][:, 0]),
    )
    with pytest.raises(ValueError, match="'w' has a Dirichlet prior"):
        _run(model)
