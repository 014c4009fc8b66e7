"""Saving and loading trained estimators as plain tensors, numbers and strings.

A file holds ``{"meta": <JSON text>, "state": {name: tensor}}`` and is read with
``torch.load(..., weights_only=True)``, which unpickles tensors, numbers, strings and
containers only: a file carrying any other object (a pickled function, a class with
``__reduce__``) is refused before anything in it runs. What is read is then checked
before it is used: the description's keys and types, that it is self-consistent (the
flow's sizes against the parameters' shapes and the release's), the SHA-256 digest
written on saving over the description and every tensor (so a file changed after it was
saved is refused), and that the weights have the shapes and dtype of the flow they are
loaded into, are finite, and that the standardisations' scales are positive.

The digest detects a file altered after saving, by accident or by hand; it is not a
signature: whoever can write the file can write a matching digest. Load files you trust.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import warnings
import zipfile

import torch

from .._parameter_space import ParameterSpace
from .._validate import MAX_SIZE
from ._embeddings import PRESETS as EMBEDDINGS
from ._embeddings import build_embedding, from_spec
from ._flows import ConditionalDensity, SplineFlow, build_flow

FORMAT = "dpinfer.neural/2"
#: The first format carried no digest; its files are read with ``verify=False`` only.
_UNVERIFIED = "dpinfer.neural/1"
_KINDS = ("posterior", "likelihood")
_SCALES = ("x_scale", "c_scale")


class _Invalid(ValueError):
    """A file that is not a valid saved estimator (the message says why, not where)."""


def check_path(path) -> str:
    """Return ``path`` as a string, or raise TypeError unless it is a path."""
    if isinstance(path, bytes) or not isinstance(path, str | os.PathLike):
        raise TypeError(f"path must be a str or path-like, got {type(path).__name__}: {path!r}")
    return os.fspath(path)


def save(estimator, path) -> None:
    """Write the weights, standardisations, flow settings and problem description."""
    path = check_path(path)
    space = estimator.space
    meta = {
        "format": FORMAT,
        "kind": estimator.kind,
        "names": list(space.names),
        "shapes": {k: list(v) for k, v in space.shapes.items()},
        "bounds": {k: list(v) for k, v in space.bounds.items()},
        "info": estimator.info,
        "flow": estimator.flow_spec,
        "features": estimator.density.features,
        "context": estimator.density.context,
    }
    if estimator.density.embedding is not None:
        meta["embedding"] = estimator.embedding_spec or {"kind": "custom"}
    meta = json.loads(json.dumps(meta))  # the description exactly as it will be read back
    state = {k: v.detach().cpu() for k, v in estimator.density.state_dict().items()}
    meta["digest"] = _digest(meta, state)
    torch.save({"meta": json.dumps(meta), "state": state}, path)


def read(path, flow=None, embedding=None, device=None, *, verify: bool = True):
    """Return ``(kind, (density, space, info, flow_spec, embedding_spec))`` of a checked file.

    ``embedding``: the network or builder of a custom embedding (a preset's is
    rebuilt from the file); ``device``: where to put the density (default CPU).
    """
    path = check_path(path)
    try:
        meta, state = _unpack(_load(path))
        _check_meta(meta, verify=verify)
        if verify:
            _check_digest(meta, state)
        spec = meta["flow"]
        if flow is None:
            if spec is None:
                raise ValueError(
                    "this estimator was trained with a custom flow builder; pass it again as flow="
                )
            flow = _spline_flow(spec)
        saved = meta.get("embedding")
        net, conditions = _embedding(saved, embedding, meta["context"])
        density = _density(flow, meta["features"], meta["context"], state, net, conditions)
        shapes = {k: meta["shapes"][k] for k in meta["names"]}
        space = ParameterSpace(shapes, support=meta["bounds"])
    except _Invalid as err:
        raise ValueError(
            f"{path!s} is not a valid saved dpinfer.neural estimator: {err}"
        ) from None
    if device is not None:
        density.to(device)
    embedding_spec = saved if saved and saved["kind"] != "custom" else None
    return meta["kind"], (density, space, meta["info"], spec, embedding_spec)


def _embedding(saved, given, context: int):
    """Rebuild the embedding network of a saved file: ``(module or None, flow context)``."""
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
        try:
            given = from_spec(saved)
        except (TypeError, ValueError) as err:
            raise _Invalid(
                f"its embedding settings {saved!r} are not those of a preset ({err})"
            ) from None
    return build_embedding(given, context)


def _load(path: str):
    _check_archive(path)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # torch on unusual pickle protocols
            return torch.load(path, weights_only=True)
    except (FileNotFoundError, IsADirectoryError, PermissionError):
        raise  # the path, not the file: said as it is
    except Exception as err:  # whatever a damaged file makes torch raise
        raise _Invalid(
            f"torch.load(weights_only=True) refused it ({_reason(err)}); dpinfer saves "
            "tensors, numbers and strings only, so a file holding other objects, or none, or "
            "a damaged file, is not one of its own"
        ) from None


def _check_archive(path: str) -> None:
    """Refuse a zip archive (as torch saves) whose members fail their CRC-32 checks.

    The digest covers what dpinfer reads; the checksums cover the rest of the
    archive too (torch's own records), so that a damaged byte there is reported
    as damage rather than as whatever torch makes of it.
    """
    try:
        if not zipfile.is_zipfile(path):
            return  # not an archive: torch.load says why it is not an estimator
        with zipfile.ZipFile(path) as archive:
            bad = archive.testzip()
    except Exception as err:  # a damaged archive, whatever zipfile raises
        raise _Invalid(f"it is a damaged zip archive ({type(err).__name__}: {err})") from None
    if bad is not None:
        raise _Invalid(f"its archive member {bad!r} fails its CRC-32 check: the file is damaged")


#: Lines of torch's message that are advice (some of it unsafe here), not the reason.
_BOILERPLATE = ("Weights only load failed", "Please file an issue", "Check the documentation")


def _reason(err: BaseException) -> str:
    lines = [line.strip() for line in str(err).splitlines()]
    kept = [line for line in lines if line and not line.startswith(_BOILERPLATE)]
    text = " ".join(kept).replace("WeightsUnpickler error:", "").strip()
    return text[:200] or (
        "the file is empty or truncated" if isinstance(err, EOFError) else type(err).__name__
    )


def _unpack(blob) -> tuple[dict, dict]:
    if not isinstance(blob, dict) or set(blob) != {"meta", "state"}:
        keys = sorted(map(str, blob)) if isinstance(blob, dict) else type(blob).__name__
        raise _Invalid(f"expected a dict with the keys 'meta' and 'state', got {keys}")
    if not isinstance(blob["meta"], str):
        raise _Invalid("its 'meta' is not a JSON text")
    try:
        meta = json.loads(blob["meta"])
    except json.JSONDecodeError as err:
        raise _Invalid(f"its 'meta' is not valid JSON ({err})") from None
    state = blob["state"]
    if not isinstance(meta, dict):
        raise _Invalid("its 'meta' is not a JSON object")
    if not isinstance(state, dict) or not all(
        isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in state.items()
    ):
        raise _Invalid("its 'state' is not a dict of named tensors")
    return meta, state


# --- the description ---------------------------------------------------------------------


def _check_meta(meta: dict, *, verify: bool) -> None:
    fmt = meta.get("format")
    if fmt == _UNVERIFIED and verify:
        raise _Invalid(
            f"it was saved in the format {_UNVERIFIED!r}, which has no digest; load it with "
            "verify=False if you trust it, and save it again to add one"
        )
    if fmt not in (FORMAT, _UNVERIFIED):
        raise _Invalid(f"its format is {fmt!r}, not {FORMAT!r}")
    _field(meta, "kind", str)
    if meta["kind"] not in _KINDS:
        raise _Invalid(f"its kind is {meta['kind']!r}, not one of {_KINDS}")
    names = _field(meta, "names", list)
    if (
        not names
        or not all(isinstance(n, str) and n for n in names)
        or len(set(names)) < len(names)
    ):
        raise _Invalid("its 'names' are not distinct non-empty parameter names")
    shapes, bounds = _field(meta, "shapes", dict), _field(meta, "bounds", dict)
    if set(shapes) != set(names) or set(bounds) != set(names):
        raise _Invalid("its 'shapes' and 'bounds' do not name the same parameters as 'names'")
    dim = sum(_size(f"shapes[{k!r}]", shapes[k]) for k in names)
    for k in names:
        _check_bounds(k, bounds[k])
    info = _check_info(_field(meta, "info", dict))
    release = math.prod(info["event_shape"])
    features, context = (dim, release) if meta["kind"] == "posterior" else (release, dim)
    for key, expected in (("features", features), ("context", context)):
        got = _field(meta, key, int)
        if got != expected:
            raise _Invalid(
                f"its flow has {key}={got!r}, but its parameters and release make {expected}"
            )
    if meta.get("flow") is not None:
        _field(meta, "flow", dict)
    if "embedding" in meta:
        kind = _field(meta, "embedding", dict).get("kind")
        if kind not in (*EMBEDDINGS, "custom"):
            raise _Invalid(f"its embedding kind is {kind!r}, not one of {(*EMBEDDINGS, 'custom')}")
    if verify:
        _field(meta, "digest", str)


def _field(meta: dict, key: str, kind: type, *, within: str = ""):
    label = f"{within}[{key!r}]" if within else repr(key)
    if key not in meta:
        raise _Invalid(f"its description has no {label}")
    value = meta[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise _Invalid(f"its {label} is a {type(value).__name__}, not a {kind.__name__}")
    return value


def _size(what: str, shape) -> int:
    """Return the number of elements of a saved shape (a list of non-negative ints)."""
    if not isinstance(shape, list) or not all(
        isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape
    ):
        raise _Invalid(f"its {what} is not a list of non-negative integers: {shape!r}")
    n = math.prod(shape)
    if not 1 <= n <= MAX_SIZE:
        raise _Invalid(f"its {what} {shape!r} has {n} elements")
    return n


def _check_bounds(name: str, bound) -> None:
    ok = (
        isinstance(bound, list)
        and len(bound) == 2
        and all(isinstance(b, int | float) and not isinstance(b, bool) for b in bound)
        and bound[0] < bound[1]  # False for NaN
    )
    if not ok:
        raise _Invalid(f"its bounds of {name!r} are not a pair lower < upper: {bound!r}")


def _check_info(info: dict) -> dict:
    _size("info['event_shape']", _field(info, "event_shape", list, within="info"))
    for key in ("discrete", "dequantised"):
        _field(info, key, bool, within="info")
    _field(info, "mechanism", str, within="info")
    constants = _field(info, "constants", dict, within="info")
    if not all(isinstance(k, str) and _numbers(v) for k, v in constants.items()):
        raise _Invalid("its info['constants'] are not named numbers")
    for key, upper in (("epsilon", math.inf), ("delta", 1.0)):
        value = info.get(key)
        if not (isinstance(value, int | float) and not isinstance(value, bool)):
            raise _Invalid(f"its info[{key!r}] is not a number: {value!r}")
        if not (math.isnan(value) or 0 <= value <= upper):
            raise _Invalid(f"its info[{key!r}] = {value!r} is out of range")
    return info


def _numbers(value) -> bool:
    if isinstance(value, list):
        return all(_numbers(v) for v in value)
    return isinstance(value, int | float) and not isinstance(value, bool)


def _spline_flow(spec: dict) -> SplineFlow:
    try:
        return SplineFlow(**spec)
    except (TypeError, ValueError) as err:
        raise _Invalid(
            f"its flow settings {spec!r} are not those of a SplineFlow ({err})"
        ) from None


# --- the weights -------------------------------------------------------------------------


def _digest(meta: dict, state: dict) -> str:
    """SHA-256 over the description (without the digest) and every named tensor."""
    h = hashlib.sha256()
    described = {k: v for k, v in meta.items() if k != "digest"}
    h.update(json.dumps(described, sort_keys=True).encode())
    for name in sorted(state):
        tensor = state[name].detach().cpu().contiguous()
        h.update(f"\0{name}\0{tensor.dtype}\0{tuple(tensor.shape)}\0".encode())
        h.update(tensor.reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def _check_digest(meta: dict, state: dict) -> None:
    if _digest(meta, state) != meta["digest"]:
        raise _Invalid(
            "its digest does not match its contents: the file was changed after it was saved"
        )


def _density(
    flow, features: int, context: int, state: dict, net=None, conditions=None
) -> ConditionalDensity:
    """Build the flow, check ``state`` against it (names, shapes, dtypes, values), load it.

    ``net``: the embedding network, whose ``conditions`` outputs condition the flow.
    """
    conditions = context if conditions is None else conditions
    density = ConditionalDensity(
        build_flow(flow, features, conditions),
        [0.0] * features,
        [1.0] * features,
        [0.0] * context,
        [1.0] * context,
        embedding=net,
    )
    expected = density.state_dict()
    if set(state) != set(expected):
        missing, extra = sorted(set(expected) - set(state)), sorted(set(state) - set(expected))
        raise _Invalid(
            "its weights do not fit the flow "
            f"(missing {missing[:5]}, unexpected {extra[:5]}); a custom flow= must be the "
            "builder it was trained with"
        )
    for name, tensor in state.items():
        want = expected[name]
        if tensor.shape != want.shape or tensor.dtype != want.dtype:
            raise _Invalid(
                f"its weight {name!r} has shape {tuple(tensor.shape)} and dtype {tensor.dtype}; "
                f"the flow has {tuple(want.shape)} and {want.dtype}"
            )
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            raise _Invalid(f"its weight {name!r} holds non-finite values (NaN or inf)")
    for name in _SCALES:
        if not bool((state[name] > 0).all()):
            raise _Invalid(f"its standardisation {name!r} holds scales that are not positive")
    density.load_state_dict(state)
    density.eval()
    return density
