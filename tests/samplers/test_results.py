"""The InferenceData the samplers return: groups, dims, attrs and a netCDF round trip."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats as st

import dpinfer as dp
from dpinfer.results import ATTR_KEYS, from_netcdf

RELEASE = 1.3


def _model():
    # Two parameters, one of them a vector, to check names and dims.
    return dp.Model(
        prior={
            "mu": st.norm(0.0, 1.0),
            "w": st.dirichlet([2.0, 2.0, 2.0]),
        },
        simulate=lambda p, rng: p["mu"] + p["w"][:, 0] + rng.standard_normal(len(p["mu"])),
    )


MECH = dp.Laplace.from_privacy(epsilon=0.5, sensitivity=1.0)


@pytest.fixture(scope="module")
def rejection():
    return dp.rejection_abc(
        _model(), MECH, RELEASE, draws=400, rng=17, batch_size=1000, progressbar=False
    )


@pytest.fixture(scope="module")
def importance():
    return dp.importance_abc(
        _model(), MECH, RELEASE, draws=600, rng=17, batch_size=250, progressbar=False
    )


def test_rejection_groups_and_dims(rejection):
    assert set(rejection.groups()) == {"posterior", "observed_data", "constant_data"}
    post = rejection.posterior
    assert list(post.data_vars) == ["mu", "w"]
    assert post["mu"].dims == ("chain", "draw")
    assert post["mu"].shape == (4, 100)
    assert post["w"].dims[:2] == ("chain", "draw")
    assert post["w"].shape == (4, 100, 3)
    assert np.allclose(post["w"].sum(axis=-1), 1.0)


def test_importance_groups_and_sample_stats(importance):
    assert set(importance.groups()) == {
        "posterior",
        "sample_stats",
        "observed_data",
        "constant_data",
    }
    stats = importance.sample_stats
    assert set(stats.data_vars) == {"log_weight", "particle_mu", "particle_w"}
    assert stats["log_weight"].dims == ("chain", "draw")
    assert stats["particle_w"].shape == (4, 150, 3)
    assert np.exp(stats["log_weight"].values).sum() == pytest.approx(1.0)
    # The resampled posterior holds particle values only.
    assert np.isin(importance.posterior["mu"].values, stats["particle_mu"].values).all()


@pytest.mark.parametrize("which", ["rejection", "importance"])
def test_observed_and_constant_data(which, request):
    idata = request.getfixturevalue(which)
    # ArviZ stores 0-d arrays as shape (1,).
    assert idata.observed_data["s_dp"].values.ravel().tolist() == [RELEASE]
    assert idata.constant_data["mechanism_scale"].values.ravel().tolist() == [2.0]
    assert idata.constant_data["mechanism_sensitivity"].values.ravel().tolist() == [1.0]


def test_vector_release_keeps_its_shape():
    model = dp.Model(
        prior={"theta": st.norm(0.0, 1.0)},
        simulate=lambda p, rng: np.stack([p["theta"], -p["theta"]], axis=1),
    )
    mech = dp.Laplace([1.0, 3.0])
    idata = dp.rejection_abc(
        model, mech, [0.5, -0.2], draws=20, rng=2, batch_size=500, progressbar=False
    )
    assert idata.observed_data["s_dp"].values.tolist() == [0.5, -0.2]
    assert idata.constant_data["mechanism_scale"].values.tolist() == [1.0, 3.0]


@pytest.mark.parametrize("which", ["rejection", "importance"])
def test_attrs_carry_every_standard_key(which, request):
    idata = request.getfixturevalue(which)
    for group in idata.groups():
        missing = set(ATTR_KEYS) - set(idata[group].attrs)
        assert not missing, f"{group} lacks {missing}"
    attrs = idata.posterior.attrs
    assert attrs["method"] == f"{which}_abc"
    assert "Gong" in attrs["reference"]
    assert attrs["mechanism"] == repr(MECH)
    assert attrs["epsilon"] == pytest.approx(0.5)
    assert attrs["delta"] == 0.0
    assert attrs["seed"] == "17"
    assert attrs["dpinfer_version"] == dp.__version__
    assert math.isfinite(attrs["log_evidence"])
    if which == "rejection":
        assert attrs["n_simulations"] % 1000 == 0 and attrs["n_simulations"] >= 400
        assert 0 < attrs["acceptance_rate"] <= 1
        assert attrs["ess_sampler"] == 400  # i.i.d. draws
        assert attrs["ess"] == min(400, attrs["ess_bulk"])
        assert attrs["log_evidence"] == pytest.approx(
            math.log(attrs["acceptance_rate"]) + MECH.log_max_density
        )
    else:
        assert attrs["n_simulations"] == 600
        assert math.isnan(attrs["acceptance_rate"])
        assert 1 <= attrs["ess"] <= 600
        assert attrs["proposal"] == "prior"


def test_privacy_attrs_are_nan_without_a_declared_sensitivity():
    idata = dp.rejection_abc(
        _model(), dp.Laplace(2.0), RELEASE, draws=20, rng=1, batch_size=1000, progressbar=False
    )
    assert math.isnan(idata.posterior.attrs["epsilon"])
    assert math.isnan(idata.posterior.attrs["delta"])


def _attrs_equal(a, b):
    if set(a) != set(b):
        return False
    for key in a:
        x, y = a[key], b[key]
        same_nan = isinstance(x, float) and math.isnan(x) and np.isnan(y)
        if not (same_nan or np.array_equal(x, y)):
            return False
    return True


@pytest.mark.parametrize("which", ["rejection", "importance"])
def test_netcdf_round_trip_is_identical(which, request, tmp_path):
    idata = request.getfixturevalue(which)
    path = tmp_path / f"{which}.nc"
    idata.to_netcdf(str(path))
    loaded = from_netcdf(path)
    assert set(loaded.groups()) == set(idata.groups())
    for group in idata.groups():
        assert loaded[group].identical(idata[group]), group
        assert _attrs_equal(dict(loaded[group].attrs), dict(idata[group].attrs)), group
    post = loaded.posterior.attrs
    assert isinstance(post["n_simulations"], int | np.integer)
    assert post["method"] == f"{which}_abc"


def test_round_trip_check_detects_a_change(rejection, tmp_path):
    # Companion: the comparison above does notice a changed draw or attr.
    path = tmp_path / "r.nc"
    rejection.to_netcdf(str(path))
    loaded = from_netcdf(path)
    loaded.posterior["mu"].values[0, 0] += 1e-12
    assert not loaded.posterior.identical(rejection.posterior)
    changed = dict(rejection.posterior.attrs, acceptance_rate=0.5)
    assert not _attrs_equal(changed, dict(rejection.posterior.attrs))
