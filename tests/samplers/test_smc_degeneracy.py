import warnings

import pytest
import scipy.stats as st

import dpinfer as dp
from dpinfer.samplers.smc import _warn_if_degenerate


def _model():
    return dp.Model(
        prior={"theta": st.norm(0, 1)},
        simulate=lambda p, rng: p["theta"] + rng.standard_normal(len(p["theta"])),
    )


def test_tiny_noise_collapses_the_population_and_is_flagged():
    # With mechanism noise 1e-3 against a confidential statistic of sd 1, a fresh simulation
    # almost never beats a particle's lucky one: the moves stop accepting.
    mech = dp.Gaussian(1e-3)
    with pytest.warns(RuntimeWarning, match="degenerate"):
        idata = dp.smc_abc(_model(), mech, 0.5, particles=300, rng=2, progressbar=False)
    assert idata.posterior.attrs["n_distinct"] < 0.25 * 300


def test_ordinary_noise_is_not_flagged():
    mech = dp.Gaussian(1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        idata = dp.smc_abc(_model(), mech, 0.5, particles=300, rng=2, progressbar=False)
    assert idata.posterior.attrs["n_distinct"] > 0.5 * 300


@pytest.mark.parametrize(
    ("distinct", "acceptance", "warns"),
    [
        (10, 0.5, True),
        (90, 0.001, True),
        (90, 0.5, False),
    ],
)
def test_thresholds(distinct, acceptance, warns):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _warn_if_degenerate(distinct, 100, acceptance)
    assert bool(caught) is warns
