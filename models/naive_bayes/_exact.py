r"""The naive Bayes example's exact likelihood of a release, and its PyMC reference.

The likelihood sums the counts out (:func:`log_likelihood`, written in NumPy
and, for NUTS, in PyTensor by :func:`pymc_model`); see
:mod:`dpinfer.models.naive_bayes` for the model and the sums.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.stats as st
from scipy.special import gammaln, logsumexp

from dpinfer import validate
from dpinfer.reference import sample_nuts

from ._data import (
    ALPHA,
    EPSILON,
    N_FEATURES,
    PARAMETER_NAMES,
    REFERENCE,
    RELEASED,
    N,
    _check_params,
    _column,
    mechanism,
)

__all__ = ["log_likelihood", "pymc_model", "pymc_reference"]


def log_likelihood(params, released, *, epsilon: float, n: int = N) -> np.ndarray:
    """Exact log-likelihood ``log pi(r_dp | theta)`` of a release, by finite sums.

    Parameters
    ----------
    params : dict
        Arrays of shape ``(batch,)`` for every name of :data:`PARAMETER_NAMES`.
    released : array_like
        The eight released proportions.
    epsilon : float
        Privacy-loss budget of the release.
    n : int, default 100
        Number of records.

    Returns
    -------
    numpy.ndarray
        Shape ``(batch,)``.

    Notes
    -----
    The sums of the module docstring, in log space: ``(n + 1)^2`` terms per
    class and feature.

    Examples
    --------
    >>> from dpinfer.models.naive_bayes import TRUE_PARAMS
    >>> p = {k: np.array([TRUE_PARAMS[k]]) for k in PARAMETER_NAMES}
    >>> bool(np.isfinite(log_likelihood(p, RELEASED, epsilon=10.0))[0])
    True
    """
    n = validate.positive_int("n", n)
    mech = mechanism(epsilon=epsilon, n=n)
    released = mech.check_released(released)
    q = _check_params(params)
    log_choose, tables = _likelihood_terms(released, float(mech.scale[0]), n)
    a = np.arange(n + 1)
    m = a[:, None]
    out = np.empty(len(q))
    for lo in range(0, len(q), 256):
        qb = q[lo : lo + 256]
        per_class = np.zeros((len(qb), 2, n + 1))
        for (i, k), table in tables.items():
            p1 = qb[:, _column(i, k), None, None]
            with np.errstate(divide="ignore"):
                terms = a * np.log(p1) + (m - a) * np.log1p(-p1)
            terms = np.where(a <= m, terms, -np.inf) + log_choose + table
            per_class[:, i] += logsumexp(terms, axis=2)
        with np.errstate(divide="ignore"):
            log_n1 = st.binom.logpmf(a, n, qb[:, :1])
        out[lo : lo + len(qb)] = logsumexp(
            log_n1 + per_class[:, 0] + per_class[:, 1, ::-1], axis=1
        )
    return out


def pymc_model(released=RELEASED, *, epsilon: float = EPSILON, n: int = N):
    """Build the PyMC model of the release with the counts summed out exactly.

    Parameters
    ----------
    released, epsilon, n
        As in :func:`log_likelihood`.

    Returns
    -------
    pymc.Model
        Five ``Beta(2, 2)`` variables named as :data:`PARAMETER_NAMES` and the
        potential ``s_dp``: the log-likelihood of :func:`log_likelihood`,
        written in PyTensor (built by :func:`dpinfer.reference.reference_model`).
    """
    import pymc as pm
    import pytensor.tensor as pt

    from dpinfer.reference import reference_model

    n = validate.positive_int("n", n)
    mech = mechanism(epsilon=epsilon, n=n)
    released = mech.check_released(released)
    log_choose, tables = _likelihood_terms(released, float(mech.scale[0]), n)
    a = np.arange(n + 1)
    m = a[:, None]
    valid = a <= m
    # exponents of p and 1 - p, zero outside the triangle a <= m (whose terms are -inf)
    a_exp = np.where(valid, a, 0).astype(float)
    b_exp = np.where(valid, m - a, 0).astype(float)
    log_binom_n1 = gammaln(n + 1) - gammaln(a + 1) - gammaln(n - a + 1)

    def build():
        return {name: pm.Beta(name, ALPHA, ALPHA) for name in PARAMETER_NAMES}

    def loglik(params, _released):
        per_class = [pt.zeros(n + 1), pt.zeros(n + 1)]
        for (i, k), table in tables.items():
            p1 = params[PARAMETER_NAMES[_column(i, k)]]
            terms = a_exp * pt.log(p1) + b_exp * pt.log1p(-p1) + (log_choose + table)
            per_class[i] = per_class[i] + pm.math.logsumexp(terms, axis=1)
        p = params["p_class"]
        log_n1 = log_binom_n1 + a * pt.log(p) + (n - a) * pt.log1p(-p)
        return pm.math.logsumexp(log_n1 + per_class[0] + per_class[1][::-1])

    return reference_model(build, mech, released, loglik=loglik)


def pymc_reference(released=RELEASED, *, epsilon: float = EPSILON, n: int = N, **nuts):
    """Sample the posterior with NUTS on the exact marginal likelihood (no simulation).

    Parameters
    ----------
    released, epsilon, n
        The release, its privacy budget and the number of records.
    **nuts
        ``draws``, ``tune``, ``chains`` (default 1000, 1000, 2), ``rng``,
        ``progressbar`` (default False) and options of :func:`pymc.sample`,
        as in :func:`dpinfer.reference.sample_nuts`.

    Returns
    -------
    arviz.InferenceData
        ``posterior`` with one variable per parameter name; ``attrs`` carry
        ``divergences``, ``rhat_max`` and ``ess``.

    Notes
    -----
    The model is :func:`pymc_model`. Nothing is simulated, so it checks
    ABC (which only simulates) by an independent route.
    """
    mech = mechanism(epsilon=epsilon, n=n)
    released = mech.check_released(released)
    attrs = {"likelihood": "counts summed out exactly", "model": REFERENCE}
    pymc_m = pymc_model(released, epsilon=epsilon, n=n)
    return sample_nuts(
        pymc_m,
        mechanism=mech,
        observed=released,
        var_names=list(PARAMETER_NAMES),
        attrs=attrs,
        **nuts,
    )


# --- internals ---------------------------------------------------------------------


def _likelihood_terms(released, scale, n):
    """Return ``log C(m, a)`` and, per (class, feature), ``log eta`` at ``(a, m - a)``."""
    a = np.arange(n + 1)
    m = a[:, None]
    with np.errstate(invalid="ignore"):
        log_choose = np.where(
            a <= m, gammaln(m + 1) - gammaln(a + 1) - gammaln(np.maximum(m - a, 0) + 1), -np.inf
        )
    r = released.reshape(2, N_FEATURES, 2)
    log_norm = -2 * math.log(2 * scale)
    tables = {}
    for i in range(2):
        for k in range(N_FEATURES):
            first = np.abs(r[i, k, 0] - a / n)
            second = np.abs(r[i, k, 1] - np.maximum(m - a, 0) / n)
            tables[(i, k)] = log_norm - (first + second) / scale
    return log_choose, tables
