"""The releases of a table's cells as one per-cell form, for the compiled kernel.

Each (mechanism, release) pair gives its form (:meth:`dpinfer.Mechanism.cell_form`,
row by row for releases of several rows); the forms of the pairs are joined
release after release, so that release ``m`` of cell ``j`` is record ``m n + j``
of the joined form (``n`` cells).
"""

from __future__ import annotations

import numpy as np

from .. import _validate
from ..noise.form import log_cdf_tables
from ._kernels import COUNTABLE

__all__ = ["joined_form", "release_form"]


def release_form(mechanism, released, latent_discrete: bool, name: str = "released") -> np.ndarray:
    """Return the per-cell form of ``released`` (shape ending in the event shape).

    ``name`` is the parameter that messages about the release name (with the row's
    index for a release of several rows).
    """
    if mechanism.discrete and not latent_discrete:
        raise ValueError(
            f"{type(mechanism).__name__} releases integers and needs an integer confidential "
            "value; the latent distribution given is continuous"
        )
    rows = np.reshape(released, (-1, *mechanism.event_shape))
    names = [name] if len(rows) == 1 else [f"{name}[{i}]" for i in range(len(rows))]
    form = np.concatenate([_row_form(mechanism, row, at) for row, at in zip(rows, names)])
    far = ~(np.abs(form["released"]) < COUNTABLE)
    if latent_discrete and far.any():
        requirement = (
            "stay below 2**53 in magnitude, where float64 counts in steps of one (an integer "
            "confidential value is summed out one count at a time)"
        )
        raise ValueError(
            _validate.bad_entries("released", far.reshape(np.shape(released)), requirement)
        )
    return form


def _row_form(mechanism, released: np.ndarray, name: str) -> np.ndarray:
    form = mechanism.cell_form(mechanism.check_released(released, name=name))
    if form is None:
        raise ValueError(
            f"{type(mechanism).__name__} has no per-cell log-density, so its releases cannot "
            "be marginalised cell by cell"
        )
    return form


def joined_form(forms: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Join the releases' forms (release after release); return it and its log-CDF tables."""
    return log_cdf_tables(np.concatenate(forms))
