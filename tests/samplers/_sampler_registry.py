"""The sampler registry: one record per public sampler, walked by the shared property tests.

Every sampler the library exposes has one :class:`Sampler` in ``SAMPLERS``;
``test_sampler_registry.py`` fails while a public sampler has no record, and checks what
the records claim against the samplers' signatures. A new sampler joins every shared
property by adding one record:

- ``reproducibility``: the same seed gives the same run, whatever form ``rng`` takes;
  ``rng=None`` draws fresh entropy; numpy's global random state is left alone; the
  progress bar switch (``tests/samplers/test_executors.py``);
- ``executors``: the same run under a thread pool that gets several of its tasks, and
  (``process_executors``) under a process pool and a dask cluster
  (``tests/samplers/test_executors.py``);
- ``faulty_user_code``: simulators returning booleans or objects, drawing from numpy's
  global state (``tests/test_faulty_user_code.py``);
- ``in_place``: simulators writing into the parameters they are given
  (``tests/test_user_code_in_place.py``);
- ``precision``: releases so large that float64 rounding swamps the noise
  (``tests/samplers/test_precision.py``);
- ``sbc``: simulation-based calibration, a correct sampler passing and planted bugs
  failing (``tests/calibration/test_sbc_samplers.py``).

A record opts out of a property only with a reason (``Sampler.without``), which the
registry test requires and checks where it can (a sampler that takes ``executor=``
cannot opt out of the thread pool).

The shared problem is the SBC problem of ``tests/calibration/_poisson.py``:
``theta ~ Gamma(4, rate 0.4)``, a Poisson count ``s | theta`` (plus a public
``offset``, for the precision tests), released through ``Problem.mechanism``. Each record
turns the user's simulator of the count, ``simulate(params, rng)``, into what its sampler
takes: a :class:`dpinfer.Model` (ABC, SMC, the neural estimators), the same with the
Poisson likelihood (MCEM), a :class:`dpinfer.RecordModel` of one record (DA-MCMC),
pseudo-datasets of one record (ABCDP, whose observed data is the released value), or a
PyMC model whose count is summed out (the NUTS reference, which never calls a simulator).
The wrappers keep the simulator's name, its output's dtype and the parameters it is
handed, so faults of user code reach the sampler unchanged.
"""

from __future__ import annotations

import functools
import importlib
import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np
import pytest
import scipy.stats as st
from calibration import _poisson  # tests/ is on the path
from scipy.special import gammaln

import dpinfer as dp

#: The shared properties, as the property tests name them.
PROPERTIES = (
    "reproducibility",
    "executors",
    "process_executors",
    "faulty_user_code",
    "in_place",
    "precision",
    "sbc",
)

#: Public functions that take ``rng`` but return no draws from a posterior: not samplers.
NOT_SAMPLERS = MappingProxyType(
    {
        "estimate_acceptance_rate": "a pilot estimate of rejection ABC's acceptance rate",
        "public_distances": "the public half of ABCDP: proposals and their distances",
        "check_privacy_rng": "checks a privacy seed against the public one",
        "sbc": "calibrates a sampler it is given",
        "to_pymc": "builds a PyMC variable",
        "c2st": "a classifier two-sample test",
        "load": "loads a saved neural estimator",
    }
)

#: The modules whose ``__all__`` lists the public samplers.
PUBLIC_MODULES = ("dpinfer", "dpinfer.samplers", "dpinfer.neural")


# --- the shared problem ------------------------------------------------------------------


def poisson_count(params, rng):
    """The user's simulator of the confidential count."""
    return rng.poisson(params["theta"])


#: The prior of the SBC problem.
GAMMA_PRIOR = st.gamma(_poisson.SHAPE, scale=1 / _poisson.RATE)


@dataclass(frozen=True)
class Problem:
    """A Poisson count ``offset + s`` released through ``mechanism`` as ``released``."""

    simulate: Callable = poisson_count
    mechanism: Any = dp.Laplace(1.0, sensitivity=1.0)
    released: Any = 20.3
    offset: float = 0
    theta_prior: Any = GAMMA_PRIOR

    def prior(self) -> dict:
        return {"theta": self.theta_prior}


PROBLEM = Problem()


def statistic_model(problem: Problem) -> dp.Model:
    """The model of the ABC samplers: the prior and the user's simulator of the statistic."""
    return dp.Model(prior=problem.prior(), simulate=problem.simulate)


def likelihood_model(problem: Problem) -> dp.Model:
    """The same with the Poisson likelihood of the count, its score and Hessian (MCEM)."""

    def count(s):
        return np.asarray(s) - problem.offset

    likelihood = dp.Likelihood.from_callables(
        lambda s, p: count(s) * np.log(p["theta"]) - p["theta"] - gammaln(count(s) + 1),
        score=lambda s, p: (count(s) / p["theta"] - 1)[:, None],
        hessian=lambda s, p: (-count(s) / p["theta"] ** 2)[:, None, None],
        params=["theta"],
        support={"theta": "positive"},
        exponential_family=dp.ExponentialFamily(
            statistic=count, maximize=lambda mean: {"theta": mean[0]}
        ),
    )
    return dp.Model(prior=problem.prior(), simulate=problem.simulate, likelihood=likelihood)


def record_model(problem: Problem) -> dp.RecordModel:
    """One record, the count itself (DA-MCMC).

    Theta's step is the conjugate update under the Gamma prior, a Metropolis step on the
    Poisson log-likelihood under any other.
    """
    simulate = problem.simulate

    @functools.wraps(simulate)
    def records(params, n, rng):
        return np.stack([simulate(params, rng) for _ in range(n)], axis=1)

    def update(x, rng):
        total = (x - problem.offset).sum(axis=1)
        return {"theta": rng.gamma(_poisson.SHAPE + total, 1 / (_poisson.RATE + x.shape[1]))}

    def loglik(x, params):
        return st.poisson.logpmf(x - problem.offset, params["theta"][:, None]).sum(axis=1)

    theta_step = {"update": update} if problem.theta_prior is GAMMA_PRIOR else {"loglik": loglik}
    return dp.RecordModel(problem.prior(), records, lambda x: x, **theta_step)


def pseudo_data_model(problem: Problem) -> dp.Model:
    """Pseudo-datasets of one record of one column, the count (ABCDP)."""
    simulate = problem.simulate

    @functools.wraps(simulate)
    def pseudo_data(params, rng):
        return np.asarray(simulate(params, rng))[:, None, None]

    return dp.Model(prior=problem.prior(), simulate=pseudo_data)


#: Counts over which the NUTS reference sums the Poisson count out: the posterior of the
#: count given a release near 20 lies far inside.
REFERENCE_SUPPORT = np.arange(80)


def pymc_build(problem: Problem) -> Callable:
    """The problem as a PyMC build callable (the NUTS reference): the prior, the count's law."""
    import pymc as pm  # not with the module, which executor workers import

    plain = problem.simulate is poisson_count and problem.theta_prior is GAMMA_PRIOR
    if not plain or problem.offset:
        raise ValueError("the PyMC model is the plain Poisson count only")

    def build():
        theta = pm.Gamma("theta", alpha=_poisson.SHAPE, beta=_poisson.RATE)
        return pm.Poisson.dist(theta)

    return build


def result_data(result):
    """The InferenceData or MCEMResult of a sampler's result (the neural estimators' first)."""
    return result[0] if isinstance(result, tuple) else result


def theta_draws(result) -> np.ndarray:
    """The draws of ``theta`` in a sampler's result; MCEM's iterates."""
    result = result_data(result)
    if isinstance(result, dp.MCEMResult):
        return result.trace["theta"].values
    return result.posterior["theta"].values


class UniformNoise:
    """``s + U(-h, h)``: the noise for which ABC with tolerance ``h`` is exact (Wilkinson 2013)."""

    event_shape = ()

    def __init__(self, h):
        self.h = h

    def release(self, value, *, rng=None):
        return np.asarray(value, dtype=float) + rng.uniform(-self.h, self.h)


# --- the records -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Calibration:
    """How SBC runs a sampler: for which noise of a given scale it is exact, with which options.

    ``noise(scale)`` is the release the replicates go through (Laplace noise of that
    scale by default); the sampler runs on ``Problem(mechanism=noise(scale))`` with
    ``options`` and ``kernel(noise)`` (the options matching it to that noise, for a
    sampler that takes no mechanism).
    """

    options: Mapping
    noise: Callable[[float], Any] = lambda scale: dp.Laplace(scale, sensitivity=1.0)
    kernel: Callable[[Any], dict] = lambda noise: {}


@dataclass(frozen=True)
class Sampler:
    """One public sampler: how to run it on a :class:`Problem`, and what it supports.

    ``call(function, problem, **options)`` runs the public ``function`` on ``problem``
    (one adapter per family); ``options`` are the cheap settings of the property runs,
    which split the simulations into several executor tasks unless ``several_tasks``
    holds the options that do. ``without`` maps each property of ``PROPERTIES`` the
    sampler is not checked for to the reason.
    """

    name: str
    call: Callable[..., Any]
    options: Mapping
    family: str
    without: Mapping[str, str] = field(default_factory=dict)
    boolean_simulations: bool = False  # booleans pass (as records of a binary attribute)
    draws_from_the_prior: bool = True  # False: simulates at its own iterates only (MCEM)
    several_tasks: Mapping = field(default_factory=dict)  # options splitting a run into tasks
    sbc: Calibration | None = None
    module: str = "dpinfer"

    def __str__(self) -> str:
        return self.name

    @property
    def function(self) -> Callable:
        """The public function, as a user imports it (skips a test without the neural extra)."""
        if self.module == "dpinfer.neural":
            pytest.importorskip("torch", reason="dpinfer.neural needs the neural extra")
        return getattr(importlib.import_module(self.module), self.name)

    def supports(self, prop: str) -> bool:
        if prop not in PROPERTIES:
            raise ValueError(f"unknown property {prop!r}; the properties are {PROPERTIES}")
        return prop not in self.without

    def run(self, problem: Problem = PROBLEM, *, settings: Mapping | None = None, **options):
        """Run the sampler on ``problem`` with ``settings`` (the cheap ones by default).

        ``options`` override single settings; the run is quiet unless ``progressbar=True``.
        """
        settings = self.options if settings is None else settings
        return self.call(self.function, problem, **{"progressbar": False, **settings, **options})


# --- how each family of samplers runs on a Problem: call(function, problem, **options) -------


def _release_call(function, problem, **options):
    """A sampler of ``(model, mechanism, released)``: ABC, SMC."""
    return function(statistic_model(problem), problem.mechanism, problem.released, **options)


def _mcem_call(function, problem, **options):
    return function(likelihood_model(problem), problem.mechanism, problem.released, **options)


def _da_call(function, problem, **options):
    return function(record_model(problem), problem.mechanism, problem.released, n=1, **options)


def _abcdp_call(function, problem, *, distance, **options):
    """An ABCDP sampler: the released value is the observed record."""
    observed = np.reshape(np.asarray(problem.released, dtype=float), (1, 1))
    return function(observed, distance, model=pseudo_data_model(problem), **options)


def _reference_call(function, problem, **options):
    return function(pymc_build(problem), problem.mechanism, problem.released, **options)


def _neural_call(function, problem, **options):
    """A neural estimator, with tiny settings unless ``options`` say otherwise."""
    from dpinfer import neural

    tiny = dict(
        rounds=1,
        simulations=1001,  # two executor tasks: the estimators simulate in chunks of 1000
        noise_copies=2,
        draws=20,
        flow=neural.SplineFlow(transforms=1, hidden_features=4, residual_blocks=1, bins=3),
        training=neural.Training(max_epochs=1, batch_size=30),
    )
    if function is neural.sple:
        tiny["mcmc"] = neural.MCMC(warmup=5, thin=1, proposal_chains=2, initial_candidates=20)
    model, options = statistic_model(problem), {**tiny, **options}
    with warnings.catch_warnings():
        # chains this short do not converge, and need not
        warnings.filterwarnings("ignore", "sple: the final chains have R-hat", RuntimeWarning)
        return function(model, problem.mechanism, problem.released, **options)


#: A privacy seed independent of every public seed the tests use.
PRIVACY_SEED = 1_000_000_007
_ABCDP_COMMON = dict(
    distance=dp.distances.ClippedL2(20.0),
    n_proposals=40,
    batch_size=16,
    epsilon_abc=3.0,
    privacy_rng=PRIVACY_SEED,
)
_NO_MECHANISM = "takes no mechanism: its privacy comes from noise on the distances"
_NO_PRECISION_WARNING = "does not yet warn of a release where float64 rounding swamps the noise"
_NEURAL_SBC = "calibrated in tests/calibration/test_sbc_neural.py, amortised over releases"
# checked under threads: the same parallel.map_chunks as every other sampler's chunks
_NEURAL_PROCESSES = "each worker process imports torch to run a chunk (2-3 CPU seconds)"
_ABC_SBC = dict(draws=100, batch_size=20_000)

SAMPLERS: list[Sampler] = [
    Sampler(
        name="rejection_abc",
        call=_release_call,
        options=dict(draws=40, chains=2, batch_size=50),
        family="abc",
        sbc=Calibration(options=_ABC_SBC),
    ),
    Sampler(
        name="importance_abc",
        call=_release_call,
        options=dict(draws=40, chains=2, batch_size=16),
        family="abc",
        sbc=Calibration(options=dict(draws=200, target_ess=150, batch_size=4000)),
    ),
    Sampler(
        name="smc_abc",
        call=_release_call,
        options=dict(particles=40, chains=2, batch_size=16, max_moves=5),
        family="smc",
        sbc=Calibration(options=dict(particles=100, chains=1)),
    ),
    Sampler(
        name="tolerance_smc_abc",
        call=_release_call,
        options=dict(particles=40, chains=2, batch_size=16, max_moves=5, final_tolerance=2.0),
        family="smc",
        without={
            # a float release of 1e17 is refused by Laplace.release, naming its `value`
            "precision": _NO_PRECISION_WARNING,
            "sbc": "exactness against references in tests/samplers/test_smc_tolerance.py",
        },
    ),
    Sampler(
        name="mcem",
        call=_mcem_call,
        options=dict(
            start={"theta": 15.0},
            # a cap far above the 11 iterations it takes, for faulty simulators that never settle
            schedule=dp.StagedSchedule(stages=((100, 1e-2), (1000, 1e-3)), max_iterations=30),
            batch_size=400,
        ),
        family="mcem",
        draws_from_the_prior=False,
        without={
            "precision": _NO_PRECISION_WARNING,
            "sbc": "a maximum likelihood estimate, not posterior draws",
        },
    ),
    Sampler(
        name="da_mcmc",
        call=_da_call,
        options=dict(draws=20, tune=10, chains=2),
        family="da",
        without={"precision": _NO_PRECISION_WARNING},
        boolean_simulations=True,
        sbc=Calibration(options=dict(draws=100, tune=30, chains=2)),
    ),
    Sampler(
        name="abcdp",
        call=_abcdp_call,
        options=dict(_ABCDP_COMMON, epsilon_total=1.0, c=3),
        family="abcdp",
        without={"precision": _NO_MECHANISM},
        # the non-private limit (epsilon_total = inf) is rejection ABC with the hard
        # tolerance epsilon_abc, exact for uniform noise of that half-width; with privacy
        # noise the draws target no posterior of this model
        sbc=Calibration(
            options=dict(
                distance=dp.distances.ClippedL2(1e6),
                epsilon_total=math.inf,
                c=100,
                n_proposals=20_000,
            ),
            noise=lambda scale: UniformNoise(2 * scale),
            kernel=lambda noise: {"epsilon_abc": noise.h},
        ),
    ),
    Sampler(
        name="rejection_abcdp_gaussian",
        call=_abcdp_call,
        options=dict(_ABCDP_COMMON, epsilon_total=50.0, distance_bound=20.0),
        family="abcdp",
        without={
            "precision": _NO_MECHANISM,
            "sbc": "its non-private limit is abcdp's, calibrated with it",
        },
    ),
    Sampler(
        name="soft_abcdp",
        call=_abcdp_call,
        options=dict(_ABCDP_COMMON, epsilon_total=2.0, delta_total=1e-5),
        family="abcdp",
        without={
            "precision": _NO_MECHANISM,
            "sbc": "weights every proposal: its draws target no posterior at any budget",
        },
    ),
    Sampler(
        name="sample_reference",
        call=_reference_call,
        options=dict(support=REFERENCE_SUPPORT, draws=20, tune=20, chains=2),
        family="reference",
        without={
            "executors": "takes no executor: PyMC runs the chains",
            "process_executors": "takes no executor: PyMC runs the chains",
            "faulty_user_code": "runs no simulator: the model is PyMC's",
            "in_place": "runs no simulator: the model is PyMC's",
            "precision": "its PyMC model of the count has no public offset",
            "sbc": "the reference the samplers are checked against, too slow to calibrate here",
        },
    ),
    *(
        Sampler(
            name=name,
            call=_neural_call,
            options=dict(chains=2),
            family="neural",
            module="dpinfer.neural",
            several_tasks=dict(simulations=1001),  # they simulate in chunks of 1000
            without={
                "process_executors": _NEURAL_PROCESSES,
                "precision": _NO_PRECISION_WARNING,
                "sbc": _NEURAL_SBC,
            },
        )
        for name in ("sppe", "sple")
    ),
]


def by_name(name: str) -> Sampler:
    """The record of the sampler ``name``."""
    return next(case for case in SAMPLERS if case.name == name)


def family(name: str) -> list[Sampler]:
    """The records of one family of samplers ("abc", "smc", "abcdp", ...)."""
    return [case for case in SAMPLERS if case.family == name]
