"""The tuberculosis outbreak simulator: rates, equilibrium, runs and their statistics.

See :mod:`dpinfer.models.tuberculosis` for the model; the event loop is the
compiled loop of :mod:`._compiled`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from dpinfer import validate
from dpinfer.random import RNGLike, as_generator

from . import _compiled
from ._prior import P_COMPLIANCE, P_OBSERVED, PARAMETERS

#: The compliant removal rate ``delta_2`` (per year), fixed.
DELTA_2 = 5.95
#: Observation window (years), shortest warm-up (years), longest year-by-year search.
T_OBS = 2.0
MIN_WARMUP = 15.0
MAX_WARMUP_YEARS = 150
#: A run stops with an error beyond this many active cases (never reached in the prior).
MAX_CASES = 10**6
#: The summary statistics of a run (Lintusaari et al. 2019, Table 1).
STATISTICS = (
    "observations",
    "clusters",
    "largest_cluster",
    "mean_gap_largest_four",  # mean successive gap among the four largest cluster sizes
    "singletons_per_observation",
    "pairs_per_observation",
    "largest_cluster_month_span",
    "largest_cluster_months",  # months (of 24) with an observation of the largest cluster
)
_SETTINGS = np.array(
    [P_COMPLIANCE, P_OBSERVED, T_OBS, MIN_WARMUP, MAX_WARMUP_YEARS, MAX_CASES], dtype=float
)
#: San Francisco 1991-92 (Small et al. 1994): cluster sizes, 473 cases in 326 clusters.
SF_CLUSTER_SIZES = np.repeat(
    [30, 23, 15, 10, 8, 5, 4, 3, 2, 1], [1, 1, 1, 1, 1, 2, 4, 13, 20, 282]
).astype(np.int64)
#: The observation months (0-23) of the 30 cases of the largest cluster.
SF_LARGEST_MONTHS = np.array(
    [0, 0, 1, 2, 3, 3, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 7, 8, 8, 10, 11, 12, 14, 16, 16]
    + [18, 20, 21, 23],
    dtype=np.int64,
)


def rates(params) -> np.ndarray:
    r"""Event rates ``(beta, alpha_2, delta_2, alpha_1, delta_1)`` of parameter sets, ``(..., 5)``.

    ``alpha_2 = R2 delta_2``, ``delta_1 = t1 / |R1 - 1|``,
    ``alpha_1 = t1 R1 / (R1 - 1)``; the parameters must be finite with
    ``R1 > 1``, ``t1 > 0``, ``R2 >= 0``, ``beta > 0`` and a subcritical
    process, ``0.95 R2 + 0.05 R1 < 1``.

    Examples
    --------
    >>> rates({"R1": 3.0, "t1": 2.0, "R2": 0.5, "beta": 100.0})
    array([100.   ,   2.975,   5.95 ,   3.   ,   1.   ])
    """
    r1, t1, r2, beta = _check_params(params)
    return np.stack(
        np.broadcast_arrays(
            beta, r2 * DELTA_2, np.full_like(beta, DELTA_2), t1 * r1 / (r1 - 1.0), t1 / (r1 - 1.0)
        ),
        axis=-1,
    )


def equilibrium(params) -> dict[str, np.ndarray]:
    r"""Deterministic equilibrium of the case counts and the observation rate.

    Returns
    -------
    dict
        ``entries`` :math:`S = \beta / (1 - p_c R_2 - (1 - p_c) R_1)` (new
        cases a year), ``compliant`` :math:`p_c S / \delta_2`,
        ``noncompliant`` :math:`(1 - p_c) S / \delta_1`, and
        ``observations_per_year`` :math:`p_{obs} S`.

    Notes
    -----
    The rates are linear in the counts, so the expected counts solve the
    linear ODE of the deterministic model exactly and tend to these values.

    Examples
    --------
    >>> eq = equilibrium({"R1": 5.88, "t1": 6.74, "R2": 0.09, "beta": 192.0})
    >>> round(float(eq["observations_per_year"]), 1), round(float(eq["noncompliant"]), 1)
    (247.5, 11.2)
    """
    r1, t1, r2, beta = _check_params(params)
    entries = beta / (1.0 - P_COMPLIANCE * r2 - (1.0 - P_COMPLIANCE) * r1)
    return {
        "entries": entries,
        "compliant": P_COMPLIANCE * entries / DELTA_2,
        "noncompliant": (1.0 - P_COMPLIANCE) * entries * (r1 - 1.0) / t1,
        "observations_per_year": P_OBSERVED * entries,
    }


def simulate(params, *, rng: RNGLike = None, diagnostics: bool = False):
    r"""Simulate outbreaks and return their summary statistics.

    Parameters
    ----------
    params : dict
        ``R1``, ``t1``, ``R2`` and ``beta``, broadcast together to a batch
        shape ``B``.
    rng : None, int, SeedSequence or Generator, optional
        Source of randomness; a Generator is drawn from directly.
    diagnostics : bool, default False
        Also return, per run, the active ``compliant`` and ``noncompliant``
        cases at the end of the window, the ``warmup`` length (years) and the
        number of ``events``.

    Returns
    -------
    numpy.ndarray or (numpy.ndarray, dict)
        ``(*B, 8)`` statistics (:data:`STATISTICS`); a run without an
        observation has NaN ratios (and an infinite distance).

    Notes
    -----
    Gillespie's direct method, compiled with numba: per event an
    exponential waiting time, a uniform for the event type and one for the
    case it concerns (a uniformly random case of the source population, so
    a cluster is chosen in proportion to its cases there), and one for the
    compliance of a new case or the observation of a removal. The warm-up
    checks the case counts at whole years; a waiting time crossing a
    checkpoint is cut there and redrawn, exact by memorylessness. Measured
    (``benchmarks/tuberculosis.py``, CPU time of one core): 3400 runs a
    second at ``(R1, t1, R2, beta) = (5.88, 6.74, 0.09, 192)`` (10 700
    events a run, 28 ns an event) and 2500 averaged over the prior, 56 times
    the rate of the same algorithm as a Python loop.

    Examples
    --------
    >>> stats = simulate({"R1": [5.88, 3.0], "t1": 6.74, "R2": 0.09, "beta": 192.0}, rng=0)
    >>> stats.shape
    (2, 8)
    """
    flag = _check_flag("diagnostics", diagnostics)
    return _simulate(params, as_generator(rng), diagnostics=flag)


def _simulate(params, generator, *, diagnostics=False, inherit_compliance=False):
    table = rates(params)
    shape = table.shape[:-1]
    flat = np.ascontiguousarray(table.reshape(-1, 5))
    _check_size(flat)
    stats = np.empty((len(flat), _compiled.N_STATISTICS))
    diag = np.empty((len(flat), _compiled.N_DIAGNOSTICS))
    _compiled.simulate(flat, _SETTINGS, inherit_compliance, generator, stats, diag)
    if np.any(diag[:, 4] > 0):
        raise RuntimeError(
            f"a run exceeded {MAX_CASES} active cases (the process is not subcritical)"
        )
    stats = stats.reshape(*shape, _compiled.N_STATISTICS)
    if not diagnostics:
        return stats
    names = ("compliant", "noncompliant", "warmup", "events")
    return stats, {k: diag[:, i].reshape(shape) for i, k in enumerate(names)}


@dataclass(frozen=True)
class Outbreak:
    """One simulated outbreak, as the data of Lintusaari et al. are recorded.

    Attributes
    ----------
    cluster_sizes : numpy.ndarray
        Observed cases per observed cluster, in order of first observation.
    observation_cluster : numpy.ndarray
        For every observation, in time order, the index of its cluster in
        ``cluster_sizes``.
    observation_time : numpy.ndarray
        Times of the observations (years since the window opened).
    warmup : float
        Length of the warm-up (years).
    """

    cluster_sizes: np.ndarray
    observation_cluster: np.ndarray
    observation_time: np.ndarray
    warmup: float

    def largest_cluster_months(self) -> np.ndarray:
        """Observation months of the largest cluster (the first observed among ties)."""
        largest = int(np.argmax(self.cluster_sizes)) if self.cluster_sizes.size else -1
        times = self.observation_time[self.observation_cluster == largest]
        return np.minimum(np.floor(12.0 * times).astype(np.int64), round(12 * T_OBS) - 1)

    def statistics(self) -> np.ndarray:
        """Return the eight summary statistics (:func:`summary_statistics`)."""
        return summary_statistics(self.cluster_sizes, self.largest_cluster_months())


def simulate_outbreak(params: Mapping, *, rng: RNGLike = None) -> Outbreak:
    """Simulate one outbreak and return its full record (:class:`Outbreak`).

    Examples
    --------
    >>> out = simulate_outbreak({"R1": 5.88, "t1": 6.74, "R2": 0.09, "beta": 192.0}, rng=3)
    >>> int(out.cluster_sizes.sum()) == out.observation_time.size
    True
    """
    table = rates(params)
    if table.shape != (5,):
        raise ValueError(
            f"simulate_outbreak takes one parameter set, got shape {table.shape[:-1]}"
        )
    _check_size(table[None])
    diag = np.empty(_compiled.N_DIAGNOSTICS)
    sizes, which, times = _compiled.outbreak(table, _SETTINGS, False, as_generator(rng), diag)
    return Outbreak(sizes, which, times, float(diag[2]))


def summary_statistics(cluster_sizes, largest_months, *, n_months: int = 24) -> np.ndarray:
    r"""Compute the eight summary statistics of an observed outbreak (:data:`STATISTICS`).

    Parameters
    ----------
    cluster_sizes : array_like
        Observed cases of every observed cluster (positive integers).
    largest_months : array_like
        Observation months (``0 .. n_months - 1``) of the largest cluster's cases.
    n_months : int, default 24
        Months in the window.

    Returns
    -------
    numpy.ndarray
        Observations, clusters, the largest cluster's size, the mean of the
        successive gaps among the four largest sizes (missing sizes count as
        0), clusters of size 1 and of size 2 per observation, and the span
        (last month - first month + 1) and number of months with an
        observation of the largest cluster. Without observations the ratios
        are NaN.

    Examples
    --------
    >>> summary_statistics([3, 1, 1], [0, 0, 5])
    array([5. , 3. , 3. , 1. , 0.4, 0. , 6. , 2. ])
    """
    sizes = validate.integer_array("cluster_sizes", cluster_sizes)
    months = validate.integer_array("largest_months", largest_months)
    n_months = validate.positive_int("n_months", n_months)
    if np.any(sizes < 1) or sizes.ndim != 1:
        raise ValueError(
            f"cluster_sizes must be positive integers, got {validate.abbreviated(sizes)}"
        )
    if np.any((months < 0) | (months >= n_months)):
        raise ValueError(f"largest_months must lie in 0..{n_months - 1}, got {months!r}")
    n_obs = float(sizes.sum())
    top = np.sort(np.r_[sizes, np.zeros(4, dtype=np.int64)])[::-1][:4]
    active = np.unique(months)
    with np.errstate(invalid="ignore", divide="ignore"):
        singles, pairs = np.count_nonzero(sizes == 1) / n_obs, np.count_nonzero(sizes == 2) / n_obs
    span = float(active[-1] - active[0] + 1) if active.size else 0.0
    return np.array(
        [n_obs, sizes.size, top[0], (top[0] - top[3]) / 3, singles, pairs, span, active.size],
        dtype=float,
    )


def _check_params(params):
    if not isinstance(params, Mapping):
        raise TypeError(
            f"params must be a dict with keys {PARAMETERS}, got {type(params).__name__}"
        )
    missing = [k for k in PARAMETERS if k not in params]
    if missing:
        raise ValueError(f"params is missing {missing}; it needs {PARAMETERS}")
    values = []
    for name in PARAMETERS:
        arr = np.asarray(params[name], dtype=float)
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"params[{name!r}] must be finite, got {validate.abbreviated(arr)}")
        values.append(arr)
    r1, t1, r2, beta = np.broadcast_arrays(*values)
    for name, value, ok, rule in (
        ("R1", r1, r1 > 1, "> 1"),
        ("t1", t1, t1 > 0, "> 0"),
        ("R2", r2, r2 >= 0, ">= 0"),
        ("beta", beta, beta > 0, "> 0"),
    ):
        if not np.all(ok):
            raise ValueError(f"params[{name!r}] must be {rule}, got {validate.abbreviated(value)}")
    load = P_COMPLIANCE * r2 + (1 - P_COMPLIANCE) * r1
    if not np.all(load < 1):
        raise ValueError(
            "the process must be subcritical (0.95 R2 + 0.05 R1 < 1) for its equilibrium to "
            f"exist, got 0.95 R2 + 0.05 R1 = {validate.abbreviated(load)}"
        )
    return r1, t1, r2, beta


def _check_size(table: np.ndarray) -> None:
    beta, _, d_c, a_nc, d_nc = table.T
    entries = beta / (1 - P_COMPLIANCE * table[:, 1] / d_c - (1 - P_COMPLIANCE) * a_nc / d_nc)
    cases = P_COMPLIANCE * entries / d_c + (1 - P_COMPLIANCE) * entries / d_nc
    if np.any(cases > MAX_CASES / 10):
        raise ValueError(
            f"the equilibrium has up to {cases.max():.3g} active cases, beyond what this "
            f"simulator runs ({MAX_CASES / 10:g}); the prior's support stays far below"
        )


def _check_flag(name, value) -> bool:
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def sf_statistics() -> np.ndarray:
    """Return the statistics of the San Francisco data.

    They are 473, 326, 30, 20/3, 282/473, 20/473, 24 and 17.

    Examples
    --------
    >>> sf_statistics().round(4).tolist()
    [473.0, 326.0, 30.0, 6.6667, 0.5962, 0.0423, 24.0, 17.0]
    """
    return summary_statistics(SF_CLUSTER_SIZES, SF_LARGEST_MONTHS)
