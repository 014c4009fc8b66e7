"""``dpinfer run census-blocks``: the three analyses of a census-shaped release."""

from __future__ import annotations

import functools
import io
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dpinfer import census
from dpinfer.example import Example, Option, Report, Result, folder, integer, new_figure, subset
from dpinfer.results import to_inference_data

METHODS = ("naive", "gls", "posterior")
AXES = {"votingage": 2, "hispanic": 2}
#: The synthetic state: counties, tracts per county, block groups per tract, blocks per group.
SHAPE = (3, 4, 2, 8)
COLUMNS = ["geocode", "query", "cell", "method", "estimate", "sd", "lower", "upper"]


EXAMPLE = Example(
    name="census-blocks",
    title="Census-shaped release: naive, least-squares and exact integer posterior estimates",
    paper="2020 Census noisy measurement files (REAL_RELEASES); synthetic by default",
    seconds=20,
    module=__package__,
    smallest={"draws": 60},
    options=(
        Option(
            "release_dir",
            None,
            "a release folder to analyse (default: a synthetic state)",
            folder(
                "release.json",
                "measurements.csv|measurements.parquet",
                holding="release.json and measurements.csv or .parquet",
            ),
            flag="--release-dir",
        ),
        Option("methods", METHODS, "the analyses to run", subset(*METHODS)),
        Option("draws", 400, "posterior rounds kept per chain (4 chains)", integer(20, 100_000)),
    ),
)


@dataclass
class CensusReport(Report):
    """A report whose CSV is the per-cell table (one row per unit, query, cell and method)."""

    cells: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=COLUMNS))

    def table(self) -> str:
        """Return the console summary: the setting and the notes (the cells go to the CSV)."""
        return "\n".join([self.title, *self.setting, "", *self.notes])

    def csv(self) -> str:
        """Return the per-cell summary as CSV text."""
        out = io.StringIO()
        self.cells.to_csv(out, index=False, columns=COLUMNS)
        return out.getvalue()


def synthetic(seed=0):
    """Return the example's synthetic state and its release (truth, release), from ``seed``."""
    truth = census.synthetic_state(AXES, shape=SHAPE, mean_block=30, rng=seed)
    return truth, census.synthetic_release(truth, census.pl94_variances(AXES), rng=seed + 1)


def run(
    *, release_dir=None, methods=METHODS, draws=400, rng=None, progressbar=True, verbose=False
) -> Result:
    """Run the chosen analyses on the synthetic state or on ``release_dir``."""
    seeds = np.random.SeedSequence(rng if isinstance(rng, int) else None).spawn(2)
    if release_dir is None:
        truth, release = synthetic(int(seeds[0].generate_state(1)[0]))
        setting = [
            f"synthetic state {SHAPE} (counties, tracts, block groups, blocks), axes {AXES}, "
            "PL94-like variances, the state total exact (synthetic data)"
        ]
    else:
        truth, release = None, census.read_release(release_dir)
        setting = [f"release folder {release_dir}"]
    setting.append(repr(release))
    tables, notes, diagnostics = [], [], {}
    idata = None
    if "naive" in methods:
        tables.append(census.naive(release).assign(method="naive"))
    fit = None
    if "gls" in methods or "posterior" in methods:
        fit = census.gls(release)
    if "gls" in methods:
        tables.append(fit.table().assign(method="gls"))
    if "posterior" in methods:
        post = census.sample_posterior(
            release,
            draws=draws,
            tune=max(20, draws // 4),
            chains=4,
            rng=seeds[1],
            progressbar=progressbar,
        )
        tables.append(post.table().assign(method="posterior"))
        idata = post.idata
        attrs = idata.attrs
        notes.append(
            f"posterior: max R-hat {attrs['rhat_max']:.3f}, min ESS {attrs['ess']:.0f}, "
            f"acceptance {attrs['acceptance_rate']:.3f}, {post.clipped} interval ends clipped"
        )
        diagnostics.update(rhat_max=attrs["rhat_max"], ess=attrs["ess"], clipped=post.clipped)
    if idata is None:
        draws_ = (
            fit.draws(200, rng=seeds[1])[:, release.units.n_children > 0].sum(axis=2)
            if fit
            else np.zeros((200, 1))
        )
        idata = to_inference_data({"unit_total": draws_}, attrs={"method": "gls draws"}, chains=4)
    cells = pd.concat(tables, ignore_index=True)[COLUMNS]
    if truth is not None:
        diagnostics.update(_against_truth(release, truth, cells, notes))
    report = CensusReport(
        "Census blocks: three analyses of a census-shaped release",
        setting,
        [],
        notes,
        diagnostics,
        cells=cells,
    )
    return Result(
        report, idata, functools.partial(_figure, cells=cells, release=release, truth=truth)
    )


def _truth_table(release, truth):
    detailed = truth.detailed()
    frames = []
    for q in release.queries:
        values = q.project(detailed)
        unit, cell = np.indices(values.shape).reshape(2, -1)
        frames.append(
            pd.DataFrame(
                {
                    "geocode": release.units.geocodes[unit],
                    "query": q.name,
                    "cell": cell,
                    "truth": values.ravel(),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def _against_truth(release, truth, cells, notes):
    merged = cells.merge(_truth_table(release, truth), on=["geocode", "query", "cell"])
    leaves = set(release.units.geocodes[release.units.leaves])
    detailed = release.queries[-1].name
    blocks = merged[merged["geocode"].isin(leaves) & (merged["query"] == detailed)]
    out = {}
    for method, rows in blocks.groupby("method"):
        rmse = float(np.sqrt(np.mean((rows["estimate"] - rows["truth"]) ** 2)))
        inside = (rows["lower"] <= rows["truth"]) & (rows["truth"] <= rows["upper"])
        cover = float(inside.mean()) if rows["lower"].notna().any() else float("nan")
        negative = float((rows["estimate"] < 0).mean())
        out[f"{method}_block_rmse"] = rmse
        out[f"{method}_block_coverage"] = cover
        notes.append(
            f"{method}: block cells RMSE {rmse:.3f}, 90% interval coverage {cover:.3f}, "
            f"{negative:.1%} estimates below zero"
        )
    return out


def _figure(path, *, cells, release, truth):
    fig = new_figure(6.0, 4.0)
    ax = fig.add_subplot()
    leaves = set(release.units.geocodes[release.units.leaves])
    detailed = release.queries[-1].name
    blocks = cells[cells["geocode"].isin(leaves) & (cells["query"] == detailed)]
    if truth is not None:
        merged = blocks.merge(_truth_table(release, truth), on=["geocode", "query", "cell"])
        for method, rows in merged.groupby("method"):
            ax.scatter(rows["truth"], rows["estimate"], s=6, alpha=0.5, label=method)
        ax.set_xlabel("true block cell count")
        ax.axline((0, 0), slope=1, color="0.5", lw=0.8)
    else:
        wide = blocks.pivot_table(index=["geocode", "cell"], columns="method", values="estimate")
        spread = (wide.max(axis=1) - wide.min(axis=1)).nlargest(15)
        wide.loc[spread.index].plot.bar(ax=ax)
        ax.set_xlabel("blocks where the methods differ most")
    ax.set_ylabel("estimate")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
