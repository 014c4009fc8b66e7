"""The NUTS settings of the examples that are fitted with PyMC.

* :data:`NUTS_DRAWS`, :data:`NUTS_OPTIONS` and :func:`nuts_options`: the
  NUTS settings of an example's ``run``;
* :func:`fit_each`: one NUTS fit per analysis of one table, from seeds spawned
  from one root (the county rates and pageviews examples).

A release's NUTS reference, with the mechanism and its privacy recorded, is
:func:`dpinfer.reference.sample_nuts` with ``mechanism=``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .._rng import RNGLike, as_seed_sequence
from ._checks import integer
from ._spec import Option

__all__ = ["NUTS_DRAWS", "NUTS_OPTIONS", "fit_each", "nuts_options"]

#: The NUTS option of an example with a NUTS reference: as many tuning steps as draws, 2 chains.
NUTS_DRAWS = Option(
    "nuts_draws", 1000, "draws and tuning steps per chain of NUTS", integer(100, 10_000)
)
#: The NUTS options of an example fitted with PyMC, as in ``dpinfer run``.
NUTS_OPTIONS = (
    Option("draws", 300, "NUTS draws per chain", integer(100)),
    Option("tune", 300, "NUTS tuning steps per chain", integer(100)),
    Option("chains", 2, "NUTS chains (run one after the other)", integer(2, 16)),
)


def nuts_options(*, progressbar: bool, verbose: bool, **nuts: int) -> dict:
    """Return the NUTS settings of an example's ``run``: ``nuts`` over :data:`NUTS_OPTIONS`.

    ``nuts`` holds ``draws``, ``tune`` or ``chains``; PyMC's progress bars
    show only when both ``progressbar`` and ``verbose`` are true.

    Examples
    --------
    >>> nuts_options(draws=100, progressbar=True, verbose=False)
    {'draws': 100, 'tune': 300, 'chains': 2, 'progressbar': False}
    >>> nuts_options(draw=100, progressbar=True, verbose=False)
    Traceback (most recent call last):
    ...
    TypeError: run() got an unexpected keyword argument 'draw'; NUTS options: draws, tune, chains
    """
    known = {opt.name: opt.default for opt in NUTS_OPTIONS}
    for name in nuts.keys() - known.keys():
        raise TypeError(
            f"run() got an unexpected keyword argument {name!r}; NUTS options: {', '.join(known)}"
        )
    return {**known, **nuts, "progressbar": progressbar and verbose}


def fit_each(sample: Callable, analyses: Iterable[str], *, rng: RNGLike, **nuts: Any) -> dict:
    """Return ``{analysis: sample(analysis, rng=seed, **nuts)}``, one seed spawned per analysis.

    The fits run one after the other, in the order of ``analyses``.

    Examples
    --------
    >>> fit_each(lambda key, rng, draws: (key, draws), ["a", "b"], rng=1, draws=100)
    {'a': ('a', 100), 'b': ('b', 100)}
    """
    analyses = list(analyses)
    seeds = as_seed_sequence(rng).spawn(len(analyses))
    return {key: sample(key, rng=seed, **nuts) for key, seed in zip(analyses, seeds, strict=True)}
