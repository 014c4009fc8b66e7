"""The lattice chains' draws, traces and progress bar."""

import contextlib

import numpy as np
import pytest

from dpinfer import census
from dpinfer.census import _plan

AXES = {"votingage": 2, "hispanic": 2}
OPTIONS = {"draws": 20, "tune": 3, "chains": 2, "rng": 9}


@pytest.fixture(scope="module")
def release():
    truth = census.synthetic_state(AXES, shape=(3, 2, 2, 3), mean_block=12, rng=4)
    return census.synthetic_release(truth, census.pl94_variances(AXES), rng=5)


@pytest.fixture(scope="module")
def post(release):
    units = release.units
    traced = [units.geocodes[0], units.geocodes[units.leaves[4]]]
    return census.sample_posterior(
        release, store_leaves=True, trace=traced, progressbar=False, **OPTIONS
    )


def test_every_draw_of_the_state_total_is_the_invariant(release, post):
    inner = post.idata.attrs["inner_units"].split(",")
    state = np.asarray(post.idata.posterior["unit_total"])[:, :, inner.index("01")]
    assert np.all(state == release.invariants["total"].values[0, 0])


def test_traced_cells_are_the_units_query_cells_in_every_draw(release, post):
    units = release.units
    cells = np.asarray(post.idata.posterior["unit_cells"])
    leaves = units.leaves[np.argsort(units.geocodes[units.leaves].astype(str))]
    tables = np.asarray(post.idata.posterior["leaf_counts"])
    detailed = release.query("votingage * hispanic")
    block = tables[:, :, list(leaves).index(units.leaves[4])]
    offsets = np.cumsum([0] + [release.query(n).cells for n in release.measurements])
    k = list(release.measurements).index(detailed.name)
    np.testing.assert_array_equal(cells[:, :, 1, offsets[k] : offsets[k + 1]], block)
    assert np.all(cells[:, :, 0, 0] == release.invariants["total"].values[0, 0])


def test_an_unknown_traced_geocode_is_named(release):
    with pytest.raises(ValueError, match=r"trace: geocode\(s\) \['99'\]"):
        census.sample_posterior(release, trace=["99"], progressbar=False, **OPTIONS)


@pytest.mark.parametrize("enabled", [True, False])
def test_the_progress_bar_advances_once_per_round_of_every_chain(release, monkeypatch, enabled):
    calls = []

    @contextlib.contextmanager
    def recorder(description, *, total, enabled):
        class Bar:
            def advance(self, amount=1):
                calls.append(amount)

        yield Bar()
        calls.append(("opened", total, enabled))

    monkeypatch.setattr(_plan, "progress_bar", recorder)
    census.sample_posterior(release, progressbar=enabled, **OPTIONS)
    rounds = OPTIONS["chains"] * (OPTIONS["draws"] + OPTIONS["tune"])
    assert calls == [1] * rounds + [("opened", rounds, enabled)]


def test_progressbar_must_be_a_flag(release):
    with pytest.raises((TypeError, ValueError), match="progressbar"):
        census.sample_posterior(release, progressbar="yes", **OPTIONS)
