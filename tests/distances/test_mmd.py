"""MMD distances: the reference formula, Lemma 1's sensitivity, random-feature convergence.

Each check is a function that asserts, with a companion that plants a bug (a squared
MMD declaring the unsquared sensitivity, random features with the wrong frequency
scale) and requires the same check to fail. Seeds are fixed; the random-feature
convergence check has a false-failure rate near 5e-4 under a random seed (its slope
estimate over 30 seeds per size has a standard deviation near 0.04; the tolerance, 0.15,
is 3.5 of them).
"""

from __future__ import annotations

import importlib
import math

import numpy as np
import pytest

from dpinfer.distances import MMD, GaussianKernel, RandomFeatureMMD

mmd_module = importlib.import_module("dpinfer.distances.mmd")


def _reference_mmd(x, y, bandwidth):
    """Unsquared biased MMD by the double loop of its definition."""

    def k(a, b):
        return math.exp(-float(np.sum((a - b) ** 2)) / (2 * bandwidth**2))

    n, m = len(x), len(y)
    xx = sum(k(a, b) for a in x for b in x) / n**2
    yy = sum(k(a, b) for a in y for b in y) / m**2
    xy = sum(k(a, b) for a in x for b in y) / (n * m)
    return math.sqrt(max(xx + yy - 2 * xy, 0.0))


@pytest.mark.parametrize("dim", [1, 3])
def test_exact_mmd_matches_the_double_loop_reference(dim):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(6, dim))
    ys = rng.normal(0.5, 1.3, size=(4, 5, dim))
    for bandwidth in (0.3, 1.0, 4.0):
        got = MMD(bandwidth)(x, ys)
        want = [_reference_mmd(x, y, bandwidth) for y in ys]
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    # one-dimensional data may drop the trailing axis
    if dim == 1:
        np.testing.assert_allclose(MMD(1.0)(x[:, 0], ys[..., 0]), MMD(1.0)(x, ys), rtol=1e-14)


def test_exact_mmd_batches_give_the_same_values(monkeypatch):
    rng = np.random.default_rng(1)
    x, ys = rng.normal(size=(30, 2)), rng.normal(size=(25, 40, 2))
    whole = MMD(0.8)(x, ys)
    monkeypatch.setattr(mmd_module, "_GRAM_BUDGET", 40 * 70 * 3)  # 3 datasets per batch
    np.testing.assert_array_equal(MMD(0.8)(x, ys), whole)
    monkeypatch.setattr(mmd_module, "_FEATURE_BUDGET", 40 * 10 * 2)
    rf = RandomFeatureMMD(10, 0.8, dim=2, rng=0)
    batched = rf(x, ys)
    monkeypatch.undo()
    np.testing.assert_allclose(rf(x, ys), batched, rtol=1e-13)


def test_random_features_have_unit_norm_and_match_the_kernel_on_average():
    rf = RandomFeatureMMD(20_000, 0.7, dim=2, rng=3)
    pts = np.random.default_rng(2).normal(size=(5, 2))
    feats = np.stack([rf.mean_embedding(p[None]) for p in pts])
    np.testing.assert_allclose(np.linalg.norm(feats, axis=1), 1.0, rtol=1e-12)  # B_k = 1
    gram = GaussianKernel(0.7).gram(pts, pts)
    np.testing.assert_allclose(feats @ feats.T, gram, atol=0.03)  # 1/sqrt(D) Monte Carlo


# --- Lemma 1: sensitivity 2 sqrt(B_k) / N --------------------------------------------------


class SquaredMMD(MMD):
    """Planted bug: MMD squared, declaring the sensitivity of the unsquared one."""

    def __call__(self, observed, pseudo):
        return super().__call__(observed, pseudo) ** 2


def _neighbour_changes(distance, y, y_prime, z):
    return np.abs(distance(y, z) - distance(y_prime, z))


def check_sensitivity(distance, *, n=8, dim=1, trials=300, seed=4):
    """``|rho(Y, Z) - rho(Y', Z)| <= sensitivity(N)`` on random and adversarial neighbours.

    Random: Y, the replaced record and 12 pseudo-datasets Z drawn at random, ``trials``
    times. Adversarial: a record moved far away (or, for one frequency, to the antipode
    of its feature), Z equal to Y', to Y moved further, or far from both.
    Returns the largest ratio seen.
    """
    rng = np.random.default_rng(seed)
    sens = distance.sensitivity(n)
    worst = 0.0
    for _ in range(trials):
        y = rng.normal(size=(n, dim)) * rng.uniform(0.1, 3)
        y_prime = y.copy()
        y_prime[rng.integers(n)] = rng.normal(size=dim) * rng.uniform(0.1, 10)
        z = rng.normal(size=(12, rng.integers(2, 15), dim)) * rng.uniform(0.1, 3)
        worst = max(worst, _neighbour_changes(distance, y, y_prime, z).max() / sens)
    for far in _adversarial(distance, n, dim, rng):
        worst = max(worst, far / sens)
    assert worst <= 1 + 1e-9, worst
    return worst


def _adversarial(distance, n, dim, rng):
    y = rng.normal(size=(n, dim)) * 0.1
    moves = [np.full(dim, 50.0), np.full(dim, 3.0), y[0] + 100.0]  # the last one lands on Z
    freqs = getattr(distance, "frequencies", None)
    if freqs is not None and freqs.shape[1] == 1:  # the antipode of y[0]'s feature
        w = freqs[:, 0]
        moves.append(y[0] + np.pi * w / np.dot(w, w))
    for move in moves:
        y_prime = y.copy()
        y_prime[0] = move
        candidates = [
            y_prime[None],  # Z = Y'
            (y_prime + (y_prime - y) * 3)[None],  # Y' moved further along
            y[None] + 100.0,  # far from both
            np.concatenate([y_prime, y_prime[:1].repeat(n, 0)])[None],
        ]
        for z in candidates:
            yield _neighbour_changes(distance, y, y_prime, z).max()


@pytest.mark.parametrize("bandwidth", [0.2, 1.0, 5.0])
@pytest.mark.parametrize("dim", [1, 2])
def test_exact_mmd_sensitivity_is_lemma_1(bandwidth, dim):
    worst = check_sensitivity(MMD(bandwidth), dim=dim, trials=150)
    # a Gaussian kernel is non-negative, so one record moves the embedding by <= sqrt(2)/N;
    # the adversarial cases reach that
    assert worst == pytest.approx(1 / math.sqrt(2), rel=1e-3)


@pytest.mark.parametrize("n_features", [1, 5, 100])
def test_random_feature_mmd_sensitivity_is_lemma_1(n_features):
    distance = RandomFeatureMMD(n_features, 0.7, dim=1, rng=5)
    assert distance.sensitivity(8) == MMD(0.7).sensitivity(8) == 2 / 8
    worst = check_sensitivity(distance)
    if n_features == 1:  # the antipodal record attains 2/N
        assert worst == pytest.approx(1.0, abs=1e-9)


def test_planted_squared_mmd_breaks_the_declared_sensitivity():
    with pytest.raises(AssertionError):
        check_sensitivity(SquaredMMD(1.0), trials=20)


# --- random features converge to the exact MMD ----------------------------------------


class WrongScaleFeatures(RandomFeatureMMD):
    """Planted bug: frequencies of standard deviation ``l`` instead of ``1 / l``."""

    def __init__(self, n_features, bandwidth, **kwargs):
        super().__init__(n_features, bandwidth, **kwargs)
        self.frequencies = self.frequencies * float(bandwidth) ** 2


def check_convergence(factory, *, sizes=(16, 64, 256, 1024), seeds=30):
    """Root mean squared error to the exact MMD decreases like ``D^{-1/2}``.

    Fits the log-log slope over ``sizes`` and requires it within 0.15 of -1/2, and the
    error at the largest size below 0.02.
    """
    rng = np.random.default_rng(6)
    x = rng.normal(size=(100, 1))
    ys = rng.normal(np.linspace(0, 1.5, 10)[:, None, None], 1.0, size=(10, 100, 1))
    exact = MMD(0.7)(x, ys)
    rmse = []
    for d in sizes:
        err = [factory(d, 0.7, rng=s)(x, ys) - exact for s in range(seeds)]
        rmse.append(np.sqrt(np.mean(np.square(err))))
    slope = np.polyfit(np.log(sizes), np.log(rmse), 1)[0]
    assert abs(slope + 0.5) < 0.15, (slope, rmse)
    assert rmse[-1] < 0.02, rmse
    return slope, rmse


def test_random_feature_mmd_converges_to_the_exact_mmd():
    check_convergence(RandomFeatureMMD)


def test_planted_wrong_frequency_scale_does_not_converge():
    with pytest.raises(AssertionError):
        check_convergence(WrongScaleFeatures)


# --- settings and validation -------------------------------------------------------------


@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan, math.inf])
def test_bandwidths_are_validated(bad):
    with pytest.raises(ValueError, match="bandwidth"):
        GaussianKernel(bad)
    with pytest.raises(ValueError, match="bandwidth"):
        MMD(bad)
    with pytest.raises(ValueError, match="bandwidth"):
        RandomFeatureMMD(10, bad)


def test_shapes_are_validated():
    with pytest.raises(ValueError, match="shapes"):
        MMD(1.0)(np.zeros((5, 2)), np.zeros((3, 5, 3)))
    with pytest.raises(ValueError, match="n_features"):
        RandomFeatureMMD(0, 1.0)
    with pytest.raises(ValueError, match="n_observations"):
        MMD(1.0).sensitivity(0)
