"""The releases of a table's cells as one per-cell form, for the compiled kernel.

Each (mechanism, release) pair gives its form (:meth:`dpinfer.Mechanism.cell_form`,
rows following one another for releases of several rows); the forms of the pairs are joined
release after release, so that release ``m`` of cell ``j`` is record ``m n + j``
of the joined form (``n`` cells).
"""

from __future__ import annotations

import numpy as np

from .. import _validate
from ..noise.form import log_cdf_tables
from ._kernels import COUNTABLE

__all__ = ["joined_form", "release_form", "release_views"]


def release_form(mechanism, released, latent_discrete: bool, name: str = "released") -> np.ndarray:
    """Return the per-cell form of ``released`` (shape ending in the event shape).

    A release of several rows (``(*rows, *event_shape)``) is checked and
    formed in one vectorised pass, its rows' forms following one another.
    ``name`` is the parameter that messages about the release name.
    """
    if mechanism.discrete and not latent_discrete:
        raise ValueError(
            f"{type(mechanism).__name__} releases integers and needs an integer confidential "
            "value; the latent distribution given is continuous"
        )
    form = mechanism.cell_form(released, rows=True, name=name)
    if form is None:
        raise ValueError(
            f"{type(mechanism).__name__} has no per-cell log-density, so its releases cannot "
            "be marginalised cell by cell"
        )
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


def joined_form(forms: list[np.ndarray], *, copy: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Join the releases' forms (release after release); return it and its log-CDF tables.

    With ``copy=False`` the forms are the caller's to give up: a single form is
    joined and tabled in place, without a copy.
    """
    joined = forms[0] if len(forms) == 1 else np.concatenate(forms)
    return log_cdf_tables(joined, copy=copy and len(forms) == 1)


def release_views(form: np.ndarray, releases: int) -> list[np.ndarray]:
    """Return the forms of the releases of a joined ``form``: views of it, release by release."""
    return np.split(form, releases)
