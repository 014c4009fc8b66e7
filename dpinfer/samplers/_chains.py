"""Several chains: independent runs over an executor, combined in one place.

A sampler that runs chains writes one function,
``run_one(seed, executor, advance) -> ChainRun``, that runs a single chain from
its own :class:`~numpy.random.SeedSequence`. :func:`run_chains` runs it once per
chain and :func:`combine` merges the runs into what
:meth:`dpinfer.samplers._common.AbcCall.result` takes.

Chain ``c`` is seeded by the ``c``-th child of the root seed, so its result does
not depend on where it ran. With an executor and several chains, each chain is
one task (its simulations then run serially inside the task, which is how the
work is spread over the workers); serially, or with a single chain, the chain
runs here and hands the executor down to its simulation chunks. Warnings about a
chain are raised by the caller from the returned diagnostics, never inside a
chain (a worker process's warnings would not reach the user).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from scipy.special import logsumexp

from .. import _validate, parallel
from .._rng import child_sequence

__all__ = ["ChainRun", "combine", "per_chain", "run_chains"]


class ChainRun(NamedTuple):
    """What one chain returns.

    ``posterior`` and ``sample_stats`` hold arrays with a leading axis of the
    chain's draws; ``stats`` per-chain scalars (evidence, ESS, simulations);
    ``stages`` per-stage records of equal length (SMC stages, say).
    """

    posterior: dict
    sample_stats: dict
    stats: dict
    stages: dict


def per_chain(name: str, total, chains) -> tuple[int, int]:
    """Validate ``total`` and ``chains``; return ``(chains, ceil(total / chains))``.

    ``total`` (draws or particles) counts all chains together, so the default
    cost of a call does not grow with ``chains``; every chain gets the same
    number, rounded up.
    """
    total = _validate.size(name, total)
    chains = _validate.size("chains", chains)
    return chains, -(-total // chains)


def run_chains(
    run_one: Callable, root: np.random.SeedSequence, chains: int, *, executor, bar, units=1.0
) -> list[ChainRun]:
    """Run ``run_one`` for chains ``0 .. chains - 1`` and return their runs in order.

    ``bar`` is a progress bar advanced by ``units`` per chain: by the chain
    itself (through the ``advance`` callback) when it runs here, on completion
    when it runs on the executor, where ``advance`` is instead a safe point at which
    the chain of an interrupted run stops (:func:`dpinfer.parallel.check_stopped`).
    """
    if executor is None or chains == 1:
        return [run_one(child_sequence(root, c), executor, bar.advance) for c in range(chains)]
    task = _ChainTask(run_one, root)
    return parallel.map_chunks(
        task, root, chains, executor=executor, on_result=lambda _: bar.advance(units)
    )


class _ChainTask:
    """Picklable ``task(index, rng)`` for :func:`parallel.map_chunks`: one chain, serially."""

    def __init__(self, run_one, root):
        self.run_one, self.root = run_one, root

    def __call__(self, index, _rng):
        return self.run_one(child_sequence(self.root, index), None, _stop_if_stopped)


def _stop_if_stopped(_units) -> None:
    """Stop a chain on an executor here if its run was stopped (its progress callback)."""
    parallel.check_stopped()


RULES: dict[str, Callable[[np.ndarray], object]] = {
    "sum": np.sum,
    "mean": np.mean,
    "max": np.max,
    "min": np.min,
    # the mean of unbiased evidence estimates, in log space
    "logmeanexp": lambda x: float(logsumexp(x) - math.log(len(x))),
}


def combine(runs: list[ChainRun], rules: dict[str, str]) -> tuple[dict, dict, dict]:
    """Merge chain runs into ``(posterior, sample_stats, attrs)``, chain-major.

    Every per-chain scalar ``key`` becomes ``attrs['chain_<key>']`` (one value
    per chain) and, when ``rules`` names a rule for it (``sum``, ``mean``,
    ``max``, ``min``, ``logmeanexp``), ``attrs[key]`` too. Per-stage records
    are concatenated over the chains, with ``stage_chain`` saying whose stage
    each entry is.
    """
    first = runs[0]
    posterior = {k: np.concatenate([r.posterior[k] for r in runs]) for k in first.posterior}
    stats = {k: np.concatenate([r.sample_stats[k] for r in runs]) for k in first.sample_stats}
    attrs = {}
    for key in first.stats:
        values = np.array([r.stats[key] for r in runs])
        attrs[f"chain_{key}"] = values
        if key in rules:
            attrs[key] = np.asarray(RULES[rules[key]](values)).item()
    for key in first.stages:
        attrs[key] = np.concatenate([np.asarray(r.stages[key], dtype=float) for r in runs])
    if first.stages:
        lengths = [len(next(iter(r.stages.values()))) for r in runs]
        attrs["stage_chain"] = np.repeat(np.arange(len(runs)), lengths)
    return posterior, stats, attrs
