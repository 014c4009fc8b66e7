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
import warnings
from collections.abc import Mapping

import numpy as np

from ._version import __version__

__all__ = [
    "ATTR_KEYS",
    "effective_sample_size",
    "from_netcdf",
    "rhat",
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
):
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
    az = _arviz()
    by_chain = _by_chain(posterior, chains)
    groups = {"posterior": by_chain}
    if sample_stats:
        groups["sample_stats"] = _by_chain(sample_stats, chains)
    if prior:
        groups["prior"] = _by_chain(prior, 1)
    if observed is not None:
        groups["observed_data"] = {"s_dp": np.asarray(observed)}
    if constant_data:
        groups["constant_data"] = {k: np.asarray(v) for k, v in constant_data.items()}
    with warnings.catch_warnings():
        # the arrays are (chain, draw, ...) by construction; ArviZ's shape guess
        # warns whenever a run keeps fewer draws than chains (an ABCDP run that
        # accepted nothing)
        warnings.filterwarnings("ignore", message="More chains", category=UserWarning)
        idata = az.from_dict(**groups)
    diagnosed = by_chain if diagnostic_vars is None else {k: by_chain[k] for k in diagnostic_vars}
    meta = _netcdf_attrs({**attrs, **_draw_diagnostics(diagnosed, attrs.get("ess", math.nan))})
    idata.attrs.update(meta)
    for name in idata.groups():
        idata[name].attrs.update(meta)
    return idata


def from_netcdf(path):
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
    if previous is not None:
        switch.numba_flag = False
    try:
        yield az
    finally:
        if previous is not None:
            switch.numba_flag = previous


def _draw_diagnostics(by_chain: Mapping[str, np.ndarray], ess_sampler) -> dict:
    """Bulk and tail ESS, R-hat over the draws' scalar components; the conservative ESS."""
    bulk, tail, rhats = [], [], []
    for arr in by_chain.values():
        chains, draws = arr.shape[:2]
        if draws < 4 or arr.dtype.kind not in "iuf":
            continue
        flat = arr.reshape(chains, draws, -1).astype(float)
        for j in range(flat.shape[-1]):
            comp = flat[..., j]
            if not np.all(np.isfinite(comp)) or np.ptp(comp) == 0:
                continue
            bulk.append(effective_sample_size(comp))
            tail.append(effective_sample_size(comp, method="tail"))
            if chains > 1:
                rhats.append(rhat(comp))
    ess_bulk = min(bulk, default=math.nan)
    given = float(ess_sampler)
    return {
        "ess": min((v for v in (given, ess_bulk) if not math.isnan(v)), default=math.nan),
        "ess_sampler": given,
        "ess_bulk": ess_bulk,
        "ess_tail": min(tail, default=math.nan),
        "rhat_max": max(rhats, default=math.nan),
        "chains": next(iter(by_chain.values())).shape[0] if by_chain else 0,
    }


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
    merged = {key: math.nan for key in ATTR_KEYS}
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
