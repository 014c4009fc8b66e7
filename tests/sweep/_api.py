"""The public API as a list of entry points, each with tiny valid arguments.

Every entry is called once per bad value of each listed parameter while the other
arguments stay valid; the valid settings are small so that a bad value that is
silently accepted costs milliseconds, not a sampler run.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import scipy.stats as st

import dpinfer as dp
from dpinfer import accounting, audit, compare, theory
from dpinfer import distances as dist

from ._harness import HUGE, OTHER, Entry, Param


def P(name, kind="", *extra, named="", optional=False, elementwise=False):  # noqa: N802
    return Param(name, kind, tuple(extra), named, optional, elementwise)


# --- tiny valid pieces ------------------------------------------------------------------


def _simulate(p, rng):
    return p["theta"] + rng.standard_normal(len(p["theta"]))


def model():
    return dp.Model(prior={"theta": st.norm(0.0, 1.0)}, simulate=_simulate)


def _records(params, n, rng):
    return (rng.random((len(params["p"]), n)) < params["p"][:, None]).astype(np.int64)


def _update(records, rng):
    ones = records.sum(axis=1)
    return {"p": rng.beta(2 + ones, 2 + records.shape[1] - ones)}


def record_model():
    return dp.RecordModel({"p": st.beta(2, 2)}, _records, lambda x: x, update=_update)


@cache
def _poisson_likelihood():
    import pymc as pm

    return dp.Likelihood.from_pymc(
        lambda p: pm.Poisson.dist(mu=p["theta"]),
        params=["theta"],
        support={"theta": "positive"},
        exponential_family=dp.ExponentialFamily(
            statistic=lambda s: s, maximize=lambda m: {"theta": m[0]}
        ),
    )


def poisson_model():
    return dp.Model(
        simulate=lambda p, rng: rng.poisson(p["theta"]), likelihood=_poisson_likelihood()
    )


MECH = dp.Laplace(1.0)
OBS = np.random.default_rng(5).normal(size=(10, 1))
THETA = {"mu": np.linspace(-1.0, 1.0, 30)}
PSEUDO = THETA["mu"][:, None, None] + np.zeros((30, 10, 1))


def _rfmmd():
    return dist.RandomFeatureMMD(8, 1.3, rng=1)


# --- parameter groups shared by many entries ---------------------------------------------

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


def _mech_method(make, method, **fixed):
    def call(**kwargs):
        return getattr(make(), method)(**{**fixed, **kwargs})

    return call


def _curator_entries():
    mechanisms = {
        "Laplace": (dp.Laplace, {"scale": 1.0}, "scale"),
        "Gaussian": (dp.Gaussian, {"sigma": 1.0}, "sigma"),
        "DiscreteLaplace": (dp.DiscreteLaplace, {"scale": 1.0}, "scale"),
        "DiscreteGaussian": (dp.DiscreteGaussian, {"sigma": 1.0}, "sigma"),
    }
    entries = []
    for name, (cls, args, scale) in mechanisms.items():
        entries += [
            Entry(
                name,
                cls,
                lambda args=args: dict(args),
                (
                    P(scale, "positive", [], [1.0, -1.0], [[np.nan]]),
                    P("sensitivity", "positive", optional=True),
                    P("event_shape", "event_shape"),
                ),
            ),
            Entry(
                f"{name}.from_privacy",
                cls.from_privacy,
                lambda cls=cls: (
                    {"epsilon": 1.0, "sensitivity": 1.0}
                    | ({"delta": 1e-5} if "Gaussian" in cls.__name__ else {})
                ),
                (P("epsilon", "positive"), P("sensitivity", "positive"))
                + ((P("delta", "probability"),) if "Gaussian" in cls.__name__ else ())
                + (P("event_shape", "event_shape"),),
            ),
            Entry(
                f"{name}.release",
                _mech_method(lambda cls=cls, args=args: cls(**args), "release"),
                lambda: {"value": 3, "rng": 0},
                (P("value", "finite_array", elementwise=True), P("rng", "rng")),
            ),
            Entry(
                f"{name}.logpdf",
                _mech_method(lambda cls=cls, args=args: cls(**args), "logpdf"),
                lambda: {"released": 3, "value": 3},
                (
                    P("released", "finite_array", elementwise=True),
                    P("value", "finite_array", elementwise=True),
                ),
            ),
        ]
    return entries


def _to_pymc(name="r", **kwargs):
    import pymc as pm

    with pm.Model():
        return dp.Laplace(1.0).to_pymc(name, 0.0, **kwargs)


def _svt():
    return dp.SparseVector(0.0, scale=1.0, c=1, sensitivity=1.0)


def _binomial():
    return {"n": 10, "m": 4, "population": 100, "length": 3}


def mechanism_entries():
    return [
        *_curator_entries(),
        Entry(
            "Mechanism.to_pymc",
            _to_pymc,
            lambda: {"observed": 0.5},
            (P("observed", "finite_array", [1.0, 2.0]),),
        ),
        Entry(
            "BinomialRelease",
            dp.BinomialRelease,
            _binomial,
            (P("n", "size"), P("m", "positive"), P("population", "size"), P("length", "size")),
        ),
        Entry(
            "BinomialRelease.from_privacy",
            dp.BinomialRelease.from_privacy,
            lambda: {"epsilon": 1.0, "n": 10, "population": 100, "length": 3},
            (
                P("epsilon", "positive"),
                P("n", "size"),
                P("population", "size"),
                P("length", "size"),
            ),
        ),
        Entry(
            "SparseVector",
            dp.SparseVector,
            lambda: {"threshold": 0.0, "scale": 1.0, "c": 1, "sensitivity": 1.0},
            (
                P("threshold", "finite"),
                P("scale", "positive"),
                P("c", "count"),
                P("sensitivity", "positive"),
                P("resample", "flag"),
            ),
        ),
        Entry(
            "SparseVector.from_privacy",
            dp.SparseVector.from_privacy,
            lambda: {"epsilon": 1.0, "threshold": 0.0, "c": 1, "sensitivity": 1.0},
            (
                P("epsilon", "positive"),
                P("threshold", "finite"),
                P("c", "count"),
                P("sensitivity", "positive"),
                P("resample", "flag"),
            ),
        ),
        Entry(
            "SparseVector.run",
            lambda **kw: _svt().run(**kw),
            lambda: {"queries": [0.1, 2.0], "rng": 0},
            (P("queries", "finite_array", [[1.0, 2.0]], elementwise=True), P("rng", "rng")),
        ),
        Entry(
            "Privacy",
            dp.Privacy,
            lambda: {"epsilon": 1.0},
            (
                P("epsilon", "positive_or_inf"),
                P("delta", "delta"),
                P("rho", "positive", optional=True),
                P("neighbouring", "", 3, OTHER),
            ),
        ),
    ]


def accounting_entries():
    gauss = lambda: {"sigma": 2.0, "sensitivity": 1.0}  # noqa: E731
    return [
        Entry(
            "accounting.laplace_epsilon",
            accounting.laplace_epsilon,
            lambda: {"scale": 1.0, "sensitivity": 1.0},
            (P("scale", "positive"), P("sensitivity", "positive")),
        ),
        Entry(
            "accounting.gaussian_delta",
            accounting.gaussian_delta,
            lambda: {"epsilon": 1.0, **gauss()},
            (P("epsilon", "non_negative"), P("sigma", "positive"), P("sensitivity", "positive")),
        ),
        Entry(
            "accounting.gaussian_epsilon",
            accounting.gaussian_epsilon,
            lambda: {"delta": 1e-5, **gauss()},
            (P("delta", "probability"), P("sigma", "positive"), P("sensitivity", "positive")),
        ),
        Entry(
            "accounting.gaussian_sigma_analytic",
            accounting.gaussian_sigma_analytic,
            lambda: {"epsilon": 1.0, "delta": 1e-5, "sensitivity": 1.0},
            (P("epsilon", "positive"), P("delta", "probability"), P("sensitivity", "positive")),
        ),
        Entry(
            "accounting.gaussian_sigma_classical",
            accounting.gaussian_sigma_classical,
            lambda: {"epsilon": 0.5, "delta": 1e-5, "sensitivity": 1.0},
            (P("epsilon", "positive"), P("delta", "probability"), P("sensitivity", "positive")),
        ),
        Entry(
            "accounting.discrete_gaussian_delta",
            accounting.discrete_gaussian_delta,
            lambda: {"epsilon": 1.0, "sigma": 2.0},
            (P("epsilon", "non_negative"), P("sigma", "positive"), P("sensitivity", "positive")),
        ),
        Entry(
            "accounting.zcdp_gaussian",
            accounting.zcdp_gaussian,
            gauss,
            (P("sigma", "positive"), P("sensitivity", "positive")),
        ),
        Entry(
            "accounting.zcdp_to_approx",
            accounting.zcdp_to_approx,
            lambda: {"rho": 0.5, "delta": 1e-5},
            (P("rho", "positive"), P("delta", "probability")),
        ),
        Entry(
            "accounting.rdp_to_approx",
            accounting.rdp_to_approx,
            lambda: {"orders": [2.0, 4.0], "rdp_epsilons": [0.1, 0.2], "delta": 1e-5},
            (
                P("orders", "finite_array", [0.5, 2.0], [2.0]),
                P("rdp_epsilons", "finite_array", [-0.1, 0.2], [0.1]),
                P("delta", "probability"),
            ),
        ),
        Entry(
            "accounting.svt_epsilon",
            accounting.svt_epsilon,
            lambda: {"scale": 1.0, "sensitivity": 1.0, "c": 2, "resample": False},
            (
                P("scale", "positive"),
                P("sensitivity", "positive"),
                P("c", "count"),
                P("resample", "flag"),
            ),
        ),
        Entry(
            "accounting.svt_scale",
            accounting.svt_scale,
            lambda: {"epsilon": 1.0, "sensitivity": 1.0, "c": 2, "resample": False},
            (
                P("epsilon", "positive"),
                P("sensitivity", "positive"),
                P("c", "count"),
                P("resample", "flag"),
            ),
        ),
        Entry(
            "accounting.binomial_release_epsilon",
            accounting.binomial_release_epsilon,
            lambda: {"n": 10, "m": 4, "length": 3},
            (P("n", "count"), P("m", "positive"), P("length", "count")),
        ),
        Entry(
            "accounting.abcdp_gaussian_sigma",
            accounting.abcdp_gaussian_sigma,
            lambda: {
                "epsilon": 1.0,
                "sensitivity": 0.1,
                "distance_bound": 1.0,
                "epsilon_abc": 0.2,
            },
            (
                P("epsilon", "positive"),
                P("sensitivity", "positive"),
                P("distance_bound", "positive"),
                P("epsilon_abc", "non_negative"),
            ),
        ),
        Entry(
            "accounting.abcdp_gaussian_epsilon",
            accounting.abcdp_gaussian_epsilon,
            lambda: {"sigma": 1.0, "sensitivity": 0.1, "distance_bound": 1.0, "epsilon_abc": 0.2},
            (
                P("sigma", "positive"),
                P("sensitivity", "positive"),
                P("distance_bound", "positive"),
                P("epsilon_abc", "non_negative"),
            ),
        ),
        Entry(
            "accounting.soft_abcdp_epsilon",
            accounting.soft_abcdp_epsilon,
            lambda: {
                "sigma": 1.0,
                "delta": 1e-5,
                "sensitivity": 0.1,
                "epsilon_abc": 0.2,
                "steps": 10,
            },
            (
                P("sigma", "positive"),
                P("delta", "probability"),
                P("sensitivity", "positive"),
                P("epsilon_abc", "positive"),
                P("steps", "count"),
            ),
        ),
        Entry(
            "accounting.soft_abcdp_sigma",
            accounting.soft_abcdp_sigma,
            lambda: {
                "epsilon": 1.0,
                "delta": 1e-5,
                "sensitivity": 0.1,
                "epsilon_abc": 0.2,
                "steps": 10,
            },
            (
                P("epsilon", "positive"),
                P("delta", "probability"),
                P("sensitivity", "positive"),
                P("epsilon_abc", "positive"),
                P("steps", "count"),
            ),
        ),
        Entry(
            "accounting.soft_abcdp_rdp",
            accounting.soft_abcdp_rdp,
            lambda: {
                "alpha": 2.0,
                "sigma": 1.0,
                "sensitivity": 0.1,
                "epsilon_abc": 0.2,
                "steps": 10,
            },
            (
                P("alpha", "finite_array", 0.5, [2.0, 0.9]),
                P("sigma", "positive"),
                P("sensitivity", "positive"),
                P("epsilon_abc", "positive"),
                P("steps", "count"),
            ),
        ),
        Entry(
            "accounting.compose",
            lambda guarantees: accounting.compose(*guarantees),
            lambda: {"guarantees": [dp.Privacy(1.0)]},
            (P("guarantees", "", [1.0], ["eps"], [None], [OTHER], named="Privacy"),),
        ),
    ]


def theory_entries():
    tail = {
        "distances": [0.1, 0.5],
        "epsilon_abc": 0.2,
        "b": 0.5,
        "f_values": [1.0, 2.0],
        "n_accepted_abc": 2,
    }
    common = (
        P("distances", "finite_array", [[0.1, 0.2]], [-0.1, 0.2]),
        P("epsilon_abc", "non_negative"),
        P("b", "positive"),
        P("f_values", "finite_array", [1.0]),
        P("n_accepted_abc", "count"),
    )
    return [
        Entry(
            "theory.noise_difference_pdf",
            theory.noise_difference_pdf,
            lambda: {"z": [0.0, 1.0], "b": 0.5},
            (P("z", "finite_array", elementwise=True), P("b", "positive")),
        ),
        Entry(
            "theory.flip_probability",
            theory.flip_probability,
            lambda: {"a": [0.0, 1.0], "b": 0.5},
            (P("a", "finite_array", [-1.0], elementwise=True), P("b", "positive")),
        ),
        Entry(
            "theory.noise_difference_cdf",
            theory.noise_difference_cdf,
            lambda: {"a": [0.0, 1.0], "b": 0.5},
            (P("a", "finite_array", elementwise=True), P("b", "positive")),
        ),
        Entry("theory.theorem2_bound", theory.theorem2_bound, lambda: dict(tail), common),
        Entry(
            "theory.theorem2_tail_bound",
            theory.theorem2_tail_bound,
            lambda: {**tail, "a": 1.0},
            (*common, P("a", "positive")),
        ),
        Entry(
            "theory.plot_flip_probability",
            _plot_flip,
            lambda: {"sizes": (10,), "accepted": (2,), "epsilon_totals": (1.0,), "n_points": 5},
            (
                P("sizes", "", [0], ["10"], [True], [2.5]),
                P("accepted", "", [0], [True], [2.5]),
                P("epsilon_totals", "", [0.0], [np.nan], ["1"]),
                P("epsilon_abc", "non_negative"),
                P("n_points", "size"),
                P("resample", "flag"),
                P("rng", "rng"),
            ),
        ),
    ]


def _plot_flip(**kwargs):
    import matplotlib.pyplot as plt

    fig = theory.plot_flip_probability(**kwargs)
    plt.close(fig)


def audit_entries():
    def normal(shift):
        return lambda n, rng: rng.normal(shift, 1.0, size=n)

    return [
        Entry(
            "audit.clopper_pearson",
            audit.clopper_pearson,
            lambda: {"k": [0, 5], "n": 10, "alpha": 0.05},
            (
                P("k", "finite_array", [-1], [11], elementwise=True),
                P("n", "count", [3, 4], 2.5),
                P("alpha", "probability"),
            ),
        ),
        Entry(
            "audit.audit_epsilon",
            audit.audit_epsilon,
            lambda: {
                "sample_a": normal(0.0),
                "sample_b": normal(1.0),
                "n_select": 200,
                "n_test": 200,
                "n_thresholds": 5,
                "rng": 0,
            },
            (
                P("sample_a", "callable_required"),
                P("sample_b", "callable_required"),
                P("n_select", "size"),
                P("n_test", "size"),
                P("delta", "delta"),
                P("alpha", "probability"),
                P("n_thresholds", "size"),
                P("rng", "rng"),
            ),
        ),
        Entry(
            "audit.gaussian_pld_delta",
            audit.gaussian_pld_delta,
            lambda: {"epsilon": 1.0, "mu": 1.0},
            (P("epsilon", "non_negative"), P("mu", "positive")),
        ),
        Entry(
            "audit.hockey_stick_delta",
            audit.hockey_stick_delta,
            lambda: {"log_p": np.log([0.5, 0.5]), "log_q": np.log([0.4, 0.6]), "epsilon": 0.1},
            (
                P("log_p", "", "abc", [np.nan, 0.0], [0.0], named="log_p"),
                P("log_q", "", "abc", [np.nan, 0.0], [0.0], named="log_q"),
                P("epsilon", "non_negative"),
            ),
        ),
        Entry(
            "audit.verify_gaussian",
            audit.verify_gaussian,
            lambda: {"mechanism": dp.Gaussian(1.0, sensitivity=1.0, delta=1e-5)},
            (P("mechanism", "mechanism", dp.Laplace(1.0)),),
        ),
        Entry(
            "audit.svt_output_probabilities",
            audit.svt_output_probabilities,
            lambda: {"svt": _svt(), "queries": [0.0, 1.0]},
            (
                P("svt", "mechanism", dp.Laplace(1.0), named="svt"),
                P("queries", "finite_array", [[0.0, 1.0]]),
            ),
        ),
        Entry(
            "audit.svt_privacy_loss",
            audit.svt_privacy_loss,
            lambda: {"svt": _svt(), "queries": [0.0, 1.0]},
            (
                P("svt", "mechanism", dp.Laplace(1.0), named="svt"),
                P("queries", "finite_array", [[0.0, 1.0]]),
                P("neighbour", "", "abc", [np.nan, 0.0], [0.0], [5.0, 5.0]),
            ),
        ),
    ]


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
                P("support", "", 1.0, "x", {"p": "nope"}, {"q": "positive"}),
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
                P("schedule", "", 1.0, "fast", OTHER),
                P("mstep", "", 1.0, "fast", OTHER),
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
            lambda: {
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
            },
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
    ]


def _build_normal():
    import pymc as pm

    mu = pm.Normal("mu", 0.0, 10.0)
    return pm.Normal("s", mu, 1.0)


def _pseudo_model():
    return dp.Model(
        prior={"mu": st.norm(0, 1)},
        simulate=lambda p, rng: p["mu"][:, None, None] + rng.normal(size=(len(p["mu"]), 10, 1)),
    )


@cache
def _pymc_normal_model():
    import pymc as pm

    with pm.Model() as pm_model:
        mu = pm.Normal("mu", 0.0, 10.0)
        pm.Normal("s", mu, 1.0)
    return pm_model


def _poisson_factory(p):
    import pymc as pm

    return pm.Poisson.dist(mu=p["theta"])


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
    ]


def all_entries():
    return [
        *mechanism_entries(),
        *accounting_entries(),
        *theory_entries(),
        *audit_entries(),
        *compare_entries(),
        *distance_entries(),
        *model_entries(),
        *sampler_entries(),
        *pymc_entries(),
    ]
