"""The two ABCDP mechanisms of the arXiv version: Gaussian rejection and soft weights."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from ... import _validate, accounting
from ..._rng import RNGLike, as_generator
from ...results import to_inference_data
from .. import _weights
from . import _check_settings
from ._privacy_seed import check_privacy_rng, privacy_noise_label
from ._public import check_observed, public_distances

if TYPE_CHECKING:
    from ...distances.base import Distance
    from ...results import InferenceData

__all__ = ["rejection_abcdp_gaussian", "soft_abcdp"]

REFERENCE = (
    "Park, M. and Jitkrittum, W. ABCDP: Approximate Bayesian computation meets "
    "differential privacy. arXiv preprint, Section 3."
)


def rejection_abcdp_gaussian(
    observed: ArrayLike,
    distance: Distance,
    *,
    epsilon_total: float,
    epsilon_abc: float,
    distance_bound: float,
    privacy_rng: RNGLike = None,
    **public: Any,
) -> InferenceData:
    r"""Rejection ABCDP with Gaussian noise on each distance (arXiv Algorithm 1).

    Every one of the ``T`` proposals is answered: accept when
    ``rho_t + N(0, sigma^2) <= epsilon_abc``, with ``sigma = h^{-1}(epsilon_total / T)``
    (Theorem 3.1, solved by root finding) and linear composition over ``T``.

    Parameters
    ----------
    observed, distance, epsilon_total, epsilon_abc
        As in :func:`dpinfer.abcdp`.
    distance_bound : float
        ``B_rho``, an upper bound of the distance (``2 sqrt(B_k)`` for MMD).
        Distances are clipped to it before the noise, as the paper's
        experiments do, so that the bound holds whatever the data.
    privacy_rng : seed, optional
        Privacy noise; OS entropy by default. A seed is for tests only, and one
        equal to or derived from the public seed is refused (as in
        :func:`dpinfer.abcdp`).
    **public
        ``params``/``pseudo_data`` or ``model``/``n_proposals`` and their
        options, as in :func:`dpinfer.abcdp`.

    Returns
    -------
    arviz.InferenceData
        Accepted draws in ``posterior``; ``attrs`` carry ``sigma`` and the
        per-step epsilon.
    """
    eps_total = _validate.positive_finite("epsilon_total", epsilon_total)
    bound = _validate.positive_finite("distance_bound", distance_bound)
    observed = check_observed(observed)
    _check_settings(distance, observed, None, epsilon_abc=epsilon_abc, can_charge=False)
    check_privacy_rng(privacy_rng, public=[public.get("rng")])
    draws = public_distances(observed, distance, **public)
    check_privacy_rng(privacy_rng, public=[public.get("rng"), draws.root], children=draws.chunks)
    steps = draws.distances.size
    sensitivity = distance.sensitivity(len(observed))
    sigma = accounting.abcdp_gaussian_sigma(
        eps_total / steps,
        sensitivity=sensitivity,
        distance_bound=bound,
        epsilon_abc=epsilon_abc,
    )
    noise = as_generator(privacy_rng, name="privacy_rng").standard_normal(steps) * sigma
    # Theorem 3.1 needs rho <= B_rho; min(rho, B_rho) keeps the sensitivity (1-Lipschitz).
    clipped = np.minimum(draws.distances, bound)
    accepted = np.flatnonzero(clipped + noise <= epsilon_abc)
    return to_inference_data(
        {k: v[accepted] for k, v in draws.params.items()},
        prior=draws.params,
        sample_stats={"query_index": accepted},
        attrs=_attrs(
            "rejection_abcdp_gaussian",
            eps_total,
            0.0,
            draws,
            privacy_rng,
            sigma=sigma,
            epsilon_step=eps_total / steps,
            sensitivity=sensitivity,
            epsilon_abc=epsilon_abc,
            acceptance_rate=accepted.size / steps,
            ess=float(accepted.size),
        ),
    )


def soft_abcdp(
    observed: ArrayLike,
    distance: Distance,
    *,
    epsilon_total: float,
    delta_total: float,
    epsilon_abc: float,
    draws: int | None = None,
    privacy_rng: RNGLike = None,
    resample_rng: RNGLike = 0,
    **public: Any,
) -> InferenceData:
    r"""Soft-thresholding ABCDP with Renyi-DP accounting (arXiv Algorithm 2).

    Each proposal gets the weight ``exp(-max(rho_t / epsilon_abc + n_t, 0))``,
    ``n_t ~ N(0, sigma^2)``; negative noisy distances are projected to zero
    (post-processing). ``sigma`` makes the ``T`` weights
    ``(epsilon_total, delta_total)``-DP through Theorems 3.2-3.3 and the RDP
    conversion with the Renyi order optimised in closed form.

    Parameters
    ----------
    observed, distance, epsilon_abc, privacy_rng, **public
        As in :func:`rejection_abcdp_gaussian`.
    epsilon_total, delta_total : float
        The approximate-DP target.
    draws : int, optional
        Number of equally weighted posterior draws resampled from the weighted
        proposals (post-processing); default ``T``.
    resample_rng : seed, default 0
        Randomness of that resampling (it does not touch the data).

    Returns
    -------
    arviz.InferenceData
        Resampled draws in ``posterior``; the DP ``log_weight`` of every
        proposal in the ``prior`` group.
    """
    eps_total = _validate.positive_finite("epsilon_total", epsilon_total)
    delta = _validate.probability_open("delta_total", delta_total)
    eps_abc = _validate.positive_finite("epsilon_abc", epsilon_abc)
    n_draws = None if draws is None else _validate.size("draws", draws)
    observed = check_observed(observed)
    _check_settings(distance, observed, None, epsilon_abc=eps_abc, can_charge=False)
    check_privacy_rng(privacy_rng, public=[public.get("rng")])
    pub = public_distances(observed, distance, **public)
    check_privacy_rng(privacy_rng, public=[public.get("rng"), pub.root], children=pub.chunks)
    steps = pub.distances.size
    sensitivity = distance.sensitivity(len(observed))
    sigma = accounting.soft_abcdp_sigma(
        eps_total, delta, sensitivity=sensitivity, epsilon_abc=eps_abc, steps=steps
    )
    noisy = (
        pub.distances / eps_abc
        + as_generator(privacy_rng, name="privacy_rng").standard_normal(steps) * sigma
    )
    log_w = -np.maximum(noisy, 0.0)
    weights = _weights.normalise(log_w)
    n_draws = steps if n_draws is None else n_draws
    index = _weights.systematic_resample(
        weights, n_draws, as_generator(resample_rng, name="resample_rng")
    )
    return to_inference_data(
        {k: v[index] for k, v in pub.params.items()},
        prior={**pub.params, "log_weight": np.log(weights)},
        attrs=_attrs(
            "soft_abcdp",
            eps_total,
            delta,
            pub,
            privacy_rng,
            sigma=sigma,
            sensitivity=sensitivity,
            epsilon_abc=eps_abc,
            acceptance_rate=math.nan,
            ess=_weights.ess(log_w),
        ),
    )


def _attrs(method, epsilon, delta, draws, privacy_rng, **extra) -> dict:
    return {
        "method": method,
        "reference": REFERENCE,
        "mechanism": "Gaussian noise on ABC distances",
        "epsilon": epsilon,
        "delta": delta,
        "epsilon_total": epsilon,
        "n_simulations": int(draws.distances.size),
        "log_evidence": math.nan,
        "seed": draws.seed,
        "privacy_noise": privacy_noise_label(privacy_rng),
        **extra,
    }
