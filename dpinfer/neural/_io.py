"""Saving and loading trained estimators as plain tensors, numbers and strings."""

from __future__ import annotations

import json

import torch

from ..samplers._transforms import ParameterSpace
from ._flows import ConditionalDensity, SplineFlow, build_flow

FORMAT = "dpinfer.neural/1"


def save(estimator, path) -> None:
    """Write the weights, standardisations, flow settings and problem description."""
    space = estimator.space
    meta = {
        "format": FORMAT,
        "kind": estimator.kind,
        "names": space.names,
        "shapes": {k: list(v) for k, v in space.shapes.items()},
        "bounds": {k: list(v) for k, v in space.bounds().items()},
        "info": estimator.info,
        "flow": estimator.flow_spec,
        "features": estimator.density.features,
        "context": estimator.density.context,
    }
    torch.save({"meta": json.dumps(meta), "state": estimator.density.state_dict()}, path)


def read(path, flow=None):
    """Return ``(kind, (density, space, info, flow_spec))`` of a saved estimator."""
    blob = torch.load(path, weights_only=True)
    meta = json.loads(blob["meta"])
    if meta.get("format") != FORMAT:
        raise ValueError(f"{path!s} is not a saved dpinfer.neural estimator ({FORMAT})")
    spec = meta["flow"]
    if flow is None:
        if spec is None:
            raise ValueError(
                "this estimator was trained with a custom flow builder; pass it again as flow="
            )
        flow = SplineFlow(**spec)
    features, context = meta["features"], meta["context"]
    density = ConditionalDensity(
        build_flow(flow, features, context),
        [0.0] * features,
        [1.0] * features,
        [0.0] * context,
        [1.0] * context,
    )
    density.load_state_dict(blob["state"])
    density.eval()
    space = ParameterSpace.from_bounds(meta["names"], meta["shapes"], meta["bounds"])
    return meta["kind"], (density, space, meta["info"], spec)
