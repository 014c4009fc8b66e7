"""The torch device of training and sampling: validated by name, CPU by default.

SPPE and SPLE train and sample on one device: the flow's weights, its
standardisations and the pool of simulations live there, while simulation,
privatisation and MCMC bookkeeping stay in numpy on the CPU. Random numbers of
training (mini-batch order, atoms, noise copies per step) come from CPU
generators whatever the device, so they do not depend on it; the flow's own
draws come from the device's generator. Only the CPU is tested here: CUDA is
supported where torch has it, untested.
"""

from __future__ import annotations

import torch

CPU = torch.device("cpu")


def check_device(device) -> torch.device:
    """Return ``device`` ("cpu", "cuda", "cuda:<index>" or a torch.device) as a torch.device.

    Raises
    ------
    TypeError
        ``device`` is not a string or a torch.device.
    ValueError
        Another device type, or a CUDA device that this torch build or machine lacks.
    """
    if isinstance(device, str):
        try:
            parsed = torch.device(device)
        except RuntimeError:
            parsed = None
    elif isinstance(device, torch.device):
        parsed = device
    else:
        raise TypeError(
            f"device must be 'cpu', 'cuda', 'cuda:<index>' or a torch.device, got {device!r}"
        )
    if parsed is None or parsed.type not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu', 'cuda' or 'cuda:<index>', got {device!r}")
    if parsed.type == "cpu":
        return CPU
    if not torch.cuda.is_available():
        raise ValueError(
            f"device {device!r} asks for CUDA, but torch.cuda.is_available() is False "
            "(a CPU-only torch build or no GPU); use device='cpu'"
        )
    index = torch.cuda.current_device() if parsed.index is None else parsed.index
    if index >= torch.cuda.device_count():
        raise ValueError(
            f"device {device!r}: there are {torch.cuda.device_count()} CUDA device(s)"
        )
    return torch.device("cuda", index)
