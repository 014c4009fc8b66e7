"""DA-MCMC on the small-noise examples of Xiong et al. (2023): exact and non-degenerate.

* Naive Bayes at the published epsilon = 10 release, where SMC-ABC degenerates, against
  the exact posterior by finite sums (``naive_bayes.exact_posterior``, itself checked
  against brute-force enumeration in ``tests/models/test_naive_bayes_records.py``).
* Linear regression at epsilon = 100 against NUTS on the data-augmentation model,
  read from ``data/regression_nuts_reference.npz`` (2 x 2000 NUTS iterations at
  epsilon = 100 took 53 minutes on a busy machine; ``data/make_regression_reference.py``
  writes it).

Each statistical check compares means, standard deviations and 5/50/95% quantiles as
z-scores with ESS-based standard errors at |z| < 4 (6.3e-5 per z-score under the normal
approximation): 25 z-scores for naive Bayes (false-failure rate about 1.6e-3 under a
random seed) and 15 for the regression (about 1e-3). The seeds are fixed. Each check
has a planted companion: the acceptance ratio without the old record's contribution.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import dpinfer as dp
from dpinfer.compare import compare_posteriors
from dpinfer.models import linear_regression as lr
from dpinfer.models import naive_bayes as nb
from dpinfer.results import effective_sample_size, to_inference_data
from dpinfer.samplers.da import _da_kernels

from ._da_references import QUANTILES, Z_LIMIT, check_draws, max_abs_z
from .test_da_mcmc import _sweep_without_old_record

REFERENCE_FILE = Path(__file__).parent / "data" / "regression_nuts_reference.npz"


# --- naive Bayes at epsilon = 10 ------------------------------------------------------------


@pytest.fixture(scope="module")
def nb_exact():
    return nb.exact_posterior(nb.RELEASED, epsilon=10.0)


def _naive_bayes_run():
    return dp.da_mcmc(
        nb.record_model(),
        nb.mechanism(epsilon=10.0),
        nb.RELEASED,
        n=nb.N,
        draws=3000,
        tune=200,
        rng=10,
        progressbar=False,
    )


def _naive_bayes_z(idata, exact):
    return {
        name: check_draws(idata.posterior[name].values, exact[name]) for name in nb.PARAMETER_NAMES
    }


def test_naive_bayes_at_epsilon_10_is_exact_and_non_degenerate(nb_exact):
    idata = _naive_bayes_run()
    z = _naive_bayes_z(idata, nb_exact)
    assert max(max_abs_z(v) for v in z.values()) < Z_LIMIT, z
    # non-degenerate: the record moves are accepted and the chains mix (12,000 draws)
    assert 0.1 < idata.attrs["acceptance_rate"] < 0.6
    assert idata.attrs["ess"] > 5000 and idata.attrs["rhat_max"] < 1.01


def test_planted_bug_fails_the_naive_bayes_check(monkeypatch, nb_exact):
    monkeypatch.setattr(_da_kernels, "record_sweep", _sweep_without_old_record)
    z = _naive_bayes_z(_naive_bayes_run(), nb_exact)
    assert max(max_abs_z(v) for v in z.values()) > Z_LIMIT


# --- linear regression at epsilon = 100 and 30, against stored NUTS draws --------------------


@pytest.fixture(scope="module")
def nuts_reference():
    data = np.load(REFERENCE_FILE)
    meta = json.loads(str(data["meta"]))
    out = {}
    for key, run in meta["runs"].items():
        beta = data[f"beta_{key}"]  # (chains, draws, 3)
        idata = to_inference_data(
            {"beta": beta.reshape(-1, 3)}, chains=beta.shape[0], attrs={"method": "pymc_nuts"}
        )
        out[float(key)] = {"released": data[f"released_{key}"], "idata": idata, "meta": run}
    return out


def test_reference_releases_are_the_documented_ones(nuts_reference):
    x, y = lr.confidential_data(rng=2023)
    for eps, ref in nuts_reference.items():
        seed = ref["meta"]["release_seed"]
        np.testing.assert_array_equal(ref["released"], lr.release(x, y, epsilon=eps, rng=seed))
        assert ref["meta"]["divergences"] == 0 and ref["meta"]["rhat_max"] < 1.01


# epsilon = 100 here; benchmarks/da_mcmc.py --grid runs 1, 10, 30 and 100
REGRESSION_RUNS = {100.0: {"draws": 4000, "tune": 500}}


def _regression_run(eps, released, **sizes):
    return dp.da_mcmc(
        lr.record_model(),
        lr.mechanism(epsilon=eps),
        released,
        n=lr.N,
        rng=int(eps),
        progressbar=False,
        **(sizes or REGRESSION_RUNS[eps]),
    )


def _sd_z(a, b):
    """z-score of the difference of two MCMC standard deviations (delta method, ESS)."""

    def sd_and_se(draws):
        dev2 = (draws - draws.mean()) ** 2
        sd = draws.std()
        return sd, np.sqrt(dev2.var() / effective_sample_size(dev2)) / (2 * sd)

    (sa, ea), (sb, eb) = sd_and_se(a), sd_and_se(b)
    return (sa - sb) / np.hypot(ea, eb)


def _regression_z(da, nuts):
    cmp = compare_posteriors(da, nuts, quantiles=QUANTILES)
    z = {f"{k} {s}": v for k, d in cmp.per_parameter.items() for s, v in d.items() if "_z" in s}
    a, b = da.posterior["beta"].values, nuts.posterior["beta"].values
    for j in range(3):
        z[f"beta[{j}] sd_z"] = _sd_z(a[..., j], b[..., j])
    return z


@pytest.fixture(scope="module")
def regression_runs(nuts_reference):
    return {eps: _regression_run(eps, nuts_reference[eps]["released"]) for eps in REGRESSION_RUNS}


@pytest.mark.parametrize("eps", list(REGRESSION_RUNS))
def test_regression_matches_the_nuts_reference(eps, regression_runs, nuts_reference):
    da = regression_runs[eps]
    z = _regression_z(da, nuts_reference[eps]["idata"])
    assert max_abs_z(z) < Z_LIMIT, z
    # non-degenerate: records keep moving, every chain explores the same posterior
    assert 0.05 < da.attrs["acceptance_rate"] < 0.9
    assert da.attrs["ess"] > 300 and da.attrs["rhat_max"] < 1.02


def test_planted_bug_fails_the_regression_check(monkeypatch, nuts_reference):
    monkeypatch.setattr(_da_kernels, "record_sweep", _sweep_without_old_record)
    # a quarter of the draws: the planted bias is about 30 standard errors at full length
    planted = _regression_run(100.0, nuts_reference[100.0]["released"], draws=1000, tune=500)
    assert max_abs_z(_regression_z(planted, nuts_reference[100.0]["idata"])) > Z_LIMIT
