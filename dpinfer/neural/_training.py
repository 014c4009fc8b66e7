"""Training a conditional density by Adam with early stopping (Xiong et al. 2023, S3).

Simulations are split into training and validation sets when they are made (a
simulation and all its noise copies land on the same side), mini-batches are
drawn over simulations, and training stops when the validation loss has not
improved for ``patience`` epochs; the best weights are then restored.
"""

from __future__ import annotations

import contextlib
import copy
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import torch

from .. import _validate


@dataclass(frozen=True)
class Training:
    """Optimisation settings; the field defaults are Xiong, Ju and Zhang's (2023, S3).

    ``settings="default"`` of :func:`sppe` and :func:`sple` uses other values
    (see :data:`dpinfer.neural.SETTINGS`); a ``Training`` passed explicitly is
    used as it is.

    Parameters
    ----------
    batch_size : int, default 100
        Simulations per mini-batch (each with all its noise copies).
    learning_rate : float, default 5e-4
        Adam's learning rate.
    weight_decay : float, default 1e-4
        Adam's L2 penalty on the weights.
    validation_fraction : float, default 0.05
        Fraction of each round's simulations held out for early stopping.
    patience : int, default 20
        Stop after this many epochs without a better validation loss.
    max_epochs : int, default 1000
        Upper bound on the epochs of one round.
    clip_norm : float or None, default 5
        Clip the gradient's Euclidean norm at this value (None: no clipping).
    threads : int or None, default 1
        Torch's intra-op threads while :func:`sppe` or :func:`sple` runs
        (restored afterwards); None leaves torch's setting alone. The flows
        are small (a few thousand rows of a few dozen features per step),
        so extra threads gain little, and on a machine whose cores are
        busy they wait for each other: on two shared cores, two threads
        took 2.5 to 10 times the wall time of one per training step. The
        same seed gives the same result at the same thread count.
    step_copies : int or None, default None
        Noise copies of each simulation that one training step averages over,
        drawn at random without replacement afresh at every step (None: all
        ``noise_copies``). The loss a step estimates is unchanged (its
        expectation over the draw is the average over all copies), so is its
        minimiser, while the step evaluates the flow ``noise_copies /
        step_copies`` times less often; over the epochs every copy is used.
        The validation loss draws its copies (and atoms) from the same seed
        at every epoch, so epochs are compared on the same subset.

    Examples
    --------
    >>> from dpinfer.neural import Training
    >>> Training(batch_size=200).learning_rate
    0.0005
    """

    batch_size: int = 100
    learning_rate: float = 5e-4
    weight_decay: float = 1e-4
    validation_fraction: float = 0.05
    patience: int = 20
    max_epochs: int = 1000
    clip_norm: float | None = 5.0
    threads: int | None = 1
    step_copies: int | None = None

    def __post_init__(self):
        if _validate.size("batch_size", self.batch_size) < 2:
            raise ValueError(f"batch_size must be at least 2, got {self.batch_size!r}")
        _validate.positive_finite("learning_rate", self.learning_rate)
        _validate.non_negative("weight_decay", self.weight_decay)
        _validate.probability_open("validation_fraction", self.validation_fraction)
        _validate.size("patience", self.patience)
        _validate.size("max_epochs", self.max_epochs)
        if self.clip_norm is not None:
            _validate.positive_finite("clip_norm", self.clip_norm)
        if self.threads is not None and _validate.positive_int("threads", self.threads) > 4096:
            raise ValueError(f"threads must be at most 4096 (torch threads), got {self.threads!r}")
        if self.step_copies is not None:
            _validate.size("step_copies", self.step_copies)


@contextlib.contextmanager
def torch_threads(threads: int | None):
    """Run the block with ``threads`` torch intra-op threads (None: unchanged), then restore."""
    before = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class Fit(NamedTuple):
    """What one round of training did."""

    epochs: int
    train_loss: float  # at the restored (best) epoch
    val_loss: float  # the best validation loss
    epoch_train_loss: list
    epoch_val_loss: list
    seconds: float


Loss = Callable[[torch.nn.Module, dict, torch.Generator], torch.Tensor]


def fit(
    density: torch.nn.Module,
    loss: Loss,
    data: dict[str, torch.Tensor],
    train: torch.Tensor,
    val: torch.Tensor,
    options: Training,
    gen: torch.Generator,
    report: Callable[[int, float, float], None],
) -> Fit:
    """Train ``density`` on rows ``train`` of ``data``; early-stop on rows ``val``.

    ``loss(density, batch, gen)`` is the mean loss of a batch (a dict of the
    rows of ``data``); ``report(epoch, train_loss, val_loss)`` is called after
    every epoch.
    """
    start = time.perf_counter()
    params = [p for p in density.parameters() if p.requires_grad]
    optimiser = torch.optim.Adam(
        params, lr=options.learning_rate, weight_decay=options.weight_decay
    )
    # the validation atoms are drawn afresh but identically at every epoch
    val_seed = int(torch.randint(0, 2**62, (1,), generator=gen))
    best, best_state, since, best_train = (
        math.inf,
        copy.deepcopy(density.state_dict()),
        0,
        math.nan,
    )
    train_curve, val_curve = [], []
    for epoch in range(1, options.max_epochs + 1):
        density.train()
        order = train[torch.randperm(len(train), generator=gen)]
        total = 0.0
        for rows in _batches(order, options.batch_size):
            value = loss(density, _take(data, rows), gen)
            optimiser.zero_grad()
            value.backward()
            if options.clip_norm is not None:
                torch.nn.utils.clip_grad_norm_(params, options.clip_norm)
            optimiser.step()
            total += float(value.detach()) * len(rows)
        train_loss = total / len(train)
        val_loss = evaluate(density, loss, data, val, options.batch_size, val_seed)
        train_curve.append(train_loss)
        val_curve.append(val_loss)
        report(epoch, train_loss, val_loss)
        if val_loss < best:
            best, best_train, since = val_loss, train_loss, 0
            best_state = copy.deepcopy(density.state_dict())
        else:
            since += 1
            if since >= options.patience:
                break
    if not math.isfinite(best):
        raise FloatingPointError(
            "training diverged: the validation loss was never finite; lower learning_rate"
        )
    density.load_state_dict(best_state)
    return Fit(epoch, best_train, best, train_curve, val_curve, time.perf_counter() - start)


def evaluate(density, loss, data, rows, batch_size, seed) -> float:
    """Mean loss over ``rows`` without gradients (atoms from a generator seeded ``seed``)."""
    gen = torch.Generator()
    gen.manual_seed(seed)
    density.eval()
    total = 0.0
    with torch.no_grad():
        for chunk in _batches(rows, batch_size):
            total += float(loss(density, _take(data, chunk), gen)) * len(chunk)
    return total / len(rows)


def _batches(rows: torch.Tensor, size: int):
    """Consecutive chunks of ``rows``; a last chunk of one row joins the one before."""
    n = len(rows)
    starts = list(range(0, n, size))
    if len(starts) > 1 and n - starts[-1] == 1:
        starts.pop()
    for i, lo in enumerate(starts):
        hi = starts[i + 1] if i + 1 < len(starts) else n
        yield rows[lo:hi]


def _take(data: dict, rows: torch.Tensor) -> dict:
    rows = rows.to(next(iter(data.values())).device)
    return {k: v[rows] for k, v in data.items()}
