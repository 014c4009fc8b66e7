"""Posteriors by NUTS: the PyMC reference (statistics latent) and the statistics observed.

:func:`pymc_reference` is the exact posterior given a release, an independent route to
what rejection ABC samples; :func:`statistics_posterior` treats given statistics as exact,
which is the original analysis for the confidential statistics and the naive one for a
release (:func:`naive_posterior`).
"""

from __future__ import annotations

import functools
import math
import warnings

import numpy as np

from dpinfer import validate

from ._data import N_CONTROL, N_TREATED, PARAMETERS, REFERENCE, mechanism


def pymc_reference(
    released,
    *,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 2,
    rng=None,
    progressbar: bool = False,
    target_accept: float = 0.9,
    **nuts_kwargs,
):
    r"""NUTS reference posterior given a release, with the statistics latent.

    The latent statistics are written non-centred, which suits NUTS here
    because the release says little about them beyond what the parameters do:
    :math:`\bar y_t = \mu + \tau + \sigma_t z_t / \sqrt{n_t}` with
    :math:`z_t \sim N(0, 1)`, and :math:`s_t^2 = \sigma_t^2 g_t` with
    :math:`g_t \sim Gamma((n_t - 1)/2, \text{rate } (n_t - 1)/2)`, i.e.
    :math:`\chi^2_{n_t - 1} / (n_t - 1)`; likewise for the control group.
    The release is attached by ``mechanism().to_pymc``, via
    :func:`dpinfer.reference.sample_reference`.

    Parameters
    ----------
    released : array_like
        The release, shape ``(4,)``.
    draws, tune, chains, rng, progressbar, **nuts_kwargs
        As in :func:`dpinfer.reference.sample_reference`.
    target_accept : float, default 0.9
        NUTS target acceptance (the Laplace kinks favour small steps).

    Returns
    -------
    arviz.InferenceData
        Posterior of ``tau, mu, sigma_t, sigma_c`` and the latent statistics ``s``.
    """
    from dpinfer.reference import sample_reference

    def build():
        params = _pymc_priors()
        return _latent_statistics(*params)

    nuts = _nuts_options(draws, tune, chains, rng, progressbar, nuts_kwargs)
    return sample_reference(
        build,
        mechanism(),
        released,
        var_names=[*PARAMETERS, "s"],
        target_accept=target_accept,
        **nuts,
    )


def statistics_posterior(
    statistics,
    *,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 2,
    rng=None,
    progressbar: bool = False,
    **nuts_kwargs,
):
    r"""Posterior given the statistics observed exactly (no privacy mechanism).

    With the confidential statistics this is the original analysis (top row of
    Gong's Figure 2). :math:`\bar y_g` enter as normal observations and
    :math:`s_g^2` as :math:`Gamma((n_g - 1)/2, \text{rate } (n_g - 1) / (2\sigma_g^2))`.

    Parameters
    ----------
    statistics : array_like
        ``(ybar_t, ybar_c, s2_t, s2_c)``; the variances must be positive.
    draws, tune, chains, rng, progressbar, **nuts_kwargs
        As in :func:`dpinfer.reference.sample_nuts`.

    Returns
    -------
    arviz.InferenceData

    Notes
    -----
    The model of given statistics is built once per process (the last few are
    kept), so that NUTS compiles it once however often those statistics are
    fitted (Gong's original analysis, repeated over seeds).
    """
    from dpinfer.reference import sample_nuts

    # the statistics are the confidential data's: messages name shapes and positions only
    stats = validate.numeric_array("statistics", statistics, confidential=True)
    if stats.shape != (4,):
        raise ValueError(f"statistics must be 4 numbers, got shape {stats.shape}")
    stats = validate.finite_array("statistics", stats, confidential=True)
    if not np.all(stats[2:] > 0):
        bad = (2 + np.flatnonzero(~(stats[2:] > 0))).tolist()
        raise ValueError(
            f"statistics: the sample variances must be positive (positions 2 and 3); not at "
            f"positions {bad}"
        )
    pymc_model = _statistics_model(tuple(stats.tolist()))
    return sample_nuts(
        pymc_model,
        var_names=list(PARAMETERS),
        observed=stats,
        attrs={"model": "statistics observed exactly", "reference": REFERENCE},
        **_nuts_options(draws, tune, chains, rng, progressbar, nuts_kwargs),
    )


@functools.lru_cache(maxsize=4)
def _statistics_model(stats: tuple[float, ...]):
    import pymc as pm

    with pm.Model() as pymc_model:
        tau, mu, sig_t, sig_c = _pymc_priors()
        pm.Normal("ybar_t", mu + tau, sig_t / math.sqrt(N_TREATED), observed=stats[0])
        pm.Normal("ybar_c", mu, sig_c / math.sqrt(N_CONTROL), observed=stats[1])
        for name, sig, n, value in (
            ("s2_t", sig_t, N_TREATED, stats[2]),
            ("s2_c", sig_c, N_CONTROL, stats[3]),
        ):
            pm.Gamma(name, alpha=(n - 1) / 2, beta=(n - 1) / (2 * sig**2), observed=value)
    return pymc_model


def naive_posterior(released, *, min_variance: float = 0.01, **kwargs):
    """Fit the naive analysis, which takes the release as the exact statistics.

    Parameters
    ----------
    released : array_like
        The release, shape ``(4,)``.
    min_variance : float, default 0.01
        A released variance below this (the Laplace noise can make it
        negative, with probability about 2e-5 for these data) leaves the
        naive model undefined; it is then replaced by ``min_variance`` ($1k
        squared, a standard deviation of $100) with a ``UserWarning``. The
        correct analysis (:func:`pymc_reference`, rejection ABC) needs no
        such patch: it models the noise.
    **kwargs
        Passed to :func:`statistics_posterior`.

    Returns
    -------
    arviz.InferenceData
        The naive posterior; ``attrs['clamped']`` counts replaced variances.
    """
    stats, clamped = naive_statistics(released, min_variance=min_variance)
    idata = statistics_posterior(stats, **kwargs)
    for group in idata.groups():
        idata[group].attrs["clamped"] = clamped
        idata[group].attrs["model"] = "naive: release taken as the statistics"
    return idata


def naive_statistics(released, *, min_variance: float = 0.01) -> tuple[np.ndarray, int]:
    """Return the release as statistics for the naive analysis, variances floored.

    Parameters
    ----------
    released : array_like
        The release, shape ``(4,)``.
    min_variance : float, default 0.01
        Floor for the released variances (see :func:`naive_posterior`).

    Returns
    -------
    statistics : numpy.ndarray
        The release with variances below ``min_variance`` replaced by it.
    clamped : int
        How many variances were replaced (a ``UserWarning`` says so too).

    Examples
    --------
    >>> naive_statistics([6.0, 4.0, 50.0, 30.0])
    (array([ 6.,  4., 50., 30.]), 0)
    """
    stats = np.array(released, dtype=float)
    if stats.shape != (4,) or not np.all(np.isfinite(stats)):
        raise ValueError(f"released must be 4 finite numbers, got {released!r}")
    if not (min_variance > 0 and math.isfinite(min_variance)):
        raise ValueError(f"min_variance must be a positive finite number, got {min_variance!r}")
    low = stats[2:] < min_variance
    if np.any(low):
        warnings.warn(
            f"released variances {stats[2:][low].tolist()} are below {min_variance}: the naive "
            f"analysis is undefined there and uses {min_variance} instead",
            UserWarning,
            stacklevel=3,
        )
        stats[2:][low] = min_variance
    return stats, int(np.count_nonzero(low))


def _nuts_options(draws, tune, chains, rng, progressbar, extra: dict) -> dict:
    # the options both NUTS fits pass on to dpinfer.reference, as one mapping
    return dict(draws=draws, tune=tune, chains=chains, rng=rng, progressbar=progressbar, **extra)


def _pymc_priors():
    import pymc as pm

    tau = pm.Normal("tau", 0.0, 5.0)
    mu = pm.Normal("mu", 4.0, 5.0)
    sig_t = pm.Gamma("sigma_t", alpha=2.0, beta=0.2)
    sig_c = pm.Gamma("sigma_c", alpha=2.0, beta=0.2)
    return tau, mu, sig_t, sig_c


def _latent_statistics(tau, mu, sig_t, sig_c):
    import pymc as pm
    import pytensor.tensor as pt

    z = pm.Normal("z_mean", 0.0, 1.0, shape=2)
    half = np.array([N_TREATED - 1, N_CONTROL - 1]) / 2.0
    g = pm.Gamma("g_var", alpha=half, beta=half, shape=2)
    s = pt.stack(
        [
            mu + tau + sig_t / math.sqrt(N_TREATED) * z[0],
            mu + sig_c / math.sqrt(N_CONTROL) * z[1],
            sig_t**2 * g[0],
            sig_c**2 * g[1],
        ]
    )
    return pm.Deterministic("s", s)
