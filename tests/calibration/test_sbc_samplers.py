"""``dp.sbc`` on the samplers of the registry: each passes, and the planted bugs fail.

The samplers are those of ``samplers/_sampler_registry.py`` with a ``Calibration`` (the
others say there why not). The problem is ``_poisson``'s model (a Poisson count,
Gamma(4, rate 0.4) prior) released with Laplace noise of scale ``NOISE = 6`` (ABCDP, whose
non-private limit is exact for uniform noise: uniform noise on (-12, 12)). For each
sampler, three SBC runs with the same settings (replicates, seed, sampler options), which
the module fixture computes once:

* ``correct``: the sampler as a user would call it; must pass, ``p > 1e-3``;
* ``shrunk``: the same draws (the correct run's, reused: the replicates and the sampler's
  generators are the same under the same seed) pulled towards their mean to 60% of their
  spread; must fail, ``p < 1e-3``;
* ``ignores_noise``: the same sampler fed the release as if it were the count: clipped at 0,
  with a kernel of a 24th of the noise (Laplace scale 0.25; ABCDP: tolerance 0.5 instead of
  12); must fail, ``p < 1e-3``.

The test is ``dp.sbc``'s: Pearson's chi-square of the fractional ranks in
``min(20, replicates // 5)`` equiprobable bins. Its p-value is uniform under an exact
sampler, so ``p > 1e-3`` fails a correct sampler with probability 0.1% (about 0.15% at this
size, where the chi-square approximation is slightly liberal: ``test_ranks.py``). Power at
``REPLICATES = 100`` (20 bins), simulated on Gaussian ranks with many draws: 60%-shrunk
posteriors give ``p < 1e-3`` with probability 0.93 (0.60 at 60 replicates, 0.25 at 40, so
fewer replicates would not do); the posterior that reads the release as the count, with
probability 1.0 at noise scale 6 (0.885 at scale 4, which is why the noise is 6 here).
Power also falls with the draws kept per rank (after thinning to half the ESS), which is
why each sampler keeps at least tens of them (importance ABC: ``target_ess=150``).
The seeds are fixed, so every outcome is deterministic. The p-values obtained (seed 11;
correct / shrunk / ignores_noise): rejection 0.14 / 1e-9 / 5e-7, importance 0.37 / 3e-6 /
2e-10, SMC 0.40 / 1.0e-4 / 1.1e-4, DA-MCMC 0.83 / 2.5e-6 / 1.2e-5, ABCDP 0.42 / 4e-7 / 2e-13.

Each sampler runs with small settings (100-200 draws or particles per release), but the
three runs of a sampler cost 4-17 CPU seconds (rejection 4, ABCDP 6, importance 9, SMC 15,
DA-MCMC 17 measured on a loaded machine; the narrow kernels of the noise-ignoring runs are
the expensive part). Each sampler's exactness is tested against references in
``tests/samplers``; these tests show that SBC, driven through each sampler's real output
(chains, weights, thinning of autocorrelated draws, metadata), tells a correct sampler from
a wrong one.
"""

from __future__ import annotations

import numpy as np
import pytest
from samplers._sampler_registry import SAMPLERS, Problem  # tests/ is on the path

import dpinfer as dp

from . import _poisson

P_LIMIT = 1e-3
SEED = 11
REPLICATES = 100
NOISE = 6.0
CALIBRATED = [case for case in SAMPLERS if case.supports("sbc")]


def _sampler(case, noise):
    """``sample(released, rng)``: ``case`` run for a release through ``noise``."""

    def sample(released, rng):
        problem = Problem(mechanism=noise, released=released)
        return case.run(problem, settings=case.sbc.options, rng=rng, **case.sbc.kernel(noise))

    return sample


def _cached(sample):
    """``sample`` remembering its result per release (the same replicates recur by seed)."""
    seen = {}

    def cached(released, rng):
        key = np.asarray(released).tobytes()
        if key not in seen:
            seen[key] = sample(released, rng)
        return seen[key]

    return cached


def _as_count(sample):
    """``sample`` fed the release as the count would be: never below 0."""
    return lambda released, rng: sample(np.maximum(released, 0.0), rng)


def _shrunk(sample, factor=0.6):
    """``sample``'s draws of theta pulled towards their mean to ``factor`` of their spread."""

    def shrunk(released, rng):
        idata = sample(released, rng)
        theta = np.asarray(idata.posterior["theta"])  # (chains, draws)
        pulled = theta.mean() + factor * (theta - theta.mean())
        out = _poisson.posterior(pulled.reshape(-1), chains=theta.shape[0])
        out.attrs.update(idata.attrs)  # the same ESS, so the same thinning
        return out

    return shrunk


@pytest.fixture(scope="module", params=CALIBRATED, ids=str)
def runs(request):
    case = request.param
    release = case.sbc.noise(NOISE)
    correct = _cached(_sampler(case, release))
    ignores_noise = _as_count(_sampler(case, case.sbc.noise(NOISE / 24)))
    samplers = {"correct": correct, "shrunk": _shrunk(correct), "ignores_noise": ignores_noise}
    model = _poisson.model()
    return case.name, {
        kind: dp.sbc(fn, model, release, replicates=REPLICATES, rng=SEED, progressbar=False)
        for kind, fn in samplers.items()
    }


def test_sampler_passes(runs):
    name, results = runs
    result = results["correct"]
    assert result.ranks.shape == (REPLICATES, 1)
    assert result.p_values["theta"] > P_LIMIT, (name, result.p_values)


@pytest.mark.parametrize("bug", ["shrunk", "ignores_noise"])
def test_planted_bug_is_flagged(runs, bug):
    name, results = runs
    assert results[bug].p_values["theta"] < P_LIMIT, (name, bug, results[bug].p_values)


def test_the_runs_share_their_replicates(runs):
    _, results = runs
    correct, shrunk, naive = (results[k] for k in ("correct", "shrunk", "ignores_noise"))
    np.testing.assert_array_equal(correct.truths["theta"], naive.truths["theta"])
    np.testing.assert_array_equal(correct.releases, naive.releases)
    np.testing.assert_array_equal(correct.n_draws, shrunk.n_draws)  # same draws, same thinning
