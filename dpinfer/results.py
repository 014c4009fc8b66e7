"""The one place where numpy results become ArviZ objects.

Every sampler returns an :class:`arviz.InferenceData` built here: the
``posterior`` group holds equally weighted draws (so every ArviZ diagnostic
applies), per-draw diagnostics go to ``sample_stats``, the release to
``observed_data`` and mechanism parameters to ``constant_data``. ``attrs``
always carry the keys of :data:`ATTR_KEYS`.
"""

from __future__ import annotations

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

    Returns
    -------
    arviz.InferenceData
    """
    az = _arviz()
    groups = {"posterior": _by_chain(posterior, chains)}
    if sample_stats:
        groups["sample_stats"] = _by_chain(sample_stats, chains)
    if prior:
        groups["prior"] = _by_chain(prior, 1)
    if observed is not None:
        groups["observed_data"] = {"s_dp": np.asarray(observed)}
    if constant_data:
        groups["constant_data"] = {k: np.asarray(v) for k, v in constant_data.items()}
    idata = az.from_dict(**groups)
    meta = _netcdf_attrs(attrs)
    idata.attrs.update(meta)
    for name in idata.groups():
        idata[name].attrs.update(meta)
    return idata


def from_netcdf(path):
    """Load a result saved with ``idata.to_netcdf(path)``."""
    return _arviz().from_netcdf(path)


def effective_sample_size(draws: np.ndarray) -> float:
    """Bulk ESS of draws shaped ``(chains, draws)`` (Vehtari et al. 2021, via ArviZ)."""
    return float(_arviz().ess(np.asarray(draws, dtype=float)))


def rhat(draws: np.ndarray) -> float:
    """Rank-normalised split R-hat of draws shaped ``(chains, draws)`` (Vehtari et al. 2021)."""
    return float(_arviz().rhat(np.asarray(draws, dtype=float)))


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
