"""Named settings of SPPE and SPLE: dpinfer's defaults and Xiong, Ju and Zhang's (2023, S3).

``settings="paper"`` is the configuration of the paper's Section S3: neural spline
flows of 8 transforms with two residual blocks of 50 units and 10 bins (tail bound
5), Adam with batches of 100 simulations, learning rate 5e-4 and weight decay
1e-4, 5% of each round held out for early stopping after 20 epochs without
improvement, 8 RQMC noise copies per simulation, all of them in every training
step; SPPE's atomic loss with 10 atoms (sbi's default, which the paper's code
used). ``settings="default"`` is cheaper at the same accuracy, as measured in
``benchmarks/neural_vs_sbi.py`` (see :data:`PRESETS`).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

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
    "default": Preset(flow=SplineFlow(), training=Training(), noise_copies=8, atoms=10),
}


# the public, read-only view: dpinfer.neural.SETTINGS
SETTINGS = MappingProxyType(PRESETS)


def resolve(settings, **given) -> dict:
    """Return the preset ``settings`` with the options given explicitly (not None) over it."""
    if not isinstance(settings, str) or settings not in PRESETS:
        raise ValueError(f"settings must be one of {tuple(PRESETS)}, got {settings!r}")
    preset = PRESETS[settings]
    return {
        name: getattr(preset, name) if value is None else value for name, value in given.items()
    }
