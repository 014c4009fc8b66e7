"""da_mcmc's diagnostics: over the parameters only, and no uncached compilation.

``attrs["ess"]`` and ``attrs["rhat_max"]`` must be ArviZ's bulk ESS and R-hat of the
parameters, not of the imputed statistic ``s_confidential`` stored beside them. The
first call in a process must not compile anything that numba cannot load from its
cache in the next process (ArviZ's variance was compiled, uncached, in every process:
0.3-0.5 CPU s; ``benchmarks/first_call.py`` measures the first call).
"""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest
import scipy.stats as st

import dpinfer as dp

with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)
    import arviz as az


def bernoulli_model():
    return dp.RecordModel(
        prior={"p": st.beta(2, 2)},
        simulate=lambda prm, n, rng: rng.random((len(prm["p"]), n)) < prm["p"][:, None],
        statistic=lambda x: x.astype(float),
        update=lambda x, rng: {"p": rng.beta(2 + x.sum(1), 2 + (~x).sum(1))},
    )


@pytest.fixture(scope="module")
def idata():
    # seed 2 at this noise scale: the imputed statistic has the smaller ESS and the larger
    # R-hat, so figures that included it would differ (asserted below, not assumed)
    return dp.da_mcmc(
        bernoulli_model(),
        dp.Laplace(0.15),
        31.0,
        n=50,
        draws=200,
        tune=100,
        chains=4,
        rng=2,
        progressbar=False,
    )


def _arviz(idata, name, diagnostic):
    return float(diagnostic(idata.posterior, var_names=[name])[name])


def test_ess_and_rhat_are_arviz_figures_of_the_parameters_only(idata):
    ess_p, rhat_p = _arviz(idata, "p", az.ess), _arviz(idata, "p", az.rhat)
    assert idata.attrs["ess"] == pytest.approx(ess_p, rel=1e-12)
    assert idata.attrs["ess_bulk"] == pytest.approx(ess_p, rel=1e-12)
    assert idata.attrs["rhat_max"] == pytest.approx(rhat_p, rel=1e-12)
    # the test can tell: with the imputed statistic both figures would be other
    ess_s = _arviz(idata, "s_confidential", az.ess)
    rhat_s = _arviz(idata, "s_confidential", az.rhat)
    assert ess_s < ess_p and rhat_s > rhat_p
    # the tail ESS is over the parameters too
    tail = float(az.ess(idata.posterior, var_names=["p"], method="tail")["p"])
    assert idata.attrs["ess_tail"] == pytest.approx(tail, rel=1e-12)


PROBE = r"""
import sys
import numba.core.dispatcher as dispatcher

uncached = []
compile_for_args = dispatcher.Dispatcher._compile_for_args


def probe(self, *args, **kwargs):
    # a dispatcher without a cache compiles again in every process
    if type(self._cache).__name__ == "NullCache":
        uncached.append(f"{self.py_func.__module__}.{self.py_func.__qualname__}")
    return compile_for_args(self, *args, **kwargs)


dispatcher.Dispatcher._compile_for_args = probe
exec(sys.argv[1])
print("uncached:", ",".join(uncached))
"""

FIRST_DA_MCMC = """
import warnings
warnings.simplefilter("ignore")
import scipy.stats as st
import dpinfer as dp

def counts(prm, n, rng):  # Poisson records, a conjugate Gamma update of the rate
    return rng.poisson(prm["rate"][:, None], size=(len(prm["rate"]), n))

def update(x, rng):
    return {"rate": rng.gamma(2.0 + x.sum(1), 1.0 / (1.0 + x.shape[1]))}

model = dp.RecordModel({"rate": st.gamma(2.0)}, counts, lambda x: x * 1.0, update=update)
dp.da_mcmc(model, dp.Laplace(1.0), 90.0, n=50, draws=20, tune=10, chains=2, rng=1,
           progressbar=False)
"""


def uncached_compilations(code: str) -> list[str]:
    """Functions numba compiled without a cache while a fresh process ran ``code``."""
    out = subprocess.run(
        [sys.executable, "-c", PROBE, code], capture_output=True, text=True, check=True
    ).stdout
    line = next(x for x in out.splitlines() if x.startswith("uncached:"))
    return [name for name in line.removeprefix("uncached:").strip().split(",") if name]


def test_the_first_call_compiles_nothing_that_is_not_cached():
    assert uncached_compilations(FIRST_DA_MCMC) == []


def test_the_probe_sees_an_uncached_compilation():
    planted = "import numba\nnumba.njit(lambda x: x + 1)(1)"
    assert len(uncached_compilations(planted)) == 1


def test_diagnostics_leave_arviz_numba_switch_as_they_found_it():
    from dpinfer.results import effective_sample_size

    before = az.Numba.numba_flag
    effective_sample_size(np.random.default_rng(0).normal(size=(2, 50)))
    assert az.Numba.numba_flag == before
