"""Saving and loading trained estimators as plain tensors, numbers and strings."""

from __future__ import annotations

import json

import torch

from ..samplers._transforms import ParameterSpace
from ._embeddings import build_embedding, from_spec
from ._flows import ConditionalDensity, SplineFlow, build_flow

FORMAT = "dpinfer.neural/1"


def save(estimator, path) -> None:
    """Write the weights, standardisations, flow settings and problem description."""
    space = estimator.space
    density = estimator.density
    meta = {
        "format": FORMAT,
        "kind": estimator.kind,
        "names": space.names,
        "shapes": {k: list(v) for k, v in space.shapes.items()},
        "bounds": {k: list(v) for k, v in space.bounds().items()},
        "info": estimator.info,
        "flow": estimator.flow_spec,
        "features": density.features,
        "context": density.context,
    }
    if density.embedding is not None:
        meta["embedding"] = estimator.embedding_spec or {"kind": "custom"}
    state = {k: v.cpu() for k, v in density.state_dict().items()}
    torch.save({"meta": json.dumps(meta), "state": state}, path)


def read(path, flow=None, embedding=None, device=None):
    """Return ``(kind, (density, space, info, flow_spec, embedding_spec))`` of a saved file."""
    blob = torch.load(path, weights_only=True, map_location="cpu")
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
    net, conditions = _embedding(meta.get("embedding"), embedding, context)
    density = ConditionalDensity(
        build_flow(flow, features, conditions),
        [0.0] * features,
        [1.0] * features,
        [0.0] * context,
        [1.0] * context,
        embedding=net,
    )
    density.load_state_dict(blob["state"])
    density.eval()
    if device is not None:
        density.to(device)
    space = ParameterSpace.from_bounds(meta["names"], meta["shapes"], meta["bounds"])
    saved = meta.get("embedding")
    embedding_spec = saved if saved and saved["kind"] != "custom" else None
    return meta["kind"], (density, space, meta["info"], spec, embedding_spec)


def _embedding(saved, given, context: int):
    """Rebuild the embedding network of a saved estimator: ``(module or None, flow context)``."""
    if saved is None:
        if given is not None:
            raise ValueError("this estimator was trained without an embedding; omit embedding=")
        return None, context
    if given is None:
        if saved["kind"] == "custom":
            raise ValueError(
                "this estimator was trained with a custom embedding network; pass it (or its "
                "builder) again as embedding="
            )
        given = from_spec(saved)
    return build_embedding(given, context)
