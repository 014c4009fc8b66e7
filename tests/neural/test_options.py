"""Named settings, the device, and averaging a subset of the noise copies per training step."""

from __future__ import annotations

import json
import re
from dataclasses import asdict

import numpy as np
import pytest
import torch

from dpinfer.neural import SplineFlow, Training, load, sple, sppe
from dpinfer.neural._losses import atomic_loss, posterior_loss, subsample_copies
from dpinfer.neural._settings import PRESETS

from . import _toy
from .test_api import QUICK_MCMC, TINY

# --- named settings ----------------------------------------------------------------------


def test_paper_settings_are_xiong_ju_and_zhangs():
    # Section S3: neural spline flows of 8 layers, two residual blocks of 50 units, 10 bins,
    # tail bound 5; Adam, batch 100, learning rate 5e-4, weight decay 1e-4; 5% validation,
    # stop after 20 epochs without improvement; 8 RQMC copies (their Figure 1's M), used in
    # every step; 10 atoms (sbi's default, on which their code was built)
    paper = PRESETS["paper"]
    assert asdict(paper.flow) == {
        "transforms": 8,
        "hidden_features": 50,
        "residual_blocks": 2,
        "bins": 10,
        "tail_bound": 5.0,
    }
    training = asdict(paper.training)
    assert {k: training[k] for k in training if k not in ("max_epochs", "threads")} == {
        "batch_size": 100,
        "learning_rate": 5e-4,
        "weight_decay": 1e-4,
        "validation_fraction": 0.05,
        "patience": 20,
        "clip_norm": 5.0,
        "step_copies": None,
    }
    assert paper.noise_copies == 8 and paper.atoms == 10


@pytest.mark.parametrize("run", [sppe, sple], ids=["sppe", "sple"])
@pytest.mark.filterwarnings("ignore:sple. the final chains have R-hat")  # one-epoch estimators
def test_a_run_records_the_settings_it_used(run):
    kw = {**TINY, "rng": 1, "training": Training(max_epochs=1), "flow": None}
    kw.pop("noise_copies")
    if run is sple:
        kw["mcmc"] = QUICK_MCMC
    paper, _ = run(_toy.model(), _toy.mechanism(), _toy.RELEASED, settings="paper", **kw)
    assert paper.attrs["flow"] == repr(SplineFlow())
    assert paper.attrs["noise_copies"] == 8
    default, _ = run(_toy.model(), _toy.mechanism(), _toy.RELEASED, **kw)
    assert default.attrs["flow"] == repr(PRESETS["default"].flow)
    if run is sppe:
        assert paper.attrs["atoms"] == 10


def test_explicit_options_override_the_named_settings():
    idata, _ = sppe(
        _toy.model(),
        _toy.mechanism(),
        _toy.RELEASED,
        settings="paper",
        **{**TINY, "rng": 1, "atoms": 3},
    )
    assert idata.attrs["flow"] == repr(TINY["flow"])
    assert idata.attrs["noise_copies"] == 2 and idata.attrs["atoms"] == 3
    assert json.loads(idata.attrs["training"])["batch_size"] == 50
    assert idata.attrs["settings"] == "paper"


@pytest.mark.parametrize(
    ("settings", "error"), [("fast", ValueError), (None, TypeError), (1, TypeError)]
)
def test_unknown_settings_are_refused(settings, error):
    with pytest.raises(
        error, match=r"^settings must be one of .*got .*" + re.escape(repr(settings))
    ):
        sppe(_toy.model(), _toy.mechanism(), _toy.RELEASED, settings=settings, **TINY)


# --- device -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("device", "error"),
    [("gpu", ValueError), ("mps", ValueError), ("cuda:x", ValueError), (0, TypeError)],
)
def test_bad_devices_are_refused_naming_them(device, error):
    with pytest.raises(error, match=re.escape("device must be 'cpu', 'cuda'")):
        sppe(_toy.model(), _toy.mechanism(), _toy.RELEASED, device=device, **TINY)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this torch has CUDA")
def test_cuda_without_cuda_says_so():
    with pytest.raises(ValueError, match=r"asks for CUDA, but torch.cuda.is_available\(\)"):
        sple(_toy.model(), _toy.mechanism(), _toy.RELEASED, device="cuda", **TINY)


def test_cpu_by_name_or_object_is_the_default(tmp_path):
    runs = [
        sppe(_toy.model(), _toy.mechanism(), _toy.RELEASED, **{**TINY, "rng": 3, **kw})
        for kw in ({}, {"device": "cpu"}, {"device": torch.device("cpu")})
    ]
    for idata, estimator in runs[1:]:
        np.testing.assert_array_equal(idata.posterior["a"], runs[0][0].posterior["a"])
        assert estimator.device == torch.device("cpu")
    estimator = runs[0][1]
    assert estimator.to("cpu") is estimator
    estimator.save(tmp_path / "e.pt")
    assert load(tmp_path / "e.pt", device="cpu").device == torch.device("cpu")
    with pytest.raises(ValueError, match="device must be"):
        estimator.to("tpu")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device (untested here)")
def test_cuda_run_matches_the_cpu_one_in_distribution():  # pragma: no cover - needs a GPU
    kw = {**TINY, "rng": 3, "simulations": 300, "draws": 2000}
    cpu, _ = sppe(_toy.model(), _toy.mechanism(), _toy.RELEASED, **kw)
    gpu, estimator = sppe(_toy.model(), _toy.mechanism(), _toy.RELEASED, device="cuda", **kw)
    assert estimator.device.type == "cuda"
    a, b = np.asarray(cpu.posterior["a"]), np.asarray(gpu.posterior["a"])
    assert abs(a.mean() - b.mean()) < 0.2 * a.std()


# --- noise copies per training step ------------------------------------------------------


def test_subsampled_copies_are_distinct_copies_of_the_same_simulation():
    b, m, r = 6, 8, 3
    s = torch.arange(b * m * r, dtype=torch.float32).reshape(b, m, r)
    out = subsample_copies(s, 3, torch.Generator().manual_seed(0))
    assert out.shape == (b, 3, r)
    for i in range(b):
        rows = {tuple(row.tolist()) for row in out[i]}
        assert len(rows) == 3 and rows <= {tuple(row.tolist()) for row in s[i]}
    assert subsample_copies(s, None, None) is s and subsample_copies(s, 8, None) is s


class _Gaussian(torch.nn.Module):
    """q(x | c) = N(x; W c, I): a density whose loss is cheap and smooth."""

    def __init__(self, d: int, r: int):
        super().__init__()
        gen = torch.Generator().manual_seed(6)
        self.w = torch.nn.Parameter(0.3 * torch.randn(d, r, generator=gen))

    def log_prob(self, x, c):
        lead = torch.broadcast_shapes(x.shape[:-1], c.shape[:-1])
        mean = c.expand(*lead, c.shape[-1]) @ self.w.T
        return -0.5 * ((x.expand(*lead, x.shape[-1]) - mean) ** 2).sum(-1)


def _batch(shift_first_copy: float = 0.0):
    gen = torch.Generator().manual_seed(4)
    s = torch.randn(40, 8, 2, generator=gen)
    s[:, 0] += shift_first_copy
    return {"z": torch.randn(40, 2, generator=gen), "s": s, "log_prior": torch.zeros(40)}


def _mean_loss(loss, batch, n=400):
    gen = torch.Generator().manual_seed(5)
    density = _Gaussian(2, 2)
    with torch.no_grad():
        values = torch.stack([loss(density, batch, gen) for _ in range(n)])
    return float(values.mean()), float(values.std() / np.sqrt(n))


@pytest.mark.parametrize(
    "factory", [posterior_loss, lambda c: atomic_loss(5, c)], ids=["posterior", "atomic"]
)
def test_one_copy_per_step_estimates_the_loss_of_all_copies(factory):
    # E over the random copy (and atoms) equals the loss over all copies: the two averages
    # of 400 steps differ by less than 4 standard errors (false-failure rate < 1e-4)
    batch = _batch()
    full, se_full = _mean_loss(factory(None), batch)
    one, se_one = _mean_loss(factory(1), batch)
    assert abs(full - one) < 4 * np.hypot(se_full, se_one)


def test_companion_always_the_first_copy_is_biased(monkeypatch):
    # the same check flags a subsample that is not uniform over the copies
    import dpinfer.neural._losses as losses

    monkeypatch.setattr(losses, "subsample_copies", lambda s, c, g: s if c is None else s[:, :c])
    batch = _batch(shift_first_copy=3.0)
    full, se_full = _mean_loss(losses.posterior_loss(None), batch)
    one, se_one = _mean_loss(losses.posterior_loss(1), batch)
    assert abs(full - one) > 4 * np.hypot(se_full, se_one)
