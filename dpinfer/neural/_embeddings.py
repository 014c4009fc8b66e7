"""Embedding networks: summarise a long release before it conditions SPPE's flow.

A release of many coordinates (an epidemic curve of 100 time points, a table of
many cells) conditions the flow through every masked layer of every transform.
An embedding network maps the standardised release to a few learned features
first; it is trained jointly with the flow (its weights are part of the
estimator), as in sbi's ``embedding_net``. Two builders are named presets:
:class:`MLPEmbedding` (any release) and :class:`CNNEmbedding` (a 1-D
convolutional network for a curve, whose neighbouring coordinates are related).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import torch
from torch import nn

from .. import _validate


@dataclass(frozen=True)
class MLPEmbedding:
    """Builder of a fully connected embedding network: release -> ``features`` numbers.

    Parameters
    ----------
    features : int, default 8
        Output size: the number of features that condition the flow.
    hidden_features : int, default 64
        Width of the hidden layers.
    layers : int, default 2
        Number of hidden layers (ReLU).

    Examples
    --------
    >>> from dpinfer.neural import MLPEmbedding
    >>> net = MLPEmbedding(features=4)(50)
    >>> import torch
    >>> net(torch.zeros(3, 50)).shape
    torch.Size([3, 4])
    """

    features: int = 8
    hidden_features: int = 64
    layers: int = 2

    def __post_init__(self):
        for name in ("features", "hidden_features", "layers"):
            _validate.size(name, getattr(self, name))

    def __call__(self, size: int) -> nn.Module:
        """Build the network for a release of ``size`` coordinates."""
        widths = [size] + [self.hidden_features] * self.layers
        parts = []
        for a, b in zip(widths[:-1], widths[1:], strict=True):
            parts += [nn.Linear(a, b), nn.ReLU()]
        return nn.Sequential(*parts, nn.Linear(widths[-1], self.features))

    def spec(self) -> dict:
        """Return the builder's settings (saved with an estimator)."""
        return {"kind": "mlp", **asdict(self)}


@dataclass(frozen=True)
class CNNEmbedding:
    """Builder of a 1-D convolutional embedding network for a curve-shaped release.

    Two blocks of convolution (kernel ``kernel``, ReLU) and max-pooling by 2,
    with ``channels`` channels each, then a linear map of the flattened result
    to ``features`` numbers. The release's coordinates are read as one curve in
    their stored (row-major) order.

    Parameters
    ----------
    features : int, default 8
        Output size.
    channels : int, default 8
        Channels of each convolution.
    kernel : int, default 5
        Kernel width (odd; the curve is zero-padded to keep its length).

    Examples
    --------
    >>> from dpinfer.neural import CNNEmbedding
    >>> import torch
    >>> CNNEmbedding()(100)(torch.zeros(2, 100)).shape
    torch.Size([2, 8])
    """

    features: int = 8
    channels: int = 8
    kernel: int = 5

    def __post_init__(self):
        for name in ("features", "channels", "kernel"):
            _validate.size(name, getattr(self, name))
        if self.kernel % 2 == 0:
            raise ValueError(f"kernel must be odd, got {self.kernel!r}")

    def __call__(self, size: int) -> nn.Module:
        """Build the network for a curve of ``size`` points (at least 4)."""
        if size < 4:
            raise ValueError(
                f"CNNEmbedding needs a release of at least 4 coordinates, got {size}; "
                "use MLPEmbedding or no embedding"
            )
        pad = self.kernel // 2
        return nn.Sequential(
            nn.Unflatten(1, (1, size)),
            nn.Conv1d(1, self.channels, self.kernel, padding=pad),
            nn.ReLU(),
            nn.MaxPool1d(2),
            nn.Conv1d(self.channels, self.channels, self.kernel, padding=pad),
            nn.ReLU(),
            nn.MaxPool1d(2),
            nn.Flatten(),
            nn.Linear(self.channels * (size // 2 // 2), self.features),
        )

    def spec(self) -> dict:
        """Return the builder's settings (saved with an estimator)."""
        return {"kind": "cnn", **asdict(self)}


PRESETS = {"mlp": MLPEmbedding, "cnn": CNNEmbedding}


def embedding_builder(embedding):
    """Normalise ``embedding=``: None, a preset name, a builder, or a torch module."""
    if isinstance(embedding, str | list | tuple | np.ndarray):  # a name, or a container of one
        also = "a builder such as MLPEmbedding(), or a torch module"
        return PRESETS[_validate.choice("embedding", embedding, PRESETS, alternatives=also)]()
    if embedding is None or callable(embedding):
        return embedding
    raise TypeError(
        "embedding must be None, 'mlp', 'cnn', a builder embedding(size) -> torch module "
        "(such as MLPEmbedding()), or a torch module mapping (n, r) releases to (n, k) "
        f"features, got {type(embedding).__name__}"
    )


def build_embedding(embedding, size: int) -> tuple[nn.Module | None, int]:
    """Build the network for ``size`` release coordinates; return it and its output size."""
    if embedding is None:
        return None, size
    net = embedding if isinstance(embedding, nn.Module) else embedding(size)
    if not isinstance(net, nn.Module):
        raise TypeError(f"embedding(size) must return a torch module, got {type(net).__name__}")
    with torch.no_grad():
        out = net(torch.zeros(2, size))
    if out.dim() != 2 or out.shape[0] != 2:
        raise ValueError(
            f"the embedding network must map (n, {size}) releases to (n, k) features, "
            f"got output of shape {tuple(out.shape)} for input (2, {size})"
        )
    return net, int(out.shape[1])


def embedding_spec(embedding) -> dict | None:
    """Return the settings that rebuild a preset embedding (None: no embedding, or a module)."""
    return embedding.spec() if isinstance(embedding, MLPEmbedding | CNNEmbedding) else None


def from_spec(spec: dict):
    """Rebuild a preset builder from :func:`embedding_spec`'s output."""
    spec = dict(spec)
    return PRESETS[spec.pop("kind")](**spec)
