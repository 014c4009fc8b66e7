r"""Monte Carlo error of a sampler's posterior means, from the run itself.

Each estimate is the variance of the posterior mean of every scalar parameter
component, turned into an effective sample size
``ESS = posterior variance / variance of the mean`` (the smallest over the
components is the figure a result reports):

* :func:`weighted_ess`: self-normalised importance sampling, by the delta
  method, ``Var(mu-hat_f) = sum_i w~_i^2 (f_i - mu-hat_f)^2``. Unlike the Kish
  ESS ``1 / sum w~^2`` it sees that the heavy weights sit on particles far
  from the posterior mean (a prior-data conflict).
* :func:`lineage_ess`: SMC, by the ancestral-lineage (Eve) estimator of Chan
  and Lai (2013) and Lee and Whiteley (2018): particles descending from the
  same initial particle are correlated through every resampling since, so the
  variance of their mean is the sum over lineages of the squared summed
  deviations, ``Var = c_T n^-2 sum_e (sum_{i in e} (f_i - mu-hat_f))^2`` with
  the bias correction ``c_T = (n / (n - 1))^{T + 1}`` for ``T``
  resamplings. It sees the copies left by resampling and moves that did not
  decorrelate them, which the weights' ESS does not. With few lineages left
  (:data:`MIN_LINEAGES`) it rests on too few groups to be trusted.
* :func:`between_chain_ess`: independent chains, from the spread of their
  means: unbiased for the variance whatever the sampler, but on ``chains - 1``
  degrees of freedom.

References
----------
.. [1] Chan, H. P. and Lai, T. L. (2013). A general theory of particle filters
   in hidden Markov models and some applications. Ann. Statist. 41(6).
.. [2] Lee, A. and Whiteley, N. (2018). Variance estimation in the particle
   filter. Biometrika 105(3), 609-625.
.. [3] Du, Q. and Guyader, A. (2021). Variance estimation in adaptive
   sequential Monte Carlo. Ann. Appl. Probab. 31(3).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy.special import logsumexp

__all__ = [
    "MIN_LINEAGES",
    "between_chain_ess",
    "columns_by_chain",
    "error_ratio",
    "lineage_ess",
    "smc_ess",
    "weighted_ess",
]

# Fewer distinct lineages than this (in a chain) and the lineage estimator rests on too few
# groups: its variance estimate is then itself too noisy to report.
MIN_LINEAGES = 30


def columns_by_chain(params: dict) -> np.ndarray:
    """Return a dict of ``(chains, n, *shape)`` draws as one ``(chains, n, k)`` array."""
    cols = [np.asarray(v, dtype=float).reshape(*np.shape(v)[:2], -1) for v in params.values()]
    return np.concatenate(cols, axis=2)


def _ess(posterior_var: np.ndarray, variance_of_mean: np.ndarray) -> float:
    """Smallest ``posterior variance / variance of the mean`` over the varying components."""
    keep = posterior_var > 0
    if not keep.any():
        return math.nan
    with np.errstate(divide="ignore"):
        ratio = posterior_var[keep] / variance_of_mean[keep]
    return float(np.min(ratio))


def _weighted_moments(values: np.ndarray, log_w: np.ndarray):
    w = np.exp(log_w - logsumexp(log_w))
    mean = w @ values
    return w, mean, w @ (values - mean) ** 2


def _overflow_reported_elsewhere(fn):
    """Silence float64 overflow of squared draws: AbcCall.result names it (PrecisionWarning)."""

    @functools.wraps(fn)
    def quiet(*args, **kwargs):
        with np.errstate(over="ignore", invalid="ignore"):
            return fn(*args, **kwargs)

    return quiet


@_overflow_reported_elsewhere
def weighted_ess(values_by_chain: np.ndarray, log_w_by_chain: np.ndarray) -> float:
    """ESS of the pooled posterior mean of independent importance samplers.

    ``values_by_chain`` is ``(chains, n, k)`` and ``log_w_by_chain``
    ``(chains, n)``; each chain is self-normalised on its own and the pooled
    mean is the average of the chains' means.
    """
    chains = len(values_by_chain)
    means, variances = [], []
    var_of_mean = np.zeros(np.shape(values_by_chain)[2:])
    for values, log_w in zip(values_by_chain, log_w_by_chain, strict=True):
        w, mean, var = _weighted_moments(values, log_w)
        means.append(mean)
        variances.append(var)
        var_of_mean = var_of_mean + (w**2) @ (values - mean) ** 2
    posterior_var = np.mean(variances, axis=0) + np.var(means, axis=0)
    return _ess(posterior_var, var_of_mean / chains**2)


def lineage_variance_of_mean(values: np.ndarray, lineage: np.ndarray, resamplings: int):
    """Lineage (Eve) estimate of the variance of the mean of equally weighted SMC draws."""
    n = len(values)
    _, group = np.unique(lineage, return_inverse=True)
    deviations = values - values.mean(axis=0)
    sums = np.zeros((group.max() + 1, values.shape[1]))
    np.add.at(sums, group.reshape(-1), deviations)
    correction = (n / (n - 1)) ** (resamplings + 1) if n > 1 else 1.0
    return correction * np.sum(sums**2, axis=0) / n**2


def lineage_ess(
    values_by_chain: np.ndarray, lineage_by_chain: np.ndarray, resamplings
) -> tuple[float, int]:
    """ESS of the pooled mean of independent SMC chains, and their fewest lineages.

    ``values_by_chain`` is ``(chains, n, k)``, ``lineage_by_chain``
    ``(chains, n)`` (the initial particle each draw descends from) and
    ``resamplings`` the number of resampling steps of each chain.
    """
    chains = len(values_by_chain)
    var_of_mean = sum(
        lineage_variance_of_mean(v, e, int(t))
        for v, e, t in zip(values_by_chain, lineage_by_chain, resamplings, strict=True)
    )
    fewest = min(len(np.unique(e)) for e in lineage_by_chain)
    pooled = values_by_chain.reshape(-1, values_by_chain.shape[-1])
    return _ess(pooled.var(axis=0), var_of_mean / chains**2), fewest


def between_chain_ess(values_by_chain: np.ndarray) -> float:
    """ESS of the pooled mean from the spread of the chains' means (NaN with one chain).

    ``values_by_chain`` is ``(chains, n, k)`` of equally weighted draws;
    ``Var(pooled mean) = s^2(chain means) / chains``, on ``chains - 1``
    degrees of freedom.
    """
    chains = len(values_by_chain)
    if chains < 2:
        return math.nan
    means = values_by_chain.mean(axis=1)
    pooled = values_by_chain.reshape(-1, values_by_chain.shape[-1])
    return _ess(pooled.var(axis=0), means.var(axis=0, ddof=1) / chains)


@_overflow_reported_elsewhere
def smc_ess(values, lineage, stage_chain, stage_resampled) -> tuple[float, str]:
    """ESS of the pooled posterior mean of SMC chains, and how it was estimated.

    ``values`` is ``(chains, n, k)``, ``lineage`` ``(chains, n)``; each chain
    resampled at its stages flagged in ``stage_resampled`` (``stage_chain``
    names the chain) and once more for the final draws. The lineage estimate
    is used while every chain keeps :data:`MIN_LINEAGES` lineages; below that
    it rests on too few groups, and the between-chain estimate replaces it.
    """
    chains = len(values)
    resampled = np.asarray(stage_resampled, dtype=bool)
    resamplings = [int(resampled[np.asarray(stage_chain) == c].sum()) + 1 for c in range(chains)]
    ess, fewest = lineage_ess(values, np.asarray(lineage), resamplings)
    if fewest >= MIN_LINEAGES:
        return ess, "lineage"
    return between_chain_ess(values), (
        f"between-chain: a chain kept only {fewest} lineages (< {MIN_LINEAGES}), too few for "
        f"the lineage estimate; {chains} chains give {chains - 1} degrees of freedom"
    )


def error_ratio(means: np.ndarray, reported_se: np.ndarray, reference: float) -> float:
    """Across-replicate error of a posterior mean over the error the runs reported.

    ``means`` are the posterior means of replicate runs (different seeds),
    ``reported_se`` the Monte Carlo standard error each run reported, and
    ``reference`` the exact posterior mean. The ratio is
    ``sqrt(mean((means - reference)^2)) / sqrt(mean(reported_se^2))``: near 1
    when the reported error is honest, above 1 when it is over-optimistic.
    With ``R`` replicates its sampling spread is about ``1 / sqrt(2 R)``.
    """
    means = np.asarray(means, dtype=float)
    reported_se = np.asarray(reported_se, dtype=float)
    real = math.sqrt(float(np.mean((means - reference) ** 2)))
    return real / math.sqrt(float(np.mean(reported_se**2)))
