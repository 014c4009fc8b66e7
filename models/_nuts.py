"""NUTS fits shared by the examples that are fitted with PyMC.

* :func:`release_reference`: the NUTS reference of a release (the naive Bayes
  and linear regression examples), with the mechanism, its privacy and its
  constants recorded in the InferenceData;
* :data:`NUTS_DRAWS`, :data:`NUTS_OPTIONS` and :func:`nuts_options`: the
  NUTS settings of an example's ``run``;
* :func:`fit_each`: one NUTS fit per analysis of one table, from seeds spawned
  from one root (the county rates and pageviews examples).

Examples
--------
>>> import pymc as pm
>>> import dpinfer as dp
>>> mech = dp.Laplace.from_privacy(epsilon=1.0, sensitivity=1.0)
>>> with pm.Model() as model:
...     s = pm.Normal("s", 0.0, 1.0)
...     _ = mech.to_pymc("s_dp", s, observed=0.5)
>>> idata = release_reference(model, mech, 0.5, ["s"], {"model": "a demo"}, draws=100, tune=100,
...                           rng=1)
>>> idata.attrs["model"], idata.posterior["s"].shape
('a demo', (2, 100))
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from dpinfer._rng import RNGLike, as_seed_sequence

from ._example import Option, integer

__all__ = ["NUTS_DRAWS", "NUTS_OPTIONS", "fit_each", "nuts_options", "release_reference"]

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


def release_reference(
    pymc_model, mechanism, released, var_names: Iterable[str], attrs: Mapping, **nuts
):
    """Sample a PyMC model of a release with NUTS, recording the mechanism and its privacy.

    Parameters
    ----------
    pymc_model : pymc.Model
        The model, the release already attached to it.
    mechanism : Mechanism
        The mechanism of the release.
    released : numpy.ndarray
        The release (checked), stored as the observed data.
    var_names : iterable of str
        The variables kept in the posterior.
    attrs : mapping
        Attributes added after ``mechanism`` and the privacy guarantee.
    **nuts
        ``draws``, ``tune``, ``chains``, ``rng``, ``progressbar`` and
        :func:`pymc.sample`'s options, as in :func:`dpinfer.reference.sample_nuts`.

    Returns
    -------
    arviz.InferenceData
        As from :func:`dpinfer.reference.sample_nuts`; ``constant_data`` holds
        the mechanism's constants.
    """
    from dpinfer.reference import sample_nuts
    from dpinfer.samplers._common import mechanism_constants, privacy_attrs

    return sample_nuts(
        pymc_model,
        var_names=list(var_names),
        observed=released,
        constant_data=mechanism_constants(mechanism),
        attrs={"mechanism": repr(mechanism), **privacy_attrs(mechanism), **attrs},
        **nuts,
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


def fit_each(sample: Callable, analyses: Iterable[str], *, rng: RNGLike, **nuts) -> dict:
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
