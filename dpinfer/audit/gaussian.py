r"""Exact privacy-loss verification of the Gaussian family.

The privacy loss of a Gaussian release on neighbouring inputs is itself
Gaussian, so the hockey-stick divergence :math:`\delta(\varepsilon)` is a
closed form: no sampling, no rare event left unseen. For the discrete
Gaussian the loss lives on a lattice and is tabulated exactly by convolution.
Either way :func:`verify_gaussian` recomputes the epsilon that the
mechanism's noise really buys at its claimed delta, from the noise parameters
and the declared sensitivity alone, and sets it beside the claim.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import scipy.optimize as so
import scipy.special as sc

from .. import _validate
from ..accounting import Privacy
from ..mechanisms.discrete import DiscreteGaussian, discrete_gaussian_log_normaliser
from ..mechanisms.gaussian import Gaussian

__all__ = ["GaussianVerification", "gaussian_pld_delta", "verify_gaussian"]

# relative slack for root finding when comparing the exact epsilon with a claim
_RTOL = 1e-9


@dataclass(frozen=True)
class GaussianVerification:
    r"""The exact guarantee of a Gaussian-family mechanism beside its claim.

    Attributes
    ----------
    claimed : Privacy
        What the mechanism reports.
    epsilon : float
        The smallest epsilon whose exact :math:`\delta(\varepsilon)` is at most
        the claimed delta, over every pair of neighbouring inputs.
    delta : float
        The exact :math:`\delta` at the claimed epsilon.
    worst_case : str
        The neighbouring shift that attains it.
    """

    claimed: Privacy
    epsilon: float
    delta: float
    worst_case: str

    @property
    def holds(self) -> bool:
        """Whether the claim holds: ``epsilon <= claimed epsilon`` (up to root-finding slack)."""
        bound = self.claimed.epsilon  # never None: verify_gaussian refuses a zCDP-only claim
        return bound is not None and self.epsilon <= bound * (1 + _RTOL) + 1e-12

    def __str__(self) -> str:
        verdict = "holds" if self.holds else "REFUTED"
        return (
            f"claimed ({self.claimed.epsilon:.6g}, {self.claimed.delta:.3g})-DP; exact epsilon "
            f"at that delta {self.epsilon:.6g}, exact delta at that epsilon {self.delta:.4g} "
            f"({self.worst_case}): {verdict}"
        )


def gaussian_pld_delta(epsilon: float, mu: float) -> float:
    r"""Hockey-stick divergence of ``N(0, 1)`` and ``N(mu, 1)`` from the privacy loss law.

    Parameters
    ----------
    epsilon : float
        Non-negative epsilon.
    mu : float
        The shift in noise standard deviations, :math:`\|d / \sigma\|_2`.

    Returns
    -------
    float
        :math:`\delta(\varepsilon) = P[L > \varepsilon] - e^\varepsilon P'[L > \varepsilon]`
        with :math:`L \sim N(\mu^2/2, \mu^2)` under the first input and
        :math:`N(-\mu^2/2, \mu^2)` under the second, i.e.
        :math:`\Phi(\mu/2 - \varepsilon/\mu) - e^\varepsilon \Phi(-\mu/2 - \varepsilon/\mu)`,
        evaluated in log space so that large epsilons keep their digits.

    Examples
    --------
    >>> round(gaussian_pld_delta(1.0, 1.0), 6)
    0.126937
    """
    eps = _validate.non_negative("epsilon", epsilon)
    mu = _validate.positive_finite("mu", mu)
    log_first = sc.log_ndtr(mu / 2 - eps / mu)
    log_second = eps + sc.log_ndtr(-mu / 2 - eps / mu)
    if log_second >= log_first:
        return 0.0
    return float(np.exp(log_first) * -np.expm1(log_second - log_first))


def verify_gaussian(mechanism: Gaussian | DiscreteGaussian) -> GaussianVerification:
    r"""Exact epsilon of a Gaussian or discrete Gaussian mechanism at its claimed delta.

    Parameters
    ----------
    mechanism : Gaussian or DiscreteGaussian
        With its declared sensitivity and delta (any event shape; per-coordinate
        ``sigma`` for :class:`Gaussian`).

    Returns
    -------
    GaussianVerification

    Notes
    -----
    *Gaussian.* A shift :math:`d` of the confidential value gives the privacy
    loss :math:`L \sim N(\mu^2/2, \mu^2)` with :math:`\mu = \|d/\sigma\|_2`;
    :math:`\delta(\varepsilon)` grows with :math:`\mu`, and over
    :math:`\|d\|_2 \le \Delta` the largest is :math:`\mu = \Delta / \min_j \sigma_j`
    (the whole shift on the least noisy coordinate).

    *Discrete Gaussian.* For an integer shift :math:`d` the loss is
    :math:`\sum_j (d_j^2 - 2 d_j X_j) / (2\sigma^2)`, :math:`X_j \sim N_{\mathbb Z}(0, \sigma^2)`,
    an integer lattice variable whose pmf is the convolution of the coordinates'
    (tails beyond :math:`40\sigma` below :math:`e^{-800}`). Every integer shift
    with :math:`\|d\|_2 \le \Delta`, up to sign and order, is examined; the worst
    is reported.

    In both cases :math:`\delta(\varepsilon)` decreases in :math:`\varepsilon`,
    and the exact epsilon at the claimed delta is its root.

    References
    ----------
    .. [1] Balle and Wang (2018). Improving the Gaussian mechanism for
       differential privacy. ICML. Theorem 8.
    .. [2] Canonne, Kamath and Steinke (2020). The discrete Gaussian for
       differential privacy. NeurIPS. Theorem 7.

    Examples
    --------
    >>> import dpinfer as dp
    >>> mech = dp.Gaussian.from_privacy(epsilon=1.0, delta=1e-5, sensitivity=1.0)
    >>> check = verify_gaussian(mech)
    >>> check.holds, round(check.epsilon, 6)
    (True, 1.0)
    """
    exact_loss = _exact_loss.dispatch(type(mechanism))
    if exact_loss is _exact_loss.dispatch(object):
        raise TypeError(
            "verify_gaussian takes a Gaussian or DiscreteGaussian mechanism, got "
            f"{type(mechanism).__name__}"
        )
    claimed = mechanism.privacy
    if claimed.epsilon is None:
        raise ValueError(
            f"verify_gaussian checks an (epsilon, delta) claim; {type(mechanism).__name__} "
            f"states {claimed} only: build it with delta=... to state one"
        )
    delta_at, worst = exact_loss(mechanism, claimed)
    return GaussianVerification(
        claimed=claimed,
        epsilon=_epsilon_at(delta_at, claimed.delta),
        delta=delta_at(claimed.epsilon),
        worst_case=worst,
    )


def _epsilon_at(delta_at, delta: float) -> float:
    """Root of the decreasing ``delta_at(eps) = delta`` (0 when delta alone covers it)."""
    if delta_at(0.0) <= delta:
        return 0.0
    hi = 1.0
    while delta_at(hi) > delta:
        hi *= 2.0
    return so.brentq(lambda e: delta_at(e) - delta, hi / 2 if hi > 1 else 0.0, hi, xtol=1e-14)


# --- the discrete Gaussian: lattice privacy loss --------------------------------------------


# The lattice privacy loss of one shift d holds 4 d (40 sigma + 50) points per coordinate:
# beyond this many points the exact check would take gigabytes, and is refused.
_MAX_LATTICE = 5 * 10**7


@functools.singledispatch
def _exact_loss(mechanism, claimed: Privacy):
    """Return ``(delta_at, worst_case)``: the exact ``delta(eps)`` of the family's worst shift.

    One implementation per family, registered for its class (and its subclasses).
    """
    raise TypeError(f"no exact privacy loss for {type(mechanism).__name__}")


@_exact_loss.register
def _gaussian_loss(mechanism: Gaussian, claimed: Privacy):
    mu, worst = _gaussian_worst_shift(mechanism)
    return functools.partial(_gaussian_delta, mu=mu), worst


def _gaussian_delta(eps: float, *, mu: float) -> float:
    return gaussian_pld_delta(eps, mu)


def _gaussian_worst_shift(mech: Gaussian) -> tuple[float, str]:
    """``mu = max ||d / sigma||_2`` over the allowed shifts ``d``, and how it is attained."""
    sens = mech.sensitivity
    if np.ndim(sens):
        mu = math.sqrt(math.fsum(((sens / mech.sigma) ** 2).ravel()))
        return mu, f"the full per-coordinate shift on every coordinate, mu = {mu:.6g}"
    mu = float(sens) / float(np.min(mech.sigma))
    return mu, f"the whole shift on the least noisy coordinate, mu = {mu:.6g}"


@_exact_loss.register
def _discrete_worst_case(mech: DiscreteGaussian, claimed: Privacy):
    sigmas = np.unique(mech.sigma)
    sensitivity = mech.sensitivity
    if sensitivity is None or sigmas.size > 1 or np.ndim(sensitivity) or float(sensitivity) % 1:
        raise ValueError(
            "verify_gaussian verifies a DiscreteGaussian with one sigma and an integer scalar "
            f"sensitivity, got sigma={mech.sigma.tolist()} and sensitivity="
            f"{np.asarray(sensitivity).tolist()}; audit per-cell releases with audit_epsilon"
        )
    sens = int(sensitivity)
    sigma = float(sigmas[0])
    dims = max(1, math.prod(mech.event_shape))
    points = 4 * sens * (math.ceil(40 * sigma) + 50) * min(dims, sens * sens)
    if points > _MAX_LATTICE:
        raise ValueError(
            f"verify_gaussian tabulates the discrete Gaussian's privacy loss exactly, over about "
            f"{points:.3g} lattice points for sigma={sigma!r} and sensitivity {sens}: more "
            f"than the {_MAX_LATTICE:.0e} it computes in memory. Check its closed-form "
            "guarantee (mechanism.privacy) instead."
        )
    curves = {d: _lattice_delta(d, sigma) for d in _integer_shifts(sens, dims)}
    worst = max(curves, key=lambda d: curves[d](claimed.epsilon))
    text = f"integer shift {worst} (of {len(curves)} shifts with l2 norm <= {sens})"
    return curves[worst], text


def _integer_shifts(sens: int, dims: int) -> list[tuple[int, ...]]:
    """Non-increasing positive integer tuples of squared norm <= sens^2, at most ``dims`` long."""
    out = []

    def grow(prefix, budget, largest):
        if prefix:
            out.append(tuple(prefix))
        if len(prefix) == dims:
            return
        for k in range(min(largest, math.isqrt(budget)), 0, -1):
            grow([*prefix, k], budget - k * k, k)

    grow([], sens * sens, sens)
    return out


def _lattice_delta(shift: tuple[int, ...], sigma: float):
    """``delta(eps)`` of the discrete Gaussian for one integer shift, by its loss pmf."""
    reach = math.ceil(40 * sigma) + 50
    x = np.arange(-reach, reach + 1)
    pmf = np.exp(
        -(x.astype(float) ** 2) / (2 * sigma**2) - discrete_gaussian_log_normaliser(sigma)
    )
    # the loss numerator sum_j (d_j^2 - 2 d_j x_j), on the integers, offset by its minimum
    loss_pmf, low = np.ones(1), 0
    for d in shift:
        coord = np.zeros(4 * d * reach + 1)
        coord[(2 * d * (x + reach))[::-1]] = pmf  # value d^2 - 2 d x, from its minimum up
        loss_pmf = np.convolve(loss_pmf, coord)
        low += d * d - 2 * d * reach
    values = (low + np.arange(loss_pmf.size)) / (2 * sigma**2)
    keep = loss_pmf > 0
    values, loss_pmf = values[keep], loss_pmf[keep]

    def delta_at(eps: float) -> float:
        above = values > eps
        return math.fsum((loss_pmf[above] * -np.expm1(eps - values[above])).tolist())

    return delta_at
