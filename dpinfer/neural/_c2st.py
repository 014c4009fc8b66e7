"""Classifier two-sample test (C2ST) between two samples, as used by Xiong et al. (2023).

A small neural classifier is trained to tell the samples apart; its
cross-validated accuracy is 0.5 when they come from the same distribution and
approaches 1 as they separate (Lopez-Paz and Oquab 2017). The settings follow
the sbi benchmark's: both samples standardised by the second one's mean and
standard deviation, a network of two hidden layers of ``10 d`` units, 5-fold
cross-validation.
"""

from __future__ import annotations

import numpy as np
import torch
from numpy.typing import ArrayLike

from .. import _validate
from .._rng import RNGLike, as_seed_sequence, child_sequence
from ..compare import _subsample
from ._torch_rng import forked, generator


def c2st(
    a: ArrayLike,
    b: ArrayLike,
    *,
    folds: int = 5,
    epochs: int = 100,
    max_points: int = 2000,
    rng: RNGLike = 0,
) -> float:
    """Cross-validated accuracy of a classifier separating samples ``a`` and ``b``.

    Parameters
    ----------
    a, b : array_like
        Samples of shape ``(n, d)`` (or ``(n,)``).
    folds : int, default 5
        Cross-validation folds.
    epochs : int, default 100
        Training epochs (Adam, learning rate 1e-3, batches of 128).
    max_points : int, default 2000
        Points used from each sample: a random subsample of
        ``min(len(a), len(b), max_points)`` from each, so that both classes
        are equally large.
    rng : seed, default 0

    Returns
    -------
    float
        Mean held-out accuracy: about 0.5 for identical distributions, 1 for
        disjoint ones.

    Examples
    --------
    >>> import numpy as np
    >>> from dpinfer.neural import c2st
    >>> rng = np.random.default_rng(0)
    >>> a, b = rng.normal(size=(200, 2)), rng.normal(3, 1, size=(200, 2))
    >>> far = c2st(a, b, folds=2, epochs=40)
    >>> bool(far > 0.9)
    True
    """
    a, b = _as_points("a", a), _as_points("b", b)
    if a.shape[1] != b.shape[1]:
        raise ValueError(
            f"a and b must have the same number of coordinates, got {a.shape[1]} and {b.shape[1]}"
        )
    folds = _validate.size("folds", folds)
    epochs = _validate.size("epochs", epochs)
    max_points = _validate.size("max_points", max_points)
    n = min(len(a), len(b), max_points)
    if not 2 <= folds <= n:
        raise ValueError(
            f"folds must be from 2 to the points used from each sample, min(len(a), len(b), "
            f"max_points) = {n}; got folds={folds!r}"
        )
    root = as_seed_sequence(rng)
    gen = np.random.default_rng(child_sequence(root, 0))
    # equal class sizes, so that 0.5 is the accuracy of a classifier that cannot tell
    a, b = _subsample(a, n, gen), _subsample(b, n, gen)
    shift, scale = b.mean(axis=0), b.std(axis=0)
    scale[scale == 0] = 1.0
    x = torch.as_tensor((np.vstack([a, b]) - shift) / scale, dtype=torch.float32)
    y = torch.as_tensor(np.r_[np.zeros(len(a)), np.ones(len(b))], dtype=torch.float32)
    fold = gen.permutation(len(x)) % folds
    scores = []
    for k in range(folds):
        test = torch.as_tensor(fold == k)
        with forked(child_sequence(root, 1 + k)):
            net = _classifier(x.shape[1])
        _train(net, x[~test], y[~test], epochs, generator(child_sequence(root, 100 + k)))
        with torch.no_grad():
            pred = net(x[test]).squeeze(-1) > 0
        scores.append(float((pred == y[test].bool()).float().mean()))
    return float(np.mean(scores))


def _as_points(name: str, sample) -> np.ndarray:
    arr = _validate.finite_array(name, sample)
    if arr.ndim not in (1, 2) or len(arr) < 2:
        raise ValueError(
            f"{name} must be a sample of shape (n,) or (n, d) with n >= 2, got shape {arr.shape}"
        )
    return arr.reshape(len(arr), -1)


def _classifier(d: int) -> torch.nn.Module:
    width = 10 * d
    return torch.nn.Sequential(
        torch.nn.Linear(d, width),
        torch.nn.ReLU(),
        torch.nn.Linear(width, width),
        torch.nn.ReLU(),
        torch.nn.Linear(width, 1),
    )


def _train(net, x, y, epochs, gen) -> None:
    optimiser = torch.optim.Adam(net.parameters(), lr=1e-3)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    for _ in range(epochs):
        order = torch.randperm(len(x), generator=gen)
        for lo in range(0, len(x), 128):
            rows = order[lo : lo + 128]
            optimiser.zero_grad()
            loss_fn(net(x[rows]).squeeze(-1), y[rows]).backward()
            optimiser.step()
