"""The rows, report and result of an example (see :mod:`dpinfer.example`)."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from dpinfer import _validate

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


if TYPE_CHECKING:
    from ..results import InferenceData


@dataclass(frozen=True)
class Row:
    """One analysis of one parameter: a line of the report.

    For an estimator ``"posterior"`` the numbers are the posterior mean, sd
    and quantiles; for ``"mle"`` the estimate and its standard error (no
    quantiles); for ``"value"`` a single number (the truth). ``flag`` is empty,
    or a warning shown in the row itself (``"not converged"``): the table
    marks the row, and the CSV and JSON summaries carry it.

    Attributes
    ----------
    analysis : str
        What produced the row (``"exact (smc_abc)"``, ``"naive"``).
    role : str
        One of :data:`ROLES`.
    estimator : {"posterior", "mle", "value"}
    parameter : str
    mean, sd, q05, q50, q95 : float
        NaN where undefined.
    flag : str, default ""

    Examples
    --------
    >>> from dpinfer.example import Row
    >>> Row("truth", "truth", "value", "theta", 37.0).q50
    nan
    >>> Row("truth", "oracle", "value", "theta", 37.0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: role must be one of 'confidential', ..., got 'oracle'
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
    flag: str = ""

    def __post_init__(self):
        _validate.choice("role", self.role, sorted(ROLES))
        _validate.choice("estimator", self.estimator, ("posterior", "mle", "value"))


def draw_rows(analysis: str, role: str, draws: Mapping[str, Any]) -> list[Row]:
    """Return rows from posterior draws: mean, sd and 5/50/95% quantiles per parameter.

    Parameters
    ----------
    analysis, role : str
        As in :class:`Row`.
    draws : mapping
        ``{name: array (n_draws, *shape)}``; a vector parameter gives a row per
        entry, ``name[i]``. Fewer than two draws give NaN where a statistic is
        undefined, without warnings.

    Returns
    -------
    list of Row

    Examples
    --------
    >>> import numpy as np
    >>> from dpinfer.example import draw_rows
    >>> rows = draw_rows("sampler", "exact", {"beta": np.zeros((10, 2)), "theta": np.ones(10)})
    >>> [(r.parameter, r.mean) for r in rows]
    [('beta[0]', 0.0), ('beta[1]', 0.0), ('theta', 1.0)]
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


def idata_draws(
    idata: InferenceData, var_names: Iterable[str] | None = None
) -> dict[str, np.ndarray]:
    """Return the posterior draws of an InferenceData, chains stacked, for :func:`draw_rows`.

    Parameters
    ----------
    idata : arviz.InferenceData
    var_names : iterable of str, optional
        Default: every variable of the posterior group.

    Returns
    -------
    dict
        ``{name: array (chains * draws, *shape)}``.

    Examples
    --------
    >>> import numpy as np
    >>> from dpinfer.results import to_inference_data
    >>> from dpinfer.example import idata_draws
    >>> idata = to_inference_data({"theta": np.arange(6.0)}, attrs={}, chains=2)
    >>> idata_draws(idata)["theta"].shape
    (6,)
    """
    post = idata.posterior  # type: ignore[attr-defined]  # ArviZ sets the groups at run time
    names = list(post.data_vars) if var_names is None else list(var_names)
    out = {}
    for name in names:
        arr = np.asarray(post[name])
        out[name] = arr.reshape(-1, *arr.shape[2:])
    return out


def distribution_rows(analysis: str, role: str, dists: Mapping[str, Any]) -> list[Row]:
    """Return rows from frozen ``scipy.stats`` distributions (closed-form posteriors, priors).

    Examples
    --------
    >>> import scipy.stats as st
    >>> from dpinfer.example import distribution_rows
    >>> row, = distribution_rows("prior", "prior", {"theta": st.gamma(25)})
    >>> row.mean, row.sd
    (25.0, 5.0)
    """
    return [
        Row(
            analysis,
            role,
            "posterior",
            name,
            float(d.mean()),
            float(d.std()),
            *_levels(d.ppf(LEVELS)),
        )
        for name, d in dists.items()
    ]


def mle_rows(
    analysis: str, role: str, estimate: Mapping, standard_error: Mapping, *, flag: str = ""
) -> list[Row]:
    """Return rows of a maximum likelihood estimate and its standard error (``flag``: see Row).

    Examples
    --------
    >>> from dpinfer.example import mle_rows
    >>> row, = mle_rows("MCEM", "exact", {"theta": 37.2}, {"theta": 7.9})
    >>> row.estimator, row.mean, row.sd
    ('mle', 37.2, 7.9)
    """
    return [
        Row(
            analysis,
            role,
            "mle",
            name,
            float(estimate[name]),
            float(standard_error[name]),
            flag=flag,
        )
        for name in estimate
    ]


def value_rows(analysis: str, role: str, values: Mapping) -> list[Row]:
    """Return rows of single values (the truth); vectors give ``name[i]``.

    Examples
    --------
    >>> from dpinfer.example import value_rows
    >>> [r.parameter for r in value_rows("truth", "truth", {"beta": [1.0, 2.0]})]
    ['beta[0]', 'beta[1]']
    """
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

    Examples
    --------
    >>> import numpy as np
    >>> from dpinfer.example import Report, draw_rows
    >>> report = Report("A demo", ["theta ~ anything"], draw_rows("s", "exact", {"t": np.ones(5)}))
    >>> report.csv().splitlines()[1]
    's,exact,posterior,t,1.0,0.0,1.0,1.0,1.0,'
    >>> report.to_dict()["rows"][0]["q95"]
    1.0
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
        head += f"{'mean':>9}{'sd':>9}" + "".join(f"{f'{q:.0%}':>9}" for q in LEVELS)
        lines = [self.title, *self.setting, "", head]
        previous = None
        for row in self._rows_by_parameter():
            name = row.parameter if row.parameter != previous else ""
            previous = row.parameter
            lines.append(
                f"{name:<{pwidth}}  {row.analysis:<{width}}  {row.role:<{role_width}}"
                + "".join(_cell(v) for v in (row.mean, row.sd, row.q05, row.q50, row.q95))
                + (f"  ! {row.flag}" if row.flag else "")
            )
        if any(r.estimator == "mle" for r in self.rows):
            lines.append("(for a maximum likelihood row, sd is the standard error)")
        if any(r.flag for r in self.rows):
            lines.append("(! marks a row to read with caution; the notes say why)")
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

    Examples
    --------
    >>> import numpy as np
    >>> from dpinfer.example import Report, Result, draw_rows
    >>> draws = {"t": np.ones(5)}
    >>> result = Result(Report("A demo", [], draw_rows("s", "exact", draws)), posterior=None)
    >>> result.figure is None, result.extra
    (True, {})
    """

    report: Report
    posterior: Any
    figure: Callable[[Path], None] | None = None
    extra: dict = field(default_factory=dict)


# --- internals ---------------------------------------------------------------------


def _summary(x: np.ndarray) -> tuple[float, float, float, float, float]:
    if x.size == 0:
        return (math.nan,) * 5
    sd = float(np.std(x, ddof=1)) if x.size > 1 else math.nan
    return (float(np.mean(x)), sd, *_levels(np.quantile(x, LEVELS)))


def _levels(quantiles: np.ndarray) -> tuple[float, float, float]:
    """Return the quantiles at :data:`LEVELS` as the floats of a row's q05, q50 and q95."""
    q05, q50, q95 = map(float, quantiles)
    return q05, q50, q95


def _cell(value: float) -> str:
    """Right-align ``value`` in 9 characters, at most 8 of them its digits (cells never touch)."""
    if not math.isfinite(value):
        return f"{'':>9}"
    for fmt in (".3f", ".2f", ".1f", ".2e", ".1e", ".0e"):
        text = format(value, fmt)
        if len(text) <= 8:
            break
    return f"{text:>9}"


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
