"""Reports, summary files and figures shared by every example.

An example's ``run`` returns a :class:`Result`: a :class:`Report` (one
:class:`Row` per analysis and parameter: the exact posterior, the naive one,
MLEs, references, the prior or the truth, with mean, sd and 5/50/95%
quantiles), the InferenceData to save as ``posterior.nc`` and a function that
draws the figure. :func:`save_run` runs an example into an output folder that
cannot be half-written (:class:`dpinfer.outputs.OutputFolder`): ``posterior.nc``,
``summary.csv``, ``summary.json``, the figure, and ``manifest.json`` last.

Examples
--------
>>> import numpy as np, scipy.stats as st
>>> rows = draw_rows("sampler", "exact", {"theta": np.arange(101.0)})
>>> rows += distribution_rows("naive", "naive", {"theta": st.norm(50, 2)})
>>> report = Report("A demo", ["theta ~ anything"], rows)
>>> print(report.table())  # doctest: +NORMALIZE_WHITESPACE
A demo
theta ~ anything
<BLANKLINE>
parameter  analysis  role        mean      sd      5%     50%     95%
theta      sampler   exact     50.000  29.300   5.000  50.000  95.000
           naive     naive     50.000   2.000  46.710  50.000  53.290
"""

from __future__ import annotations

import csv
import functools
import io
import json
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "ROLES",
    "Report",
    "Result",
    "Row",
    "distribution_rows",
    "draw_rows",
    "idata_draws",
    "interval_figure",
    "mle_rows",
    "nuts_note",
    "save_run",
    "smc_note",
    "value_rows",
]

#: What the ``role`` column of a row means.
ROLES = {
    "exact": "given the release, by an exact method (closed form or exact sampler)",
    "reference": "an independent route to the same answer (PyMC NUTS, numerical integration)",
    "naive": "treats the release as if it were the confidential statistic",
    "private": "differentially private posterior samples (ABCDP)",
    "non-private": "the same algorithm without privacy noise",
    "confidential": "computed from the confidential data (not available to an analyst)",
    "prior": "the prior",
    "truth": "the parameter value that generated the data",
}
#: Quantile levels of the summary.
LEVELS = (0.05, 0.5, 0.95)
_COLORS = {
    "exact": "tab:green",
    "reference": "tab:purple",
    "naive": "tab:red",
    "private": "tab:orange",
    "non-private": "0.3",
    "confidential": "tab:cyan",
    "prior": "tab:blue",
}


@dataclass(frozen=True)
class Row:
    """One analysis of one parameter.

    For an estimator ``"posterior"`` the numbers are the posterior mean, sd
    and quantiles; for ``"mle"`` the estimate and its standard error (no
    quantiles); for ``"value"`` a single number (the truth).
    """

    analysis: str
    role: str
    estimator: str
    parameter: str
    mean: float
    sd: float = math.nan
    q05: float = math.nan
    q50: float = math.nan
    q95: float = math.nan

    def __post_init__(self):
        if self.role not in ROLES:
            raise ValueError(f"role must be one of {sorted(ROLES)}, got {self.role!r}")
        if self.estimator not in ("posterior", "mle", "value"):
            raise ValueError(f"estimator must be posterior, mle or value, got {self.estimator!r}")


def draw_rows(analysis: str, role: str, draws: Mapping[str, Any]) -> list[Row]:
    """Rows from posterior draws: ``{name: array (n_draws, *shape)}``; vectors give ``name[i]``.

    Fewer than two draws give NaN where a statistic is undefined, without warnings.
    """
    rows = []
    for name, values in draws.items():
        arr = np.asarray(values, dtype=float)
        width = int(np.prod(arr.shape[1:])) if arr.ndim > 1 else 1
        arr = arr.reshape(arr.shape[0], width)
        for j in range(arr.shape[1]):
            label = name if arr.shape[1] == 1 and np.ndim(values) <= 1 else f"{name}[{j}]"
            rows.append(Row(analysis, role, "posterior", label, *_summary(arr[:, j])))
    return rows


def idata_draws(idata, var_names: Iterable[str] | None = None) -> dict[str, np.ndarray]:
    """Return ``{name: (chains * draws, *shape)}`` from an InferenceData's posterior group."""
    post = idata.posterior
    names = list(post.data_vars) if var_names is None else list(var_names)
    out = {}
    for name in names:
        arr = np.asarray(post[name])
        out[name] = arr.reshape(-1, *arr.shape[2:])
    return out


def distribution_rows(analysis: str, role: str, dists: Mapping[str, Any]) -> list[Row]:
    """Rows from frozen ``scipy.stats`` distributions (closed-form posteriors or priors)."""
    return [
        Row(
            analysis,
            role,
            "posterior",
            name,
            float(d.mean()),
            float(d.std()),
            *map(float, d.ppf(LEVELS)),
        )
        for name, d in dists.items()
    ]


def mle_rows(analysis: str, role: str, estimate: Mapping, standard_error: Mapping) -> list[Row]:
    """Rows of a maximum likelihood estimate and its standard error."""
    return [
        Row(analysis, role, "mle", name, float(estimate[name]), float(standard_error[name]))
        for name in estimate
    ]


def value_rows(analysis: str, role: str, values: Mapping) -> list[Row]:
    """Rows of single values (the truth); vectors give ``name[i]``."""
    rows = []
    for name, value in values.items():
        arr = np.ravel(np.asarray(value, dtype=float))
        labels = [name] if np.ndim(value) == 0 else [f"{name}[{j}]" for j in range(arr.size)]
        rows += [
            Row(analysis, role, "value", lab, float(v)) for lab, v in zip(labels, arr, strict=True)
        ]
    return rows


@dataclass
class Report:
    """What an example prints and saves.

    Attributes
    ----------
    title : str
        The example and its paper.
    setting : list of str
        The model, mechanism and release, in words.
    rows : list of Row
        The summary table.
    notes : list of str
        Diagnostics in words (acceptance rates, tests against closed forms).
    diagnostics : dict
        The same numbers, machine-readable (saved in ``summary.json``).
    """

    title: str
    setting: list[str]
    rows: list[Row]
    notes: list[str] = field(default_factory=list)
    diagnostics: dict = field(default_factory=dict)

    def table(self) -> str:
        """Return the console summary: setting, one block of rows per parameter, notes."""
        width = max([len(r.analysis) for r in self.rows] + [8])
        pwidth = max([len(r.parameter) for r in self.rows] + [9])
        role_width = max([len(r.role) for r in self.rows] + [4])
        head = f"{'parameter':<{pwidth}}  {'analysis':<{width}}  {'role':<{role_width}}"
        head += f"{'mean':>8}{'sd':>8}" + "".join(f"{f'{q:.0%}':>8}" for q in LEVELS)
        lines = [self.title, *self.setting, "", head]
        previous = None
        for row in self._rows_by_parameter():
            name = row.parameter if row.parameter != previous else ""
            previous = row.parameter
            lines.append(
                f"{name:<{pwidth}}  {row.analysis:<{width}}  {row.role:<{role_width}}"
                + "".join(_cell(v) for v in (row.mean, row.sd, row.q05, row.q50, row.q95))
            )
        if any(r.estimator == "mle" for r in self.rows):
            lines.append("(for a maximum likelihood row, sd is the standard error)")
        if self.notes:
            lines += ["", *self.notes]
        return "\n".join(line.rstrip() for line in lines)

    def to_dict(self) -> dict:
        """Return the report as JSON-ready data (NaN becomes None)."""
        return {
            "title": self.title,
            "setting": list(self.setting),
            "rows": [_jsonable(asdict(r)) for r in self.rows],
            "diagnostics": _jsonable(self.diagnostics),
            "notes": list(self.notes),
        }

    def csv(self) -> str:
        """Return the rows as CSV text, a line per analysis and parameter (empty: undefined)."""
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        names = [f.name for f in fields(Row)]
        writer.writerow(names)
        for row in self.rows:
            values = [getattr(row, n) for n in names]
            writer.writerow(["" if isinstance(v, float) and math.isnan(v) else v for v in values])
        return out.getvalue()

    def _rows_by_parameter(self) -> list[Row]:
        order = list(dict.fromkeys(r.parameter for r in self.rows))
        return sorted(self.rows, key=lambda r: order.index(r.parameter))


@dataclass
class Result:
    """What an example's ``run`` returns.

    Attributes
    ----------
    report : Report
    posterior : arviz.InferenceData
        The example's main result, saved as ``posterior.nc``.
    figure : callable, optional
        ``figure(path)`` draws the figure as a PNG file at ``path``; default
        :func:`interval_figure` of the report.
    extra : dict
        More InferenceData (or xarray Datasets, such as an error table) to save,
        as ``<name>.nc``.
    """

    report: Report
    posterior: Any
    figure: Callable[[Path], None] | None = None
    extra: dict = field(default_factory=dict)


def save_run(
    example,
    out_dir,
    options: Mapping,
    *,
    seed,
    progressbar=True,
    verbose=False,
    wait=False,
    overwrite=False,
    on_start: Callable[[], None] | None = None,
):
    """Run ``example`` with ``options`` into ``out_dir``; return the result and the manifest.

    The folder is locked before the run starts (a second run into it is
    refused at once), marked incomplete, and sealed by the manifest once every
    file is written (see :mod:`dpinfer.outputs`).

    Parameters
    ----------
    example : Example
        The example (its ``run`` is called with ``options``).
    out_dir : str or path
        Output folder.
    options : dict
        Keyword arguments of the example's ``run``.
    seed : int or None
        Root seed of the run, recorded in the manifest; None draws one from OS
        entropy (and records it, so the run can be repeated).
    progressbar, verbose : bool
        Passed to ``run``.
    wait : bool, default False
        Wait for another run writing to ``out_dir`` instead of refusing.
    overwrite : bool, default False
        Write into a folder that holds files dpinfer did not write (see
        :class:`dpinfer.outputs.OutputFolder`).
    on_start : callable, optional
        Called once the folder is locked, before the run starts.

    Returns
    -------
    result : Result
    manifest : dict
    """
    from dpinfer.outputs import OutputFolder

    if seed is None:
        seed = int(np.random.SeedSequence().entropy)
    info = {
        "example": example.name,
        "paper": example.paper,
        "seed": seed,
        "options": _jsonable(dict(options)),
    }
    with OutputFolder(out_dir, info=info, wait=wait, overwrite=overwrite) as folder:
        if on_start is not None:
            on_start()
        result = example.run(**options, rng=seed, progressbar=progressbar, verbose=verbose)
        folder.write("posterior.nc", lambda p: result.posterior.to_netcdf(str(p)))
        for name, idata in result.extra.items():
            folder.write(f"{name}.nc", lambda p, d=idata: d.to_netcdf(str(p)))
        folder.write_text("summary.csv", result.report.csv())
        summary = {"example": example.name, "paper": example.paper, **result.report.to_dict()}
        folder.write_text("summary.json", json.dumps(summary, indent=2) + "\n")
        figure = result.figure or functools.partial(interval_figure, report=result.report)
        folder.write(f"{example.module.rsplit('.', 1)[-1]}.png", figure)
        manifest = folder.complete()
    return result, manifest


def nuts_note(label: str, idata, key: str) -> tuple[str, dict]:
    """Return a note and diagnostics on a NUTS run: divergences, largest R-hat, smallest ESS."""
    attrs = idata.posterior.attrs
    numbers = {
        f"{key}_divergences": int(attrs["divergences"]),
        f"{key}_rhat_max": float(attrs["rhat_max"]),
        f"{key}_ess": float(attrs["ess"]),
    }
    note = (
        f"{label}: {numbers[f'{key}_divergences']} divergences, max R-hat "
        f"{numbers[f'{key}_rhat_max']:.3f}, min bulk ESS {numbers[f'{key}_ess']:.0f}"
    )
    return note, numbers


def smc_note(label: str, idata, key: str) -> tuple[str, dict]:
    """Return a note and diagnostics on an SMC run: stages, simulations, last move acceptance.

    The SMC samplers run several chains: the stages are the most any chain took, the
    final move acceptance the lowest of the chains' last stages.
    """
    attrs = idata.posterior.attrs
    acceptance = np.ravel(attrs.get("chain_last_acceptance_rate", [math.nan]))
    numbers = {
        f"{key}_stages": int(attrs.get("n_stages", 0)),
        f"{key}_simulations": int(attrs["n_simulations"]),
        f"{key}_final_acceptance": float(np.min(acceptance)) if acceptance.size else math.nan,
    }
    note = (
        f"{label}: {numbers[f'{key}_stages']} stages, {numbers[f'{key}_simulations']:,} "
        f"simulations, final move acceptance {numbers[f'{key}_final_acceptance']:.3f}"
        f" (lowest of {int(attrs.get('chains', 1))} chains)"
    )
    return note, numbers


# --- figures ---------------------------------------------------------------------


def new_figure(width: float, height: float):
    """Return a matplotlib Figure that needs no display (no pyplot state)."""
    try:
        from matplotlib.figure import Figure
    except ImportError as err:  # pragma: no cover - matplotlib is a test/extra dependency
        raise ImportError("the example figures need matplotlib (pip install matplotlib)") from err
    return Figure(figsize=(width, height), dpi=100)


def interval_figure(path, report: Report, *, title: str | None = None) -> None:
    """Draw every analysis of every parameter as an interval: 5-95% and the mean.

    Posterior rows show their 5-95% quantiles, MLE rows ``estimate +- 1.645 s.e.``
    (the same 90% level), truth rows a dashed vertical line.
    """
    params = list(dict.fromkeys(r.parameter for r in report.rows))
    cols = min(len(params), 3)
    nrows = math.ceil(len(params) / cols)
    fig = new_figure(3.4 * cols, 0.6 + nrows * (0.35 * _max_rows(report, params) + 0.9))
    axes = np.atleast_1d(fig.subplots(nrows, cols, squeeze=False)).ravel()
    labels = {
        name: [r.analysis for r in report.rows if r.parameter == name and r.estimator != "value"]
        for name in params
    }
    shared = len({tuple(v) for v in labels.values()}) == 1
    for k, (ax, name) in enumerate(zip(axes, params, strict=False)):
        rows = [r for r in report.rows if r.parameter == name and r.estimator != "value"]
        for y, row in enumerate(reversed(rows)):
            lo, hi = _interval(row)
            color = _COLORS.get(row.role, "k")
            ax.plot([lo, hi], [y, y], color=color, lw=2.5, solid_capstyle="butt")
            ax.plot(
                [row.mean], [y], "o" if row.estimator == "posterior" else "D", color=color, ms=4
            )
        for row in (r for r in report.rows if r.parameter == name and r.estimator == "value"):
            ax.axvline(row.mean, color="k", ls="--", lw=1)
        ticks = [r.analysis for r in reversed(rows)] if not shared or k % cols == 0 else []
        ax.set_yticks(range(len(rows)), ticks or [""] * len(rows), fontsize=7)
        ax.set_title(name, fontsize=9)
        ax.tick_params(axis="x", labelsize=7)
    for ax in axes[len(params) :]:
        ax.set_visible(False)
    fig.suptitle(title or f"{report.title}: means and 90% intervals", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, format="png")


def density_figure(path, draws, curves, *, xlabel: str, title: str, marks=()) -> None:
    """Draw a histogram of posterior draws with density curves over it.

    Parameters
    ----------
    path : path
        Output PNG.
    draws : (label, array)
        The sampler's draws.
    curves : sequence of (label, pdf, style dict)
        Densities drawn over the histogram.
    xlabel, title : str
    marks : sequence of (label, x)
        Points marked on the axis (the release).
    """
    label, x = draws
    lo, hi = np.quantile(x, [0.0005, 0.9995])
    span = hi - lo
    grid = np.linspace(lo - 0.4 * span, hi + 0.4 * span, 600)
    fig = new_figure(6.4, 4.0)
    ax = fig.add_subplot()
    ax.hist(x, bins=60, density=True, color="0.2", alpha=0.55, label=label)
    for name, pdf, style in curves:
        ax.plot(grid, pdf(grid), label=name, **style)
    for name, value in marks:
        ax.plot([value], [0], marker="D", color="k", ls="none", clip_on=False, label=name)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("density")
    ax.set_title(title, fontsize=10)
    ax.legend(frameon=False, fontsize=8)
    fig.tight_layout()
    fig.savefig(path, format="png")


# --- internals ---------------------------------------------------------------------


def _summary(x: np.ndarray) -> tuple[float, ...]:
    if x.size == 0:
        return (math.nan,) * 5
    sd = float(np.std(x, ddof=1)) if x.size > 1 else math.nan
    return (float(np.mean(x)), sd, *map(float, np.quantile(x, LEVELS)))


def _interval(row: Row) -> tuple[float, float]:
    if row.estimator == "mle":
        half = 1.6448536269514722 * row.sd
        return row.mean - half, row.mean + half
    return row.q05, row.q95


def _max_rows(report: Report, params) -> int:
    return max(
        sum(r.parameter == p and r.estimator != "value" for r in report.rows) for p in params
    )


def _cell(value: float) -> str:
    if not math.isfinite(value):
        return f"{'':>8}"
    if abs(value) < 1e3:
        return f"{value:8.3f}"
    return f"{value:8.1f}" if abs(value) < 1e5 else f"{value:8.2e}"  # a space before each cell


def _jsonable(value):
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, np.generic):
        return _jsonable(value.item())
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value
