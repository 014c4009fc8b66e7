"""Discrepancy between two posterior samples, in units a statistician can judge.

Used to check a sampler against a reference (a closed form drawn exactly, a
long PyMC run): per-parameter Wasserstein distance and Kolmogorov-Smirnov
statistic, a joint MMD, and mean and quantile differences in units of their
Monte Carlo standard error (``z``), which account for each sample's ESS.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import scipy.stats as st
from numpy.typing import ArrayLike

from . import _validate
from ._rng import RNGLike, as_generator, check_rng
from .results import effective_sample_size

if TYPE_CHECKING:
    from .results import InferenceData

__all__ = ["Comparison", "compare_posteriors"]


@dataclass(frozen=True)
class Comparison:
    """Result of :func:`compare_posteriors`.

    Attributes
    ----------
    per_parameter : dict
        For each scalar parameter: ``wasserstein``, ``ks``, ``ks_pvalue``,
        ``mean_diff``, ``mean_z`` and ``q<level>_diff`` / ``q<level>_z`` for each
        quantile level.
    mmd : float
        Unsquared MMD between the joint samples (Gaussian kernel on
        standardised coordinates, median-heuristic bandwidth).
    """

    per_parameter: dict[str, dict[str, float]]
    mmd: float

    def max_abs_z(self) -> float:
        """Largest ``|z|`` over parameters, means and quantiles."""
        return float(
            max(
                abs(v)
                for stats in self.per_parameter.values()
                for k, v in stats.items()
                if k.endswith("_z")
            )
        )

    def __str__(self) -> str:
        keys = list(next(iter(self.per_parameter.values())))
        header = "parameter".ljust(16) + "".join(k.rjust(12) for k in keys)
        rows = [
            name.ljust(16) + "".join(f"{stats[k]:12.4g}" for k in keys)
            for name, stats in self.per_parameter.items()
        ]
        return "\n".join([header, *rows, f"joint MMD: {self.mmd:.4g}"])


def compare_posteriors(
    a: InferenceData | Mapping[str, ArrayLike],
    b: InferenceData | Mapping[str, ArrayLike],
    *,
    var_names: Sequence[str] | None = None,
    quantiles: Sequence[float] = (0.05, 0.5, 0.95),
    mmd_points: int = 2000,
    rng: RNGLike = 0,
) -> Comparison:
    """Compare two posterior samples.

    Parameters
    ----------
    a, b : InferenceData or dict
        Posterior samples: an object with a ``posterior`` group (chain and draw
        dimensions; ESS estimated by ArviZ per component, capped by the result's
        conservative ``posterior.attrs['ess']``) or a dict of arrays whose first
        axis indexes independent draws (ESS = number of draws).
    var_names : list of str, optional
        Parameters to compare; default, those common to both. A vector or
        matrix parameter is compared coordinate by coordinate: its name
        (``"beta"``) selects all its coordinates, ``"beta[0]"`` one of them
        (coordinates are numbered in C order over the parameter's shape).
    quantiles : sequence of float
        Quantile levels compared.
    mmd_points : int, default 2000
        Draws per sample used by the joint MMD (subsampled).
    rng : seed, default 0
        Subsampling for the MMD.

    Returns
    -------
    Comparison

    Notes
    -----
    The Monte Carlo standard error of a mean is ``sd / sqrt(ESS)``; of a
    ``q``-quantile, ``sqrt(q (1 - q) / ESS) / f(x_q)`` with ``f`` a kernel
    density estimate. ``z`` divides a difference by the root sum of squares of
    the two standard errors, so ``|z| < 4`` is the usual pass mark.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> c = compare_posteriors({"x": rng.normal(size=4000)}, {"x": rng.normal(size=4000)})
    >>> c.max_abs_z() < 4
    True
    """
    draws_a, ess_a = _as_draws("a", a)
    draws_b, ess_b = _as_draws("b", b)
    levels = _check_quantiles(quantiles)
    _validate.size("mmd_points", mmd_points)
    check_rng(rng)
    if var_names is not None and (
        not isinstance(var_names, list | tuple) or not all(isinstance(n, str) for n in var_names)
    ):
        raise TypeError(f"var_names must be a list of parameter names, got {var_names!r}")
    names = _selected(var_names, draws_a, draws_b)
    per = {}
    for name in names:
        per[name] = _compare_one(draws_a[name], draws_b[name], ess_a[name], ess_b[name], levels)
    joint_a = np.column_stack([draws_a[n] for n in names])
    joint_b = np.column_stack([draws_b[n] for n in names])
    return Comparison(per, mmd(joint_a, joint_b, max_points=mmd_points, rng=rng))


def _selected(var_names, draws_a: dict, draws_b: dict) -> list[str]:
    """Return the coordinates to compare: ``var_names``, each variable's name expanded."""
    if var_names is None:
        names = [n for n in draws_a if n in draws_b]
        if not names:
            raise ValueError(
                f"a and b share no parameter names (a has {sorted(_variables(draws_a))}, "
                f"b has {sorted(_variables(draws_b))})"
            )
        return names
    names = []
    for name in var_names:
        coords_a, coords_b = _coordinates(name, draws_a), _coordinates(name, draws_b)
        missing = [w for w, coords in (("a", coords_a), ("b", coords_b)) if not coords]
        if missing:
            raise ValueError(
                f"var_names: parameter {name!r} is missing from {' and '.join(missing)} (a has "
                f"{sorted(_variables(draws_a))}, b has {sorted(_variables(draws_b))})"
            )
        if coords_a != coords_b:
            raise ValueError(
                f"var_names: parameter {name!r} has the coordinates {coords_a} in a but "
                f"{coords_b} in b"
            )
        names += [c for c in coords_a if c not in names]
    return names


def _coordinates(name: str, draws: dict) -> list[str]:
    """Return the labels of ``name`` in ``draws``: itself, or every ``name[j]`` of a vector."""
    if name in draws:
        return [name]
    return [label for label in draws if label.startswith(f"{name}[")]


def _variables(draws: dict) -> set[str]:
    return {label.split("[")[0] for label in draws}


def mmd(x: np.ndarray, y: np.ndarray, *, max_points: int = 2000, rng: RNGLike = 0) -> float:
    """Unsquared biased MMD with a Gaussian kernel on coordinates standardised by ``y``."""
    x, y = _sample_matrix("x", x), _sample_matrix("y", y)
    if x.shape[1] != y.shape[1]:
        raise ValueError(
            f"x and y must have the same number of columns, got {x.shape[1]} and {y.shape[1]}"
        )
    max_points = _validate.size("max_points", max_points)
    gen = as_generator(rng)
    x = _subsample(x, max_points, gen)
    y = _subsample(y, max_points, gen)
    scale = y.std(axis=0)
    scale[scale == 0] = 1.0
    x, y = x / scale, y / scale
    pooled = np.vstack([x, y])
    sq = _sq_dists(pooled, pooled)
    bandwidth2 = np.median(sq[sq > 0]) if np.any(sq > 0) else 1.0
    k = np.exp(-sq / bandwidth2)
    n = len(x)
    value = k[:n, :n].mean() + k[n:, n:].mean() - 2 * k[:n, n:].mean()
    return float(np.sqrt(max(value, 0.0)))


def _sample_matrix(name: str, value) -> np.ndarray:
    """Draws as an ``(n, d)`` array of finite numbers, ``n >= 1`` (a vector is one column)."""
    arr = _validate.non_empty(name, _validate.finite_array(name, value))
    if arr.ndim > 2:
        raise ValueError(f"{name} must be a 1-d or 2-d array of draws, got shape {arr.shape}")
    return np.atleast_2d(arr.T).T


def _check_quantiles(quantiles) -> np.ndarray:
    levels = _validate.non_empty("quantiles", _validate.finite_array("quantiles", quantiles))
    if levels.ndim != 1 or not np.all((levels > 0) & (levels < 1)):
        raise ValueError(f"quantiles must be a list of levels in (0, 1), got {quantiles!r}")
    return levels


def _compare_one(xa, xb, ess_a, ess_b, quantiles) -> dict[str, float]:
    out = {
        "wasserstein": float(st.wasserstein_distance(xa, xb)),
        "ks": float(st.ks_2samp(xa, xb).statistic),
        "ks_pvalue": float(st.ks_2samp(xa, xb).pvalue),
        "mean_diff": float(xa.mean() - xb.mean()),
    }
    se = np.hypot(xa.std() / np.sqrt(ess_a), xb.std() / np.sqrt(ess_b))
    out["mean_z"] = out["mean_diff"] / se
    for q in quantiles:
        qa, qb = np.quantile(xa, q), np.quantile(xb, q)
        se_q = np.hypot(_quantile_se(xa, q, qa, ess_a), _quantile_se(xb, q, qb, ess_b))
        out[f"q{q:g}_diff"] = float(qa - qb)
        out[f"q{q:g}_z"] = float((qa - qb) / se_q)
    return out


def _quantile_se(x, q, xq, ess) -> float:
    density = st.gaussian_kde(x[:: max(1, len(x) // 5000)])(xq)[0]
    return float(np.sqrt(q * (1 - q) / ess) / max(density, 1e-300))


def _as_draws(which: str, sample) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    posterior = getattr(sample, "posterior", None)
    if posterior is not None:
        # dpinfer results carry their conservative ESS in attrs (see dpinfer.results): a cap.
        cap = float(posterior.attrs.get("ess", np.inf))
        cap = cap if np.isfinite(cap) and cap > 0 else np.inf
        draws, ess = {}, {}
        for name, da in posterior.data_vars.items():
            arr = np.asarray(da)  # (chain, draw, *shape)
            for label, comp in _components(name, arr.reshape(*arr.shape[:2], -1)):
                draws[label] = comp.ravel()
                ess[label] = min(effective_sample_size(comp), cap)
        return draws, ess
    if isinstance(sample, Mapping):
        if not sample:
            raise ValueError(f"{which} must hold at least one parameter, got an empty dict")
        draws = {}
        for name, values in sample.items():
            arr = _validate.finite_array(f"{which}[{name!r}]", values)
            if arr.ndim == 0 or arr.shape[0] < 2:
                raise ValueError(f"{which}[{name!r}] must hold at least 2 draws, got {arr.shape}")
            for label, comp in _components(name, arr.reshape(1, arr.shape[0], -1)):
                draws[label] = comp.ravel()
        return draws, {k: float(len(v)) for k, v in draws.items()}
    raise TypeError(
        f"{which} must be InferenceData-like (with .posterior) or a dict of arrays, "
        f"got {type(sample).__name__}"
    )


def _components(name, arr3):
    if arr3.shape[-1] == 1:
        yield name, arr3[..., 0]
        return
    for j in range(arr3.shape[-1]):
        yield f"{name}[{j}]", arr3[..., j]


def _subsample(x: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    return x if len(x) <= n else x[rng.choice(len(x), size=n, replace=False)]


def _sq_dists(a, b):
    return np.maximum((a**2).sum(1)[:, None] + (b**2).sum(1)[None, :] - 2 * a @ b.T, 0.0)
