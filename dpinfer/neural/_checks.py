"""Argument checks shared by :func:`sppe` and :func:`sple`."""

from __future__ import annotations

import numpy as np

from .. import _validate
from .._rng import as_seed_sequence, child_sequence
from ..samplers._common import check_inputs, check_options
from ._device import check_device
from ._embeddings import embedding_builder
from ._rqmc import is_power_of_two
from ._sequential import SPACE, Setup
from ._settings import resolve
from ._simulations import space_for
from ._training import Training

NOISE = ("rqmc", "mc")
# the options SPPE and SPLE share, validated by :func:`setup`
SHARED = (
    "rounds",
    "simulations",
    "settings",
    "noise_copies",
    "noise",
    "flow",
    "training",
    "rng",
    "executor",
    "progressbar",
    "callback",
    "device",
)


def shared(namespace: dict) -> dict:
    """Pick the shared options out of a public function's arguments."""
    return {name: namespace[name] for name in SHARED}


def setup(
    model,
    mechanism,
    released,
    *,
    rounds,
    simulations,
    settings,
    noise_copies,
    noise,
    flow,
    training,
    rng,
    executor,
    progressbar,
    callback,
    device,
    dequantise_discrete=False,
    embedding=None,
) -> tuple[Setup, int, int]:
    """Validate the arguments common to SPPE and SPLE; return the setup, rounds, simulations.

    ``flow``, ``training`` and ``noise_copies`` left as None come from the
    preset named ``settings``. ``dequantise_discrete``: model an integer
    release plus a uniform (SPLE's likelihood).
    """
    released = check_inputs(model, mechanism, released)
    check_options(rng=rng, executor=executor, progressbar=progressbar)
    chosen = resolve(settings, flow=flow, training=training, noise_copies=noise_copies)
    flow, training, noise_copies = chosen["flow"], chosen["training"], chosen["noise_copies"]
    rounds = _validate.size("rounds", rounds)
    simulations = _validate.size("simulations", simulations)
    if simulations < 2:
        raise ValueError("simulations must be at least 2 (training and validation), got 1")
    copies = _validate.size("noise_copies", noise_copies)
    pairs = rounds * simulations * copies
    if pairs > _validate.MAX_SIZE:
        raise ValueError(
            f"rounds x simulations x noise_copies = {rounds} x {simulations} x {copies} = "
            f"{pairs:,} training pairs, more than the {_validate.MAX_SIZE:,} that can fit in "
            "memory (every round trains on all simulations so far); reduce one of them"
        )
    noise = _validate.choice("noise", noise, NOISE)
    qmc = noise == "rqmc"
    if qmc and not is_power_of_two(copies):
        raise ValueError(
            f"noise_copies must be a power of two with noise='rqmc' (Sobol points), got {copies!r}"
        )
    if qmc and not mechanism.has_inverse_cdf:
        raise TypeError(
            f"{type(mechanism).__name__} has no release_from_uniform (inverse CDF), which "
            "noise='rqmc' needs; pass noise='mc' to privatise with independent releases"
        )
    if not isinstance(training, Training):
        raise TypeError(f"training must be a dpinfer.neural.Training, got {training!r}")
    if not callable(flow):
        raise TypeError(f"flow must be a callable flow(features, context), got {flow!r}")
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be callable or None, got {callback!r}")
    root = as_seed_sequence(rng)
    # the space needs two prior draws to learn the parameters' shapes
    space = space_for(model, np.random.default_rng(child_sequence(root, SPACE)))
    return (
        Setup(
            model=model,
            mechanism=mechanism,
            released=released,
            space=space,
            copies=copies,
            qmc=qmc,
            training=training,
            flow=flow,
            root=root,
            executor=executor,
            progressbar=bool(progressbar),
            dequantise=dequantise_discrete and bool(mechanism.discrete),
            device=check_device(device),
            embedding=embedding_builder(embedding),
        ),
        rounds,
        simulations,
    )


def require_prior_density(model, why: str) -> None:
    """Refuse a prior without a log density where the method needs one."""
    if not model.prior.has_logpdf:
        raise ValueError(f"{why} needs a prior with a logpdf (pass logpdf= to a callable Prior)")
