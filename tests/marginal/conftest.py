"""Fixtures shared by the marginalisation tests."""

from __future__ import annotations

import pytest

from ._table import exact_posterior


@pytest.fixture(scope="session")
def exact():
    """The exact posterior (mean, sd) of the rate of the small released table."""
    return exact_posterior()
