"""The examples' figures (see :mod:`dpinfer.example`)."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from typing import IO, TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from ._rows import Report, Row

_COLORS = {
    "exact": "tab:green",
    "reference": "tab:purple",
    "naive": "tab:red",
    "private": "tab:orange",
    "non-private": "0.3",
    "confidential": "tab:cyan",
    "prior": "tab:blue",
}


if TYPE_CHECKING:
    from matplotlib.figure import Figure


def new_figure(width: float, height: float) -> Figure:
    """Return a matplotlib Figure of ``width`` x ``height`` inches that needs no display.

    Examples
    --------
    >>> from dpinfer.example import new_figure
    >>> new_figure(4, 3).get_size_inches().tolist()
    [4.0, 3.0]
    """
    try:
        from matplotlib.figure import Figure
    except ImportError as err:  # pragma: no cover - matplotlib is a test/extra dependency
        raise ImportError("the example figures need matplotlib (pip install matplotlib)") from err
    return Figure(figsize=(width, height), dpi=100)


def interval_figure(
    path: str | os.PathLike | IO[bytes], report: Report, *, title: str | None = None
) -> None:
    """Draw every analysis of every parameter as an interval: 5-95% and the mean.

    Posterior rows show their 5-95% quantiles, MLE rows ``estimate +- 1.645 s.e.``
    (the same 90% level), truth rows a dashed vertical line. The default figure
    of :func:`save_run`.

    Parameters
    ----------
    path : path or file
        Where the PNG goes.
    report : Report
    title : str, optional
        Default: the report's title.

    Examples
    --------
    >>> import io, numpy as np
    >>> from dpinfer.example import Report, draw_rows, interval_figure, value_rows
    >>> rows = draw_rows("sampler", "exact", {"theta": np.arange(10.0)})
    >>> rows += value_rows("truth", "truth", {"theta": 4.0})
    >>> png = io.BytesIO()
    >>> interval_figure(png, Report("A demo", [], rows))
    >>> png.getvalue()[1:4]
    b'PNG'
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


def density_figure(
    path: str | os.PathLike | IO[bytes],
    draws: tuple[str, ArrayLike],
    curves: Sequence[tuple[str, Callable[[np.ndarray], ArrayLike], dict]],
    *,
    xlabel: str,
    title: str,
    marks: Sequence[tuple[str, float]] = (),
    support: tuple[float, float] = (-math.inf, math.inf),
) -> None:
    """Draw a histogram of posterior draws with density curves over it.

    Parameters
    ----------
    path : path
        Output PNG.
    draws : (label, array)
        The sampler's draws (non-finite values are left out).
    curves : sequence of (label, pdf, style dict)
        Densities drawn over the histogram, evaluated only inside ``support``.
    xlabel, title : str
    marks : sequence of (label, x)
        Points marked on the axis (the release).
    support : (float, float), default (-inf, inf)
        The open interval where the parameter lives (``(0, inf)`` for a rate):
        the curves are drawn, and their densities evaluated, only inside it.
    """
    label, x = draws
    x = np.asarray(x, dtype=float).ravel()
    x = x[np.isfinite(x)]
    if x.size == 0:
        raise ValueError("there are no finite draws to draw")
    lo, hi = np.quantile(x, [0.0005, 0.9995])
    span = max(hi - lo, 1e-6 * max(abs(lo), abs(hi)), 1e-12)
    grid = np.linspace(lo - 0.4 * span, hi + 0.4 * span, 600)
    grid = grid[(grid > support[0]) & (grid < support[1])]
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


def _interval(row: Row) -> tuple[float, float]:
    if row.estimator == "mle":
        half = 1.6448536269514722 * row.sd
        return row.mean - half, row.mean + half
    return row.q05, row.q95


def _max_rows(report: Report, params) -> int:
    return max(
        sum(r.parameter == p and r.estimator != "value" for r in report.rows) for p in params
    )
