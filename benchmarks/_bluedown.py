"""dpinfer's least squares against BlueDown's linear pass on the same synthetic release.

Used by ``census.py --bluedown CHECKOUT``. For each case a synthetic state
(``synthetic_state``, 4-cell histogram votingage x hispanic, PL94-like variances,
the state total exact) is written in the Census Bureau's noisy measurement file
layout (``dpinfer.census.write_nmf``). BlueDown (a checkout of
google-research/census-bluedown, run by its own Python with its own requirements)
reads those files and runs its linear pass (``_bluedown_linear.py``): its
per-unit regressions, the pass up and the pass down; the state total is given to
it separately (as BlueDown reads state totals from a file of their own) and
applied to the state's estimate only, as its root pass does. dpinfer reads the
same measurements with the total as a ``total_con`` constraint row
(``read_nmf``) and runs ``gls``, which carries the total to every unit.

Printed per case (one JSON line): CPU seconds of BlueDown's passes (its own
``time.process_time``) and of its whole process (``RUSAGE_CHILDREN``, imports
included); dpinfer's ``read_nmf`` and ``gls`` (ANOVA passes, and the matrix
passes for comparison) CPU seconds; the ratios; the agreement of the two
estimates where both apply (BlueDown's estimate of every unit's detailed cells
and their sds against dpinfer's ``gls`` of the same release without the
invariant, and BlueDown's constrained state against dpinfer's); and how far each
method's counties miss the state total.
"""

from __future__ import annotations

import json
import resource
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

AXES = {"votingage": 2, "hispanic": 2}
#: counties, tracts per county, block groups per tract, blocks per block group
CASES = {
    "24 blocks (dense check)": (2, 2, 2, 3),
    "50k blocks": (10, 50, 2, 50),
    "105k blocks": (20, 50, 3, 35),
}
DRIVER = Path(__file__).with_name("_bluedown_linear.py")


def default_python(checkout) -> Path:
    """BlueDown's venv, by convention a ``bluedown-venv`` folder beside the checkout."""
    return Path(checkout).resolve().parent / "bluedown-venv" / "bin" / "python"


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run_bluedown(python, checkout, nmf: Path, work: Path, total: int) -> dict:
    before = _children_cpu()
    cmd = [
        str(python),
        str(DRIVER),
        str(checkout),
        str(nmf),
        "01",
        str(work),
        "[2, 2]",
        str(total),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"BlueDown's linear pass failed:\n{done.stderr[-3000:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    out["process_cpu_s"] = _children_cpu() - before
    return out


def compare(checkout, python, case: str) -> dict:
    """Run both on one case and return the figures (see the module docstring)."""
    from dpinfer import census

    truth = census.synthetic_state(AXES, shape=CASES[case], mean_block=30, rng=1)
    release = census.synthetic_release(truth, census.pl94_variances(AXES), rng=2)
    total = int(release.invariants["total"].values[0, 0])
    loose = census.CensusRelease(release.axes, release.units, release.measurements, {})
    with tempfile.TemporaryDirectory() as tmp:
        census.write_nmf(release, f"{tmp}/dpinfer", state="01")
        census.write_nmf(loose, f"{tmp}/bluedown", state="01")
        for level in census.NMF_LEVELS:  # BlueDown lists every level's constraint folder
            Path(f"{tmp}/bluedown/{level}.parquet/Constraint/State=01").mkdir(
                parents=True, exist_ok=True
            )
        Path(f"{tmp}/work").mkdir()
        blue = _run_bluedown(python, checkout, Path(f"{tmp}/bluedown"), Path(f"{tmp}/work"), total)
        estimates = dict(np.load(blue["estimates"]))
        start = time.process_time()
        read = census.read_nmf(f"{tmp}/dpinfer", axes=AXES)
        read_cpu = time.process_time() - start
    timings = {}
    for method in ("tree", "matrix"):
        start = time.process_time()
        fit = census.gls(read, method=method)
        timings[method] = time.process_time() - start
        if method == "tree":
            tree = fit
    free = census.gls(loose)
    units = release.units
    dense = census.dense_gls(loose) if units.leaves.size * 4 <= 2000 else None
    index = units.index(estimates["geocode"])
    detailed = "votingage * hispanic"
    scale = np.abs(free.detailed).max()
    counties = slice(units.level_start[1], units.level_start[2])
    blue_counties = estimates["value"][np.isin(index, np.arange(len(units))[counties])]
    return {
        "case": case,
        "blocks": int(units.leaves.size),
        "measurements": release.n_measurements,
        "bluedown_passes_cpu_s": round(blue["passes_cpu_s"], 2),
        "bluedown_process_cpu_s": round(blue["process_cpu_s"], 2),
        "dpinfer_read_nmf_cpu_s": round(read_cpu, 2),
        "dpinfer_gls_cpu_s": round(timings["tree"], 3),
        "dpinfer_gls_matrix_cpu_s": round(timings["matrix"], 3),
        "ratio_gls_to_bluedown": round(timings["tree"] / blue["passes_cpu_s"], 4),
        "ratio_read_and_gls_to_bluedown": round(
            (read_cpu + timings["tree"]) / blue["passes_cpu_s"], 4
        ),
        "bluedown_vs_gls_without_invariant_max_rel_diff": float(
            np.abs(estimates["value"] - free.detailed[index]).max() / scale
        ),
        "bluedown_vs_gls_without_invariant_max_sd_diff": float(
            np.abs(
                np.sqrt(np.einsum("nii->ni", estimates["cov"])) - free.sd(detailed)[index]
            ).max()
        ),
        **(
            {
                "bluedown_vs_dense_gls_without_invariant_max_rel_diff": float(
                    np.abs(estimates["value"] - dense.detailed[index]).max() / scale
                )
            }
            if dense is not None
            else {}
        ),
        "bluedown_constrained_state_vs_gls_max_abs_diff": float(
            np.abs(estimates["constrained_state"] - tree.detailed[0]).max()
        ),
        "state_total_minus_sum_of_counties_bluedown": float(total - blue_counties.sum()),
        "state_total_minus_sum_of_counties_dpinfer": float(total - tree.detailed[counties].sum()),
    }
