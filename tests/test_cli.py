"""The ``dpinfer`` command: parser, the ``mechanisms`` demo, and the installed console script.

``dpinfer run`` is tested in ``tests/test_cli_run.py``.
"""

import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.optimize as so
from scipy.stats import norm

from dpinfer import cli

PRIVACY = re.compile(
    r"\((?P<eps>[0-9.e+-]+), (?P<delta>[0-9.e+-]+)\)-DP(?:, (?P<rho>[0-9.e+-]+)-zCDP)?"
)


def _balle_wang_sigma(epsilon, delta):
    """Analytic Gaussian sigma at sensitivity 1, from the closed-form delta(epsilon) curve."""

    def gap(sigma):
        a = 1 / (2 * sigma)
        return (
            norm.cdf(a - epsilon * sigma)
            - math.exp(epsilon) * norm.cdf(-a - epsilon * sigma)
            - delta
        )

    return so.brentq(gap, 0.1, 100, xtol=1e-12)


# Written beside the mechanism: eps = sensitivity / scale for the Laplace families,
# the calibration target for the Gaussians, n L / m for the binomial release (Xiong et al.,
# Proposition 4), (c + 1) Delta / b = 1 for the sparse vector run (Park et al., Theorem 1).
EXPECTED = {
    "Laplace": (0.5, 0.0, None),
    "Gaussian": (1.0, 1e-5, 1 / (2 * _balle_wang_sigma(1.0, 1e-5) ** 2)),
    "DiscreteLaplace": (0.5, 0.0, None),
    "DiscreteGaussian": (1.0, 1e-6, "any"),
    "BinomialRelease": (1000 * 10 / 1000, 0.0, None),
    "SparseVector": (1.0, 0.0, None),
}


def _table_rows(text):
    """Map the first cell of each table row to the row's cells."""
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.split("│")[1:-1]]
        if cells and cells[0]:
            rows.setdefault(cells[0], cells)
    return rows


def _run(capsys, *argv):
    status = cli.main(list(argv))
    out = capsys.readouterr().out
    assert status == 0
    return out


def test_help_lists_subcommands(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "mechanisms" in out
    assert "usage: dpinfer" in out


def test_parser_is_built_from_the_subcommand_registry():
    parser = cli._build_parser()
    (action,) = [a for a in parser._actions if a.dest == "command"]
    assert set(action.choices) == {"mechanisms", "run"}
    args = parser.parse_args(["mechanisms", "--value", "12", "--seed", "5"])
    assert (args.value, args.seed, args.func) == (12, 5, cli._cmd_mechanisms)


def test_a_command_is_required(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main([])
    assert exc.value.code == 2
    assert "required" in capsys.readouterr().err


@pytest.mark.parametrize("seed", ["-1", "x"])
def test_bad_seed_is_refused(capsys, seed):
    with pytest.raises(SystemExit) as exc:
        cli.main(["mechanisms", "--seed", seed])
    assert exc.value.code == 2
    assert f"non-negative integer, got {seed!r}" in capsys.readouterr().err


def test_mechanisms_prints_the_right_guarantees(capsys):
    out = _run(capsys, "mechanisms", "--seed", "1")
    rows = _table_rows(out)
    for name, (eps, delta, rho) in EXPECTED.items():
        match = PRIVACY.fullmatch(rows[name][2])
        assert match, (name, rows[name])
        assert float(match["eps"]) == eps, name
        assert float(match["delta"]) == delta, name
        if rho is None:
            assert match["rho"] is None, name
        elif rho != "any":
            assert float(match["rho"]) == pytest.approx(rho, rel=1e-5), name
    # basic composition of the four count releases: 0.5 + 1 + 0.5 + 1, 1e-5 + 1e-6
    assert "costs (3, 1.1e-05)-DP" in out


def test_mechanisms_prints_both_tables(capsys):
    out = _run(capsys, "mechanisms", "--value", "7", "--seed", "2")
    assert "confidential count s = 7 (seed 2)" in out
    headers = [
        [c.strip() for c in line.split("┃")[1:-1]] for line in out.splitlines() if "┃" in line
    ]
    assert headers == [
        ["mechanism", "settings", "privacy", "release"],
        ["mechanism", *(f"d = {d:+d}" for d in cli.OFFSETS)],
    ]
    rows = _table_rows(out)
    # the discrete releases are integers
    assert re.fullmatch(r"-?\d+", rows["DiscreteLaplace"][3])


def test_same_seed_same_output_and_os_entropy_by_default(capsys):
    first = _run(capsys, "mechanisms", "--seed", "11")
    second = _run(capsys, "mechanisms", "--seed", "11")
    assert first == second
    unseeded = _run(capsys, "mechanisms")
    assert "(OS entropy)" in unseeded
    # the continuous Laplace release differs with probability one
    assert _table_rows(unseeded)["Laplace"][3] != _table_rows(first)["Laplace"][3]


def test_rows_log_density_matches_closed_forms():
    value = 40
    rows = {row.name: row for row in cli.mechanism_rows(value, rng=3)}
    s = value + np.asarray(cli.OFFSETS)

    released = float(rows["Laplace"].release)  # printed to 4 decimals
    laplace = -np.abs(released - s) / 2.0 - math.log(4.0)
    np.testing.assert_allclose(rows["Laplace"].logpdf, laplace, atol=1e-4)

    released = int(rows["DiscreteLaplace"].release)
    dlap = math.log(math.tanh(1 / 4)) - np.abs(released - s) / 2.0
    np.testing.assert_allclose(rows["DiscreteLaplace"].logpdf, dlap, rtol=1e-12)

    # a binomial row is one value per shift of the whole curve
    assert rows["BinomialRelease"].logpdf.shape == (len(cli.OFFSETS),)
    assert rows["SparseVector"].logpdf is None


def test_console_script(tmp_path):
    script = Path(sys.executable).with_name("dpinfer")
    assert script.exists(), "the dpinfer console script is not installed next to the interpreter"
    proc = subprocess.run(
        [str(script), "mechanisms", "--seed", "4"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    rows = _table_rows(proc.stdout)
    assert rows["Laplace"][2] == "(0.5, 0)-DP"
    assert rows["BinomialRelease"][2] == "(10, 0)-DP"
    version = subprocess.run(
        [str(script), "--version"], capture_output=True, text=True, timeout=60, check=True
    )
    assert version.stdout.startswith("dpinfer ")


def test_help_points_to_the_examples(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    assert "dpinfer run --list" in capsys.readouterr().out


@pytest.mark.parametrize("value", ["-1", "2.5", "x", str(2**53 + 1)])
def test_mechanisms_refuses_a_value_that_is_not_a_count(capsys, value):
    with pytest.raises(SystemExit) as exc:
        cli.main(["mechanisms", "--value", value])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "argument --value: must be a non-negative integer" in err and repr(value) in err
