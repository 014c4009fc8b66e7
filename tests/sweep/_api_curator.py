"""Sweep entries of the curator's side: mechanisms, accounting, theory, audits."""

from __future__ import annotations

import numpy as np

import dpinfer as dp
from dpinfer import accounting, audit, theory

from ._harness import OTHER, Entry
from ._valid import (
    P,
    _bad_latents,
    _binomial,
    _marginal_to_pymc,
    _mech_method,
    _plot_flip,
    _svt,
    _to_pymc,
    choices,
)


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
                + (
                    (P("calibration", "", "exact", None, 1, OTHER, *choices("classical")),)
                    if cls is dp.Gaussian
                    else ()
                )
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


def _thresholded():
    return dp.Thresholded(dp.DiscreteGaussian(2.0), threshold=1)


def _per_cell_entries():
    entries = [
        Entry(
            f"{cls.__name__}.from_zcdp",
            cls.from_zcdp,
            lambda: {"rho": 0.5, "sensitivity": 1},
            (
                P("rho", "positive", [[0.5, -1.0]], [[0.5, np.nan]]),
                P("sensitivity", "positive", [[1.0, 0.0]]),
                P("event_shape", "event_shape"),
            ),
        )
        for cls in (dp.Gaussian, dp.DiscreteGaussian)
    ]
    return [
        *entries,
        Entry(
            "Thresholded",
            dp.Thresholded,
            lambda: {"mechanism": dp.DiscreteGaussian(2.0), "threshold": 5},
            (
                P("mechanism", "mechanism", dp.BinomialRelease(**_binomial())),
                P("threshold", "finite", [[1.0, 2.0]], []),
                P("publish", "", "over", 3, None, OTHER, *choices("above")),
            ),
        ),
        Entry(
            "Thresholded.release",
            _mech_method(_thresholded, "release"),
            lambda: {"value": 3, "rng": 0},
            (P("value", "finite_array", elementwise=True), P("rng", "rng")),
        ),
        Entry(
            "Thresholded.logpdf",
            _mech_method(_thresholded, "logpdf"),
            lambda: {"released": np.nan, "value": 3},
            (
                P("released", "finite_array", 2.5, elementwise=True),
                P("value", "finite_array", elementwise=True),
            ),
        ),
    ]


def mechanism_entries():
    return [
        *_curator_entries(),
        *_per_cell_entries(),
        Entry(
            "Mechanism.to_pymc",
            _to_pymc,
            lambda: {"observed": 0.5},
            (P("observed", "finite_array", [1.0, 2.0]), P("value", "finite", [1.0, 2.0])),
        ),
        Entry(
            "to_pymc",
            _marginal_to_pymc,
            dict,
            (
                P("dist", "", *_bad_latents(), OTHER),
                P(
                    "observed",
                    "",
                    [(dp.DiscreteGaussian(2.0), [4.0, np.nan, 6.0])],
                    [(dp.DiscreteGaussian(2.0), [4, 9]), (dp.DiscreteLaplace(1.0), [4, 9, 6])],
                    [(dp.DiscreteGaussian(2.0, event_shape=(2,)), [4, 9, 6])],
                    [(dp.DiscreteGaussian(2.0), [4.5, 9, 6])],
                    [(1.0, [4, 9, 6])],
                    [],
                    None,
                ),
            ),
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
                P("rho", "positive_or_inf", optional=True),
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
            (P("rho", "positive_or_inf"), P("delta", "probability")),
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
