"""``dpinfer.neural.load`` checks what it reads and refuses what it cannot trust.

A saved estimator whose standardisation scale was set to 1e30 used to load and sample
garbage (posterior mean 4.9e29). Files are now refused when they were changed after
saving (digest), hold objects other than tensors, numbers and strings (a pickle
payload, which must never run), lack a key, have a key of the wrong type, sizes that
disagree, weights of the wrong shape or dtype, non-finite weights or non-positive scales.
Most edits below recompute the digest, as a careful forger would, so that the check
under test is the one that refuses the file.
"""

from __future__ import annotations

import json
import os
import pickle
import zipfile

import numpy as np
import pytest
import torch

from dpinfer.neural import NeuralPosterior, SplineFlow, Training, _io, load, sppe

from . import _toy

TINY = _toy.tiny_settings(rng=4)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    _, estimator = sppe(_toy.model(), _toy.mechanism(), _toy.RELEASED, **TINY)
    path = tmp_path_factory.mktemp("estimator") / "posterior.pt"
    estimator.save(path)
    return path, estimator


def _rewrite(src, dst, *, meta=None, state=None, redigest=True):
    """Copy a saved estimator, editing its description and weights."""
    blob = torch.load(src, weights_only=True)
    description, weights = json.loads(blob["meta"]), blob["state"]
    if meta is not None:
        meta(description)
    if state is not None:
        state(weights)
    if redigest and "digest" in description:
        description["digest"] = _io._digest(description, weights)
    torch.save({"meta": json.dumps(description), "state": weights}, dst)
    return dst


def _set(name, value):
    def edit(weights):
        weights[name] = torch.full_like(weights[name], value)

    return edit


# --- the reproduction: a scale set to 1e30 ------------------------------------------------


def test_a_scale_set_to_1e30_after_saving_is_refused(saved, tmp_path):
    path, _ = saved
    tampered = _rewrite(path, tmp_path / "t.pt", state=_set("x_scale", 1e30), redigest=False)
    with pytest.raises(ValueError, match="digest does not match its contents: the file was"):
        load(tampered)


def test_companion_the_untouched_file_loads_and_gives_the_same_estimate(saved):
    path, estimator = saved
    loaded = load(path)
    assert isinstance(loaded, NeuralPosterior)
    params = {"a": np.array([0.1, -0.4]), "b": np.array([0.3, 0.0])}
    np.testing.assert_allclose(
        loaded.log_prob(params, _toy.RELEASED), estimator.log_prob(params, _toy.RELEASED)
    )
    draws = loaded.sample(_toy.RELEASED, draws=40, rng=1).posterior["a"].values
    assert np.all(np.abs(draws) < 10)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (-1.0, "'x_scale' holds scales that are not positive"),
        (0.0, "'x_scale' holds scales that are not positive"),
        (float("nan"), "'x_scale' holds non-finite values"),
        (float("inf"), "'x_scale' holds non-finite values"),
    ],
)
def test_scales_must_be_positive_and_finite_whatever_the_digest_says(
    saved, tmp_path, value, message
):
    path, _ = saved
    forged = _rewrite(path, tmp_path / "f.pt", state=_set("x_scale", value))
    with pytest.raises(ValueError, match=message):
        load(forged)
    with pytest.raises(ValueError, match=message):
        load(forged, verify=False)


def test_non_finite_weights_are_refused(saved, tmp_path):
    path, _ = saved

    def poison(weights):
        name = next(k for k in weights if k.startswith("flow.") and weights[k].is_floating_point())
        weights[name] = weights[name].clone()
        weights[name].view(-1)[0] = float("nan")

    with pytest.raises(ValueError, match="holds non-finite values"):
        load(_rewrite(path, tmp_path / "n.pt", state=poison))


# --- the description -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda m: m.pop("names"), "has no 'names'"),
        (lambda m: m.pop("info"), "has no 'info'"),
        (lambda m: m.update(features="2"), "its 'features' is a str, not a int"),
        (lambda m: m.update(features=3), "flow has features=3, but its parameters"),
        (lambda m: m.update(kind="prior"), "kind is 'prior'"),
        (lambda m: m.update(names=["a", "a"]), "not distinct"),
        (
            lambda m: m["shapes"].update(a=[2]),
            "its flow has features=2, but its parameters .* make 3",
        ),
        (lambda m: m["shapes"].update(a=[-1]), "not a list of non-negative integers"),
        (lambda m: m["bounds"].update(a=[1.0, 0.0]), "bounds of 'a' are not a pair lower < upper"),
        (lambda m: m["info"].update(delta=2.0), r"info\['delta'\] = 2.0 is out of range"),
        (
            lambda m: m["info"].update(event_shape="2"),
            r"info\['event_shape'\] is a str, not a list",
        ),
        (lambda m: m.update(flow={"transforms": 1, "layers": 3}), "not those of a SplineFlow"),
        (lambda m: m.update(flow={"transforms": -1}), "not those of a SplineFlow"),
        (lambda m: m.update(format="dpinfer.neural/9"), "format is 'dpinfer.neural/9'"),
    ],
)
def test_a_description_with_a_missing_or_wrong_key_is_refused(saved, tmp_path, edit, message):
    path, _ = saved
    with pytest.raises(ValueError, match=message):
        load(_rewrite(path, tmp_path / "m.pt", meta=edit))


def test_weights_of_another_dtype_or_shape_are_refused(saved, tmp_path):
    path, _ = saved

    def to_double(weights):
        weights["x_shift"] = weights["x_shift"].double()

    def drop(weights):
        weights.pop("c_shift")

    with pytest.raises(ValueError, match="'x_shift' has shape .* dtype torch.float64"):
        load(_rewrite(path, tmp_path / "d.pt", state=to_double))
    with pytest.raises(ValueError, match=r"do not fit the flow \(missing \['c_shift'\]"):
        load(_rewrite(path, tmp_path / "s.pt", state=drop))


# --- what is not a saved estimator at all -----------------------------------------------


class _Payload:
    """Runs a shell command when unpickled (if anything unpickled it)."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_a_pickle_payload_is_never_run(tmp_path):
    marker = tmp_path / "ran"
    raw = tmp_path / "raw.pt"
    raw.write_bytes(pickle.dumps(_Payload(marker)))
    inside = tmp_path / "inside.pt"
    torch.save({"meta": "{}", "state": {}, "extra": _Payload(marker)}, inside)
    for path in (raw, inside):
        with pytest.raises(ValueError, match=r"torch.load\(weights_only=True\) refused it"):
            load(path)
    assert not marker.exists()


def test_files_that_are_no_estimator_are_refused_by_name(tmp_path):
    empty, text, other_zip = tmp_path / "e.pt", tmp_path / "t.pt", tmp_path / "z.pt"
    empty.write_bytes(b"")
    text.write_text("not a model")
    with zipfile.ZipFile(other_zip, "w") as archive:
        archive.writestr("data.txt", "hello")
    for path in (empty, text, other_zip):
        with pytest.raises(ValueError, match=f"{path}.* is not a valid saved dpinfer.neural"):
            load(path)
    plain = tmp_path / "plain.pt"
    torch.save({"weights": torch.zeros(3)}, plain)
    with pytest.raises(ValueError, match="expected a dict with the keys 'meta' and 'state'"):
        load(plain)


def test_the_first_format_loads_only_when_trusted(saved, tmp_path):
    path, _ = saved

    def first_format(meta):
        meta["format"] = "dpinfer.neural/1"
        meta.pop("digest")

    old = _rewrite(path, tmp_path / "v1.pt", meta=first_format)
    with pytest.raises(ValueError, match="has no digest; load it with verify=False"):
        load(old)
    assert load(old, verify=False).names == ["a", "b"]


def test_load_and_save_check_their_arguments(saved, tmp_path):
    path, estimator = saved
    with pytest.raises(TypeError, match="path must be a str or path-like"):
        load(3)
    with pytest.raises(TypeError, match="verify must be a bool"):
        load(path, verify="yes")
    with pytest.raises(TypeError, match="path must be a str or path-like"):
        estimator.save(None)
    with pytest.raises(FileNotFoundError):
        load(tmp_path / "missing.pt")


# --- every single-byte flip of a saved file -----------------------------------------------


@pytest.fixture(scope="module")
def small_saved(tmp_path_factory):
    """A saved estimator of about 7 KB: a one-transform flow with 2 hidden features."""
    flow = SplineFlow(transforms=1, hidden_features=2, residual_blocks=1, bins=2)
    settings = TINY | {"flow": flow, "training": Training(max_epochs=1, batch_size=50)}
    _, estimator = sppe(_toy.model(), _toy.mechanism(), _toy.RELEASED, **settings)
    path = tmp_path_factory.mktemp("small") / "posterior.pt"
    estimator.save(path)
    return path, estimator


def _flip_positions(data: bytes) -> list[int]:
    """Every byte of the zip's central directory and end record (where a flip once gave a
    bare KeyError, OSError or IndexError), and every 5th byte before them."""
    directory = data.find(b"PK\x01\x02")
    assert 0 < directory < len(data) - 22
    return sorted({*range(0, directory, 5), *range(directory, len(data))})


def _same_estimator(loaded, original) -> bool:
    got, want = loaded.density.state_dict(), original.density.state_dict()
    return (
        set(got) == set(want)
        and all(torch.equal(got[k], want[k]) for k in want)
        and loaded.info == original.info
        and loaded.space.names == original.space.names
        and loaded.space.shapes == original.space.shapes
    )


def test_every_single_byte_flip_is_refused_by_a_value_error_or_changes_nothing(
    small_saved, tmp_path
):
    # 2 of 3 flips are refused (digest, CRC-32, zip structure, torch); the others hit bytes
    # no reader uses (the alignment padding and timestamps of the zip's local headers) and
    # load the very same estimator. Before, 101 of the 7,237 flips raised KeyError,
    # OSError or IndexError from inside torch.load.
    path, _ = small_saved
    original, data = load(path), path.read_bytes()
    positions = _flip_positions(data)
    assert len(positions) > 2_500  # about 2,700 of the 7,237 bytes
    flipped, outcomes, wrong = tmp_path / "flipped.pt", {"refused": 0, "same": 0}, []
    for i in positions:
        damaged = bytearray(data)
        damaged[i] ^= 0xFF
        flipped.write_bytes(damaged)
        try:
            loaded = load(flipped)
        except ValueError as err:
            assert "is not a valid saved dpinfer.neural estimator" in str(err), (i, err)
            outcomes["refused"] += 1
            continue
        except Exception as err:  # the bug under test: anything but dpinfer's ValueError
            wrong.append((i, f"{type(err).__name__}: {err}"))
            continue
        if _same_estimator(loaded, original):
            outcomes["same"] += 1
        else:
            wrong.append((i, "loaded a different estimator"))
    assert not wrong, wrong[:10]
    assert outcomes["refused"] > outcomes["same"] > 0


def test_companion_the_flip_check_sees_a_changed_estimator(small_saved, tmp_path):
    # a file whose weights were changed and re-digested loads, and _same_estimator says so
    path, _ = small_saved
    edited = _rewrite(path, tmp_path / "e.pt", state=_set("x_scale", 2.0))
    assert not _same_estimator(load(edited), load(path))
    assert _same_estimator(load(path), load(path))
