r"""Loss of float64 precision in the ABC samplers: detected, named, and said.

Float64 resolves a number ``x`` only to ``spacing(x)`` (:func:`numpy.spacing`),
about ``|x| 2^{-52}``. Three places of an ABC run can lose what they need to it:

* **the release**: when ``spacing(release)`` exceeds 1/100 of the noise scale,
  a float release is itself rounded by a visible fraction of the noise, and so are
  float simulations near it; their densities, hence the weights, are off by more than
  1% (:data:`~dpinfer.mechanisms.base.RESOLUTION_FRACTION`). Integer simulations
  of the integer families are exact at any size, and are not flagged;
* **the log weights**: when the best particle's log-density is so large in
  magnitude that its spacing exceeds 0.01 nats (``|log w| > 2**46``, about 7e13),
  the differences between particles, and so their relative weights, are rounded by
  more than 1%;
* **the parameter draws**: beyond ``sqrt(max float / n)`` the sums of squares of
  ``n`` draws overflow, and every variance, ESS and R-hat of them is inf or NaN;
  SMC cannot even build its random-walk covariance, and refuses.

Each check says which number is too large, its spacing and what it swamps, and what
to do; :class:`PrecisionWarning` (a RuntimeWarning) can be turned into an error with
``warnings.simplefilter("error", dp.PrecisionWarning)``.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..mechanisms._numerics import float_spacing
from ..mechanisms.base import RESOLUTION_FRACTION

__all__ = [
    "PrecisionWarning",
    "check_covariance",
    "density_bound_message",
    "warn_if_coarse_release",
    "warn_if_overflowing_draws",
    "warn_if_unresolved_log_weights",
]

#: Log weights whose float64 spacing exceeds this many nats lose their relative values.
LOG_WEIGHT_RESOLUTION = 0.01

# An int64 square overflows from sqrt(2**63) = 3.04e9 on; float64 rounds integers from 2**53.
_INT64_SQUARE_LIMIT = 2.0**31.5
_FLOAT_INTEGER_LIMIT = 2.0**53


class PrecisionWarning(RuntimeWarning):
    """Float64 rounding swamps a quantity the result depends on (the message says which)."""


def _warn(message: str, stacklevel: int) -> None:
    warnings.warn(message, PrecisionWarning, stacklevel=stacklevel + 1)


def coarse_release_message(sampler, mechanism, released, *, float_simulations: bool):
    """Say how float64 rounding at the release swamps the mechanism noise, or return None."""
    scale = mechanism.noise_scale
    if scale is None or (mechanism.discrete and not float_simulations):
        return None
    released = np.asarray(released)
    spacing = np.broadcast_to(float_spacing(released), np.shape(scale))
    ratio = spacing / scale
    j = int(np.argmax(ratio))
    if not ratio.flat[j] > RESOLUTION_FRACTION:
        return None
    r, sp, sc = float(released.flat[j]), float(spacing.flat[j]), float(np.ravel(scale)[j])
    where = "" if released.ndim == 0 else f" (coordinate {j})"
    family = type(mechanism).__name__
    if mechanism.discrete:
        return (
            f"{sampler}: the simulator returns floats, and at the release {r:.6g}{where} "
            f"float64 rounding (spacing {sp:.3g}) swamps the {family} noise of scale {sc:.3g}: "
            f"simulated values near the release are rounded by up to {sp / 2:.3g}, so their "
            "densities and the posterior are wrong. Return integers (int64) from the "
            "simulator, which are exact at any size, or subtract a public offset from the "
            "release and from the simulator's output."
        )
    return (
        f"{sampler}: the release {r:.6g}{where} is so large that float64 rounding (spacing "
        f"{sp:.3g}) swamps the {family} noise of scale {sc:.3g}: the published value is itself "
        f"rounded by up to {sp / 2:.3g}, and float simulations near it as much, so the "
        "posterior is not exact. Subtract a public offset from the release and from the "
        "simulator's output (model the deviation from it) so that both stay small."
    )


def warn_if_coarse_release(sampler, mechanism, released, *, float_simulations=True) -> None:
    """Warn (:class:`PrecisionWarning`) when rounding at the release swamps the noise."""
    message = coarse_release_message(
        sampler, mechanism, released, float_simulations=float_simulations
    )
    if message:
        _warn(message, stacklevel=3)


def warn_if_unresolved_log_weights(sampler: str, log_w, what: str = "log weight") -> None:
    """Warn when the best finite log weight is too large in magnitude to resolve particles."""
    log_w = np.asarray(log_w, dtype=float)
    finite = log_w[np.isfinite(log_w)]
    if finite.size == 0:
        return
    best = float(finite.max())
    spacing = float(float_spacing(best))
    if spacing > LOG_WEIGHT_RESOLUTION:
        _warn(
            f"{sampler}: the largest {what} is {best:.6g} nats, where float64 rounding "
            f"(spacing {spacing:.3g} nats) swamps the differences between particles, so their "
            "relative weights are lost: the parameters drawn put next to no mass where the "
            "release is likely. Use a prior (or proposal) on the scale of the posterior.",
            stacklevel=3,
        )


def warn_if_overflowing_draws(method: str, posterior: dict) -> None:
    """Warn when draws are so large that the sums of their squares overflow float64."""
    for name, value in posterior.items():
        arr = np.asarray(value)
        if arr.dtype.kind != "f" or arr.size == 0:
            continue
        limit = np.sqrt(np.finfo(float).max / arr.shape[0])
        largest = float(np.max(np.abs(arr)))
        if largest > limit:
            _warn(
                f"{method}: the posterior draws of {name!r} reach {largest:.3g}, beyond "
                f"{limit:.3g}, where the sum of their squares overflows float64: their "
                "variance, ESS and R-hat come out inf or NaN. Put the parameter on a smaller "
                "scale (the prior's scale is beyond float64 statistics).",
                stacklevel=4,
            )


def check_covariance(cov: np.ndarray, z: np.ndarray, labels=None) -> None:
    """Refuse a random-walk covariance that overflows float64, naming the parameter.

    A covariance that is not finite for another reason (weights that all underflow)
    is left to the caller.
    """
    if np.all(np.isfinite(cov)):
        return
    spread = np.max(np.where(np.isfinite(z), np.abs(z), 0.0), axis=0)
    if not np.any(spread > np.sqrt(np.finfo(float).max / len(z))):
        return
    j = int(np.argmax(spread))
    label = labels[j] if labels is not None else f"coordinate {j}"
    raise ValueError(
        f"the particles of {label!r} reach {spread[j]:.3g} (on the sampler's unconstrained "
        "scale), where their covariance overflows float64, so the random-walk moves cannot be "
        "built. Put the parameter on a smaller scale: values and their squares must stay "
        "finite (a prior of scale 1e300 is beyond float64 arithmetic)."
    )


def density_bound_message(mechanism, log_density, log_bound: float, values) -> str:
    """Explain why ``log_density`` exceeds ``log_bound`` at some simulated ``values``."""
    name = type(mechanism).__name__
    excess = log_density - log_bound
    bad = excess > 1e-9
    n_bad, n = int(bad.sum()), bad.size
    arr = np.asarray(values)
    largest = float(np.max(np.abs(arr[bad].astype(float)))) if n_bad else 0.0
    head = (
        f"{name}'s log-density exceeded its stated supremum log_max_density_at(released) = "
        f"{log_bound:.6g} by up to {float(np.max(excess)):.3g} nats at {n_bad} of {n} "
        f"simulated values, the largest of magnitude {largest:.3g}"
    )
    if largest >= _INT64_SQUARE_LIMIT:
        return (
            f"{head}. At such values a log-density that squares or multiplies them in int64 "
            f"overflows (from {_INT64_SQUARE_LIMIT:.3g} on), and float64 rounds integers (from "
            f"2**53 on): {name}.logpdf is not exact there, which is what exceeds the bound. "
            "Take the difference in float64 and divide by the scale before squaring "
            "(dpinfer.mechanisms._numerics.scaled_difference does both exactly)."
        )
    return (
        f"{head}. No integer overflow or float64 rounding explains an excess at values this "
        f"small: log_max_density_at is wrong for this release, or {name}.logpdf is."
    )


def nan_density_message(mechanism, log_density, values) -> str:
    """Say that the mechanism's log-density is NaN at some simulated values."""
    bad = np.isnan(log_density)
    largest = float(np.max(np.abs(np.asarray(values)[bad].astype(float))))
    return (
        f"{type(mechanism).__name__}.logpdf returned NaN at {int(bad.sum())} of {bad.size} "
        f"simulated values (the largest of magnitude {largest:.3g}); a density must be a number "
        "or -inf. Check its formula at such values (0 * inf and inf - inf give NaN)."
    )
