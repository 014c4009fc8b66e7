"""``dpinfer run``: every example is discovered, listed, runs end to end once, and bad input is
refused with a clear message instead of a traceback.

Each example runs once, with small sample sizes (``TINY``), through ``cli.main`` in this
process; the Poisson count runs through the installed console script, so that one run
shows what a user's terminal gets (no PyTensor BLAS warning: its MLE imports PyTensor).
The numbers of the examples are tested in ``tests/models``; here the outputs' shape and
integrity are.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import logging
import math
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from dpinfer import cli
from dpinfer._run_command import listing, quiet
from dpinfer.example import discover
from dpinfer.models import sir as sir_module
from dpinfer.outputs import IncompleteOutputError, read_manifest
from dpinfer.results import from_netcdf

EXAMPLES = discover()

#: Small settings of every example: a few seconds each.
TINY = {
    "poisson-count": ["--draws", "500"],
    # 200 NUTS tuning steps adapt (tree depth ~6); 100 leave steps tiny (depth ~9), a dearer run
    "lalonde": ["--draws", "100", "--nuts-draws", "200", "--mle-simulations", "10000"],
    "mixture-uniform": ["--proposals", "300", "--observations", "1000", "--c", "10"],
    "covid-polynomial": ["--proposals", "300"],
    "sir": ["--particles", "100"],
    "linear-regression": ["--particles", "100", "--nuts-draws", "100"],
    "naive-bayes": ["--nuts-draws", "100"],
    "tuberculosis": ["--records", "10", "--proposals", "100", "--noise-repetitions", "2"],
    "county-rates": ["--counties", "20", "--draws", "100", "--tune", "100", "--rho", "0.125"],
    "pageviews": ["--days", "14", "--draws", "100", "--tune", "100"],
    "census-blocks": ["--draws", "60"],
}
#: Seeds other than 7: pageviews' and county-rates' own tests check these runs (seed 3).
SEED = {"pageviews": 3, "county-rates": 3}
#: Examples whose end-to-end run is made, with the checks below, by their own test module
#: (which then tests the statistics or the report of the same run), not here.
RUN_ELSEWHERE = {
    "pageviews": "tests/models/test_pageviews.py",
    "county-rates": "tests/models/test_county_rates.py",
}
#: Run through the console script in a subprocess (the others run in this process).
IN_SUBPROCESS = {"poisson-count"}
#: Roles each example's summary must contain.
ROLES = {
    "poisson-count": {"exact", "naive", "prior", "reference"},
    "lalonde": {"exact", "naive", "reference", "confidential"},
    "mixture-uniform": {"private", "non-private", "truth"},
    "covid-polynomial": {"private", "non-private"},
    "sir": {"exact", "naive", "prior", "truth"},
    "linear-regression": {"exact", "naive", "reference", "truth"},
    "naive-bayes": {"exact", "naive", "truth"},
    "tuberculosis": {"private", "non-private", "truth"},
    "county-rates": {"exact", "naive", "truth"},
    "pageviews": {"exact", "naive", "truth"},
    "census-blocks": {"naive", "gls", "posterior"},  # its per-cell table's methods
}
#: Examples whose summary.csv is a table of cells (one row per unit, query, cell and
#: method), as their issue specifies, in place of the report's rows.
PER_CELL = {"census-blocks": ["geocode", "query", "cell", "method", "estimate", "sd", "lower",
                              "upper"]}  # fmt: skip
CHATTER = ("BLAS", "Initializing NUTS", "Sampling 2 chains", "Sequential sampling", "NUTS: [")


class _Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records = []

    def emit(self, record):
        self.records.append(record)


def _run(name, out, *, fmt):
    """Run one example once (in this process, or through the console script)."""
    argv = ["run", name, *TINY[name], "--seed", str(SEED.get(name, 7)), "--out", str(out)]
    argv += ["--format", fmt]
    if name in IN_SUBPROCESS:
        return _in_subprocess(argv)
    handler = _Records()
    loggers = [logging.getLogger(n) for n in ("pymc", "pytensor")]
    for logger in loggers:
        logger.addHandler(handler)
    try:
        run = _in_process(argv)
    finally:
        for logger in loggers:
            logger.removeHandler(handler)
    return {**run, "log_records": handler.records}


def _in_process(argv):
    stdout, stderr = io.StringIO(), io.StringIO()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            status = cli.main(argv)
    return {
        "status": status,
        "stdout": stdout.getvalue(),
        "stderr": stderr.getvalue(),
        "warnings": [str(w.message) for w in caught],
    }


def _in_subprocess(argv):
    script = Path(sys.executable).with_name("dpinfer")
    proc = subprocess.run(
        [str(script), *argv], capture_output=True, text=True, timeout=600, check=False
    )
    return {"status": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr}


def test_every_example_is_discovered_and_has_a_tiny_setting():
    assert set(EXAMPLES) == set(TINY) == set(ROLES)
    for example in EXAMPLES.values():
        assert example.module.startswith("dpinfer.models.")
        assert example.seconds > 0 and example.paper and example.title


def test_list_shows_each_example_with_its_paper_and_run_time(capsys):
    assert cli.main(["run", "--list"]) == 0
    out = capsys.readouterr().out
    missing = {}
    assert out == listing(discover(missing=missing), missing) + "\n"
    for example in EXAMPLES.values():
        (line,) = [ln for ln in out.splitlines() if ln.startswith(example.name + " ")]
        assert example.paper in line and example.runtime in line and example.title in line


def test_each_example_lists_its_options(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["run", "lalonde", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for flag in ("--release X X X X", "--draws", "--nuts-draws", "--seed", "--out", "--format"):
        assert flag in out
    assert "Gong (2022), Section 5.2" in " ".join(out.split())


def _end_to_end_class(name: str) -> type:
    """A test class running example ``name`` end to end.

    ``make test`` distributes tests over workers by module and class (pytest-xdist's
    ``loadscope``): one class per example lets the examples run on several workers at once.
    """

    def test_example_runs_end_to_end(self, tmp_path):
        check_end_to_end(name, tmp_path)

    title = "".join(part.title() for part in name.split("-"))
    return type(
        f"TestEndToEnd{title}", (), {"test_example_runs_end_to_end": test_example_runs_end_to_end}
    )


def check_end_to_end(name, tmp_path) -> dict:
    """Run example ``name`` with its tiny settings, check every output; return its summary."""
    out = tmp_path / "out"
    fmt = "table" if name == "poisson-count" else "json"
    run = _run(name, out, fmt=fmt)
    assert run["status"] == 0, run["stderr"][-3000:]
    manifest = read_manifest(out)  # complete, every file intact
    seed = SEED.get(name, 7)
    assert manifest["example"] == name and manifest["seed"] == seed
    assert set(manifest["options"]) == set(EXAMPLES[name].defaults())
    files = set(manifest["files"])
    figure = f"{EXAMPLES[name].module.rsplit('.', 1)[-1]}.png"
    assert {"posterior.nc", "summary.csv", "summary.json", figure} <= files
    assert (out / figure).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    idata = from_netcdf(out / "posterior.nc")
    summary = json.loads((out / "summary.json").read_text())
    n_draws = idata.posterior.sizes["chain"] * idata.posterior.sizes["draw"]
    if idata.posterior.attrs.get("privacy_noise") == "os-entropy":
        # ABCDP's noise is not reproducible from the seed and a tiny run may accept
        # nothing; the report must then state the count that was saved
        assert any(f"{n_draws} draws accepted" in note for note in summary["notes"])
    else:
        assert n_draws > 0

    with open(out / "summary.csv", newline="") as fh:
        table = list(csv.DictReader(fh))
    if name in PER_CELL:
        _check_per_cell_table(table, summary, PER_CELL[name], ROLES[name])
        table = []  # its rows are cells, not report rows: the checks below do not apply
    else:
        assert len(table) == len(summary["rows"]) > 0
        assert {r["role"] for r in table} >= ROLES[name]
    for row, saved in zip(table, summary["rows"], strict=True):
        assert row["analysis"] == saved["analysis"] and row["parameter"] == saved["parameter"]
        if row["mean"] == "":  # an analysis with no draws (ABCDP that accepted none)
            assert saved["mean"] is None
        else:
            assert float(row["mean"]) == pytest.approx(saved["mean"], rel=1e-12)

    # an example with a Monte Carlo EM row reports both intervals of each parameter (issue 20)
    if any(r["analysis"].startswith("MLE: Monte Carlo EM") for r in table):
        mle_params = {r["parameter"] for r in table if r["analysis"].startswith("MLE: Monte")}
        for key in ("mle_wald_interval", "mle_profile_interval"):
            assert set(summary["diagnostics"][key]) == mle_params
        notes = [n for n in summary["notes"] if n.startswith("MLE 95% intervals for")]
        assert len(notes) == len(mle_params) and all("profile likelihood [" in n for n in notes)

    # standard output holds the report only; what it printed was saved
    if fmt == "json":
        printed = json.loads(run["stdout"])
        assert printed["rows"] == summary["rows"] and printed["seed"] == seed
        assert set(printed["files"]) == {str(out / f) for f in files}
    else:
        assert all(r["analysis"] in run["stdout"] for r in table)
        # the report is written first, so that a figure that fails cannot lose it
        assert f"seed {seed}; wrote {out / 'summary.csv'}, {out / 'summary.json'}" in run["stdout"]
        assert str(out / "posterior.nc") in run["stdout"]

    # a long example says so first; PyMC's and PyTensor's chatter stays out
    notice = f"{name}: expected run time {EXAMPLES[name].runtime}"
    assert run["stderr"].startswith(notice) == EXAMPLES[name].long
    text = run["stdout"] + run["stderr"]
    assert not [c for c in CHATTER if c in text], text[-2000:]
    assert "Traceback" not in text
    # a Monte Carlo EM fit that has not converged is flagged in its own rows
    for row in summary["rows"]:
        if row["analysis"].startswith("MLE: Monte Carlo EM"):
            converged = summary["diagnostics"]["mcem_converged"]
            assert row["flag"] == ("" if converged else "not converged")
    assert "figure_error" not in manifest
    if name not in IN_SUBPROCESS:
        noisy = [r for r in run["log_records"] if r.levelno < logging.ERROR]
        assert not noisy, [r.getMessage() for r in noisy]
        assert not [w for w in run["warnings"] if "BLAS" in w or "More chains" in w]
    return summary


def _check_per_cell_table(table, summary, columns, methods):
    """Check a per-cell summary.csv: its columns, its methods, finite estimates."""
    assert table and list(table[0]) == columns
    assert {r["method"] for r in table} == methods
    assert all(math.isfinite(float(r["estimate"])) for r in table)
    assert summary["rows"] == [] and summary["diagnostics"]


for _name in sorted(set(TINY) - set(RUN_ELSEWHERE)):
    _cls = _end_to_end_class(_name)
    globals()[_cls.__name__] = _cls


def test_quiet_hides_pymc_messages_and_warnings_unless_verbose():
    handler = _Records()
    logger = logging.getLogger("pymc.sampling")
    logger.addHandler(handler)
    try:
        for verbose in (False, True):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                with quiet(verbose):
                    logger.warning("Initializing NUTS using jitter+adapt_diag...")
                    warnings.warn("PyTensor could not link to a BLAS installation", UserWarning)
            assert (len(handler.records), len(caught)) == ((0, 0) if not verbose else (1, 1))
    finally:
        logger.removeHandler(handler)


def test_the_same_seed_gives_the_same_summary(tmp_path):
    first, again = (_run("covid-polynomial", tmp_path / k, fmt="json") for k in "ab")
    # the public proposals come from the seed; the privacy noise comes from OS entropy
    rows = [
        [r for r in json.loads(run["stdout"])["rows"] if r["role"] == "non-private"]
        for run in (first, again)
    ]
    assert rows[0] == rows[1] and rows[0]


# --- bad input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "poisson-count", "--out", ""], "must be a non-empty path, got ''"),
        (["run", "poisson-count", "--draws", "1"], "--draws: draws must be an integer from 100"),
        (["run", "poisson-count", "--draws", "ten"], "draws must be an integer, got 'ten'"),
        (["run", "poisson-count", "--epsilon", "-1"], "epsilon must be from 0.05 to 10, got '-1'"),
        (["run", "poisson-count", "--epsilon", "nan"], "epsilon must be a finite number"),
        (["run", "poisson-count", "--release", "inf"], "release must be a finite number"),
        (["run", "poisson-count", "--mle-schedule", "fast"], "must be one of auto, staged"),
        (["run", "poisson-count", "--seed", "-3"], "must be a non-negative integer, got '-3'"),
        (["run", "lalonde", "--release", "1", "2", "3"], "expected 4 arguments"),
        (["run", "lalonde", "--release", "1", "2", "x", "4"], "release[2] must be a number"),
        (["run", "sir", "--particles", "99"], "particles must be an integer from 100"),
        (["run", "sir", "--release", *["1"] * 9, "-1"], "release[9] must be an integer from 0"),
        (["run", "sir", "--release", "2000", *["1"] * 9], "release[0] must be an integer from 0"),
        (["run", "mixture-uniform", "--resample", "maybe"], "resample must be yes or no"),
        (["run", "tuberculosis", "--full", "1"], "full must be yes or no, got '1'"),
        (["run", "tuberculosis", "--records", "0"], "records must be an integer from 1"),
        (["run"], "name an example (dpinfer run --list shows them)"),
        (["run", "no-such-example"], "invalid choice: 'no-such-example'"),
    ],
)
def test_bad_input_is_refused_by_name(capsys, tmp_path, argv, message):
    out = tmp_path / "never"
    extra = ["--out", str(out)] if len(argv) > 2 and "--out" not in argv else []
    with pytest.raises(SystemExit) as exc:
        cli.main(argv + extra)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not out.exists(), "a refused run must not create its folder"


def test_an_existing_file_as_out_is_a_clear_error(capsys, tmp_path):
    target = tmp_path / "results.csv"
    target.write_text("mine")
    for out in (target, target / "sub"):
        with pytest.raises(SystemExit) as exc:
            cli.main(["run", "covid-polynomial", "--out", str(out)])
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert "existing file, not a folder" in err and "Traceback" not in err
    assert target.read_text() == "mine"


def test_an_error_inside_the_example_is_reported_without_a_traceback(
    capsys, tmp_path, monkeypatch
):
    # every option is checked before the run, so an error raised inside one (a check of
    # the example's own, a mechanism refusing a value) is played by a stand-in run
    def refuses(**kwargs):
        raise ValueError("released must hold counts out of n = 1000 (a stand-in)")

    monkeypatch.setattr(sir_module, "run", refuses)
    out = tmp_path / "sir"
    argv = ["run", "sir", "--particles", "100", "--out", str(out)]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "\ndpinfer run sir: error: released" in err and "Traceback" not in err
    assert "marked incomplete" in err
    with pytest.raises(IncompleteOutputError, match="state 'failed'"):
        read_manifest(out)
    with pytest.raises(ValueError):
        cli.main([*argv, "--verbose"])


def test_an_example_needing_a_missing_package_is_listed_as_unavailable(tmp_path, monkeypatch):
    package = tmp_path / "fake_models"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "needs_torch.py").write_text("import no_such_package_here\n")
    (package / "_helper.py").write_text("raise RuntimeError('private modules are not imported')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    missing = {}
    assert discover("fake_models", missing=missing) == {}
    assert missing == {"fake_models.needs_torch": "No module named 'no_such_package_here'"}
    assert "not available in this installation: fake_models.needs_torch" in listing({}, missing)
