"""Sweep entries of ``dpinfer.neural`` (SPPE, SPLE, their estimators and settings).

The valid calls train the smallest flows for one round on a few dozen simulations, so
that a bad value silently accepted shows as a slow (silent) call, not a long run. Needs
the ``neural`` extra (torch); the sweep test skips these entries without it.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import scipy.stats as st

import dpinfer as dp

from ._harness import OTHER, Entry
from ._valid import P, choices


def _simulate(p, rng):
    return p["theta"] + rng.standard_normal(len(p["theta"]))


def _model():
    return dp.Model(prior={"theta": st.norm(0.0, 1.0)}, simulate=_simulate)


MECH = dp.Laplace(1.0)


def _tiny():
    from dpinfer.neural import MCMC, SplineFlow, Training

    return {
        "rounds": 1,
        "simulations": 40,
        "noise_copies": 2,
        "draws": 8,
        "chains": 2,
        "rng": 0,
        "flow": SplineFlow(transforms=1, hidden_features=4, residual_blocks=1, bins=2),
        "training": Training(max_epochs=1, batch_size=20),
        "progressbar": False,
        "mcmc": MCMC(warmup=5, thin=1, proposal_chains=2, initial_candidates=20),
    }


def _args(*, mcmc: bool):
    def valid():
        args = {"model": _model(), "mechanism": MECH, "released": 0.3, **_tiny()}
        if not mcmc:
            args.pop("mcmc")
        return args

    return valid


@cache
def _posterior():
    from dpinfer.neural import sppe

    return sppe(**_args(mcmc=False)())[1]


@cache
def _likelihood():
    from dpinfer.neural import sple

    return sple(**_args(mcmc=True)())[1]


def _method(make, name):
    def call(**kwargs):
        return getattr(make(), name)(**kwargs)

    return call


NEURAL_COMMON = (
    P("model", "model"),
    P("mechanism", "mechanism"),
    P("released", "finite_array", [0.5, 0.5], [[0.5]], named="released"),
    P("rounds", "size"),
    P("simulations", "size", 1),
    P("noise_copies", "size", 3, optional=True),
    P("draws", "size"),
    P("chains", "size"),
    P("rng", "rng"),
    P("flow", "", 1.0, "spline", OTHER, named="flow"),
    P("training", "", 1.0, "fast", OTHER, {"max_epochs": 1}),
    P("noise", "", "qmc", 1, None, OTHER, *choices("mc")),
    P("settings", "", "fast", "Paper", None, 1, OTHER, *choices("default")),
    P("device", "", "gpu", "mps", "cuda:x", 0, None, OTHER),
    P("executor", "executor"),
    P("callback", "callable"),
    P("progressbar", "flag"),
)

PARAMS = (
    P("params", "", 1.0, {"theta": "a"}, {"theta": [np.nan]}, {"nope": [1.0]}, {"theta": 1.0}),
    P("released", "finite_array", [0.5, 0.5], [[0.5]], named="released"),
)


def neural_entries(root):
    """The entries; a saved estimator for ``load`` is written in the folder ``root``."""
    from dpinfer import neural

    saved = str(Path(root) / "posterior.pt")
    _posterior().save(saved)
    return [
        Entry(
            "neural.sppe",
            neural.sppe,
            _args(mcmc=False),
            (
                *NEURAL_COMMON,
                P("atoms", "size", 1, optional=True),
                P("embedding", "", "rnn", 3, OTHER, lambda size: "net", *choices("mlp")),
            ),
        ),
        Entry(
            "neural.sple",
            neural.sple,
            _args(mcmc=True),
            (*NEURAL_COMMON, P("mcmc", "", 1.0, "rwm", OTHER, {"warmup": 5})),
        ),
        Entry(
            "neural.SplineFlow",
            neural.SplineFlow,
            dict,
            (
                P("transforms", "size"),
                P("hidden_features", "size", 2**20),
                P("residual_blocks", "size"),
                P("bins", "size", 1),
                P("tail_bound", "positive"),
            ),
        ),
        Entry(
            "neural.Training",
            neural.Training,
            dict,
            (
                P("batch_size", "size", 1),
                P("learning_rate", "positive"),
                P("weight_decay", "non_negative"),
                P("validation_fraction", "probability"),
                P("patience", "size"),
                P("max_epochs", "size"),
                P("clip_norm", "positive", optional=True),
                P("threads", "size", 5000, optional=True),
                P("step_copies", "size", optional=True),
            ),
        ),
        Entry(
            "neural.MLPEmbedding",
            neural.MLPEmbedding,
            dict,
            (P("features", "size"), P("hidden_features", "size"), P("layers", "size")),
        ),
        Entry(
            "neural.CNNEmbedding",
            neural.CNNEmbedding,
            dict,
            (P("features", "size"), P("channels", "size"), P("kernel", "size", 4)),
        ),
        Entry(
            "neural.MCMC",
            neural.MCMC,
            dict,
            (
                P("warmup", "size"),
                P("thin", "size"),
                P("proposal_chains", "size"),
                P("initial_candidates", "size"),
            ),
        ),
        Entry(
            "neural.c2st",
            neural.c2st,
            lambda: {
                "a": np.arange(20.0).reshape(10, 2),
                "b": np.arange(20.0).reshape(10, 2) + 5,
                "folds": 2,
                "epochs": 1,
            },
            (
                P("a", "finite_array", np.zeros((10, 3)), np.zeros((10, 2, 2)), [1.0]),
                P("b", "finite_array", np.zeros((10, 3)), [1.0]),
                P("folds", "size", 1, 11),
                P("epochs", "size"),
                P("max_points", "size", 1),
                P("rng", "rng"),
            ),
        ),
        Entry(
            "neural.load",
            neural.load,
            lambda: {"path": saved},
            (
                P("path", "", 1.0, None, OTHER, b"posterior.pt", named="path"),
                P("flow", "", 1.0, "spline", named="flow"),
                P("embedding", "", "mlp", OTHER),
                P("device", "", "gpu", 0, None, OTHER),
                P("verify", "flag"),
            ),
        ),
        Entry(
            "NeuralPosterior.sample",
            _method(_posterior, "sample"),
            lambda: {"released": 0.3, "draws": 8, "chains": 2, "rng": 0},
            (
                # [0.5, 0.5] is a batch of two releases here; rows of two are not
                P("released", "finite_array", [[0.5, 0.5]], [[[0.5]]], named="released"),
                P("draws", "size"),
                P("chains", "size"),
                P("prior", "", 1.0, "normal", OTHER, {"theta": 1.0}, optional=True),
                P("rng", "rng"),
            ),
        ),
        Entry(
            "NeuralPosterior.log_prob",
            _method(_posterior, "log_prob"),
            lambda: {"params": {"theta": np.array([0.1, 0.2])}, "released": 0.3},
            PARAMS,
        ),
        Entry(
            "NeuralLikelihood.posterior",
            _method(_likelihood, "posterior"),
            lambda: {
                "released": 0.3,
                "prior": {"theta": st.norm(0.0, 1.0)},
                "draws": 8,
                "chains": 2,
                "mcmc": _tiny()["mcmc"],
                "rng": 0,
            },
            (
                P("released", "finite_array", [[0.5, 0.5]], [[[0.5]]], named="released"),
                P("prior", "", 1.0, "normal", None, OTHER, {"theta": 1.0}),
                P("draws", "size"),
                P("chains", "size"),
                P("mcmc", "", 1.0, "rwm", OTHER, {"warmup": 5}),
                P("rng", "rng"),
            ),
        ),
        Entry(
            "NeuralLikelihood.log_prob",
            _method(_likelihood, "log_prob"),
            lambda: {"released": 0.3, "params": {"theta": np.array([0.1, 0.2])}},
            PARAMS,
        ),
        Entry(
            "neural.SplineFlow(call)",
            lambda **kw: neural.SplineFlow(transforms=1, hidden_features=4)(**kw),
            lambda: {"features": 1, "context": 1},
            (P("features", "size"), P("context", "size")),
        ),
    ]


# Public names of dpinfer.neural that take no user input to refuse (results, containers).
NEURAL_NOT_ENTRY_POINTS = {"RoundInfo"}
