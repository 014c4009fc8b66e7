"""The public API as a list of entry points, each with tiny valid arguments.

Every entry is called once per bad value of each listed parameter while the other
arguments stay valid (``_harness.sweep``).
"""

from __future__ import annotations

from ._api_analyst import (
    compare_entries,
    distance_entries,
    model_entries,
    pymc_entries,
    sampler_entries,
)
from ._api_curator import accounting_entries, audit_entries, mechanism_entries, theory_entries
from ._api_outputs import outputs_entries


def all_entries(root):
    """Every entry; files (output folders) are written under the folder ``root``."""
    return [*entries_without_files(), *outputs_entries(root)]


def entries_without_files():
    """Every entry but the output folders' (these write files at once: see ``all_entries``)."""
    return [
        *mechanism_entries(),
        *accounting_entries(),
        *theory_entries(),
        *audit_entries(),
        *compare_entries(),
        *distance_entries(),
        *model_entries(),
        *sampler_entries(),
        *pymc_entries(),
    ]
