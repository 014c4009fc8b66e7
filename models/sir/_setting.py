"""The SIR example's setting: the release, the prior, the mechanism and argument checks.

Imported by :mod:`dpinfer.models.sir`, which documents the example.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import scipy.stats as st

import dpinfer as dp
from dpinfer import validate

#: Population size ``K``.
POPULATION = 10**6
#: Observation times ``0, 17, ..., 153`` (``L = 10`` points in ``[0, 160]``).
TIMES = np.arange(0.0, 160.0, 17.0)
#: Binomial trials per time point, ``n``.
N_TRIALS = 1000
#: Pseudo-count ``m`` of the release.
M = 1000.0
#: The privacy-loss budget ``n L / m`` of the example.
EPSILON = 10.0
#: Xiong et al.'s release at ``epsilon = 10``, as they report it: ``s_i / n``.
RELEASED_FRACTIONS = np.array(
    [0.0010, 0.0310, 0.6140, 0.2630, 0.1230, 0.0470, 0.0180, 0.0090, 0.0050, 0.0030]
)
#: The same release as integer counts ``s_i`` (what the mechanism scores).
RELEASED = np.array([1, 31, 614, 263, 123, 47, 18, 9, 5, 3], dtype=np.int64)
#: Prior means of ``(log beta, log gamma)``.
PRIOR_MEAN = {"log_beta": math.log(0.4), "log_gamma": math.log(0.125)}
#: Prior variances (not standard deviations) of ``(log beta, log gamma)``.
PRIOR_VARIANCE = {"log_beta": 0.5, "log_gamma": 0.2}
#: The parameters that generated the release.
TRUTH = {"log_beta": -0.5, "log_gamma": -3.0}

_SIMULATORS = ("exact", "approx")


def prior() -> dict:
    """Return the independent normal priors on ``log beta`` and ``log gamma``.

    Returns
    -------
    dict
        ``{"log_beta": norm(log 0.4, sd sqrt(0.5)), "log_gamma": norm(log 0.125,
        sd sqrt(0.2))}``, frozen ``scipy.stats`` distributions. Xiong et al.
        write ``N(log 0.4, 0.5)`` and ``N(log 0.125, 0.2)``; their code
        treats the second numbers as variances.

    Examples
    --------
    >>> p = prior()
    >>> round(float(p["log_gamma"].std() ** 2), 12)
    0.2
    """
    return {
        name: st.norm(PRIOR_MEAN[name], math.sqrt(PRIOR_VARIANCE[name])) for name in PRIOR_MEAN
    }


def mechanism(
    epsilon: float = EPSILON,
    *,
    n: int = N_TRIALS,
    population: int = POPULATION,
    length: int = TIMES.size,
) -> dp.BinomialRelease:
    """Return the binomial release of the curve, ``m = n L / epsilon`` (Proposition 4).

    Parameters
    ----------
    epsilon : float, default 10
        Privacy-loss budget.
    n : int, default 1000
        Binomial trials per time point.
    population : int, default 10**6
        Population size ``K``.
    length : int, default 10
        Number of observation times ``L``.

    Returns
    -------
    dpinfer.BinomialRelease

    Examples
    --------
    >>> mech = mechanism()
    >>> mech.m, mech.privacy.epsilon
    (1000.0, 10.0)
    """
    return dp.BinomialRelease.from_privacy(
        epsilon=epsilon, n=n, population=population, length=length
    )


def _check_times(times) -> np.ndarray:
    try:
        arr = np.array(times, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(f"times must be an array of real numbers, got {times!r}") from err
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"times must be a non-empty 1-d array, got shape {arr.shape}: {times!r}")
    if not np.all(np.isfinite(arr) & (arr >= 0)):
        raise ValueError(f"times must be finite and non-negative, got {validate.abbreviated(arr)}")
    if arr.size > 1 and not np.all(np.diff(arr) > 0):
        raise ValueError(f"times must be strictly increasing, got {validate.abbreviated(arr)}")
    return np.ascontiguousarray(arr)


def _check_theta(theta):
    if isinstance(theta, Mapping):
        missing = {"log_beta", "log_gamma"} - set(theta)
        if missing:
            raise ValueError(
                f"theta must have keys 'log_beta' and 'log_gamma', missing {sorted(missing)}; "
                f"got keys {sorted(theta)}"
            )
        values = (theta["log_beta"], theta["log_gamma"])
    else:
        arr = np.asarray(theta, dtype=float)
        if arr.ndim == 0 or arr.shape[-1] != 2:
            raise ValueError(
                "theta must be a dict with 'log_beta' and 'log_gamma' or an array whose last "
                f"axis holds (log beta, log gamma), got shape {arr.shape}"
            )
        values = (arr[..., 0], arr[..., 1])
    out = []
    for name, value in zip(("log_beta", "log_gamma"), values, strict=True):
        arr = np.asarray(value, dtype=float)
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"theta[{name!r}] must be finite, got {validate.abbreviated(arr)}")
        out.append(arr)
    return out


def _check_simulator(simulator) -> str:
    return validate.choice("simulator", simulator, _SIMULATORS)


def _check_flag(name, value) -> bool:
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)
