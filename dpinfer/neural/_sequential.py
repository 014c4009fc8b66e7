"""The round loop shared by SPPE and SPLE (Xiong, Ju and Zhang 2023, Algorithms 1-2).

Each round draws parameters from the current proposal (the prior first, then
the latest posterior estimate), simulates the confidential statistics,
privatises each of them ``copies`` times, adds them to the pool and trains the
estimator on the whole pool, continuing from the previous round's weights. A
method (SPPE or SPLE) supplies the estimator's orientation, the loss of each
round, and how to draw from the posterior estimate.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, NamedTuple

import numpy as np
import torch

from .._progress import progress_bar
from .._rng import child_sequence
from ..samplers._simulate import BatchSimulator
from ._device import CPU
from ._embeddings import build_embedding, embedding_spec
from ._flows import ConditionalDensity, SplineFlow, build_flow, standardisation
from ._result import neural_result
from ._simulations import Pool, prior_log_density, privatise, validation_mask
from ._torch_rng import forked, generator
from ._training import Fit, Training, fit, torch_threads

# simulations per chunk handed to the executor
SIMULATION_CHUNK = 1000
# child seeds of the root, one stream per use
SIMULATE, PRIOR, NOISE, INIT, TRAIN, PROPOSE, SPLIT, DEQUANTISE, FINAL, SPACE = range(10)


@dataclass
class Setup:
    """The validated inputs of a sequential run."""

    model: Any
    mechanism: Any
    released: np.ndarray
    space: Any
    copies: int
    qmc: bool
    training: Training
    flow: Callable
    root: np.random.SeedSequence
    executor: Any
    progressbar: bool
    dequantise: bool = False
    device: torch.device = CPU
    embedding: Any = None

    def seq(self, stream: int, index: int = 0) -> np.random.SeedSequence:
        """Return the seed of ``stream`` for round (or item) ``index``."""
        return child_sequence(child_sequence(self.root, stream), index)

    def flow_spec(self) -> dict | None:
        """Return settings that rebuild the flow builder on loading (None for a custom one)."""
        return self.flow.spec() if isinstance(self.flow, SplineFlow) else None

    def embedding_spec(self) -> dict | None:
        """Return settings that rebuild a preset embedding on loading (None otherwise)."""
        return embedding_spec(self.embedding)


class Final(NamedTuple):
    """The method's final draws: parameters, per-draw statistics, and metadata."""

    params: dict
    sample_stats: dict
    attrs: dict


class RoundInfo(NamedTuple):
    """What ``callback`` receives after each round.

    Attributes
    ----------
    round : int
        The round just finished (1-based).
    estimator : NeuralPosterior or NeuralLikelihood
        The estimator trained on rounds ``1 .. round``.
    draws : dict
        Parameters drawn from this round's posterior estimate (the next round's
        proposals, or the final draws after the last round).
    n_simulations : int
        Simulations so far.
    training_seconds, seconds : float
        Training time so far and wall time so far.
    """

    round: int
    estimator: Any
    draws: dict
    n_simulations: int
    training_seconds: float
    seconds: float


class RoundRecord(NamedTuple):
    """One round's training history; each field becomes a per-round attribute."""

    simulations: int
    epochs: int
    train_loss: float
    val_loss: float
    simulation_seconds: float
    training_seconds: float
    sampling_seconds: float


def build_density(setup: Setup, x: np.ndarray, context: np.ndarray) -> ConditionalDensity:
    """Build a flow of ``x`` given ``context``, standardised by these first-round values.

    With ``setup.embedding`` the context passes through the embedding network
    first, and the flow is conditioned on its output.
    """
    with forked(setup.seq(INIT)):
        net, conditions = build_embedding(setup.embedding, context.shape[-1])
        flow = build_flow(setup.flow, x.shape[-1], conditions)
    density = ConditionalDensity(
        flow, *standardisation(x), *standardisation(context), embedding=net
    )
    return density.to(setup.device)


def run_rounds(setup: Setup, method, rounds: int, simulations: int, callback) -> dict:
    """Run the rounds; return the estimator, final draws, per-round records and curves.

    ``callback(info)`` may return True to stop after the current round.
    """
    run = _Run(setup, method, simulations)
    final = None
    with (
        torch_threads(setup.training.threads),
        progress_bar(method.label, total=rounds, enabled=setup.progressbar) as bar,
    ):
        threads = torch.get_num_threads()
        z = setup.space.batch_to_unconstrained(
            setup.model.prior.sample(simulations, np.random.default_rng(setup.seq(PRIOR)))
        )
        for r in range(rounds):
            estimator = run.train_round(r, z, bar, rounds)
            t0 = time.perf_counter()
            if r == rounds - 1:
                final = method.final(setup, estimator, setup.seq(FINAL))
                draws = final.params
            else:
                z = method.propose(setup, estimator, simulations, setup.seq(PROPOSE, r))
                draws = setup.space.batch_from_unconstrained(z)[0]
            run.close_round(time.perf_counter() - t0)
            bar.advance(1)
            if callback is not None and callback(run.info(r, estimator, draws)) and final is None:
                t0 = time.perf_counter()
                final = method.final(setup, estimator, setup.seq(FINAL))
                run.close_round(time.perf_counter() - t0, extend=True)
                break
    return {
        "estimator": estimator,
        "final": final,
        "records": run.records,
        "curves": run.curves,
        "n_simulations": len(run.pool),
        "seconds": time.perf_counter() - run.start,
        "threads": threads,
    }


class _Run:
    """The pool, the density and the history of one sequential run."""

    def __init__(self, setup: Setup, method, simulations: int):
        self.setup, self.method, self.simulations = setup, method, simulations
        self.pool = Pool()
        self.records: list[RoundRecord] = []
        self.density: torch.nn.Module | None = None
        self.curves: dict[str, list] = {"train": [], "val": [], "round": []}
        self.simulate = BatchSimulator(
            setup.model,
            setup.mechanism,
            setup.released,
            child_sequence(setup.root, SIMULATE),
            batch_size=SIMULATION_CHUNK,
            executor=setup.executor,
            score=_statistic,
        )
        self.start = time.perf_counter()
        self._pending: tuple[int, Fit, float, float] | None = None

    def train_round(self, r: int, z: np.ndarray, bar, rounds: int):
        """Simulate at ``z``, add to the pool, train; return the estimator."""
        setup, method = self.setup, self.method
        t0 = time.perf_counter()
        _add_round(setup, self.pool, self.simulate, z, r)
        t1 = time.perf_counter()
        if self.density is None:
            self.density = method.build(setup, self.pool)
        data, train, val = self.pool.tensors(setup.device)

        def report(epoch, train_loss, val_loss):
            bar.update(
                description=f"{method.label} round {r + 1}/{rounds}: epoch {epoch}, "
                f"validation loss {val_loss:.4g}"
            )

        trained = fit(
            self.density,
            method.loss(r, setup.training.step_copies),
            data,
            train,
            val,
            setup.training,
            generator(setup.seq(TRAIN, r)),
            report,
        )
        self.curves["train"] += trained.epoch_train_loss
        self.curves["val"] += trained.epoch_val_loss
        self.curves["round"] += [r + 1] * trained.epochs
        self._pending = (len(z), trained, t1 - t0, trained.seconds)
        return method.estimator(setup, self.density)

    def close_round(self, sampling_seconds: float, *, extend: bool = False) -> None:
        """Record the round just trained (or add sampling time to the last record)."""
        if extend:
            last = self.records[-1]
            self.records[-1] = last._replace(
                sampling_seconds=last.sampling_seconds + sampling_seconds
            )
            return
        if self._pending is None:
            raise RuntimeError("close_round needs a round trained by train_round")
        n, trained, sim_seconds, train_seconds = self._pending
        self.records.append(
            RoundRecord(
                n,
                trained.epochs,
                trained.train_loss,
                trained.val_loss,
                sim_seconds,
                train_seconds,
                sampling_seconds,
            )
        )

    def info(self, r: int, estimator, draws: dict) -> RoundInfo:
        """Return what the callback receives after round ``r``."""
        return RoundInfo(
            r + 1,
            estimator,
            draws,
            len(self.pool),
            sum(rec.training_seconds for rec in self.records),
            time.perf_counter() - self.start,
        )


def _add_round(setup: Setup, pool: Pool, simulate, z: np.ndarray, r: int) -> None:
    params, log_jac = setup.space.batch_from_unconstrained(z)
    s = simulate(params)
    s_dp = privatise(
        setup.mechanism, s, setup.copies, setup.qmc, np.random.default_rng(setup.seq(NOISE, r))
    )
    if setup.dequantise:
        s_dp = s_dp + np.random.default_rng(setup.seq(DEQUANTISE, r)).random(s_dp.shape)
    pool.add(
        z=z,
        log_prior=prior_log_density(setup.model, params, log_jac),
        s_dp=s_dp,
        round_index=r,
        validation=validation_mask(
            len(z), setup.training.validation_fraction, np.random.default_rng(setup.seq(SPLIT, r))
        ),
    )


def _statistic(s, rng):
    return s


def history_attrs(run: dict, setup: Setup) -> dict:
    """Per-round and per-epoch training history as netCDF-storable attributes."""
    records = run["records"]
    per_round = {
        f"round_{field}": np.array([getattr(rec, field) for rec in records], dtype=float)
        for field in RoundRecord._fields
    }
    attrs: dict[str, object] = dict(per_round)
    attrs.update(
        {
            "rounds": len(records),
            "n_simulations": run["n_simulations"],
            "noise_copies": setup.copies,
            "noise": "rqmc" if setup.qmc else "mc",
            "simulation_seconds": float(per_round["round_simulation_seconds"].sum()),
            "training_seconds": float(per_round["round_training_seconds"].sum()),
            "sampling_seconds": float(per_round["round_sampling_seconds"].sum()),
            "wall_seconds": run["seconds"],
            "epoch_train_loss": np.array(run["curves"]["train"], dtype=float),
            "epoch_val_loss": np.array(run["curves"]["val"], dtype=float),
            "epoch_round": np.array(run["curves"]["round"], dtype=np.int64),
            "training": asdict(setup.training),
            "flow": repr(setup.flow),
            "torch_threads": run["threads"],
        }
    )
    return attrs


def run_result(run: dict, setup: Setup, method, name: str, **attrs):
    """Build the InferenceData of a finished run: final draws, history, metadata."""
    final = run["final"]
    return neural_result(
        final.params,
        info=method.info,
        released=setup.released,
        method=name,
        root=setup.root,
        chains=method.chains,
        sample_stats=final.sample_stats,
        **history_attrs(run, setup),
        **final.attrs,
        **attrs,
    )
