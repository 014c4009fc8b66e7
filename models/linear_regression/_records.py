"""The linear regression example as records, for :func:`dpinfer.da_mcmc`.

:func:`record_model`, exposed by :mod:`dpinfer.models.linear_regression`.
A record is one subject ``(x_1, x_2, y)``, unclamped; its statistic is its
share of the nine released statistics, ``t(x_i) / n`` on the clamped and
normalised scale, so that the released vector is the plain sum over records.
"""

from __future__ import annotations

import numpy as np
import scipy.stats as st

import dpinfer as dp
from dpinfer import validate

from . import _data as lr

__all__ = ["record_model"]


def record_model(*, n: int = lr.N) -> dp.RecordModel:
    r"""Return the regression as a :class:`dpinfer.RecordModel` of ``n`` subjects.

    Parameters
    ----------
    n : int, default 100
        Number of subjects; the per-record statistic is divided by it, so
        pass the same ``n`` to :func:`dpinfer.da_mcmc`.

    Returns
    -------
    dpinfer.RecordModel
        Prior ``beta ~ N(0, I_3)``; records of shape ``(batch, n, 3)``
        holding ``(x_1, x_2, y)``; the per-record statistic, shape
        ``(batch, n, 9)``, in the order of :data:`STATISTIC_NAMES`; the
        conjugate ``update`` and the complete-data ``loglik``.

    Notes
    -----
    Given the unclamped records the posterior of ``beta`` is the conjugate
    Gaussian of :func:`confidential_posterior`: precision
    :math:`I + X^\top X / \sigma^2`, mean :math:`(I + X^\top X/\sigma^2)^{-1}
    X^\top y / \sigma^2` with :math:`X = (1, x)`. The clamp acts on the
    statistics only, never on the model of the records.

    Examples
    --------
    >>> m, rng = record_model(), np.random.default_rng(0)
    >>> records = m.simulate_records({"beta": np.zeros((2, 3))}, 100, rng)
    >>> t = m.statistics(records)
    >>> records.shape, t.shape
    ((2, 100, 3), (2, 100, 9))
    >>> bool(np.allclose(t.sum(axis=1), lr.statistics(records[..., :2], records[..., 2])))
    True
    """
    n = validate.positive_int("n", n)
    return dp.RecordModel(
        prior={"beta": st.multivariate_normal(np.zeros(lr.P + 1), np.eye(lr.P + 1))},
        simulate=simulate_records,
        statistic=lambda records: record_statistics(records, n=n),
        update=conjugate_update,
        loglik=complete_loglik,
    )


def simulate_records(params, n, rng) -> np.ndarray:
    """``n`` subjects ``(x_1, x_2, y)`` per coefficient vector: shape ``(batch, n, 3)``."""
    x, y = lr._subjects(np.asarray(params["beta"], dtype=float), n, rng)
    return np.concatenate([x, y[..., None]], axis=-1)


def record_statistics(records, *, n: int) -> np.ndarray:
    """Each subject's share of the nine statistics: shape ``(batch, m, 9)``."""
    clamped = np.clip(records, -lr.CLAMP, lr.CLAMP) / lr.CLAMP
    x1, x2, y = clamped[..., 0], clamped[..., 1], clamped[..., 2]
    terms = (y, x1 * y, x2 * y, y * y, x1, x2, x1 * x1, x1 * x2, x2 * x2)
    return np.stack(terms, axis=-1) / n


def _design(records):
    ones = np.ones(records.shape[:-1] + (1,))
    return np.concatenate([ones, records[..., : lr.P]], axis=-1), records[..., lr.P]


def conjugate_update(records, rng) -> dict[str, np.ndarray]:
    """One draw of ``beta`` from its conjugate posterior given each dataset of records."""
    design, y = _design(np.asarray(records, dtype=float))
    precision = np.eye(lr.P + 1) + np.einsum("bni,bnj->bij", design, design) / lr.NOISE_VARIANCE
    chol = np.linalg.cholesky(precision)
    rhs = np.einsum("bni,bn->bi", design, y) / lr.NOISE_VARIANCE
    mean = np.linalg.solve(precision, rhs[..., None])[..., 0]
    # beta = mean + L^{-T} z has covariance (L L^T)^{-1}
    z = rng.standard_normal(mean.shape)
    offset = np.linalg.solve(np.swapaxes(chol, -1, -2), z[..., None])[..., 0]
    return {"beta": mean + offset}


def complete_loglik(records, params) -> np.ndarray:
    """Return ``sum_i log N(y_i | beta_0 + x_i beta, sigma^2)`` per dataset (up to a constant).

    The density of the predictors does not involve ``beta`` and is left out.
    """
    design, y = _design(np.asarray(records, dtype=float))
    fitted = np.einsum("bni,bi->bn", design, np.asarray(params["beta"], dtype=float))
    resid = y - fitted
    return -0.5 * np.sum(resid * resid, axis=1) / lr.NOISE_VARIANCE
