"""The result of a simulation-based calibration run."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from .. import _validate
from ..results import plot_rank_ecdf, sbc_from_inference_data, sbc_to_inference_data
from ._ranks import bins_for, uniformity_pvalue

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from ..results import InferenceData

__all__ = ["SBCResult"]

TEST = "Pearson chi-square of the fractional ranks in equiprobable bins"


class SBCResult:
    """Ranks of the true parameters among their posterior draws, over SBC replicates.

    Built by :func:`dpinfer.sbc`; also rebuilt from its export by
    :meth:`from_inference_data`.

    Attributes
    ----------
    parameters : tuple of str
        The scalar components ranked: a parameter's name, or ``name[i]`` (``name[i,j]``)
        for each component of a vector (matrix) parameter.
    ranks : numpy.ndarray
        ``(replicates, len(parameters))`` integer ranks: the number of the replicate's
        (thinned) posterior draws below the true value, ties in random order.
    n_draws : numpy.ndarray
        ``(replicates,)``: the number of draws ``L`` each rank is out of; under a
        correct sampler a rank is uniform on ``0..L``.
    fractional_ranks : numpy.ndarray
        ``(rank + V) / (L + 1)`` with ``V ~ U(0, 1)``: exactly uniform on ``(0, 1)``
        under a correct sampler, whatever ``L``.
    p_values : dict
        One p-value per component: Pearson's chi-square test of its fractional ranks
        in ``bins`` equiprobable bins (``min(20, replicates // 5)``; NaN with fewer
        than 10 replicates). Under a correct sampler each p-value is uniform (up
        to the chi-square approximation), so a test at level ``alpha`` fails it with
        probability ``alpha``. The p-values are *not* corrected for multiplicity:
        see :attr:`p_value`.
    contraction : dict
        One number per component, beside its p-value: ``1 - mean posterior variance
        / prior variance``, the share of the prior's variance the posteriors remove on
        average over the replicates. An exact sampler's is ``Var(E[theta | s_dp]) /
        Var(theta)``: near 0 where releases say little, near 1 where they pin the
        parameter down. A sampler that returns the prior shows about 0 whatever the
        release, which the rank test cannot see (NaN where the variances are unknown).
    posterior_variances : numpy.ndarray
        ``(replicates, len(parameters))``: the variance of each replicate's draws.
    prior_variances : numpy.ndarray
        ``(len(parameters),)``: each component's prior variance, from 20,000 draws.
    truths : dict
        The true parameter values, ``(replicates, *shape)`` per parameter.
    statistics, releases : numpy.ndarray
        The confidential statistic and its release, per replicate.
    info : dict
        The seed's entropy, the sampler's description and how it was run.

    Notes
    -----
    Ranks pile at both ends (a U-shaped histogram, an ECDF difference that dips
    then rises) when posteriors are too narrow, in the middle when too wide, and
    at one end when they are shifted. A sampler that passes is calibrated on
    average over the prior; it can still be wrong for particular releases.

    References
    ----------
    .. [1] Talts, S., Betancourt, M., Simpson, D., Vehtari, A. and Gelman, A. (2018).
       Validating Bayesian inference algorithms with simulation-based calibration.
       arXiv:1804.06788.
    .. [2] Säilynoja, T., Bürkner, P.-C. and Vehtari, A. (2022). Graphical test for
       discrete uniformity and its applications in goodness-of-fit evaluation and
       multiple sample comparison. Statistics and Computing 32, 32.
    """

    def __init__(
        self,
        *,
        truths: Mapping[str, np.ndarray],
        statistics: np.ndarray,
        releases: np.ndarray,
        ranks: np.ndarray,
        fractional_ranks: np.ndarray,
        n_draws: np.ndarray,
        info: Mapping,
        posterior_variances: np.ndarray | None = None,
        prior_variances: np.ndarray | None = None,
    ) -> None:
        self.truths = {k: np.asarray(v) for k, v in truths.items()}
        self.parameters = tuple(_component_labels(self.truths))
        self.statistics = np.asarray(statistics)
        self.releases = np.asarray(releases)
        self.ranks = np.asarray(ranks, dtype=np.int64)
        self.fractional_ranks = np.asarray(fractional_ranks, dtype=float)
        self.n_draws = np.asarray(n_draws, dtype=np.int64)
        self.info = dict(info)
        self.bins = bins_for(len(self.ranks))
        self.p_values = {
            label: uniformity_pvalue(self.fractional_ranks[:, j], self.bins)
            for j, label in enumerate(self.parameters)
        }
        k = len(self.parameters)
        self.posterior_variances = _or_nan(posterior_variances, (len(self.ranks), k))
        self.prior_variances = _or_nan(prior_variances, (k,))
        with np.errstate(divide="ignore", invalid="ignore"):
            mean_posterior = np.mean(self.posterior_variances, axis=0)
            ratios = 1.0 - mean_posterior / self.prior_variances
        self.contraction = {label: float(ratios[j]) for j, label in enumerate(self.parameters)}

    def flat_truths(self) -> np.ndarray:
        """Return the true values as ``(replicates, len(parameters))``, a column per component."""
        return np.concatenate([_flat(v) for v in self.truths.values()], axis=1).astype(float)

    @property
    def replicates(self) -> int:
        """Number of replicates."""
        return len(self.ranks)

    @property
    def p_value(self) -> float:
        """Bonferroni-adjusted p-value over the components: ``min(1, k * min(p_values))``.

        A test of all components together at level ``alpha`` (compare it with
        ``alpha``) fails a correct sampler with probability at most ``alpha``.
        """
        values = np.array(list(self.p_values.values()))
        if np.isnan(values).all():
            return math.nan
        return float(min(1.0, len(values) * np.nanmin(values)))

    def coverage(self, levels: Sequence[float] = (0.5, 0.8, 0.9, 0.95)) -> dict[str, np.ndarray]:
        """Empirical coverage of central credible intervals.

        Parameters
        ----------
        levels : sequence of float, default (0.5, 0.8, 0.9, 0.95)
            Credible levels ``q`` in ``(0, 1)``.

        Returns
        -------
        dict
            Per component, the fraction of replicates whose true value lies in the
            central ``q`` interval of its posterior draws (between their
            ``(1 - q) / 2`` and ``(1 + q) / 2`` quantiles, read through the
            fractional rank), one entry per level. A correct sampler covers with
            probability ``q``: the binomial standard error is
            ``sqrt(q (1 - q) / replicates)``.
        """
        q = np.atleast_1d(np.asarray(levels, dtype=float))
        if q.ndim != 1 or not np.all((q > 0) & (q < 1)):
            raise ValueError(f"levels must be credible levels in (0, 1), got {levels!r}")
        distance = np.abs(self.fractional_ranks - 0.5)  # (replicates, k)
        inside = distance[:, :, None] <= q / 2
        return {label: inside[:, j].mean(axis=0) for j, label in enumerate(self.parameters)}

    def plot(
        self,
        *,
        parameters: Sequence[str] | None = None,
        ci_prob: float = 0.95,
        axes: Axes | ArrayLike | None = None,
    ) -> np.ndarray:
        """Plot each component's rank ECDF minus the uniform CDF, with simultaneous bands.

        Parameters
        ----------
        parameters : sequence of str, optional
            Components to plot (default all, see :attr:`parameters`).
        ci_prob : float, default 0.95
            The band holds the whole curve of a correct sampler with this
            probability (simultaneously over the curve, not point by point).
        axes : matplotlib axes, optional
            One per component plotted; new ones by default.

        Returns
        -------
        numpy.ndarray of matplotlib axes
        """
        labels = list(self.parameters if parameters is None else parameters)
        unknown = [p for p in labels if p not in self.parameters]
        if unknown or not labels:
            raise ValueError(f"parameters must name some of {list(self.parameters)}, got {labels}")
        ci_prob = _validate.probability_open("ci_prob", ci_prob)
        columns = {p: self.fractional_ranks[:, self.parameters.index(p)] for p in labels}
        titles = {p: f"{p}: p = {self.p_values[p]:.2g}" for p in labels}
        return plot_rank_ecdf(columns, titles=titles, ci_prob=ci_prob, axes=axes)

    def to_inference_data(self) -> InferenceData:
        """Return the run as an :class:`arviz.InferenceData` (saves with ``to_netcdf``).

        Groups: ``prior`` (the true parameters, one chain with a draw per
        replicate), ``prior_predictive`` (``s``, ``s_dp``), ``sample_stats_prior``
        (``n_draws``), and ``rank`` and ``fractional_rank`` (one variable per
        parameter, shaped like it); ``attrs`` carry the p-values and the run's
        description. :meth:`from_inference_data` reads it back.
        """
        return sbc_to_inference_data(
            truths=self.truths,
            statistics=self.statistics,
            releases=self.releases,
            ranks=self._by_parameter(self.ranks),
            fractional_ranks=self._by_parameter(self.fractional_ranks),
            n_draws=self.n_draws,
            posterior_variances=self._by_parameter(self.posterior_variances),
            attrs={
                "method": "sbc",
                "reference": "Talts et al. (2018), arXiv:1804.06788",
                "test": TEST,
                "bins": self.bins,
                "replicates": self.replicates,
                "p_values": self.p_values,
                "contraction": self.contraction,
                "prior_variances": dict(zip(self.parameters, self.prior_variances.tolist())),
                **self.info,
            },
        )

    @classmethod
    def from_inference_data(cls, idata: InferenceData) -> SBCResult:
        """Rebuild a result from :meth:`to_inference_data`'s export (p-values recomputed)."""
        stored = sbc_from_inference_data(idata)
        truths = stored["truths"]
        flat = {name: _flat(stored["ranks"][name]) for name in truths}
        frac = {name: _flat(stored["fractional_ranks"][name]) for name in truths}
        info = {k: v for k, v in stored["attrs"].items() if k in ("seed", "sampler", "path")}
        variances = stored["posterior_variances"]
        prior = stored["attrs"].get("prior_variances")
        prior = json.loads(prior) if isinstance(prior, str) else prior  # netCDF keeps text
        labels = _component_labels(truths)
        return cls(
            truths=truths,
            statistics=stored["statistics"],
            releases=stored["releases"],
            ranks=np.concatenate(list(flat.values()), axis=1),
            fractional_ranks=np.concatenate(list(frac.values()), axis=1),
            n_draws=stored["n_draws"],
            info=info,
            posterior_variances=None
            if variances is None
            else np.concatenate([_flat(variances[name]) for name in truths], axis=1),
            prior_variances=None if prior is None else np.array([prior[k] for k in labels]),
        )

    def _by_parameter(self, columns: np.ndarray) -> dict[str, np.ndarray]:
        out, start = {}, 0
        for name, value in self.truths.items():
            shape = value.shape[1:]
            size = math.prod(shape)
            out[name] = columns[:, start : start + size].reshape(len(columns), *shape)
            start += size
        return out

    def __repr__(self) -> str:
        rows = "\n".join(
            f"  {label:<16} p = {self.p_values[label]:<9.3g} "
            f"contraction = {self.contraction[label]:.3g}"
            for label in self.parameters
        )
        info = json.dumps({k: self.info[k] for k in ("sampler",) if k in self.info})
        return (
            f"SBCResult({self.replicates} replicates, median draws per rank "
            f"{int(np.median(self.n_draws))}, {self.bins} bins; {info})\n{rows}"
        )


def _or_nan(values, shape: tuple[int, ...]) -> np.ndarray:
    """``values`` as a float array of ``shape``, or NaN (an export made without them)."""
    if values is None:
        return np.full(shape, np.nan)
    return np.asarray(values, dtype=float).reshape(shape)


def _flat(values: np.ndarray) -> np.ndarray:
    return np.asarray(values).reshape(len(values), -1)


def _component_labels(truths: Mapping[str, np.ndarray]) -> list[str]:
    labels = []
    for name, value in truths.items():
        shape = value.shape[1:]
        if not shape:
            labels.append(name)
            continue
        for index in np.ndindex(*shape):
            labels.append(f"{name}[{','.join(str(i) for i in index)}]")
    return labels
