"""The ABCDP record setup of the tuberculosis example and its error table (Park et al. 2021, 6.3).

Part of :mod:`dpinfer.models.tuberculosis`, which documents the model and the setup.
"""

from __future__ import annotations

import numpy as np

import dpinfer as dp
from dpinfer import validate
from dpinfer.distances import PairedClippedL2, PrecomputedDistances
from dpinfer.random import (
    RNGLike,
    as_generator,
)
from dpinfer.samplers import public_distances

from ._prior import BETA_SD, PARAMETERS, JointPrior
from ._simulator import STATISTICS, _simulate

#: The parameters that generated the synthetic confidential records (Park et al.'s truth,
#: from Lintusaari et al.'s estimates on the San Francisco data).
TRUTH = {"R1": 5.88, "t1": 6.74, "R2": 0.09, "beta": 192.0}

#: Weights of the distance; the two ratios are compared by relative error.
WEIGHTS = np.array([1.0, 1.0, 2.0, 10.0, 100.0, 100.0, 10.0, 10.0])
RELATIVE = (4, 5)

#: The ABCDP settings of Section 6.3.
CLIP = 200.0
C = 10
N_PROPOSALS = 1000
EPSILON_ABC = 150.0
EPSILON_TOTAL = 1.0
N_RECORDS = (100, 1000)

REFERENCE = (
    "Park, Vinaroz and Jitkrittum (2021). ABCDP: Approximate Bayesian computation with "
    "differential privacy. Entropy 23(8), 961, Section 6.3; Lintusaari et al. (2019), "
    "Wellcome Open Research 4:14."
)

_RUNS_PER_CHUNK = 20_000  # simulator runs per chunk of public draws


# --- the model and the records -----------------------------------------------------


def prior(*, beta_sd: float = BETA_SD) -> dp.Prior:
    """Return the jointly truncated prior (:class:`JointPrior`) as a :class:`dpinfer.Prior`.

    Examples
    --------
    >>> import numpy as np
    >>> draws = prior().sample(5, np.random.default_rng(0))
    >>> sorted(draws), draws["beta"].shape
    (['R1', 'R2', 'beta', 't1'], (5,))
    """
    joint = JointPrior(beta_sd=beta_sd)
    return dp.Prior(joint.sample, logpdf=joint.logpdf)


def distance(*, clip: float = CLIP) -> PairedClippedL2:
    """Lintusaari et al.'s weighted distance per record pair, clipped at ``C``, averaged.

    Weights :data:`WEIGHTS` on the differences of the statistics, relative
    errors for the two ratios; sensitivity ``C / n`` for ``n`` records.

    Examples
    --------
    >>> distance().sensitivity(100)
    2.0
    """
    return PairedClippedL2(clip, weights=WEIGHTS, relative=RELATIVE)


def model(*, n_records: int = 1, beta_sd: float = BETA_SD) -> dp.Model:
    """Return the prior and the simulator of pseudo-datasets ``(batch, n_records, 8)``.

    Examples
    --------
    >>> import numpy as np
    >>> m = model(n_records=3)
    >>> rng = np.random.default_rng(0)
    >>> m.simulate(m.prior.sample(2, rng), rng).shape
    (2, 3, 8)
    """
    n_records = validate.positive_int("n_records", n_records)
    return dp.Model(prior(beta_sd=beta_sd), simulate=_RecordSimulator(n_records))


class _RecordSimulator:
    """``n`` independent outbreak records per parameter set (picklable for process pools)."""

    def __init__(self, n_records: int):
        self.n_records = n_records
        self.__name__ = f"tuberculosis.records(n={n_records})"

    def __call__(self, params, rng):
        repeated = {k: np.repeat(np.asarray(params[k], float), self.n_records) for k in PARAMETERS}
        stats = _simulate(repeated, rng)
        return stats.reshape(-1, self.n_records, len(STATISTICS))


def confidential_records(n_records: int, *, rng: RNGLike = None, params=None) -> np.ndarray:
    """Simulate the confidential data: ``n_records`` outbreak records ``(n, 8)`` at the truth.

    Examples
    --------
    >>> confidential_records(4, rng=0).shape
    (4, 8)
    """
    n_records = validate.positive_int("n_records", n_records)
    theta = TRUTH if params is None else params
    return _simulate(
        {k: np.full(n_records, theta[k], dtype=float) for k in PARAMETERS}, as_generator(rng)
    )


# --- the ABCDP record setup ------------------------------------------------------------


def public_draws(
    observed,
    *,
    n_proposals: int = N_PROPOSALS,
    rng: RNGLike = None,
    executor=None,
    batch_size: int | None = None,
    progressbar: bool = True,
    beta_sd: float = BETA_SD,
) -> tuple[dict[str, np.ndarray], PrecomputedDistances]:
    """Public prior draws and their distances to the confidential records, in chunks.

    Each chunk draws parameters, simulates ``n`` pseudo-records per draw,
    reduces them to the clipped averaged distance and discards them, so
    memory holds one chunk's records at a time; chunks run on ``executor``
    (a process pool, a dask ``client.get_executor()``, or serially) and give
    the same draws whichever runs them.

    Parameters
    ----------
    observed : array_like
        The ``(n, 8)`` confidential records.
    n_proposals : int, default 1000
        ``T``.
    rng : seed, optional
        Public randomness of the draws and pseudo-records.
    executor : concurrent.futures.Executor, optional
    batch_size : int, optional
        Draws per chunk; default about 20 000 simulator runs per chunk.
    progressbar : bool, default True
    beta_sd : float, default 30

    Returns
    -------
    params : dict
        ``T`` public draws of each parameter.
    distances : dpinfer.distances.PrecomputedDistances
        Their distances, for :func:`dpinfer.abcdp` with
        ``pseudo_data=np.arange(T)``; sensitivity ``C / n``.
    """
    obs = _check_records(observed)
    size = max(1, _RUNS_PER_CHUNK // len(obs)) if batch_size is None else batch_size
    base = distance()
    draws = public_distances(
        obs,
        base,
        model=model(n_records=len(obs), beta_sd=beta_sd),
        n_proposals=n_proposals,
        rng=rng,
        batch_size=size,
        executor=executor,
        progressbar=progressbar,
    )
    return draws.params, PrecomputedDistances(base, obs, draws.distances)


def _check_records(observed) -> np.ndarray:
    obs = validate.confidential_data("observed", observed)
    if obs.ndim != 2 or obs.shape[1] != len(STATISTICS):
        raise ValueError(f"observed must be (n, {len(STATISTICS)}) records, got shape {obs.shape}")
    return obs
