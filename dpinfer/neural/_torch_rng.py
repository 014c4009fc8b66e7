"""Torch randomness from a numpy SeedSequence, never from torch's global generator.

Every torch random number of :mod:`dpinfer.neural` comes from a
:class:`torch.Generator` seeded here, or is drawn inside :func:`forked`, which
forks torch's global state and restores it afterwards (zuko's samplers and
torch's layer initialisation draw from the global state). A user's global torch
and numpy states are left as they were; the same seed with the same number of
torch threads gives the same result.
"""

from __future__ import annotations

import contextlib

import numpy as np
import torch


def torch_seed(seq: np.random.SeedSequence) -> int:
    """Return a 63-bit seed for torch derived from ``seq``."""
    return int(seq.generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))


def generator(seq: np.random.SeedSequence) -> torch.Generator:
    """Return a CPU :class:`torch.Generator` seeded from ``seq``."""
    gen = torch.Generator()
    gen.manual_seed(torch_seed(seq))
    return gen


@contextlib.contextmanager
def forked(seq: np.random.SeedSequence, device: torch.device | None = None):
    """Run the block with torch's global generator seeded from ``seq``, then restore it.

    On a CUDA ``device`` that device's generator is forked and seeded too.
    """
    devices = [device] if device is not None and device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(torch_seed(seq))
        yield
