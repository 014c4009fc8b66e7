"""The record-paired, clipped, averaged distance: its formula and its sensitivity ``C / n``."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpinfer.distances import PairedClippedL2, paired

CLIP = 5.0
WEIGHTS = np.array([1.0, 2.0, 0.5])
RELATIVE = (2,)


def loop_distance(observed, pseudo, *, clip=CLIP, average_then_clip=False):
    """The definition, one pair at a time."""
    out = []
    for dataset in pseudo:
        terms = []
        for y_star, y in zip(observed, dataset, strict=True):
            r = y - y_star
            with np.errstate(divide="ignore", invalid="ignore"):
                r[2] = r[2] / y_star[2]
            d = math.sqrt(sum((w * v) ** 2 for w, v in zip(WEIGHTS, r, strict=True)))
            d = d if math.isfinite(d) else math.inf
            terms.append(d if average_then_clip else min(d, clip))
        mean = float(np.mean(terms))
        out.append(min(mean, clip) if average_then_clip else mean)
    return np.array(out)


class ClipAfterAveraging(PairedClippedL2):
    """Planted bug: clips the mean instead of each pair, but declares the same C / n."""

    def __call__(self, observed, pseudo):
        return np.minimum(self.pairwise(observed, pseudo).mean(axis=1), self.clip)


def _records(rng, n):
    return rng.normal(size=(n, 3)) + np.array([0.0, 0.0, 3.0])


def test_matches_the_definition_pair_by_pair():
    rng = np.random.default_rng(0)
    observed, pseudo = _records(rng, 6), 2.0 * rng.normal(size=(40, 6, 3))
    pseudo[3, 2] = np.nan  # a failed pseudo-record counts as C
    dist = PairedClippedL2(CLIP, weights=WEIGHTS, relative=RELATIVE)
    np.testing.assert_allclose(dist(observed, pseudo), loop_distance(observed, pseudo), rtol=1e-12)
    assert dist.pairwise(observed, pseudo)[3, 2] == math.inf


def test_blocks_do_not_change_the_result(monkeypatch):
    rng = np.random.default_rng(1)
    observed, pseudo = _records(rng, 5), rng.normal(size=(23, 5, 3))
    dist = PairedClippedL2(CLIP, weights=WEIGHTS, relative=RELATIVE)
    whole, pairs = dist(observed, pseudo), dist.pairwise(observed, pseudo)
    monkeypatch.setattr(paired, "_BLOCK_ENTRIES", 7)  # two pseudo-datasets per block
    np.testing.assert_array_equal(dist(observed, pseudo), whole)
    np.testing.assert_array_equal(dist.pairwise(observed, pseudo), pairs)


def worst_change(dist, n, *, seed=0):
    """Largest |rho(Y) - rho(Y')| over random data and adversarial replacements of one record."""
    rng = np.random.default_rng(seed)
    observed, pseudo = _records(rng, n), _records(rng, 50 * n).reshape(50, n, 3)
    pseudo[0] = observed  # a pseudo-dataset at distance 0
    base = dist(observed, pseudo)
    worst = 0.0
    for replacement in ([1e6, -1e6, 3.0], [0.0, 0.0, 0.0], [np.nan] * 3, [0.1, -0.2, 2.9]):
        for i in range(n):
            other = observed.copy()
            other[i] = replacement
            worst = max(worst, float(np.max(np.abs(dist(other, pseudo) - base))))
    return worst


def check_sensitivity(dist, n):
    """The declared sensitivity bounds every change, and is attained (it is tight)."""
    worst = worst_change(dist, n)
    assert worst <= dist.sensitivity(n) * (1 + 1e-12), (
        f"a change of {worst:.4g} exceeds the declared sensitivity {dist.sensitivity(n):.4g}"
    )
    assert worst == pytest.approx(dist.sensitivity(n), rel=1e-12)


@pytest.mark.parametrize("n", [1, 4, 25])
def test_sensitivity_is_clip_over_n(n):
    dist = PairedClippedL2(CLIP, weights=WEIGHTS, relative=RELATIVE)
    assert dist.sensitivity(n) == CLIP / n
    check_sensitivity(dist, n)


def test_sensitivity_check_flags_clipping_after_averaging():
    broken = ClipAfterAveraging(CLIP, weights=WEIGHTS, relative=RELATIVE)
    observed = _records(np.random.default_rng(2), 4)
    np.testing.assert_allclose(
        broken(observed, observed[None] + 1.0),
        loop_distance(observed, observed[None] + 1.0, average_then_clip=True),
    )
    with pytest.raises(AssertionError, match="exceeds the declared sensitivity"):
        check_sensitivity(broken, 4)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (dict(clip=0.0), ValueError, "clip"),
        (dict(clip=math.nan), ValueError, "clip"),
        (dict(clip="1"), TypeError, "clip"),
        (dict(clip=1.0, weights=[1.0, math.inf]), ValueError, "weights"),
        (dict(clip=1.0, weights=[[1.0]]), ValueError, "weights"),
        (dict(clip=1.0, relative=[-1]), ValueError, "relative"),
        (dict(clip=1.0, relative=[0.5]), ValueError, "relative"),
    ],
)
def test_invalid_settings_are_refused_by_name(kwargs, error, match):
    clip = kwargs.pop("clip")
    with pytest.raises(error, match=match):
        PairedClippedL2(clip, **kwargs)


def test_shapes_are_checked():
    dist = PairedClippedL2(1.0, weights=[1.0, 1.0], relative=[1])
    with pytest.raises(ValueError, match="as many records"):
        dist(np.zeros((3, 2)), np.zeros((4, 2, 2)))
    with pytest.raises(ValueError, match="weights"):
        dist(np.zeros((3, 3)), np.zeros((4, 3, 3)))
    with pytest.raises(ValueError, match="relative"):
        PairedClippedL2(1.0, relative=[2])(np.zeros((3, 2)), np.zeros((1, 3, 2)))
