"""Sweep entries of the analyst's side: comparisons, distances, models, samplers, PyMC."""

from __future__ import annotations

import numpy as np
import scipy.stats as st

import dpinfer as dp
from dpinfer import compare
from dpinfer import distances as dist

from ._harness import HUGE, OTHER, Entry
from ._valid import (
    MECH,
    OBS,
    PSEUDO,
    THETA,
    P,
    _build_normal,
    _poisson_factory,
    _pseudo_model,
    _pymc_normal_model,
    _records,
    _rfmmd,
    _simulate,
    _to_pymc,
    _to_pymc_totals,
    _update,
    choices,
    model,
    poisson_model,
    record_model,
)

SAMPLER_COMMON = (
    P("model", "model"),
    P("mechanism", "mechanism"),
    P("released", "finite_array", [0.5, 0.5], [[0.5]], named="released"),
    P("chains", "size"),
    P("rng", "rng"),
    P("batch_size", "size"),
    P("executor", "executor"),
    P("progressbar", "flag"),
)

PUBLIC_DRAWS = (
    P("rng", "rng"),
    P("batch_size", "size"),
    P("executor", "executor"),
    P("progressbar", "flag"),
    P("privacy_rng", "rng"),
)


def _sampler_args(**extra):
    return lambda: {
        "model": model(),
        "mechanism": MECH,
        "released": 0.5,
        "chains": 2,
        "rng": 0,
        "batch_size": 50,
        "progressbar": False,
        **extra,
    }


def _abcdp_args(**extra):
    return lambda: {
        "observed": OBS,
        "distance": _rfmmd(),
        "params": THETA,
        "pseudo_data": PSEUDO,
        "rng": 0,
        "privacy_rng": 1,
        "batch_size": 10,
        "progressbar": False,
        **extra,
    }


def _abcdp_model_args():
    return {
        "observed": OBS,
        "distance": _rfmmd(),
        "model": _pseudo_model(),
        "n_proposals": 20,
        "epsilon_total": 1.0,
        "epsilon_abc": 0.2,
        "c": 2,
        "rng": 0,
        "privacy_rng": 1,
        "batch_size": 10,
        "progressbar": False,
    }


def _prior_draws(released, rng):
    """A cheap stand-in sampler for the SBC entry: draws from the prior."""
    draws = np.random.default_rng(rng).normal(size=20)
    return dp.results.to_inference_data({"theta": draws}, attrs={"sampler": "prior"}, chains=2)


def compare_entries():
    rng = np.random.default_rng(0)
    a = {"x": rng.normal(size=(2, 20))}
    b = {"x": rng.normal(size=(2, 20))}
    return [
        Entry(
            "compare.compare_posteriors",
            compare.compare_posteriors,
            lambda: {"a": a, "b": b, "mmd_points": 20},
            (
                P("a", "", 1.0, "x", None, {"x": "abc"}, {"x": [np.nan, 1.0]}, {}),
                P("b", "", 1.0, "x", None, {"x": "abc"}, {"y": [1.0, 2.0]}),
                P("var_names", "", 3, ["nope"], "x", named="var_names"),
                P("quantiles", "", [1.5], ["a"], [np.nan], 0.5),
                P("mmd_points", "size"),
                P("rng", "rng"),
            ),
        ),
        Entry(
            "calibration.sbc",
            dp.sbc,
            lambda: {
                "sample": _prior_draws,
                "model": model(),
                "mechanism": MECH,
                "replicates": 5,
                "rng": 0,
                "progressbar": False,
            },
            (
                P("sample", "callable"),
                P("model", "model"),
                P("mechanism", "mechanism"),
                P("replicates", "size"),
                P("estimator_options", "", 1.0, "x", optional=True),
                P("rng", "rng"),
                P("executor", "executor"),
                P("progressbar", "flag"),
            ),
        ),
        Entry(
            "compare.mmd",
            compare.mmd,
            lambda: {"x": rng.normal(size=(20, 1)), "y": rng.normal(size=(20, 1))},
            (
                P("x", "finite_array", np.zeros((20, 2))),
                P("y", "finite_array", np.zeros((20, 2))),
                P("max_points", "size"),
                P("rng", "rng"),
            ),
        ),
    ]


def distance_entries():
    return [
        Entry(
            "distances.ClippedL2",
            dist.ClippedL2,
            lambda: {"clip": 1.0},
            (
                P("clip", "positive"),
                P("weights", "", "abc", 0.0, [1.0, -1.0], [np.nan], [], [True], [0.0, 0.0]),
                P("summary", "callable"),
            ),
        ),
        Entry(
            "distances.PairedClippedL2",
            dist.PairedClippedL2,
            lambda: {"clip": 1.0},
            (
                P("clip", "positive"),
                P("weights", "", "abc", 0.0, [1.0, -1.0], [np.nan], [], [True]),
                P("relative", "", 1.0, "abc", [-1], [1.5], OTHER),
            ),
        ),
        Entry(
            "distances.GaussianKernel",
            dist.GaussianKernel,
            lambda: {"bandwidth": 1.0},
            (P("bandwidth", "positive"),),
        ),
        Entry(
            "distances.MMD",
            dist.MMD,
            lambda: {"kernel": 1.0},
            (P("kernel", "positive", named="kernel"),),
        ),
        Entry(
            "distances.RandomFeatureMMD",
            dist.RandomFeatureMMD,
            lambda: {"n_features": 4, "bandwidth": 1.0, "rng": 0},
            (
                P("n_features", "size"),
                P("bandwidth", "positive"),
                P("dim", "size"),
                P("rng", "rng"),
            ),
        ),
        Entry(
            "distances.median_heuristic",
            dist.median_heuristic,
            lambda: {"data": np.arange(10.0)[:, None]},
            (
                P("data", "finite_array", np.zeros((1, 1))),
                P("max_points", "size"),
                P("rng", "rng"),
            ),
        ),
        Entry(
            "distances.DataDerived",
            dist.DataDerived,
            lambda: {"value": 1.0, "data": np.full((4, 1), 7.0)},
            (P("value", "positive"), P("data", "finite_array")),
        ),
        Entry(
            "distances.PrecomputedDistances",
            dist.PrecomputedDistances,
            lambda: {"base": _rfmmd(), "observed": OBS, "values": [0.1, 0.2]},
            (
                P("base", "distance", named="base"),
                P("observed", "finite_array"),
                P("values", "finite_array", [-0.1], [[0.1]]),
            ),
        ),
    ]


def model_entries():
    return [
        Entry(
            "Prior",
            dp.Prior,
            lambda: {"spec": {"theta": st.norm(0, 1)}},
            (
                P(
                    "spec",
                    "",
                    1.0,
                    "x",
                    None,
                    {},
                    {"theta": 1.0},
                    {"theta": "norm"},
                    named="prior",
                ),
                P("logpdf", "callable"),
            ),
        ),
        Entry(
            "Prior.sample",
            lambda **kw: dp.Prior({"theta": st.norm(0, 1)}).sample(**kw),
            lambda: {"n": 3, "rng": np.random.default_rng(0)},
            (P("n", "size"), P("rng", "rng")),
        ),
        Entry(
            "Model",
            dp.Model,
            lambda: {"prior": {"theta": st.norm(0, 1)}, "simulate": _simulate},
            (
                P("prior", "", 1.0, "x", {}, named="prior"),
                P("simulate", "callable"),
                P("loglik", "callable"),
                P("likelihood", "", 1.0, "x", OTHER),
            ),
        ),
        Entry(
            "RecordModel",
            dp.RecordModel,
            lambda: {
                "prior": {"p": st.beta(2, 2)},
                "simulate": _records,
                "statistic": lambda x: x,
                "update": _update,
            },
            (
                P("prior", "", 1.0, "x", {}, named="prior"),
                P("simulate", "callable_required"),
                P("statistic", "callable_required"),
                P("summary", "callable"),
                P("loglik", "callable"),
                P("update", "callable"),
                P(
                    "support",
                    "",
                    1.0,
                    "x",
                    {"p": "nope"},
                    {"q": "positive"},
                    {"p": choices("unit")[0]},
                ),
            ),
        ),
        Entry(
            "AscentSchedule",
            dp.AscentSchedule,
            dict,
            (
                P("start", "size"),
                P("tol", "positive"),
                P("alpha", "probability"),
                P("max_size", "size"),
                P("max_iterations", "count"),
            ),
        ),
        Entry(
            "StagedSchedule",
            dp.StagedSchedule,
            dict,
            (
                P("stages", "", (), 1.0, ((0, 0.1),), ((10, -0.1),), (("a", 0.1),)),
                P("max_iterations", "count"),
            ),
        ),
        *grid_entries(),
    ]


def _grid_posterior():
    return dp.GridPosterior(np.linspace(-3, 3, 11), _half_square)


def _half_square(x):
    return -0.5 * x**2


def grid_entries():
    return [
        Entry(
            "GridPosterior",
            dp.GridPosterior,
            lambda: {"grid": np.linspace(-3, 3, 11), "log_likelihood": _half_square},
            (
                P("grid", "finite_array", [[0.0, 1.0]], [0.0, 0.0, 1.0]),
                P("log_likelihood", "callable_required", np.zeros(3)),
                P("log_prior", "callable", np.zeros(3), optional=True),
                P("log_shift", "finite", -1e4, optional=True),
            ),
        ),
        Entry(
            "GridPosterior.logspace",
            dp.GridPosterior.logspace,
            lambda: {"lower": 0.1, "upper": 10.0, "log_likelihood": _half_square, "num": 11},
            (P("lower", "positive"), P("upper", "positive", 0.01), P("num", "size", 2)),
        ),
        Entry(
            "GridPosterior.ppf",
            lambda **kw: _grid_posterior().ppf(**kw),
            lambda: {"q": 0.5},
            (P("q", "probability"),),
        ),
        Entry(
            "GridPosterior.sample",
            lambda **kw: _grid_posterior().sample(**kw),
            lambda: {"draws": 3, "chains": 2, "rng": 0},
            (P("draws", "size"), P("chains", "size"), P("rng", "rng")),
        ),
    ]


def sampler_entries():
    sizes = (P("max_simulations", "size"),)
    return [
        Entry(
            "rejection_abc",
            dp.rejection_abc,
            _sampler_args(draws=4),
            (*SAMPLER_COMMON, P("draws", "size"), *sizes),
        ),
        Entry(
            "estimate_acceptance_rate",
            dp.estimate_acceptance_rate,
            lambda: {
                "model": model(),
                "mechanism": MECH,
                "released": 0.5,
                "simulations": 50,
                "rng": 0,
                "batch_size": 20,
            },
            (
                P("model", "model"),
                P("mechanism", "mechanism"),
                P("released", "finite_array", [0.5, 0.5], [[0.5]], named="released"),
                P("simulations", "size", 1),
                P("rng", "rng"),
                P("batch_size", "size"),
                P("executor", "executor"),
            ),
        ),
        Entry(
            "AcceptanceRate.expected_simulations",
            lambda **kw: dp.AcceptanceRate(-2.0, -4.0, 100, 0.0).expected_simulations(**kw),
            lambda: {"draws": 10, "z": 1.0},
            (P("draws", "size"), P("z", "non_negative")),
        ),
        Entry(
            "importance_abc",
            dp.importance_abc,
            _sampler_args(draws=4),
            (
                *SAMPLER_COMMON,
                P("draws", "size"),
                *sizes,
                P("target_ess", "positive", optional=True),
                P("proposal", "", 1.0, "x", OTHER),
            ),
        ),
        Entry(
            "smc_abc",
            dp.smc_abc,
            _sampler_args(particles=40, max_stages=2),
            (
                *SAMPLER_COMMON,
                P("particles", "size"),
                P("ess_fraction", "probability"),
                P("resample_fraction", "probability"),
                P("move_probability", "probability"),
                P("max_moves", "count"),
                P("max_stages", "count"),
                P("simulations_per_particle", "count", "all", *choices("auto")),
            ),
        ),
        Entry(
            "tolerance_smc_abc",
            dp.tolerance_smc_abc,
            _sampler_args(particles=40, max_stages=2),
            (
                *SAMPLER_COMMON,
                P("particles", "size"),
                P("final_tolerance", "non_negative"),
                P("quantile", "probability"),
                P("min_acceptance", "probability"),
                P("move_probability", "probability"),
                P("max_moves", "count"),
                P("max_stages", "count"),
            ),
        ),
        Entry(
            "mcem",
            dp.mcem,
            lambda: {
                "model": poisson_model(),
                "mechanism": MECH,
                "released": 37.4,
                "start": {"theta": 30.0},
                "rng": 0,
                "progressbar": False,
                "schedule": dp.StagedSchedule(stages=((200, 0.5),), max_iterations=2),
            },
            (
                P("model", "model"),
                P("mechanism", "mechanism"),
                P("released", "finite_array", [1.0, 2.0], named="released"),
                P(
                    "start",
                    "",
                    1.0,
                    "x",
                    {"theta": "a"},
                    {"theta": np.nan},
                    {"nope": 1.0},
                    {"theta": -1.0},
                ),
                P("rng", "rng"),
                P("schedule", "", 1.0, "fast", OTHER, *choices("auto")),
                P("mstep", "", 1.0, "fast", OTHER, *choices("auto")),
                P("accelerate", "flag"),
                P("batch_size", "size"),
                P("executor", "executor"),
                P("progressbar", "flag"),
            ),
        ),
        Entry(
            "da_mcmc",
            dp.da_mcmc,
            lambda: {
                "record_model": record_model(),
                "mechanism": MECH,
                "released": 5.2,
                "n": 10,
                "draws": 3,
                "tune": 2,
                "chains": 2,
                "rng": 0,
                "progressbar": False,
            },
            (
                P("record_model", "model", model(), named="record_model"),
                P("mechanism", "mechanism"),
                P("released", "finite_array", [1.0, 2.0], named="released"),
                P("n", "size"),
                P("draws", "size"),
                P("tune", "non_negative", 2.5, HUGE),
                P("chains", "size"),
                P("rng", "rng"),
                P("theta_steps", "count"),
                P("init_datasets", "size", optional=True),
                P("executor", "executor"),
                P("progressbar", "flag"),
            ),
        ),
        Entry(
            "sample_reference",
            dp.sample_reference,
            lambda: {
                "model": _build_normal,
                "mechanism": MECH,
                "released": 0.5,
                "draws": 5,
                "tune": 5,
                "chains": 1,
                "rng": 0,
            },
            (
                P("mechanism", "mechanism"),
                P("released", "finite_array", [1.0, 2.0]),
                P("draws", "size"),
                P("tune", "non_negative", 2.5, HUGE),
                P("chains", "size"),
                P("rng", "rng"),
                P("progressbar", "flag"),
                P("var_names", "", 3, ["nope"]),
            ),
        ),
        Entry(
            "abcdp",
            dp.abcdp,
            _abcdp_args(epsilon_total=1.0, epsilon_abc=0.2, c=2),
            (
                P("observed", "finite_array", named="observed"),
                P("distance", "distance"),
                P("epsilon_total", "positive_or_inf"),
                P("epsilon_abc", "finite"),
                P("c", "count"),
                P("resample", "flag"),
                P("charged", "privacy", optional=True),
                P("params", "", 1.0, {"mu": [1.0]}, {"mu": ["a"] * 30}),
                P("pseudo_data", "", 1.0, "x", np.zeros((3, 10, 1))),
                *PUBLIC_DRAWS,
            ),
        ),
        Entry(
            "abcdp(model=)",
            dp.abcdp,
            _abcdp_model_args,
            (P("model", "model"), P("n_proposals", "size"), *PUBLIC_DRAWS),
        ),
        Entry(
            "rejection_abcdp_gaussian",
            dp.rejection_abcdp_gaussian,
            _abcdp_args(epsilon_total=1.0, epsilon_abc=0.2, distance_bound=1.0),
            (
                P("observed", "finite_array", named="observed"),
                P("distance", "distance"),
                P("epsilon_total", "positive"),
                P("epsilon_abc", "non_negative"),
                P("distance_bound", "positive"),
                *PUBLIC_DRAWS,
            ),
        ),
        Entry(
            "soft_abcdp",
            dp.soft_abcdp,
            _abcdp_args(epsilon_total=1.0, delta_total=1e-5, epsilon_abc=0.2, draws=5),
            (
                P("observed", "finite_array", named="observed"),
                P("distance", "distance"),
                P("epsilon_total", "positive"),
                P("delta_total", "probability"),
                P("epsilon_abc", "positive"),
                P("draws", "size", optional=True),
                P("resample_rng", "rng"),
                *PUBLIC_DRAWS,
            ),
        ),
        Entry(
            "public_distances",
            dp.samplers.public_distances,
            _public_distances_args,
            (
                P("observed", "finite_array", named="observed"),
                P("distance", "distance"),
                P("params", "", 1.0, {"mu": [1.0]}, {"mu": ["a"] * 30}),
                P("pseudo_data", "", 1.0, "x", np.zeros((3, 10, 1))),
                *PUBLIC_DRAWS[:-1],
            ),
        ),
        Entry(
            "public_distances(model=)",
            dp.samplers.public_distances,
            lambda: {k: v for k, v in _abcdp_model_args().items() if k not in _NO_ABCDP},
            (P("model", "model"), P("n_proposals", "size")),
        ),
        Entry(
            "check_privacy_rng",
            dp.samplers.check_privacy_rng,
            lambda: {"privacy_rng": 1, "public": [0]},
            (P("privacy_rng", "rng"),),
        ),
    ]


#: The options of abcdp that public_distances, its first half, does not take.
_NO_ABCDP = dict.fromkeys(("epsilon_total", "epsilon_abc", "c", "privacy_rng"))


def _public_distances_args():
    return {k: v for k, v in _abcdp_args()().items() if k not in _NO_ABCDP}


def pymc_entries():
    family = dp.ExponentialFamily(statistic=lambda s: s, maximize=lambda m: {"theta": m[0]})
    return [
        Entry(
            "ExponentialFamily",
            dp.ExponentialFamily,
            lambda: {"statistic": lambda s: s, "maximize": lambda m: {"theta": m[0]}},
            (P("statistic", "callable_required"), P("maximize", "callable_required")),
        ),
        Entry(
            "Likelihood.from_pymc",
            dp.Likelihood.from_pymc,
            lambda: {
                "factory": _poisson_factory,
                "params": ["theta"],
                "support": {"theta": "positive"},
                "exponential_family": family,
            },
            (
                P("factory", "callable_required"),
                P("params", "", 1.0, "theta", [], [1.0], None),
                P("support", "", 1.0, "x", {"theta": "nope"}, {"q": "positive"}),
                P("exponential_family", "", 1.0, "x", OTHER),
            ),
        ),
        Entry(
            "Model.from_pymc",
            dp.Model.from_pymc,
            lambda: {"pymc_model": _pymc_normal_model(), "statistic": "s"},
            (
                P("pymc_model", "", 1.0, "x", None, OTHER, named="pymc_model"),
                P("statistic", "", 1.0, "nope", None, [], OTHER),
                P("params", "", 1.0, "mu", ["nope"], []),
                P("support", "", 1.0, "x", {"mu": "nope"}, {"q": "positive"}),
                P("exponential_family", "", 1.0, "x", OTHER),
            ),
        ),
        Entry(
            "Mechanism.log_max_density_at",
            lambda **kw: dp.Laplace(1.0).log_max_density_at(**kw),
            lambda: {"released": 0.5},
            (P("released", "finite_array", [1.0, 2.0]),),
        ),
        Entry(
            "Mechanism.to_pymc(name)",
            _to_pymc,
            lambda: {"observed": 0.5},
            (P("name", "", 1.0, None, OTHER, ""),),
        ),
        Entry(
            "to_pymc(totals)",
            _to_pymc_totals,
            lambda: {"totals": ([0, 0], [9])},
            (
                P(
                    "totals",
                    "",
                    1.0,
                    "x",
                    OTHER,
                    ([0, 0],),
                    ([0, 0], [9], 1),
                    ("x", [9]),
                    ([0, 0], "x"),
                    ([0, 0], []),
                    ([0, 0], [[9]]),
                    ([0, 0], [-1]),
                    ([0, 0], [2.5]),
                    ([0, 0], [np.nan]),
                    ([0, 0], [2.0**70]),
                    ([0, 1], [9]),
                    ([0, -2], [9]),
                    ([[0, 0, 0]], [9]),
                    ([-1, -1], [9]),
                    optional=True,
                ),
            ),
        ),
    ]
