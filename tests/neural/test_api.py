"""SPPE and SPLE: results, saving and re-use, validation of every argument.

Their reproducibility (the same seed giving the same result, another seed another) is
checked with every other sampler's, over the sampler registry (``samplers/test_executors.py``).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import scipy.stats as st

import dpinfer as dp
from dpinfer.models import sir
from dpinfer.neural import (
    MCMC,
    NeuralLikelihood,
    NeuralPosterior,
    SplineFlow,
    Training,
    load,
    sple,
    sppe,
)

from . import _toy

# the tiny MCMC settings of these tests do not converge, and need not
pytestmark = pytest.mark.filterwarnings("ignore:sple. the final chains have R-hat:RuntimeWarning")

TINY = _toy.tiny_settings(draws=80)
QUICK_MCMC = MCMC(warmup=20, thin=1, proposal_chains=4, initial_candidates=50)


def _sppe(**kw):
    return sppe(_toy.model(), _toy.mechanism(), _toy.RELEASED, **{**TINY, "rng": 1, **kw})


def _sple(**kw):
    return sple(
        _toy.model(),
        _toy.mechanism(),
        _toy.RELEASED,
        **{**TINY, "rng": 1, "mcmc": QUICK_MCMC, **kw},
    )


@pytest.fixture(scope="module")
def sppe_two_rounds():
    return _sppe(rounds=2)


@pytest.fixture(scope="module")
def sple_two_rounds():
    return _sple(rounds=2)


# --- results ---------------------------------------------------------------------------


@pytest.mark.parametrize("which", ["sppe", "sple"])
def test_result_layout_and_history(which, sppe_two_rounds, sple_two_rounds, tmp_path):
    idata, estimator = sppe_two_rounds if which == "sppe" else sple_two_rounds
    assert idata.posterior["a"].shape == (4, 20)
    attrs = idata.attrs
    assert attrs["method"] == which
    assert attrs["n_simulations"] == 200 and attrs["rounds"] == 2 and attrs["noise_copies"] == 2
    for key in ("round_epochs", "round_train_loss", "round_val_loss", "round_training_seconds"):
        assert np.asarray(attrs[key]).shape == (2,)
        assert np.all(np.isfinite(attrs[key]))
    assert len(attrs["epoch_val_loss"]) == int(np.sum(attrs["round_epochs"]))
    assert attrs["noise"] == "rqmc" and attrs["seed"]
    stat = "log_q" if which == "sppe" else "log_likelihood_estimate"
    assert idata.sample_stats[stat].shape == (4, 20)
    assert isinstance(estimator, NeuralPosterior if which == "sppe" else NeuralLikelihood)
    path = tmp_path / "post.nc"
    idata.to_netcdf(path)
    back = dp.results.from_netcdf(path)
    np.testing.assert_array_equal(back.posterior["a"], idata.posterior["a"])
    np.testing.assert_array_equal(back.attrs["epoch_val_loss"], attrs["epoch_val_loss"])


def test_sple_reports_rhat_of_real_chains(sple_two_rounds):
    attrs = sple_two_rounds[0].attrs
    assert np.isfinite(attrs["rhat_max"]) and 0 < attrs["mcmc_acceptance_rate"] < 1
    assert np.asarray(attrs["round_rhat_max"]).shape == (2,)


# --- saving, loading and re-use on a new release ----------------------------------------


def test_posterior_saves_loads_and_serves_a_new_release(sppe_two_rounds, tmp_path):
    _, estimator = sppe_two_rounds
    path = tmp_path / "posterior.pt"
    estimator.save(path)
    loaded = load(path)
    assert isinstance(loaded, NeuralPosterior) and loaded.names == ["a", "b"]
    params = {"a": np.array([0.1, 1.0]), "b": np.array([-0.5, 0.2])}
    new = np.array([-0.4, 0.7])
    np.testing.assert_allclose(loaded.log_prob(params, new), estimator.log_prob(params, new))
    a = estimator.sample(new, draws=40, rng=9)
    b = loaded.sample(new, draws=40, rng=9)
    np.testing.assert_array_equal(a.posterior["a"], b.posterior["a"])
    assert b.attrs["mechanism"] == repr(_toy.mechanism())


def test_likelihood_saves_loads_and_serves_a_new_release(sple_two_rounds, tmp_path):
    _, estimator = sple_two_rounds
    path = tmp_path / "likelihood.pt"
    estimator.save(path)
    loaded = load(path)
    assert isinstance(loaded, NeuralLikelihood)
    params = {"a": np.array([0.1, 1.0]), "b": np.array([-0.5, 0.2])}
    new = np.array([-0.4, 0.7])
    np.testing.assert_allclose(loaded.log_prob(new, params), estimator.log_prob(new, params))
    idata = loaded.posterior(new, _toy.model().prior, draws=40, mcmc=QUICK_MCMC, rng=2)
    assert idata.posterior["a"].shape == (4, 10) and np.isfinite(idata.attrs["rhat_max"])


def test_custom_flow_needs_its_builder_to_load(tmp_path):
    import zuko

    def builder(features, context):
        return zuko.flows.MAF(features, context, transforms=1, hidden_features=(8,))

    _, estimator = _sppe(flow=builder)
    path = tmp_path / "custom.pt"
    estimator.save(path)
    with pytest.raises(ValueError, match="custom flow builder; pass it again as flow="):
        load(path)
    assert load(path, flow=builder).names == ["a", "b"]


def test_callback_sees_every_round_and_can_stop_early():
    seen = []

    def callback(info):
        seen.append((info.round, info.n_simulations, set(info.draws)))
        return info.round == 2

    idata, _ = _sppe(rounds=4, callback=callback)
    assert [s[:2] for s in seen] == [(1, 100), (2, 200)]
    assert seen[0][2] == {"a", "b"}
    assert idata.attrs["rounds"] == 2 and idata.posterior["a"].shape == (4, 20)


def test_discrete_release_with_monte_carlo_noise_and_bounded_prior():
    # SIR-like: a positive parameter (log map), an integer release, noise="mc", odd copies
    model = dp.Model(
        prior={"rate": st.gamma(4.0, scale=2.0)},
        simulate=lambda p, rng: rng.poisson(np.repeat(p["rate"][:, None], 3, axis=1)),
    )
    mech = dp.DiscreteLaplace(2.0, event_shape=(3,))
    kw = {**TINY, "noise": "mc", "noise_copies": 3, "rng": 4}
    idata, post = sppe(model, mech, [8, 7, 9], **kw)
    assert np.all(np.asarray(idata.posterior["rate"]) > 0)
    idata, lik = sple(model, mech, [8, 7, 9], mcmc=QUICK_MCMC, **kw)
    assert lik.info["dequantised"] and np.all(np.asarray(idata.posterior["rate"]) > 0)
    with pytest.raises(ValueError, match="released must hold integers"):
        post.sample([8.5, 7, 9])


# --- argument validation ---------------------------------------------------------------


BAD_ARGUMENTS = [
    ("rounds", 0, ValueError),
    ("rounds", 1.5, ValueError),
    ("rounds", "2", TypeError),
    ("simulations", 1, ValueError),
    ("simulations", np.nan, ValueError),
    ("noise_copies", 0, ValueError),
    ("noise_copies", 6, ValueError),
    ("noise", "qmc", ValueError),
    ("draws", 0, ValueError),
    ("chains", -1, ValueError),
    ("chains", True, TypeError),
    ("flow", "nsf", TypeError),
    ("training", {"batch_size": 10}, TypeError),
    ("callback", 3, TypeError),
    ("progressbar", "yes", TypeError),
    ("rng", "seed", TypeError),
]


@pytest.mark.parametrize("run", [_sppe, _sple], ids=["sppe", "sple"])
@pytest.mark.parametrize(("name", "value", "error"), BAD_ARGUMENTS)
def test_bad_arguments_are_refused_naming_them(run, name, value, error):
    with pytest.raises(error, match=re.escape(name)):
        run(**{name: value})


def test_sppe_specific_arguments_are_checked():
    with pytest.raises(ValueError, match="atoms must be at least 2"):
        _sppe(atoms=1)
    with pytest.raises(TypeError, match="mcmc must be a dpinfer.neural.MCMC"):
        _sple(mcmc={"warmup": 10})
    with pytest.raises(ValueError, match=r"released must have shape \(2,\)"):
        sppe(_toy.model(), _toy.mechanism(), [1.0, 2.0, 3.0], **TINY)
    with pytest.raises(TypeError, match="model must be a dpinfer.Model"):
        sppe("model", _toy.mechanism(), _toy.RELEASED, **TINY)


def test_a_prior_without_density_is_refused_where_needed():
    prior = dp.Prior(lambda n, rng: {"a": rng.normal(size=n), "b": rng.normal(size=n)})
    model = dp.Model(prior=prior, simulate=_toy.simulate)
    with pytest.raises(ValueError, match="needs a prior with a logpdf"):
        sppe(model, _toy.mechanism(), _toy.RELEASED, **{**TINY, "rounds": 2})
    with pytest.raises(ValueError, match="needs a prior with a logpdf"):
        sple(model, _toy.mechanism(), _toy.RELEASED, **TINY)
    idata, _ = sppe(model, _toy.mechanism(), _toy.RELEASED, **TINY)  # one round: no density
    assert idata.posterior["a"].shape == (4, 20)


def test_rqmc_needs_an_inverse_cdf():
    mech = sir.naive_mechanism(length=10)
    with pytest.raises(TypeError, match="no release_from_uniform.*noise='mc'"):
        sppe(sir.model(simulator="approx", population=1000), mech, sir.RELEASED, **TINY)


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: Training(batch_size=1), "batch_size must be at least 2"),
        (lambda: Training(learning_rate=0.0), "learning_rate"),
        (lambda: Training(weight_decay=-1.0), "weight_decay"),
        (lambda: Training(validation_fraction=1.0), "validation_fraction"),
        (lambda: Training(patience=0), "patience"),
        (lambda: Training(max_epochs=2.5), "max_epochs"),
        (lambda: Training(clip_norm=np.nan), "clip_norm"),
        (lambda: Training(threads=0), "threads"),
        (lambda: SplineFlow(transforms=0), "transforms"),
        (lambda: SplineFlow(bins=1), "bins must be at least 2"),
        (lambda: SplineFlow(tail_bound=-5.0), "tail_bound"),
        (lambda: SplineFlow(hidden_features="50"), "hidden_features"),
        (lambda: MCMC(warmup=0), "warmup"),
        (lambda: MCMC(thin=np.nan), "thin"),
        (lambda: MCMC(proposal_chains=0), "proposal_chains"),
    ],
)
def test_option_classes_validate_their_fields(make, match):
    with pytest.raises((ValueError, TypeError), match=match):
        make()


def test_new_release_is_checked_by_the_estimators(sppe_two_rounds, sple_two_rounds):
    with pytest.raises(ValueError, match=r"released must have shape \(2,\)"):
        sppe_two_rounds[1].sample([1.0])
    with pytest.raises(ValueError, match="released must (be finite|hold numbers, not NaN)"):
        sple_two_rounds[1].log_prob([np.nan, 1.0], {"a": [0.0], "b": [0.0]})
    with pytest.raises(ValueError, match="params must be a dict with keys"):
        sppe_two_rounds[1].log_prob({"a": [0.0]}, [1.0, 2.0])
