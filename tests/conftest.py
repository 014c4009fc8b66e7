"""Shared test fixtures.

``audit_table`` records the numbers of every empirical privacy audit (the lower
bound next to the claim); they are printed as a table at the end of the run and,
when ``DPINFER_AUDIT_TABLE`` names a file, written there as JSON lines.
"""

from __future__ import annotations

import json
import os

import pytest

_AUDIT_ROWS: list[dict] = []


@pytest.fixture
def audit_table(record_property):
    """Return ``record(mechanism, variant, result, claimed_epsilon, **extra)``."""

    def record(mechanism: str, variant: str, result, claimed_epsilon: float, **extra):
        row = {
            "mechanism": mechanism,
            "variant": variant,
            "claimed_epsilon": float(claimed_epsilon),
            "delta": float(result.delta),
            "epsilon_lower": float(result.epsilon_lower),
            "refuted": bool(result.refutes(claimed_epsilon)),
            "event": result.event,
            "direction": result.direction,
            "p_hat": float(result.p_hat),
            "q_hat": float(result.q_hat),
            "n_test": int(result.n_test),
            **extra,
        }
        _AUDIT_ROWS.append(row)
        record_property("audit", row)
        path = os.environ.get("DPINFER_AUDIT_TABLE")
        if path:
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(row) + "\n")
        return row

    return record


def pytest_terminal_summary(terminalreporter):
    if not _AUDIT_ROWS:
        return
    terminalreporter.section("empirical privacy audits (lower bound vs claim)")
    terminalreporter.write_line(
        f"{'mechanism':<24} {'variant':<52} {'delta':>8} {'claimed eps':>11} "
        f"{'lower bound':>11}  verdict"
    )
    for row in _AUDIT_ROWS:
        verdict = "REFUTED" if row["refuted"] else "consistent"
        terminalreporter.write_line(
            f"{row['mechanism']:<24} {row['variant']:<52} {row['delta']:>8.0e} "
            f"{row['claimed_epsilon']:>11.4f} {row['epsilon_lower']:>11.4f}  {verdict}"
        )
