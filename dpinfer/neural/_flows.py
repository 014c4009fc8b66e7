r"""Conditional density estimators: a zuko flow between two standardisations.

:class:`SplineFlow` builds the default flow of Xiong, Ju and Zhang (2023, S3):
a neural spline flow (Durkan et al. 2019) of 8 autoregressive
rational-quadratic spline transforms with 10 bins, each conditioned by a masked
network of two residual blocks of 50 units. :class:`ConditionalDensity` puts it
between standardisations of the modelled variable and of the context (shift and
scale fixed from the first round's simulations), and reports log densities on
the original scale.

*Tail bound.* The splines act on ``[-5, 5]`` (the paper's tail bound 5) and are
the identity outside, with unit slope at the bounds, so every transform is a
bijection of the real line and the density has Gaussian tails beyond five
standardised units. Five units hold all but a fraction ``6e-7`` of a standardised
normal coordinate and all of the later rounds' (narrower) data, while a wider
bound would spread the 10 bins over regions where no training data fall.

*Speed.* :class:`_Spline` is zuko's monotonic rational-quadratic spline with
its knots computed by a cumulative sum of exponentials instead of
``softmax`` then ``cumsum``: the same knots up to float rounding, but
torch's CPU softmax over a last axis of 10 bins is about four times slower
than the exponentials, and the knots are built at every call of the flow.
With the paper's flow this takes a quarter off each training step.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from functools import partial

import numpy as np
import torch
import torch.nn.functional as F
import zuko
from torch import nn
from zuko.transforms import MonotonicRQSTransform

from .. import _validate


@dataclass(frozen=True)
class SplineFlow:
    """Builder of conditional neural spline flows (zuko), the default ``flow=``.

    Parameters
    ----------
    transforms : int, default 8
        Number of autoregressive spline transforms.
    hidden_features : int, default 50
        Width of the conditioning networks.
    residual_blocks : int, default 2
        Residual blocks per conditioning network.
    bins : int, default 10
        Bins of each monotonic rational-quadratic spline.
    tail_bound : float, default 5
        The splines act on ``[-tail_bound, tail_bound]`` (standardised units)
        and are the identity outside.

    Notes
    -----
    Any callable ``flow(features, context) -> zuko.flows.Flow`` can be passed
    as ``flow=`` instead, for example
    ``lambda f, c: zuko.flows.MAF(f, c, transforms=5)``; it is then needed again
    to load a saved estimator.

    Examples
    --------
    >>> from dpinfer.neural import SplineFlow
    >>> flow = SplineFlow(transforms=2, hidden_features=16)(features=2, context=3)
    >>> type(flow).__name__
    'MAF'
    """

    transforms: int = 8
    hidden_features: int = 50
    residual_blocks: int = 2
    bins: int = 10
    tail_bound: float = 5.0

    def __post_init__(self):
        for name in ("transforms", "hidden_features", "residual_blocks"):
            _validate.size(name, getattr(self, name))
        if _validate.size("bins", self.bins) < 2:
            raise ValueError(f"bins must be at least 2, got {self.bins!r}")
        _validate.positive_finite("tail_bound", self.tail_bound)
        weights = self.transforms * (self.residual_blocks + 1) * self.hidden_features**2
        if weights > _validate.MAX_SIZE:
            raise ValueError(
                f"transforms={self.transforms}, residual_blocks={self.residual_blocks} and "
                f"hidden_features={self.hidden_features} make about {weights:,} weights, more "
                f"than the {_validate.MAX_SIZE:,} that can fit in memory"
            )

    def __call__(self, features: int, context: int) -> zuko.flows.Flow:
        """Build the flow of ``features`` variables given ``context`` variables."""
        features, context = (
            _validate.size("features", features),
            _validate.size("context", context),
        )
        univariate = partial(_Spline, bound=float(self.tail_bound), slope=1e-3)
        shapes = [(self.bins,), (self.bins,), (self.bins - 1,)]
        hyper: dict[str, object]
        if features == 1:
            # one variable: zuko uses an element-wise transform with a plain network
            hyper = {"hidden_features": (self.hidden_features,) * (self.residual_blocks + 1)}
        else:
            hyper = {
                "hidden_features": (self.hidden_features,) * self.residual_blocks,
                "residual": True,
            }
        return zuko.flows.MAF(
            features,
            context,
            transforms=self.transforms,
            univariate=univariate,
            shapes=shapes,
            **hyper,
        )

    def spec(self) -> dict:
        """Return the builder's settings, to rebuild it when loading a saved estimator."""
        return asdict(self)


class _Spline(MonotonicRQSTransform):
    """zuko's monotonic rational-quadratic spline, with cheaper knots (see the module notes).

    The unconstrained widths and heights are first squashed into
    ``(-|log slope| / 2, |log slope| / 2)`` (zuko's soft clamp), so their
    exponentials lie in ``(0.03, 32)`` for the default slope and need no
    max-subtraction.
    """

    def __init__(self, widths, heights, derivatives, bound: float = 5.0, slope: float = 1e-3):
        super(MonotonicRQSTransform, self).__init__()
        log_slope = math.log(slope)
        widths = widths / (1 + abs(2 * widths / log_slope))
        heights = heights / (1 + abs(2 * heights / log_slope))
        derivatives = derivatives / (1 + abs(derivatives / log_slope))
        self.horizontal = bound * (2 * _knots(widths) - 1)
        self.vertical = bound * (2 * _knots(heights) - 1)
        self.derivatives = torch.exp(F.pad(derivatives, (1, 1), value=0))


def _knots(x: torch.Tensor) -> torch.Tensor:
    """``0`` then the cumulative sums of ``softmax(x)`` along the last axis (ending at 1)."""
    total = torch.cumsum(x.exp(), dim=-1)
    return F.pad(total / total[..., -1:], (1, 0), value=0)


class ConditionalDensity(nn.Module):
    """``q(x | c)`` on the original scale: a flow between two standardisations.

    Parameters
    ----------
    flow : zuko.flows.Flow
        Conditional flow of the standardised ``x`` given the (embedded)
        standardised ``c``.
    x_shift, x_scale, c_shift, c_scale : array_like
        Standardisations ``(x - shift) / scale`` of the variable and the context.
    embedding : torch.nn.Module, optional
        Maps standardised contexts ``(n, r)`` to the ``(n, k)`` features the
        flow is conditioned on; trained with the flow.
    """

    # buffers (saved with the weights), registered in __init__
    x_shift: torch.Tensor
    x_scale: torch.Tensor
    c_shift: torch.Tensor
    c_scale: torch.Tensor

    def __init__(self, flow, x_shift, x_scale, c_shift, c_scale, embedding=None):
        super().__init__()
        self.flow = flow
        self.embedding = embedding
        for name, value in (
            ("x_shift", x_shift),
            ("x_scale", x_scale),
            ("c_shift", c_shift),
            ("c_scale", c_scale),
        ):
            self.register_buffer(name, torch.as_tensor(np.asarray(value), dtype=torch.float32))

    @property
    def features(self) -> int:
        """Number of modelled variables."""
        return int(self.x_shift.numel())

    @property
    def context(self) -> int:
        """Number of conditioning variables (before any embedding)."""
        return int(self.c_shift.numel())

    @property
    def device(self) -> torch.device:
        """The device of the weights and standardisations."""
        return self.x_shift.device

    def _context(self, c: torch.Tensor) -> torch.Tensor:
        cs = (c - self.c_shift) / self.c_scale
        if self.embedding is None:
            return cs
        lead = cs.shape[:-1]
        return self.embedding(cs.reshape(-1, cs.shape[-1])).reshape(*lead, -1)

    def log_prob(self, x: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        """``log q(x | c)`` for rows of ``x`` and ``c`` (broadcast), with the scaling Jacobian.

        With both ``x`` and ``c`` batched, their leading axes broadcast, and each
        context is standardised and embedded once before it is repeated (the
        atomic loss evaluates every context at many parameters).
        """
        xs = (x - self.x_shift) / self.x_scale
        cs = self._context(c)
        log_scale = torch.log(self.x_scale).sum()
        if xs.dim() > 1 and cs.dim() > 1 and (xs.dim() > 2 or cs.dim() > 2 or len(xs) != len(cs)):
            lead = torch.broadcast_shapes(xs.shape[:-1], cs.shape[:-1])
            xs = xs.expand(*lead, xs.shape[-1]).reshape(-1, xs.shape[-1])
            cs = cs.expand(*lead, cs.shape[-1]).reshape(-1, cs.shape[-1])
            return (self.flow(cs).log_prob(xs) - log_scale).reshape(lead)
        return self.flow(cs).log_prob(xs) - log_scale

    def sample(self, c: torch.Tensor, n: int) -> torch.Tensor:
        """``n`` draws of ``x`` given one context ``c`` (draws from torch's global generator)."""
        return self.flow(self._context(c)).sample((n,)) * self.x_scale + self.x_shift


def standardisation(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Column means and standard deviations (a constant column gets scale 1)."""
    flat = values.reshape(-1, values.shape[-1])
    shift = flat.mean(axis=0)
    scale = flat.std(axis=0)
    scale[~(scale > 1e-12 * np.maximum(1.0, np.abs(shift)))] = 1.0
    return shift, scale


def build_flow(flow, features: int, context: int):
    """Call a flow builder and check that it returned a zuko-style conditional flow."""
    if not callable(flow):
        raise TypeError(
            f"flow must be a callable flow(features, context) such as SplineFlow(), got {flow!r}"
        )
    built = flow(features, context)
    if not isinstance(built, nn.Module):
        raise TypeError(
            "flow(features, context) must return a torch module mapping a context to a "
            f"distribution (a zuko flow), got {type(built).__name__}"
        )
    return built
