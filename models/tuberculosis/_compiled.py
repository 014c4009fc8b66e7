"""Compiled loops of the tuberculosis outbreak simulator (see :mod:`dpinfer.models.tuberculosis`).

One run is Gillespie's direct method on the birth-death process with
immigration of Lintusaari et al. (2019). Every active case is stored as the
index of its cluster in one of two arrays (compliant, non-compliant), so a
transmission or a removal picks a uniformly random case of the source
population in O(1), which is choosing a cluster with probability
proportional to its number of cases there. Observed removals are logged as
``(cluster, time)``. The work arrays are reused across the runs of a batch
(a cluster's observed count is zeroed when the cluster is created) and grow
by doubling when needed.

The numpy ``Generator`` is passed in and numba draws from its bit generator
directly. The callers validate the inputs: finite rates with a positive
burden and positive removal rates, a subcritical process (the equilibrium
exists), probabilities in ``[0, 1]``, ``t_obs > 0``.
"""

from __future__ import annotations

import math

import numba
import numpy as np

#: Entries of a run's statistics (see ``tuberculosis.STATISTICS``).
N_STATISTICS = 8
#: Diagnostics of a run (see ``tuberculosis.DIAGNOSTICS``).
N_DIAGNOSTICS = 5

_WARMUP, _BURN_IN, _OBSERVE = 0, 1, 2


@numba.njit(cache=True)
def _grown(arr):  # pragma: no cover - numba
    # (np.empty(..., dtype=arr.dtype) would do too, but takes seconds to compile)
    return np.concatenate((arr, np.empty_like(arr)))


@numba.njit(cache=True)
def _work_arrays():  # pragma: no cover - numba
    """Allocate the work arrays of a run.

    Compliant cases, non-compliant cases, observed count per cluster, observed
    clusters, and the log of observations (cluster, time since the end of the
    warm-up).
    """
    return (
        np.empty(256, dtype=np.int64),
        np.empty(256, dtype=np.int64),
        np.zeros(1024, dtype=np.int64),
        np.empty(256, dtype=np.int64),
        np.empty(1024, dtype=np.int64),
        np.empty(1024, dtype=np.float64),
    )


@numba.njit(cache=True)
def _run(rates, settings, inherit_compliance, rng, work, diagnostics):  # pragma: no cover
    """One outbreak; returns the (possibly grown) work arrays, observed clusters and log size.

    ``rates``: burden ``beta``, transmission and removal rates of the
    compliant cases (``alpha_c``, ``delta_c``) and of the non-compliant ones
    (``alpha_nc``, ``delta_nc``). ``settings``: ``p_compliance, p_observed,
    t_obs, min_warmup, max_warmup_years, max_cases``. ``inherit_compliance``
    replaces the fresh compliance draw of a new host by its source's
    compliance (another model, which the tests use as a planted bug).
    """
    compliant, noncompliant, observed, seen, log_cluster, log_time = work
    p_compliance, p_observed, t_obs, min_warmup, max_years, max_cases = settings
    beta, a_c, d_c, a_nc, d_nc = rates[0], rates[1], rates[2], rates[3], rates[4]
    k_c, k_nc = a_c + d_c, a_nc + d_nc
    # the deterministic equilibrium: S new cases a year, split by compliance
    entries = beta / (1.0 - p_compliance * a_c / d_c - (1.0 - p_compliance) * a_nc / d_nc)
    mean_c = p_compliance * entries / d_c
    mean_nc = (1.0 - p_compliance) * entries / d_nc
    n_c = n_nc = n_clusters = n_seen = n_log = events = year = 0
    reached_c = reached_nc = exploded = False
    phase = _WARMUP
    t = t_warm = 0.0
    horizon = 1.0
    while True:
        total = beta + k_c * n_c + k_nc * n_nc
        t_next = t + rng.standard_exponential() / total
        if t_next >= horizon:
            # no event before the horizon; by memorylessness the clock restarts there
            t = horizon
            if phase == _WARMUP:
                year += 1
                reached_c = reached_c or n_c >= mean_c
                reached_nc = reached_nc or n_nc >= mean_nc
                if (reached_c and reached_nc) or year >= max_years:
                    t_warm = max(2.0 * year, min_warmup)
                    phase = _BURN_IN
                    horizon = t_warm
                else:
                    horizon = year + 1.0
            elif phase == _BURN_IN:
                phase = _OBSERVE
                horizon = t_warm + t_obs
            else:
                break
            continue
        t = t_next
        events += 1
        u = rng.random() * total
        if u < beta or n_c + n_nc == 0:  # a new strain: a cluster of one
            cluster = n_clusters
            n_clusters += 1
            if cluster == observed.shape[0]:
                observed = _grown(observed)
            observed[cluster] = 0
            new_compliant = rng.random() < p_compliance
        else:
            u -= beta
            # (n_nc == 0 guards against u rounding up to the total)
            from_compliant = u < k_c * n_c or n_nc == 0
            if from_compliant:
                birth = u < a_c * n_c
                j = int(rng.random() * n_c)
                cluster = compliant[j]
            else:
                birth = u - k_c * n_c < a_nc * n_nc
                j = int(rng.random() * n_nc)
                cluster = noncompliant[j]
            if not birth:  # removal of case j, observed with probability p_observed
                if from_compliant:
                    n_c -= 1
                    compliant[j] = compliant[n_c]
                else:
                    n_nc -= 1
                    noncompliant[j] = noncompliant[n_nc]
                if phase == _OBSERVE and rng.random() < p_observed:
                    if observed[cluster] == 0:
                        if n_seen == seen.shape[0]:
                            seen = _grown(seen)
                        seen[n_seen] = cluster
                        n_seen += 1
                    observed[cluster] += 1
                    if n_log == log_cluster.shape[0]:
                        log_cluster = _grown(log_cluster)
                        log_time = _grown(log_time)
                    log_cluster[n_log] = cluster
                    log_time[n_log] = t - t_warm
                    n_log += 1
                continue
            if inherit_compliance:
                new_compliant = from_compliant
            else:
                new_compliant = rng.random() < p_compliance
        if new_compliant:
            if n_c == compliant.shape[0]:
                compliant = _grown(compliant)
            compliant[n_c] = cluster
            n_c += 1
        else:
            if n_nc == noncompliant.shape[0]:
                noncompliant = _grown(noncompliant)
            noncompliant[n_nc] = cluster
            n_nc += 1
        if n_c + n_nc > max_cases:
            exploded = True
            break
    diagnostics[0] = n_c
    diagnostics[1] = n_nc
    diagnostics[2] = t_warm
    diagnostics[3] = events
    diagnostics[4] = 1.0 if exploded else 0.0
    work = (compliant, noncompliant, observed, seen, log_cluster, log_time)
    return work, n_seen, n_log


@numba.njit(cache=True)
def simulate(rates, settings, inherit_compliance, rng, stats, diagnostics):  # pragma: no cover
    """Run one outbreak per row of ``rates`` (``(n, 5)``); write ``(n, 8)`` statistics."""
    n_months = int(math.ceil(12.0 * settings[2] - 1e-9))
    months = np.zeros(n_months, dtype=np.bool_)
    work = _work_arrays()
    for b in range(rates.shape[0]):
        work, n_seen, n_log = _run(
            rates[b], settings, inherit_compliance, rng, work, diagnostics[b]
        )
        if diagnostics[b, 4] > 0.0:
            stats[b, :] = np.nan
        else:
            _statistics(work[2], work[3], n_seen, work[4], work[5], n_log, months, stats[b])


@numba.njit(cache=True)
def outbreak(rates, settings, inherit_compliance, rng, diagnostics):  # pragma: no cover
    """Run one outbreak and return its raw record.

    Observed cluster sizes (in order of first observation), and the cluster
    index (into those sizes) and time of every observation, in time order.
    """
    work, n_seen, n_log = _run(
        rates, settings, inherit_compliance, rng, _work_arrays(), diagnostics
    )
    observed, seen, log_cluster = work[2], work[3], work[4]
    sizes = np.empty(n_seen, dtype=np.int64)
    rank = np.empty(observed.shape[0], dtype=np.int64)
    for i in range(n_seen):
        sizes[i] = observed[seen[i]]
        rank[seen[i]] = i
    which = np.empty(n_log, dtype=np.int64)
    for i in range(n_log):
        which[i] = rank[log_cluster[i]]
    return sizes, which, work[5][:n_log].copy()


@numba.njit(cache=True)
def _statistics(
    observed, seen, n_seen, log_cluster, log_time, n_log, months, out
):  # pragma: no cover - numba
    """Write the eight summary statistics of one run (``tuberculosis.summary_statistics``)."""
    top = np.zeros(4, dtype=np.int64)
    largest_cluster = -1
    singles = pairs = 0
    for i in range(n_seen):
        size = observed[seen[i]]
        if size == 1:
            singles += 1
        elif size == 2:
            pairs += 1
        if size > top[0]:
            largest_cluster = seen[i]  # ties: the cluster observed first
        if size > top[3]:
            k = 3
            while k > 0 and size > top[k - 1]:
                top[k] = top[k - 1]
                k -= 1
            top[k] = size
    months[:] = False
    n_months = months.shape[0]
    for i in range(n_log):
        if log_cluster[i] == largest_cluster:
            m = int(math.floor(12.0 * log_time[i]))
            months[min(max(m, 0), n_months - 1)] = True
    first, last, active = -1, -1, 0
    for m in range(n_months):
        if months[m]:
            active += 1
            last = m
            if first < 0:
                first = m
    out[0] = n_log
    out[1] = n_seen
    out[2] = top[0]
    out[3] = (top[0] - top[3]) / 3.0
    out[4] = singles / n_log if n_log > 0 else np.nan
    out[5] = pairs / n_log if n_log > 0 else np.nan
    out[6] = last - first + 1 if active > 0 else 0
    out[7] = active
