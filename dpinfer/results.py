"""The one place where numpy results become ArviZ objects.

Every sampler returns an :class:`arviz.InferenceData` built here: the
``posterior`` group holds equally weighted draws (so every ArviZ diagnostic
applies), per-draw diagnostics go to ``sample_stats``, the release to
``observed_data`` and mechanism parameters to ``constant_data``. ``attrs``
always carry the keys of :data:`ATTR_KEYS`, on ``idata.attrs`` and on every group.

Effective sample size: one story
--------------------------------
Two figures estimate how many independent draws the posterior is worth, and
they measure different things:

* ``ess_sampler``: the sampler's own estimate of the Monte Carlo error of the
  posterior means, as ``posterior variance / variance of the mean`` (smallest
  over the scalar components; :mod:`dpinfer.samplers._mcse`). Rejection ABC:
  the number of draws (they are i.i.d.). Importance ABC: the delta-method
  variance of the self-normalised weighted means, which sees where the heavy
  weights sit. SMC-ABC: the ancestral-lineage (Eve) estimator of Lee and
  Whiteley (2018), which sees the copies left by every resampling and moves
  too few to decorrelate them; when a chain keeps fewer than 30 lineages it
  is replaced by the between-chain estimate, and ``ess_method`` says so. The
  Kish ESS ``(sum w)^2 / sum w^2`` of the weights (what ``ess_sampler`` was
  before) stays as ``ess_kish``: it sees weight degeneracy only, and at small
  mechanism noise it overstated SMC's precision up to 5-fold
  (``benchmarks/reported_error.py``).
* ``ess_bulk`` (and ``ess_tail``): ArviZ's rank-normalised bulk (tail) ESS of
  the draws as they are stored (Vehtari et al. 2021), the smallest over the
  scalar components of the parameters. It sees autocorrelation along each
  chain and disagreement between chains, but not the weights; and it can
  exceed the number of draws for i.i.d. or antithetic samples.

``ess`` is the smaller of ``ess_sampler`` and ``ess_bulk``: the conservative
figure, the one to divide Monte Carlo variances by. ``rhat_max`` is the
largest rank-normalised split R-hat over the scalar components (NaN with one
chain).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from ._diagnostics import bulk_ess, rank_rhat, tail_ess
from ._version import __version__

if TYPE_CHECKING:
    from arviz import InferenceData
    from matplotlib.axes import Axes

__all__ = [
    "ATTR_KEYS",
    "effective_sample_size",
    "from_netcdf",
    "plot_rank_ecdf",
    "rhat",
    "sbc_from_inference_data",
    "sbc_to_inference_data",
    "to_batch_inference_data",
    "to_inference_data",
]

ATTR_KEYS = (
    "method",
    "reference",
    "mechanism",
    "epsilon",
    "delta",
    "n_simulations",
    "acceptance_rate",
    "ess",
    "ess_sampler",
    "ess_bulk",
    "ess_tail",
    "rhat_max",
    "chains",
    "log_evidence",
    "seed",
    "dpinfer_version",
)


def to_inference_data(
    posterior: Mapping[str, np.ndarray],
    *,
    attrs: Mapping,
    sample_stats: Mapping[str, np.ndarray] | None = None,
    prior: Mapping[str, np.ndarray] | None = None,
    observed: np.ndarray | None = None,
    constant_data: Mapping[str, np.ndarray] | None = None,
    chains: int = 1,
    diagnostic_vars: list[str] | None = None,
) -> InferenceData:
    """Build an InferenceData from draws of shape ``(chains * draws, ...)`` per variable.

    Parameters
    ----------
    posterior : dict
        Equally weighted draws per parameter.
    attrs : dict
        Metadata, stored on ``idata.attrs`` and on every group; missing keys of
        :data:`ATTR_KEYS` are filled with NaN.
    sample_stats, prior, constant_data : dict, optional
        Further groups. ``sample_stats`` arrays share the posterior's leading
        dimension.
    observed : array_like, optional
        The release, stored as ``observed_data['s_dp']``.
    chains : int, default 1
        Number of chains the leading dimension is split into.
    diagnostic_vars : list of str, optional
        The posterior variables the ESS and R-hat in ``attrs`` are computed
        over (default: all of them); a sampler that stores latent variables
        beside the parameters (DA-MCMC's imputed statistic) names its
        parameters here.

    Returns
    -------
    arviz.InferenceData
        ``attrs['ess']`` is made conservative: ``attrs['ess']`` as given is
        kept as ``ess_sampler`` and ``ess`` becomes the smaller of it and
        ArviZ's bulk ESS (see the module docstring); ``ess_bulk``,
        ``ess_tail``, ``rhat_max`` and ``chains`` are filled from the draws.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> idata = to_inference_data({"x": rng.normal(size=400)}, chains=4,
    ...                           attrs={"method": "demo", "ess": 120.0})
    >>> idata.posterior["x"].shape, idata.attrs["ess"], idata.attrs["ess_sampler"]
    ((4, 100), 120.0, 120.0)
    """
    groups = _groups(posterior, chains, sample_stats, prior, observed, constant_data)
    drawn = groups["posterior"]
    diagnosed = drawn if diagnostic_vars is None else {k: drawn[k] for k in diagnostic_vars}
    diagnostics = _draw_diagnostics(diagnosed, attrs.get("ess", math.nan))
    return _assemble(groups, {**attrs, **diagnostics})


def to_batch_inference_data(
    posterior: Mapping[str, np.ndarray],
    *,
    attrs: Mapping,
    sample_stats: Mapping[str, np.ndarray] | None = None,
    observed: np.ndarray | None = None,
    constant_data: Mapping[str, np.ndarray] | None = None,
    chains: int = 1,
) -> InferenceData:
    """Build one InferenceData holding the posteriors of a batch of releases.

    Parameters
    ----------
    posterior : dict
        Equally weighted draws per parameter, shaped ``(chains * draws, releases, ...)``:
        the second axis indexes the release whose posterior the draws are from.
    attrs : dict
        Metadata as for :func:`to_inference_data`; ``attrs['ess']``, if given, is
        the sampler's ESS of each release's draws (the same for all).
    sample_stats : dict, optional
        Per-draw statistics shaped like the posterior arrays.
    observed : array_like, optional
        The releases, ``(releases, *event_shape)``, stored as ``observed_data['s_dp']``.
    constant_data : dict, optional
        Mechanism parameters.
    chains : int, default 1
        Number of chains the leading dimension is split into.

    Returns
    -------
    arviz.InferenceData
        Every variable has a ``release`` dimension after ``chain`` and ``draw``,
        so ``idata.posterior.isel(release=i)`` is the posterior of release ``i``.
        The diagnostics are per release, computed for all releases at once
        (:mod:`dpinfer._diagnostics`): ``attrs['ess_release']`` (the smaller of
        the sampler's ESS and the bulk ESS, over the scalar components) and
        ``attrs['rhat_release']``; ``ess``, ``ess_bulk`` and ``rhat_max`` are
        their extremes over the releases.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> idata = to_batch_inference_data({"x": rng.normal(size=(400, 3))}, chains=4,
    ...                                 attrs={"method": "demo"}, observed=[0.1, 0.5, 0.9])
    >>> idata.posterior["x"].dims, idata.attrs["ess_release"].shape
    (('chain', 'draw', 'release'), (3,))
    """
    groups = _groups(posterior, chains, sample_stats, None, observed, constant_data)
    dims = {name: ["release"] for name in (*groups["posterior"], *groups.get("sample_stats", {}))}
    if observed is not None:
        dims["s_dp"] = ["release"]
    diagnostics = _batch_diagnostics(groups["posterior"], attrs.get("ess", math.nan))
    return _assemble(groups, {**attrs, **diagnostics}, dims=dims)


def sbc_to_inference_data(
    *,
    truths: Mapping[str, np.ndarray],
    statistics: np.ndarray,
    releases: np.ndarray,
    ranks: Mapping[str, np.ndarray],
    fractional_ranks: Mapping[str, np.ndarray],
    n_draws: np.ndarray,
    posterior_variances: Mapping[str, np.ndarray],
    attrs: Mapping,
) -> InferenceData:
    """Store a simulation-based calibration run (:class:`dpinfer.calibration.SBCResult`).

    Each replicate is one draw of a single chain: ``prior`` holds the true
    parameters, ``prior_predictive`` the confidential statistics ``s`` and the
    releases ``s_dp``, ``sample_stats_prior`` the number of posterior draws each
    rank is out of (``n_draws``), and three groups outside ArviZ's schema,
    ``rank``, ``fractional_rank`` and ``posterior_variance`` (of each replicate's
    draws), one variable per parameter shaped like it.
    """
    groups = {
        "prior": _by_chain(truths, 1),
        "prior_predictive": _by_chain({"s": statistics, "s_dp": releases}, 1),
        "sample_stats_prior": _by_chain({"n_draws": n_draws}, 1),
    }
    extra = {
        "rank": _by_chain(ranks, 1),
        "fractional_rank": _by_chain(fractional_ranks, 1),
        "posterior_variance": _by_chain(posterior_variances, 1),
    }
    return _assemble(groups, attrs, extra=extra)


def sbc_from_inference_data(idata: InferenceData) -> dict:
    """Return the arrays and attributes that :func:`sbc_to_inference_data` stored, as numpy."""
    missing = [g for g in _SBC_GROUPS if g not in idata.groups()]
    if missing:
        raise ValueError(
            "idata must be a simulation-based calibration exported by SBCResult."
            f"to_inference_data(); it has no {', '.join(missing)} group(s)"
        )

    def first_chain(group) -> dict:
        return {name: np.asarray(var.values)[0] for name, var in idata[group].data_vars.items()}

    predictive = first_chain("prior_predictive")
    return {
        "truths": first_chain("prior"),
        "statistics": predictive["s"],
        "releases": predictive["s_dp"],
        "ranks": first_chain("rank"),
        "fractional_ranks": first_chain("fractional_rank"),
        "n_draws": first_chain("sample_stats_prior")["n_draws"],
        # None for an export made before the variances were stored
        "posterior_variances": first_chain("posterior_variance")
        if "posterior_variance" in idata.groups()
        else None,
        "attrs": dict(idata.attrs),
    }


_SBC_GROUPS = ("prior", "prior_predictive", "sample_stats_prior", "rank", "fractional_rank")


def plot_rank_ecdf(
    fractional_ranks: Mapping[str, np.ndarray],
    *,
    titles: Mapping[str, str],
    ci_prob: float,
    axes: Axes | ArrayLike | None = None,
) -> np.ndarray:
    """ECDF of each parameter's fractional ranks minus the uniform CDF, with simultaneous bands.

    Through ArviZ's ``plot_ecdf(difference=True, confidence_bands="optimized")``:
    the band holds the whole ECDF difference with probability ``ci_prob`` for
    uniform ranks (Säilynoja, Bürkner and Vehtari 2022), evaluated at 100 points
    (or one per replicate if fewer) fixed in advance. Returns the axes.
    """
    import matplotlib.pyplot as plt
    import scipy.stats

    az = _arviz()
    labels = list(fractional_ranks)
    if axes is None:
        _, grid = plt.subplots(
            1, len(labels), figsize=(3.4 * len(labels), 2.8), squeeze=False, layout="constrained"
        )
        axes = grid[0]
    axes = np.atleast_1d(np.asarray(axes, dtype=object))
    if axes.size != len(labels):
        raise ValueError(f"axes must hold {len(labels)} axes (one per parameter), got {axes.size}")
    for ax, label in zip(axes.flat, labels, strict=True):
        values = np.asarray(fractional_ranks[label], dtype=float)
        points = np.linspace(0.0, 1.0, min(values.size, 100) + 1)[1:]
        az.plot_ecdf(
            values,
            cdf=scipy.stats.uniform(0, 1).cdf,
            difference=True,
            confidence_bands="optimized",
            ci_prob=ci_prob,
            eval_points=points,
            ax=ax,
        )
        ax.axhline(0.0, color="0.6", lw=0.8)
        ax.set_title(titles[label], fontsize="medium")
        ax.set_xlabel("fractional rank")
    axes.flat[0].set_ylabel("ECDF - uniform CDF")
    return axes


def _groups(posterior, chains, sample_stats, prior, observed, constant_data) -> dict:
    groups = {"posterior": _by_chain(posterior, chains)}
    if sample_stats:
        groups["sample_stats"] = _by_chain(sample_stats, chains)
    if prior:
        groups["prior"] = _by_chain(prior, 1)
    if observed is not None:
        groups["observed_data"] = {"s_dp": np.asarray(observed)}
    if constant_data:
        groups["constant_data"] = {k: np.asarray(v) for k, v in constant_data.items()}
    return groups


def _assemble(groups: dict, attrs: Mapping, *, dims: Mapping | None = None, extra=None):
    """``az.from_dict(**groups)`` with ``attrs`` on the result and every group.

    ``extra`` maps the names of groups outside ArviZ's schema to dicts of arrays.
    """
    az = _arviz()
    with warnings.catch_warnings():
        # the arrays are (chain, draw, ...) by construction; ArviZ's shape guess
        # warns whenever a run keeps fewer draws than chains (an ABCDP run that
        # accepted nothing)
        warnings.filterwarnings("ignore", message="More chains", category=UserWarning)
        idata = az.from_dict(**groups, dims=dims)
        if extra:  # groups of our own (the SBC ranks), outside ArviZ's schema on purpose
            datasets = {k: az.dict_to_dataset(v, dims=dims) for k, v in extra.items()}
            idata.add_groups(datasets, warn_on_custom_groups=False)
    meta = _netcdf_attrs(attrs)
    idata.attrs.update(meta)
    for name in idata.groups():
        idata[name].attrs.update(meta)
    return idata


def from_netcdf(path: str | os.PathLike) -> InferenceData:
    """Load a result saved with ``idata.to_netcdf(path)``."""
    return _arviz().from_netcdf(path)


def effective_sample_size(draws: np.ndarray, *, method: str = "bulk") -> float:
    """Bulk (or ``method="tail"``) ESS of draws shaped ``(chains, draws)`` (via ArviZ).

    Vehtari et al. (2021); computed on ArviZ's NumPy path (see :func:`_diagnostics`).
    """
    with _diagnostics() as az:
        return float(az.ess(np.asarray(draws, dtype=float), method=method))


def rhat(draws: np.ndarray) -> float:
    """Rank-normalised split R-hat of draws shaped ``(chains, draws)`` (Vehtari et al. 2021)."""
    with _diagnostics() as az:
        return float(az.rhat(np.asarray(draws, dtype=float)))


@contextlib.contextmanager
def _diagnostics():
    """ArviZ, with its diagnostics on their NumPy path while the block runs.

    ArviZ compiles its variance with numba without a cache, in every process:
    0.3-0.5 CPU s on the first ESS of a session, for arrays of one component
    where NumPy is as fast and gives the same figures
    (``benchmarks/first_call.py``). The switch is restored on exit.
    """
    az = _arviz()
    switch = getattr(az, "Numba", None)
    previous = getattr(switch, "numba_flag", None)
    if switch is not None and previous is not None:
        switch.numba_flag = False
    try:
        yield az
    finally:
        if switch is not None and previous is not None:
            switch.numba_flag = previous


def _draw_diagnostics(by_chain: Mapping[str, np.ndarray], ess_sampler) -> dict:
    """Bulk and tail ESS, R-hat over the draws' scalar components; the conservative ESS.

    Components that are constant, not finite, or have fewer than 4 draws are left out.
    The estimators are ArviZ's, computed for all components at once
    (:mod:`dpinfer._diagnostics`).
    """
    columns = []
    for arr in by_chain.values():
        chains, draws = arr.shape[:2]
        if draws >= 4 and arr.dtype.kind in "iuf":
            flat = arr.reshape(chains, draws, -1).astype(float)
            keep = np.isfinite(flat).all(axis=(0, 1)) & (np.ptp(flat, axis=(0, 1)) > 0)
            columns.append(flat[..., keep])
    components = np.concatenate(columns, axis=2) if columns else np.empty((1, 0, 0))
    given = float(ess_sampler)
    ess_bulk = _extreme(np.nanmin, bulk_ess(components))
    return {
        "ess": min((v for v in (given, ess_bulk) if not math.isnan(v)), default=math.nan),
        "ess_sampler": given,
        "ess_bulk": ess_bulk,
        "ess_tail": _extreme(np.nanmin, tail_ess(components)),
        "rhat_max": _extreme(np.nanmax, rank_rhat(components)),
        "chains": next(iter(by_chain.values())).shape[0] if by_chain else 0,
    }


def _batch_diagnostics(by_chain: Mapping[str, np.ndarray], ess_sampler) -> dict:
    """Per-release bulk ESS and R-hat (the release is the axis after ``draw``)."""
    first = next(iter(by_chain.values()))
    chains, draws, releases = first.shape[:3]
    bulk = np.full(releases, math.nan)
    rhats = np.full(releases, math.nan)
    columns = [
        arr.reshape(*arr.shape[:3], -1).astype(float)
        for arr in by_chain.values()
        if arr.dtype.kind in "iuf"
    ]
    if columns and draws >= 4:
        flat = np.concatenate(columns, axis=3).reshape(chains, draws, -1)
        bulk = _per_release(np.fmin, bulk_ess(flat), releases)
        rhats = _per_release(np.fmax, rank_rhat(flat), releases)
    given = float(ess_sampler)
    ess = np.fmin(bulk, given)  # fmin: NaN only where both are
    return {
        "ess": _extreme(np.nanmin, ess),
        "ess_sampler": given,
        "ess_bulk": _extreme(np.nanmin, bulk),
        "ess_tail": math.nan,
        "rhat_max": _extreme(np.nanmax, rhats),
        "ess_release": ess,
        "rhat_release": rhats,
        "chains": chains,
        "releases": releases,
    }


def _per_release(reduce, values: np.ndarray, releases: int) -> np.ndarray:
    """Reduce ``values`` (release-major components) over each release's components."""
    return reduce.reduce(values.reshape(releases, -1), axis=1)


def _extreme(reduce, values: np.ndarray) -> float:
    return float(reduce(values)) if np.isfinite(values).any() else math.nan


def _arviz():
    # ArviZ 0.2x announces its 1.0 refactor on import; the move is one file (this one).
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=FutureWarning, module="arviz")
        import arviz

    return arviz


def _by_chain(group: Mapping[str, np.ndarray], chains: int) -> dict:
    out = {}
    for name, values in group.items():
        arr = np.asarray(values)
        if arr.shape[0] % chains:
            raise ValueError(f"{name}: {arr.shape[0]} draws do not split into {chains} chains")
        out[name] = arr.reshape(chains, arr.shape[0] // chains, *arr.shape[1:])
    return out


def _netcdf_attrs(attrs: Mapping) -> dict:
    """Fill the standard keys and make every value netCDF-storable."""
    merged: dict[str, object] = {key: math.nan for key in ATTR_KEYS}
    merged.update(attrs)
    merged["dpinfer_version"] = __version__
    return {key: _storable(value) for key, value in merged.items()}


def _storable(value):
    if value is None:
        return "none"
    if isinstance(value, bool | np.bool_):
        return int(value)
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, int | float | str):
        return value
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf" and value.ndim == 1:
        return value.astype(float if value.dtype.kind == "f" else np.int64)
    if isinstance(value, Mapping | list | tuple):
        return json.dumps(value, default=str)
    return str(value)
