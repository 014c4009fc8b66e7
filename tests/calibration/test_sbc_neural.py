"""``dp.sbc`` with trained neural estimators: one batched call draws every replicate's posterior.

SPPE and SPLE are trained once (module fixtures, one round on the prior predictive, so
the estimates are amortised) on the Poisson-Laplace problem of ``_poisson``, with a small
flow. A correct-enough estimate passes (``p > 1e-3``: false-failure rate 0.1% for an
exact sampler; an estimate is only approximately exact, so a pass also says that its
error is below what 200 replicates can see). The planted bug shrinks every release's
draws to 60% of their spread (on the unconstrained scale, where the flow models them)
inside the batched path, and an SPPE or SPLE trained as if the release had a sixteenth of
its noise (so it reads a release as the count) ignores the noise: both must be flagged
(``p < 1e-3``), with the same settings (200 replicates, seed) as the passing checks. Seeds are
fixed; the p-values obtained: SPPE 0.80, shrunk 8e-10, noise ignored 3e-5; SPLE 0.20, shrunk
2e-8, noise ignored 3e-7.
"""

from __future__ import annotations

import numpy as np
import pytest

import dpinfer as dp

from . import _poisson

torch = pytest.importorskip("torch")
from neural.conftest import _one_torch_thread  # noqa: E402, F401  (autouse: one torch thread)

neural = pytest.importorskip("dpinfer.neural")

P_LIMIT = 1e-3
SEED = 11
REPLICATES = 200
# The noise-ignoring SPLE learns the likelihood of a near-integer release: with the small flow
# above it smooths that spiky density back to about the noisy width (p = 0.04 at 200
# replicates, 90% intervals covering 0.87), so it gets a flow able to learn what it was given.
SHARP = {
    "simulations": 2000,
    "noise_copies": 1,
    "flow": neural.SplineFlow(transforms=2, hidden_features=32, residual_blocks=1, bins=8),
    "training": neural.Training(max_epochs=100, batch_size=100),
}
QUICK_MCMC = {"mcmc": neural.MCMC(warmup=100, thin=2, proposal_chains=4, initial_candidates=200)}


def _train(method, mechanism=None, **kw):
    settings = {
        "rounds": 1,
        "simulations": 500,
        "noise_copies": 4,
        "draws": 16,
        "flow": neural.SplineFlow(transforms=2, hidden_features=16, residual_blocks=1, bins=6),
        "training": neural.Training(max_epochs=30, batch_size=100),
    } | kw
    model, mech = _poisson.model(), mechanism or _poisson.mechanism()
    return method(model, mech, 10.0, rng=1, progressbar=False, **settings)[1]


def _train_sple(mechanism=None, **kw):
    tiny_chains = neural.MCMC(warmup=20, thin=1, proposal_chains=4, initial_candidates=50)
    with pytest.warns(RuntimeWarning, match="R-hat"):  # 16 final draws: not the point here
        return _train(neural.sple, mechanism, mcmc=tiny_chains, **kw)


@pytest.fixture(scope="module")
def estimators():
    return {"sppe": _train(neural.sppe), "sple": _train_sple()}


def _sbc(estimator, kind):
    options = QUICK_MCMC if kind == "sple" else None
    return dp.sbc(
        estimator,
        _poisson.model(),
        _poisson.mechanism(),
        replicates=REPLICATES,
        estimator_options=options,
        rng=SEED,
        progressbar=False,
    )


@pytest.mark.parametrize("kind", ["sppe", "sple"])
def test_trained_estimator_passes(estimators, kind):
    result = _sbc(estimators[kind], kind)
    assert result.info["path"].startswith(
        f"batched {'posterior' if kind == 'sppe' else 'likelihood'}"
    )
    assert result.ranks.shape == (REPLICATES, 1)
    assert result.p_values["theta"] > P_LIMIT, result
    # the same replicates as any other sampler's SBC with this seed
    exact = dp.sbc(
        _poisson.exact,
        _poisson.model(),
        _poisson.mechanism(),
        replicates=5,
        rng=SEED,
        progressbar=False,
    )
    np.testing.assert_array_equal(result.releases[:5], exact.releases)


@pytest.mark.parametrize("kind", ["sppe", "sple"])
def test_planted_shrunk_batch_is_flagged(estimators, kind, monkeypatch):
    from dpinfer.neural import _batch

    original = _batch.unflatten_batch

    def shrunk(space, z):  # z: (draws, releases, d); shrink each release's draws
        centre = z.mean(axis=0, keepdims=True)
        return original(space, centre + 0.6 * (z - centre))

    monkeypatch.setattr(_batch, "unflatten_batch", shrunk)
    assert _sbc(estimators[kind], kind).p_values["theta"] < P_LIMIT


@pytest.mark.parametrize("kind", ["sppe", "sple"])
def test_planted_estimator_that_ignores_the_noise_is_flagged(kind):
    """Trained on releases with a sixteenth of the noise, it reads a release as the count."""
    deaf = dp.Laplace(_poisson.SCALE / 16, sensitivity=1.0)
    estimator = _train(neural.sppe, deaf) if kind == "sppe" else _train_sple(deaf, **SHARP)
    # the same replicates (releases with noise of scale 4) as the passing check above
    p_value = _sbc(estimator, kind).p_values["theta"]
    print(f"{kind} ignoring the noise: p = {p_value:.2g}")
    assert p_value < P_LIMIT


def test_estimator_arguments_are_checked(estimators):
    model, mech = _poisson.model(), _poisson.mechanism()
    with pytest.raises(ValueError, match=r"estimator_options must not set \['rng'\]"):
        dp.sbc(estimators["sppe"], model, mech, replicates=3, estimator_options={"rng": 1})
    other = dp.Model(prior={"mu": model.prior._spec["theta"]}, simulate=model.simulate)
    with pytest.raises(ValueError, match=r"trained for the parameters \['theta'\]"):
        dp.sbc(estimators["sppe"], other, mech, replicates=3, progressbar=False)
