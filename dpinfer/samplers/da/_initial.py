"""Starting datasets of :func:`dpinfer.da_mcmc`: the prior-predictive draw nearest the release.

With little mechanism noise, a record update is accepted only if it keeps the
running sum within a few noise scales of where it is; a chain started far
from the release spends its first iterations walking the sum there. Each
chain therefore draws a pool of prior-predictive datasets (``theta`` from the
prior, ``n`` records given it), scores each by ``log eta(s_dp | s)`` in one
vectorised call per block, and starts from the best one. The pool also gives
the prior spread that scales the first ``theta`` proposals.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

_RECORDS_PER_BLOCK = 2**20


class Start(NamedTuple):
    """A chain's starting point and what was learnt choosing it."""

    params: dict  # (1, *shape)
    records: np.ndarray  # (n, *record_shape)
    stats: np.ndarray  # (n, k)
    t_shape: tuple
    prior_draws: dict  # the pool of prior draws, (pool, *shape)
    n_simulations: int


def initial_records(record_model, mechanism, released, n, pool, rng) -> Start:
    """Draw ``pool`` prior-predictive datasets and return the one nearest the release."""
    prior_draws = record_model.prior.sample(pool, rng)
    per_block = max(1, _RECORDS_PER_BLOCK // n)
    best: tuple[float, dict, np.ndarray, np.ndarray] | None = None
    for lo in range(0, pool, per_block):
        params = {k: np.asarray(v)[lo : lo + per_block] for k, v in prior_draws.items()}
        records = record_model.simulate_records(params, n, rng)
        stats = record_model.statistics(records)
        t_shape = stats.shape[2:]
        totals = stats.reshape(len(stats), n, -1).sum(axis=1)
        score = _score(record_model, mechanism, released, totals.reshape(-1, *t_shape))
        j = int(np.argmax(score))
        if best is None or score[j] > best[0]:
            best = (score[j], {k: v[j : j + 1] for k, v in params.items()}, records[j], stats[j])
    if best is None:
        raise ValueError(f"pool must be a positive integer, got {pool!r}")
    log_eta, params, records, stats = best
    if not np.isfinite(log_eta):
        raise ValueError(
            f"none of the {pool} prior-predictive datasets drawn to start a chain has a "
            "positive mechanism density at the release: the release looks impossible under "
            "the model (check the mechanism, the release and n), or raise init_datasets"
        )
    return Start(
        params,
        records,
        np.ascontiguousarray(stats.reshape(n, -1)),
        tuple(t_shape),
        prior_draws,
        pool * n,
    )


def _score(record_model, mechanism, released, totals) -> np.ndarray:
    s = record_model.summarise(totals, mechanism.event_shape)
    try:
        return mechanism.logpdf(released, s)
    except ValueError as err:
        raise ValueError(
            f"the released statistic computed from simulated records does not suit the "
            f"mechanism {mechanism!r}: {err}"
        ) from err
