"""The spline flow's cheaper knots and the torch thread setting of a run."""

from __future__ import annotations

import torch
from zuko.transforms import MonotonicRQSTransform

from dpinfer.neural import Training, sppe
from dpinfer.neural._flows import _Spline

from . import _toy
from .test_api import TINY


def _parameters(seed: int, scale: float = 1.0, bins: int = 10):
    gen = torch.Generator().manual_seed(seed)
    return [scale * torch.randn(64, 3, k, generator=gen) for k in (bins, bins, bins - 1)]


def test_spline_knots_are_zukos_even_where_the_soft_clamp_bites():
    params = _parameters(0, scale=10.0)
    ours, zukos = _Spline(*params, bound=5.0), MonotonicRQSTransform(*params, bound=5.0)
    for name in ("horizontal", "vertical", "derivatives"):
        torch.testing.assert_close(getattr(ours, name), getattr(zukos, name))


def test_spline_is_zukos_spline_up_to_rounding():
    params = _parameters(2)
    ours, zukos = _Spline(*params, bound=5.0), MonotonicRQSTransform(*params, bound=5.0)
    x = 6 * torch.rand(64, 3, generator=torch.Generator().manual_seed(1)) - 3
    y, ladj = ours.call_and_ladj(x)
    y_ref, ladj_ref = zukos.call_and_ladj(x)
    # float32 knots summed in another order: agreement to about 1e-5
    torch.testing.assert_close(y, y_ref, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(ladj, ladj_ref, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(ours.inv(y), x, atol=1e-4, rtol=1e-4)


def test_companion_the_comparison_sees_other_knots():
    params = _parameters(0)
    shifted = [params[0].roll(1, dims=-1), params[1], params[2]]
    ours, zukos = _Spline(*shifted, bound=5.0), MonotonicRQSTransform(*params, bound=5.0)
    assert not torch.allclose(ours.horizontal, zukos.horizontal)


def test_run_sets_torch_threads_and_restores_them():
    before = torch.get_num_threads()
    idata, _ = sppe(
        _toy.model(),
        _toy.mechanism(),
        _toy.RELEASED,
        **{**TINY, "rng": 1, "training": Training(max_epochs=1, batch_size=50, threads=1)},
    )
    assert idata.attrs["torch_threads"] == 1
    assert torch.get_num_threads() == before
