r"""Exact marginal likelihoods of released cells in PyMC: the confidential value summed out.

A real release is a table of noisy cells. The analyst models the confidential
value of each cell (a count, a total) with an ordinary PyMC distribution and
attaches the release with the latent value integrated out, cell by cell:

.. math:: \log p(y_i \mid \theta) = \log \sum_s p(s \mid \theta)\, \eta_i(y_i \mid s)

(an integral for a continuous latent). :func:`to_pymc` adds that term to the
model in context as an observed variable, with its gradient, so NUTS samples
the parameters directly and ``pm.compute_log_likelihood`` and posterior
predictive checks work as for any observed variable.

How each latent is handled:

============================  ================================================
latent distribution           method
============================  ================================================
Poisson, Binomial,            compiled summation (:mod:`._kernels`), windows
NegativeBinomial, Geometric,  chosen per cell with a proven bound on the
DiscreteUniform               neglected mass (``tol``, default 1e-10 relative)
Normal                        closed form under Gaussian and Laplace noise
other continuous families     piecewise Gauss-Legendre quadrature under
with a PyMC inverse CDF       Gaussian and Laplace noise (:mod:`._quadrature`;
(Gamma, LogNormal, Beta, ...) error at most ~1e-10 in the log, measured)
============================  ================================================

Examples
--------
>>> import numpy as np, pymc as pm, dpinfer as dp
>>> mech = dp.DiscreteGaussian(2.0)
>>> released = np.array([12, 7, 30])
>>> population = np.array([1000, 800, 2500])
>>> with pm.Model() as model:
...     rate = pm.Gamma("rate", 2.0, 200.0)
...     cases = dp.to_pymc("cases", pm.Poisson.dist(mu=population * rate),
...                        observed=[(mech, released)])
>>> logp = model.compile_logp(sum=False)
>>> bool(np.isfinite(logp({"rate_log__": np.log(0.01)})[1]).all())
True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from .. import _validate
from ..mechanisms._pymc import register_latent_handler
from ..mechanisms.base import Mechanism
from ._latent import Latent, SharedLatentWarning, is_unregistered_distribution, read_latent

if TYPE_CHECKING:
    from pytensor.tensor.variable import TensorVariable

    from ..mechanisms.base import Mechanism

__all__ = ["SharedLatentWarning", "is_unregistered_distribution", "to_pymc"]

DEFAULT_TOL = 1e-10


def to_pymc(
    name: str,
    dist: TensorVariable,
    *,
    observed: Sequence[tuple[Mechanism, ArrayLike]],
    totals: tuple[ArrayLike, ArrayLike] | None = None,
    tol: float = DEFAULT_TOL,
) -> TensorVariable:
    r"""Add releases of a latent confidential value to the PyMC model in context, summed out.

    Parameters
    ----------
    name : str
        Name of the observed variable.
    dist : TensorVariable
        An *unregistered* univariate PyMC distribution of the confidential
        value of every cell, such as ``pm.Poisson.dist(mu=population * rate)``;
        its parameters broadcast to the cells' shape.
    observed : sequence of (Mechanism, array_like)
        The releases of the cells: one pair per mechanism that measured them
        (several pairs when every cell was measured more than once, each
        release of the cells' shape). The pair ``(mechanism, released)``
        contributes :math:`\eta(y_i \mid s)` for each cell :math:`i`; a cell's
        latent value is summed once against the product of its densities.
    totals : (array_like, array_like), optional
        Exact totals over groups of cells, as a ``(groups, values)`` pair:
        ``groups``, integers broadcasting to the cells' shape, gives each
        cell's group (``0`` to ``G - 1``; ``-1`` for a cell in no group);
        ``values``, of shape ``(G,)``, the published exact total of each
        group's latent counts (non-negative integers). The latent counts of a
        group are then summed over the splits of its total only (see Notes).
        Needs a discrete latent of one family (Poisson, Binomial,
        NegativeBinomial, Geometric, DiscreteUniform, DiracDelta).
    tol : float, default 1e-10
        Bound on the neglected mass of each cell's sum (of each group's, with
        ``totals``), relative to its likelihood (so the log-likelihood is within
        ``tol`` of the exact value).

    Returns
    -------
    TensorVariable
        The observed variable, whose ``pm.logp`` is the per-cell marginal
        log-likelihood.

    Raises
    ------
    ValueError
        If ``dist`` or one of its parameters does not broadcast to the cells'
        shape, naming both shapes (a shape known only when the model runs is
        checked then), or if the release of a mechanism other than
        :class:`~dpinfer.Thresholded` holds NaN.

    Warns
    -----
    SharedLatentWarning
        When an earlier observed variable of the model sums out the same
        latent expression over cells of the same shape: releases of the same
        cells belong in one call (``observed=[(m1, y1), (m2, y2)]``); two calls
        model two independent confidential values per cell.

    Notes
    -----
    Posterior predictive draws of the returned variable
    (``pm.sample_posterior_predictive``) are releases, not confidential values:
    a latent value drawn from ``dist`` plus fresh noise of each mechanism (one
    column per release when there are several; a suppressed cell of a
    :class:`~dpinfer.Thresholded` release at its cut). To draw the confidential
    values, make them a model variable and observe it with
    ``mechanism.to_pymc(name, variable, observed=released)``.

    For a discrete latent the sum runs over a window of each cell found anew
    at every evaluation: from the mode of :math:`p(s \mid \theta)\eta(y \mid s)`
    outward until a geometric bound on the rest (valid since every mechanism
    density, and every supported latent but the negative binomial with
    :math:`n < 1`, is log-concave in :math:`s`; that one gets a looser bound)
    falls below ``tol`` times the partial sum. The gradient is the posterior
    mean of the latent's score (Fisher's identity), computed in the same pass.
    A Normal latent has closed forms: under Gaussian noise
    :math:`y \sim N(\mu, \sigma^2 + \sigma_\eta^2)`, under Laplace noise of
    scale :math:`b` an exponentially modified Gaussian. Another continuous
    latent whose inverse CDF PyMC has is integrated by piecewise Gauss-Legendre
    quadrature, with pieces at its quantiles and at the noise's scales (see
    :mod:`dpinfer.marginal._quadrature` for the error); one without is refused.

    With ``totals``, the cells of a group are no longer independent: with
    :math:`f_i(k) = p(s_i = k \mid \theta) \prod_m \eta_m(y_{im} \mid k)`, the
    group's likelihood is the sum over the splits of its total :math:`T`,

    .. math:: L = \sum_{k_1 + \dots + k_n = T} \prod_i f_i(k_i)
              = (f_1 * \dots * f_n)(T),

    a convolution computed exactly to ``tol`` by
    :mod:`dpinfer.marginal._groups` (each factor exponentially tilted so that the
    total is where the convolution peaks, whatever the parameters), with its
    gradient by Fisher's identity. A group's log-likelihood is held by its first
    cell (in C order), its other cells hold 0, so the variable's log-likelihood
    still sums to the model's; the cells in no group keep their own terms.
    Posterior predictive draws of a group's cells draw its latent counts given
    the total, then the releases.

    Examples
    --------
    A table of 3 counties by 2 cells, each cell released with discrete Gaussian
    noise and each county's total published exactly:

    >>> import numpy as np, pymc as pm, dpinfer as dp
    >>> released = np.array([[40, 61], [7, 12], [103, 95]])
    >>> county_totals = np.array([98, 22, 201])
    >>> county = np.arange(3)[:, None]  # broadcasts to the cells' shape (3, 2)
    >>> mech = dp.DiscreteGaussian(3.0)
    >>> with pm.Model() as model:
    ...     rate = pm.LogNormal("rate", np.log(50.0), 1.0, shape=(3, 1))
    ...     share = pm.Dirichlet("share", np.ones(2))
    ...     y = mech.to_pymc("y", pm.Poisson.dist(mu=2 * rate * share), observed=released,
    ...                      totals=(county, county_totals))
    >>> logp = model.compile_logp(vars=[y], sum=False)
    >>> point = model.initial_point()
    >>> logp(point)[0][:, 1]  # each county's log-likelihood is held by its first cell
    array([0., 0., 0.])
    """
    from ._pymc import observe

    if not (isinstance(name, str) and name):
        raise TypeError(f"name must be a non-empty str, got {name!r}")
    tol = _validate.probability_open("tol", tol)
    if not is_unregistered_distribution(dist):
        raise TypeError(
            "dist must be an unregistered PyMC distribution such as pm.Poisson.dist(mu=...), "
            f"got {type(dist).__name__}; for a model variable use mechanism.to_pymc(name, "
            "variable, observed=released)"
        )
    latent: Latent = read_latent(dist)
    return observe(name, latent, _pairs(observed), tol=tol, dist=dist, totals=totals)


def _pairs(observed) -> list[tuple]:
    if isinstance(observed, tuple) and len(observed) == 2 and isinstance(observed[0], Mechanism):
        observed = [observed]
    if not isinstance(observed, list | tuple) or not observed:
        raise TypeError(
            "observed must be a non-empty list of (mechanism, released) pairs, got "
            f"{type(observed).__name__}"
        )
    pairs = []
    for i, pair in enumerate(observed):
        if not (isinstance(pair, tuple | list) and len(pair) == 2):
            raise TypeError(f"observed[{i}] must be a (mechanism, released) pair, got {pair!r}")
        mechanism, released = pair
        if not isinstance(mechanism, Mechanism):
            raise TypeError(
                f"observed[{i}][0] must be a dpinfer mechanism, got {type(mechanism).__name__}"
            )
        pairs.append((mechanism, np.asarray(released)))
    return pairs


def _mechanism_to_pymc(mechanism, name, value, *, observed, totals, tol):
    """``mechanism.to_pymc`` when ``value`` is a latent distribution (else NotImplemented)."""
    if not is_unregistered_distribution(value):
        return NotImplemented
    return to_pymc(name, value, observed=[(mechanism, observed)], totals=totals, tol=tol)


# Mechanism.to_pymc(name, pm.Poisson.dist(...), observed=...) sums the latent out here: the
# mechanisms sit below this package and reach it through the handler it registers
register_latent_handler(_mechanism_to_pymc)
