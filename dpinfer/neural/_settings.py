"""Named settings of SPPE and SPLE: dpinfer's defaults and Xiong, Ju and Zhang's (2023, S3).

``settings="paper"`` is the configuration of the paper's Section S3: neural spline
flows of 8 transforms with two residual blocks of 50 units and 10 bins (tail bound
5), Adam with batches of 100 simulations, learning rate 5e-4 and weight decay
1e-4, 5% of each round held out for early stopping after 20 epochs without
improvement, 8 RQMC noise copies per simulation, all of them in every training
step; SPPE's atomic loss with 10 atoms (sbi's default, which the paper's code
used).

``settings="default"`` keeps the 8 noise copies and 10 atoms but trains a
smaller flow (5 transforms, one residual block of 50 units, 8 bins) with
batches of 200, stops after 10 epochs without improvement, and averages each
training step over one random noise copy of each simulation
(``Training(step_copies=1)``, an unbiased estimate of the same loss). The atomic
loss over 10 atoms x 8 copies was most of the paper configuration's cost; on
``benchmarks/neural_vs_sbi.py``'s problem (4 rounds of 1,000 simulations, one
torch thread) one run with these settings took 69 CPU s on a heavily loaded
machine, where runs with the paper's had taken 438-495 CPU s, with errors of the
posterior means and sds within about 0.1 exact sd.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

from .. import _validate
from ._flows import SplineFlow
from ._training import Training


@dataclass(frozen=True)
class Preset:
    """The settings a name stands for."""

    flow: SplineFlow
    training: Training
    noise_copies: int
    atoms: int


PRESETS = {
    "paper": Preset(flow=SplineFlow(), training=Training(), noise_copies=8, atoms=10),
    "default": Preset(
        flow=SplineFlow(transforms=5, hidden_features=50, residual_blocks=1, bins=8),
        training=Training(batch_size=200, patience=10, step_copies=1),
        noise_copies=8,
        atoms=10,
    ),
}


# the public, read-only view: dpinfer.neural.SETTINGS
SETTINGS = MappingProxyType(PRESETS)


def resolve(settings, **given) -> dict:
    """Return the preset ``settings`` with the options given explicitly (not None) over it."""
    preset = PRESETS[_validate.choice("settings", settings, PRESETS)]
    return {
        name: getattr(preset, name) if value is None else value for name, value in given.items()
    }
