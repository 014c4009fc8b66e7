"""The entry points that take confidential data, each with its confidential parameters.

Curator side: the ``release`` (and ``release_from_uniform``) of every mechanism,
``SparseVector.run`` and the audit helpers that take query streams or samplers of
neighbouring outputs. Data-owner side: every ABCDP sampler's ``observed``, the
distances and data-derived settings that read the observations, and the records of a
:class:`~dpinfer.RecordModel`. Every parameter here is ``confidential``: besides
being refused by name, no message may show a value it carries
(``_harness.secret_texts``).
"""

from __future__ import annotations

import numpy as np
import scipy.stats as st

import dpinfer as dp
from dpinfer import audit, theory
from dpinfer import distances as dist

from ._api_analyst import _abcdp_args, _abcdp_model_args, _public_distances_args
from ._harness import SECRET_FLOAT, SECRET_INT, Entry
from ._valid import P, _rfmmd, _svt

SF, SI = SECRET_FLOAT, SECRET_INT

#: Mechanisms with a three-coordinate release, so that two entries are a wrong shape.
MECHANISMS = {
    "Laplace": lambda: dp.Laplace(1.0, event_shape=(3,)),
    "Gaussian": lambda: dp.Gaussian(1.0, event_shape=(3,)),
    "DiscreteLaplace": lambda: dp.DiscreteLaplace(1.0, event_shape=(3,)),
    "DiscreteGaussian": lambda: dp.DiscreteGaussian(1.0, event_shape=(3,)),
    "BinomialRelease": lambda: dp.BinomialRelease(n=10, m=4, population=100, length=3),
}

PSEUDO_3 = np.random.default_rng(2).normal(size=(4, 3, 1))  # 4 pseudo-datasets of 3 points


def C(name, kind="confidential", *extra, named=""):  # noqa: N802
    """A confidential parameter: refused by name, no value shown."""
    return P(name, kind, *extra, named=named, confidential=True)


class Returning:
    """A planted sampler ``f(n, rng)`` whose outcomes are ``returns``, repeated to ``n``."""

    def __init__(self, returns):
        self.returns = returns

    def __call__(self, n, rng):
        return np.resize(np.asarray(self.returns), n)

    def __repr__(self) -> str:
        return "Returning(...)"


def mechanism_entries():
    entries = []
    for name, make in MECHANISMS.items():
        discrete = make().discrete
        kind = "confidential_integers" if discrete else "confidential"
        extra = [np.array([SI, SF]), np.full((2, 2), SF)]  # wrong shapes
        if name == "BinomialRelease":
            extra += [np.array([5, SI, 5]), np.array([5, -SI, 5])]  # counts out of range

        def release(make=make, **kw):
            return make().release(**kw)

        def from_uniform(make=make, **kw):
            return make().release_from_uniform(**kw)

        def to_pymc(make=make, **kw):
            import pymc as pm

            mech = make()
            with pm.Model():
                mech.to_pymc("y", observed=mech.release(np.array([3, 4, 5]), rng=0), **kw)

        entries += [
            Entry(
                f"{name}.release",
                release,
                lambda: {"value": np.array([3, 4, 5]), "rng": 0},
                (C("value", kind, *extra),),
            ),
            Entry(
                f"{name}.release_from_uniform",
                from_uniform,
                lambda: {"value": np.array([3, 4, 5]), "u": np.full(3, 0.5)},
                (
                    C("value", kind, *extra),
                    C("u", "confidential", [0.5, SF, 0.5], [0.5, -SI, 0.5], [SF, 0.5]),
                ),
            ),
            Entry(
                f"{name}.to_pymc",
                to_pymc,
                lambda: {"value": np.array([3, 4, 5])},
                (C("value", kind, *extra),),
            ),
        ]
    return entries


def curator_entries():
    svt_run = lambda **kw: _svt().run(**kw)  # noqa: E731
    return [
        *mechanism_entries(),
        Entry(
            "SparseVector.run",
            svt_run,
            lambda: {"queries": [0.1, 2.0, 0.3], "rng": 0},
            (C("queries", "confidential", [[SI, SF]]),),
        ),
        Entry(
            "audit.svt_output_probabilities",
            audit.svt_output_probabilities,
            lambda: {"svt": _svt(), "queries": [0.0, 1.0, 0.5]},
            (C("queries", "confidential", [[SI, SF]]),),
        ),
        Entry(
            "audit.svt_privacy_loss",
            audit.svt_privacy_loss,
            lambda: {"svt": _svt(), "queries": [0.0, 1.0, 0.5]},
            (
                C("queries", "confidential", [[SI, SF]]),
                C("neighbour", "confidential", [0.0, SF, 0.5], [SI, SF]),
            ),
        ),
        Entry(
            "audit.audit_epsilon",
            audit.audit_epsilon,
            lambda: {
                "sample_a": Returning([0.0, 1.0]),
                "sample_b": Returning([1.0, 2.0]),
                "n_select": 50,
                "n_test": 50,
                "rng": 0,
            },
            tuple(
                C(
                    name,
                    "",
                    Returning([SI, np.nan, SF]),
                    Returning([SI, np.inf, SF]),
                    Returning(["987654321", "123456.789"]),
                    Returning(np.array([SI, None, SF], dtype=object)),
                )
                for name in ("sample_a", "sample_b")
            ),
        ),
    ]


def _observed_params():
    return (C("observed", "confidential", np.empty((0, 1)), np.full((3, 2), SF)),)


def data_owner_entries():
    clipped = dist.ClippedL2(5.0)
    paired = dist.PairedClippedL2(5.0)
    exact = dist.MMD(1.0)
    features = _rfmmd()
    y = np.arange(3.0)[:, None]
    precomputed = dist.PrecomputedDistances(clipped, y, [0.1, 0.2, 0.3, 0.4])
    records = dp.RecordModel(
        {"p": st.beta(2, 2)}, lambda p, n, rng: None, lambda x: x, update=lambda x, rng: {}
    )
    bad_records = (
        np.array([[SI, np.nan, SF]]),
        np.array([[SI, np.inf, SF]]),
        [[SI, None, SF]],
        [[[SI], [SF, SF]]],
        np.array([["987654321", "123456.789"]]),
    )
    return [
        Entry(
            "abcdp",
            dp.abcdp,
            _abcdp_args(epsilon_total=1.0, epsilon_abc=0.2, c=2),
            _observed_params(),
        ),
        Entry("abcdp(model=)", dp.abcdp, _abcdp_model_args, _observed_params()),
        Entry(
            "public_distances",
            dp.samplers.public_distances,
            _public_distances_args,
            _observed_params(),
        ),
        Entry(
            "rejection_abcdp_gaussian",
            dp.rejection_abcdp_gaussian,
            _abcdp_args(epsilon_total=1.0, epsilon_abc=0.2, distance_bound=1.0),
            _observed_params(),
        ),
        Entry(
            "soft_abcdp",
            dp.soft_abcdp,
            _abcdp_args(epsilon_total=1.0, delta_total=1e-5, epsilon_abc=0.2, draws=5),
            _observed_params(),
        ),
        Entry(
            "distances.median_heuristic",
            dist.median_heuristic,
            lambda: {"data": np.arange(10.0)[:, None]},
            (C("data", "confidential", np.empty((0, 1))),),
        ),
        Entry(
            "distances.DataDerived",
            dist.DataDerived,
            lambda: {"value": 1.0, "data": np.full((4, 1), 7.0)},
            (C("data", "confidential", np.empty((0, 1))),),
        ),
        Entry(
            "distances.PrecomputedDistances",
            dist.PrecomputedDistances,
            lambda: {"base": clipped, "observed": y, "values": [0.1, 0.2]},
            (
                C("observed", "confidential", np.empty((0, 1))),
                C("values", "confidential", [0.1, -SF, 0.2], [[SI, SF]]),
            ),
        ),
        Entry(
            "distances.DataDerived.derived_from",
            lambda **kw: dist.DataDerived(1.0, data=y).derived_from(**kw),
            lambda: {"observed": y},
            (C("observed", "confidential_numbers"),),
        ),
        Entry(
            "distances.Distance.confidential_settings",
            clipped.confidential_settings,
            lambda: {"observed": y},
            (C("observed", "confidential_numbers"),),
        ),
        Entry(
            "distances.PairedClippedL2.pairwise",
            paired.pairwise,
            lambda: {"observed": np.zeros((3, 1)), "pseudo": PSEUDO_3},
            (C("observed", "confidential_numbers", np.full((3,), SF)),),
        ),
        *(
            Entry(
                f"theory.{bound.__name__}",
                bound,
                lambda extra=extra: {
                    "distances": [0.1, 0.5, 0.3],
                    "epsilon_abc": 0.2,
                    "b": 0.5,
                    "f_values": [1.0, 2.0, 3.0],
                    "n_accepted_abc": 2,
                    **extra,
                },
                (C("distances", "confidential", [0.1, -SF, 0.3], [[SI, SF]]),),
            )
            for bound, extra in (
                (theory.theorem2_bound, {}),
                (theory.theorem2_tail_bound, {"a": 1.0}),
            )
        ),
        Entry(
            "theory.flip_probability",
            theory.flip_probability,
            lambda: {"a": [0.1, 0.5, 0.3], "b": 0.5},
            (C("a", "confidential", [0.1, -SF, 0.3]),),
        ),
        *(
            Entry(
                f"distances.{type(d).__name__}.__call__",
                d,
                lambda: {"observed": np.zeros((3, 1)), "pseudo": PSEUDO_3},
                (C("observed", "confidential_numbers", *wrong),),
            )
            for d, wrong in (
                (clipped, [np.full((2, 1), SF)]),
                (paired, [np.full((3,), SF), np.full((3, 2), SF)]),
                (exact, [np.full((3, 2), SF)]),
                (features, [np.full((3, 2), SF)]),
            )
        ),
        Entry(
            "distances.PrecomputedDistances.__call__",
            precomputed,
            lambda: {"observed": y, "pseudo": [0, 2]},
            (C("observed", "confidential_numbers", np.full((3, 1), SF)),),
        ),
        Entry(
            "RecordModel.statistics",
            records.statistics,
            lambda: {"records": np.zeros((2, 3))},
            (C("records", "", *bad_records),),
        ),
    ]


def example_entries():
    """The examples' functions that read a curator's or data owner's confidential data."""
    from dpinfer.models import lalonde, linear_regression, mixture_uniform, naive_bayes
    from dpinfer.models import tuberculosis as tb

    x, y = linear_regression.confidential_data(n=20, rng=1)
    classes, features = naive_bayes.confidential_data(n=20, rng=0)
    records = tb.confidential_records(20, rng=0)
    wrong_rows = (np.full((3, 3), SF), np.full((2,), SF))
    return [
        Entry(
            "lalonde.statistics_posterior",
            lalonde.statistics_posterior,
            lambda: {"statistics": [1.0, 0.5, 4.0, 3.0], "draws": 5, "tune": 5, "chains": 1},
            (
                C(
                    "statistics",
                    "confidential",
                    np.array([SF, np.nan, SF, SF]),
                    np.array([SF, SI, -SF, SF]),  # a negative sample variance
                    [SF, SI, "x", SF],
                    np.array(["987654321", "123456.789", "1", "2"]),
                    np.full(5, SF),
                ),
            ),
        ),
        *(
            Entry(
                f"linear_regression.{fn.__name__}",
                fn,
                lambda fn=fn: {"x": x, "y": y} | _release_options(fn),
                (C("x", "confidential", *wrong_rows), C("y", "confidential", np.full(3, SF))),
            )
            for fn in (
                linear_regression.confidential_posterior,
                linear_regression.statistics,
                linear_regression.release,
            )
        ),
        *(
            Entry(
                f"naive_bayes.{fn.__name__}",
                fn,
                lambda fn=fn: {"y": classes, "x": features} | _release_options(fn),
                (
                    C("y", "confidential", np.full(20, SF), np.full(20, True)),
                    C("x", "confidential", *wrong_rows, np.full((20, 2), SI)),
                ),
            )
            for fn in (naive_bayes.statistics, naive_bayes.release)
        ),
        Entry(
            "mixture_uniform.public_draws",
            mixture_uniform.public_draws,
            lambda: {
                "observed": np.linspace(0.0, 1.0, 20)[:, None],
                "dist": dist.ClippedL2(5.0),
                "n_proposals": 10,
                "rng": 1,
            },
            _observed_params(),
        ),
        Entry(
            "tuberculosis.public_draws",
            tb.public_draws,
            lambda: {"observed": records, "n_proposals": 4, "rng": 1, "progressbar": False},
            (C("observed", "confidential", *wrong_rows),),
        ),
    ]


def _release_options(fn) -> dict:
    return {"epsilon": 1.0, "rng": 1} if fn.__name__ == "release" else {}


def confidential_entries():
    return [*curator_entries(), *data_owner_entries(), *example_entries()]
