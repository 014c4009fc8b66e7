r"""The naive Bayes example as records, and its exact posterior by finite sums.

:func:`record_model` and :func:`exact_posterior`, exposed by
:mod:`dpinfer.models.naive_bayes`. A record is
``(y, x_1, x_2)`` with values in ``{1, 2}``; its statistic is its one-hot cell
in each of the ``K`` class-by-feature tables, divided by ``n``.

**Exact posterior.** Integrating the Beta(2, 2) priors out, the tables have a
Beta-binomial law: the class count :math:`n_1 \sim BB(n; 2, 2)` and, given it,
:math:`a_{ik} = \#\{y = i, x_k = 1\} \sim BB(n_i; 2, 2)` independently. With
:math:`L_{ik}(a, m) = BB(a; m)\,\eta(r_{i,k,1} \mid a/n)\,\eta(r_{i,k,2} \mid (m-a)/n)`
and :math:`G_{ik}(m) = \sum_a L_{ik}(a, m)`, the posterior of the class count is

.. math:: w(n_1) \propto BB(n_1; n) \prod_k G_{1k}(n_1)\, G_{2k}(n - n_1),

and given the counts every probability has a conjugate Beta posterior. Each
parameter's exact posterior is therefore a finite mixture of Beta laws: for
``p_class``, :math:`\sum_{n_1} w(n_1)\,\mathrm{Beta}(2 + n_1, 2 + n - n_1)`; for
``p_x{k}_y{i}``, the components :math:`\mathrm{Beta}(2 + a, 2 + n_i - a)` with
weights :math:`w(n_1) L_{ik}(a, n_i) / G_{ik}(n_i)`. The noise enters through
``scipy.stats.laplace``, not through dpinfer's mechanism code.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.optimize as so
import scipy.stats as st
from scipy.special import betainc, betaln, gammaln, logsumexp

import dpinfer as dp
from dpinfer import validate

from . import _data as nb

__all__ = ["BetaMixture", "exact_posterior", "record_model"]


def record_model(*, n: int = nb.N) -> dp.RecordModel:
    """Return the model as a :class:`dpinfer.RecordModel` of ``n`` records.

    Beta(2, 2) priors over :data:`PARAMETER_NAMES`; records ``(y, x_1, x_2)``
    in ``{1, 2}``, shape ``(batch, n, 3)``; the per-record statistic, each
    record's one-hot cell of the ``K`` tables over ``n``, shape ``(batch, n,
    8)`` in the order of :data:`CELL_NAMES` (pass the same ``n`` to
    :func:`dpinfer.da_mcmc`); the conjugate Beta ``update`` and the Bernoulli
    ``loglik``.

    Examples
    --------
    >>> m, rng = record_model(), np.random.default_rng(0)
    >>> records = m.simulate_records({k: np.full(2, 0.5) for k in nb.PARAMETER_NAMES}, 100, rng)
    >>> t = m.statistics(records)
    >>> records.shape, t.shape
    ((2, 100, 3), (2, 100, 8))
    >>> bool(np.allclose(t[0].sum(axis=0), nb.statistics(records[0, :, 0], records[0, :, 1:])))
    True
    """
    n = validate.positive_int("n", n)
    return dp.RecordModel(
        prior={name: st.beta(nb.ALPHA, nb.ALPHA) for name in nb.PARAMETER_NAMES},
        simulate=simulate_records,
        statistic=lambda records: record_statistics(records, n=n),
        update=conjugate_update,
        loglik=complete_loglik,
    )


def simulate_records(params, n, rng) -> np.ndarray:
    """``n`` records ``(y, x_1, x_2)`` per parameter set: int64, shape ``(batch, n, 3)``."""
    q = nb._check_params(params)
    y = np.where(rng.random((len(q), n)) < q[:, :1], 1, 2)
    columns = [y]
    for k in range(nb.N_FEATURES):
        p_one = np.where(y == 1, q[:, nb._column(0, k), None], q[:, nb._column(1, k), None])
        columns.append(np.where(rng.random(y.shape) < p_one, 1, 2))
    return np.stack(columns, axis=-1).astype(np.int64)


def record_statistics(records, *, n: int) -> np.ndarray:
    """Each record's one-hot cells, divided by ``n``: shape ``(batch, m, 8)``."""
    y = records[..., 0]
    cells = [
        (y == i) & (records[..., 1 + k] == j)
        for i in (1, 2)
        for k in range(nb.N_FEATURES)
        for j in (1, 2)
    ]
    return np.stack(cells, axis=-1) / n


def _counts(records):
    """Class-1 count and ``#(y = i, x_k = 1)``, ``#(y = i, x_k = 2)`` per dataset."""
    y = records[..., 0]
    n1 = np.sum(y == 1, axis=-1)
    ones = {}
    for i in (1, 2):
        for k in range(nb.N_FEATURES):
            x = records[..., 1 + k]
            ones[(i, k)] = (np.sum((y == i) & (x == 1), -1), np.sum((y == i) & (x == 2), -1))
    return n1, y.shape[-1] - n1, ones


def conjugate_update(records, rng) -> dict[str, np.ndarray]:
    """One draw of the five probabilities from their Beta posteriors given the records."""
    n1, n2, ones = _counts(np.asarray(records))
    out = {"p_class": rng.beta(nb.ALPHA + n1, nb.ALPHA + n2)}
    for (i, k), (a, b) in ones.items():
        name = nb.PARAMETER_NAMES[nb._column(i - 1, k)]
        out[name] = rng.beta(nb.ALPHA + a, nb.ALPHA + b)
    return {name: out[name] for name in nb.PARAMETER_NAMES}


def complete_loglik(records, params) -> np.ndarray:
    """Bernoulli log-likelihood of the records, per dataset."""
    q = nb._check_params(params)
    n1, n2, ones = _counts(np.asarray(records))
    with np.errstate(divide="ignore"):
        out = n1 * np.log(q[:, 0]) + n2 * np.log1p(-q[:, 0])
        for (i, k), (a, b) in ones.items():
            p = q[:, nb._column(i - 1, k)]
            out = out + a * np.log(p) + b * np.log1p(-p)
    return out


@dataclass(frozen=True)
class BetaMixture:
    """A finite mixture of Beta laws: ``sum_c weights[c] Beta(a[c], b[c])``."""

    weights: np.ndarray
    a: np.ndarray
    b: np.ndarray

    def mean(self) -> float:
        """Mixture mean."""
        return float(np.sum(self.weights * self.a / (self.a + self.b)))

    def std(self) -> float:
        """Mixture standard deviation."""
        ab = self.a + self.b
        second = np.sum(self.weights * self.a * (self.a + 1) / (ab * (ab + 1)))
        return float(np.sqrt(second - self.mean() ** 2))

    def cdf(self, x) -> np.ndarray:
        """Mixture distribution function."""
        x = np.asarray(x, dtype=float)
        return np.sum(self.weights * betainc(self.a, self.b, x[..., None]), axis=-1)

    def pdf(self, x) -> np.ndarray:
        """Mixture density."""
        x = np.asarray(x, dtype=float)
        return np.sum(self.weights * st.beta.pdf(x[..., None], self.a, self.b), axis=-1)

    def ppf(self, q: float) -> float:
        """Mixture quantile (root of the distribution function)."""
        return float(so.brentq(lambda x: self.cdf(x) - q, 0.0, 1.0, xtol=1e-12))


def exact_posterior(
    released=nb.RELEASED, *, epsilon: float = nb.EPSILON, n: int = nb.N
) -> dict[str, BetaMixture]:
    r"""Exact marginal posteriors of the five probabilities given a release, by finite sums.

    Parameters
    ----------
    released, epsilon, n
        As in :func:`dpinfer.models.naive_bayes.log_likelihood`.

    Returns
    -------
    dict
        Per parameter name, a mixture of Beta laws with ``mean()``, ``std()``,
        ``cdf(x)`` and ``ppf(q)``.

    Notes
    -----
    The Beta priors integrate out in closed form (Beta-binomial tables), the
    posterior of the class count is a sum over ``n + 1`` values, and given the
    counts each probability is conjugate (the module's notes).
    ``O(n^2)`` work, no sampling:
    an independent reference for any sampler, at any epsilon.

    Examples
    --------
    >>> post = exact_posterior(nb.RELEASED, epsilon=10.0)
    >>> round(post["p_class"].mean(), 3)
    0.768
    """
    n = validate.positive_int("n", n)
    released = nb.mechanism(epsilon=epsilon, n=n).check_released(released)
    scale = nb.sensitivity(n=n) / epsilon
    r = np.asarray(released, dtype=float).reshape(2, nb.N_FEATURES, 2)
    a = np.arange(n + 1)
    m = a[:, None]
    valid = a <= m
    log_bb = np.where(valid, _log_beta_binomial(np.minimum(a, m), m), -np.inf)
    log_l, log_g = {}, {}
    for i in range(2):
        for k in range(nb.N_FEATURES):
            noise = st.laplace.logpdf(r[i, k, 0], loc=a / n, scale=scale) + st.laplace.logpdf(
                r[i, k, 1], loc=np.maximum(m - a, 0) / n, scale=scale
            )
            log_l[(i, k)] = log_bb + noise
            log_g[(i, k)] = logsumexp(log_l[(i, k)], axis=1)
    log_w = _log_beta_binomial(a, n)
    for k in range(nb.N_FEATURES):
        log_w = log_w + log_g[(0, k)] + log_g[(1, k)][::-1]
    w = np.exp(log_w - logsumexp(log_w))
    out = {"p_class": BetaMixture(w, nb.ALPHA + a, nb.ALPHA + n - a)}
    for (i, k), table in log_l.items():
        sizes = a if i == 0 else n - a  # n_i for each class-1 count n1 = a
        within = np.exp(table[sizes] - log_g[(i, k)][sizes][:, None])  # (n1, count)
        weights = w[:, None] * within
        keep = weights > 1e-300
        count = np.broadcast_to(a, weights.shape)
        size = np.broadcast_to(sizes[:, None], weights.shape)
        out[nb.PARAMETER_NAMES[nb._column(i, k)]] = BetaMixture(
            weights[keep], nb.ALPHA + count[keep], nb.ALPHA + (size - count)[keep]
        )
    return {name: out[name] for name in nb.PARAMETER_NAMES}


def _log_beta_binomial(k, m):
    alpha = nb.ALPHA
    return (
        gammaln(m + 1)
        - gammaln(k + 1)
        - gammaln(m - k + 1)
        + betaln(k + alpha, m - k + alpha)
        - betaln(alpha, alpha)
    )
