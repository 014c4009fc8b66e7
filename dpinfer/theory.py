"""ABCDP theory: the flip probability, its noise distribution and the error bound.

References
----------
.. [1] Park, M., Vinaroz, M. and Jitkrittum, W. (2021). ABCDP: approximate
   Bayesian computation with differential privacy. Entropy 23(8), Lemma 2,
   Proposition 1, Theorem 2 and Figure 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from . import _validate, accounting
from ._rng import RNGLike, as_generator

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "flip_probability",
    "noise_difference_cdf",
    "noise_difference_pdf",
    "plot_flip_probability",
    "theorem2_bound",
    "theorem2_tail_bound",
]


def noise_difference_pdf(z: ArrayLike, b: float) -> np.ndarray:
    """Density of ``Z = m - v``, ``m ~ Lap(b)``, ``v ~ Lap(2b)`` (Lemma 2, eq. 10).

    ``f(z) = (2 exp(-|z|/(2b)) - exp(-|z|/b)) / (6b)``.
    """
    a = np.abs(_validate.finite_array("z", z))
    b = _validate.positive_finite("b", b)
    return (2 * np.exp(-a / (2 * b)) - np.exp(-a / b)) / (6 * b)


def flip_probability(a: ArrayLike, b: float) -> np.ndarray:
    """``G_b(a) = P(Z > a) = (4 exp(-a/(2b)) - exp(-a/b)) / 6`` for ``a >= 0`` (Lemma 2).

    By Proposition 1 this is the probability that ABCDP's decision on a
    proposal at distance ``rho`` differs from ABC's, with ``a = |rho - eps_abc|``.
    It is exact for every query of a run that draws its threshold noise once
    (RESAMPLE false) and answers the whole stream; with RESAMPLE, for the first
    query after each redraw. Other queries see a threshold selected by the
    answers before them (halting, or rejections since the last redraw) and
    flip at other rates.
    """
    # a is a distance's gap to the threshold, confidential in ABCDP: no value is shown
    a = _validate.finite_array("a", a, confidential=True)
    b = _validate.positive_finite("b", b)
    if np.any(a < 0):
        raise ValueError(_validate.bad_entries("a", a < 0, "be >= 0 (a = |rho - epsilon_abc|)"))
    return (4 * np.exp(-a / (2 * b)) - np.exp(-a / b)) / 6


def noise_difference_cdf(a: ArrayLike, b: float) -> np.ndarray:
    """CDF of ``Z``: ``F(a) = H(a) + (1 - 2 H(a)) G_b(|a|)`` (Lemma 2)."""
    a = _validate.finite_array("a", a)
    b = _validate.positive_finite("b", b)
    step = (a >= 0).astype(float)
    return step + (1 - 2 * step) * flip_probability(np.abs(a), b)


def theorem2_bound(
    distances: ArrayLike, epsilon_abc: float, b: float, f_values: ArrayLike, n_accepted_abc: int
) -> float:
    """Theorem 2 (1): bound on ``E || ABCDP mean of f - ABC mean of f ||``.

    ``2 K_T / c' * sum_t G_b(|rho_t - eps_abc|)`` with ``K_T = max_t ||f(theta_t)||``.

    Parameters
    ----------
    distances : array_like
        ``rho_t`` for the ``T`` proposals.
    epsilon_abc : float
        The ABC threshold.
    b : float
        The SVT noise scale.
    f_values : array_like
        ``f(theta_t)``, shape ``(T,)`` or ``(T, k)``.
    n_accepted_abc : int
        ``c'``, the number of proposals non-private ABC accepts.
    """
    rho, eps_abc, b, f, c_abc = _theorem2_inputs(
        distances, epsilon_abc, b, f_values, n_accepted_abc
    )
    k_t = float(np.max(np.linalg.norm(f, axis=1)))
    flips = flip_probability(np.abs(rho - eps_abc), b)
    return 2 * k_t / c_abc * float(np.sum(flips))


def theorem2_tail_bound(
    distances: ArrayLike,
    epsilon_abc: float,
    b: float,
    f_values: ArrayLike,
    n_accepted_abc: int,
    a: float,
) -> float:
    """Theorem 2 (3): lower bound on ``P(error <= a)`` (parameters as :func:`theorem2_bound`).

    ``a > 0`` is the error level; the bound can be negative (then it says nothing).
    """
    rho, eps_abc, b, f, c_abc = _theorem2_inputs(
        distances, epsilon_abc, b, f_values, n_accepted_abc
    )
    a = _validate.positive_finite("a", a)
    k_t = float(np.max(np.linalg.norm(f, axis=1)))
    terms = np.exp(-np.abs(rho - eps_abc) / (2 * b))
    return 1 - 4 * k_t / (3 * a * c_abc) * float(np.sum(terms))


def _theorem2_inputs(distances, epsilon_abc, b, f_values, n_accepted_abc):
    # the distances rho_t to the confidential data: messages show no value
    rho = _validate.finite_vector("distances", distances, confidential=True)
    if np.any(rho < 0):
        raise ValueError(_validate.bad_entries("distances", rho < 0, "be non-negative"))
    f = _validate.finite_array("f_values", f_values)
    if f.ndim not in (1, 2) or f.shape[0] != rho.size:
        raise ValueError(
            f"f_values must have shape (T,) or (T, k) with T = {rho.size} distances, "
            f"got shape {f.shape}"
        )
    return (
        rho,
        _validate.non_negative("epsilon_abc", epsilon_abc),
        _validate.positive_finite("b", b),
        f.reshape(rho.size, -1),
        _validate.positive_int("n_accepted_abc", n_accepted_abc),
    )


def plot_flip_probability(
    *,
    sizes: Sequence[int] = (10, 100, 1000),
    accepted: Sequence[int] = (10, 100, 1000),
    epsilon_totals: Sequence[float] = (0.1, 1.0, 10.0, 100.0),
    epsilon_abc: float = 0.2,
    n_points: int = 100,
    resample: bool = False,
    rng: RNGLike = 0,
) -> Figure:
    """Reproduce Figure 1: flip probability against ``rho ~ U[0, 1]``.

    One panel per (c, N): rows are ``accepted`` (c), columns ``sizes`` (N);
    one curve per ``epsilon_total``; MMD sensitivity ``2 / N`` (``B_k = 1``)
    and ``b`` from Theorem 1.

    Returns
    -------
    matplotlib.figure.Figure
    """
    sizes = _positive_ints("sizes", sizes)
    accepted = _positive_ints("accepted", accepted)
    epsilon_totals = [
        _validate.positive_finite(f"epsilon_totals[{i}]", e) for i, e in enumerate(epsilon_totals)
    ]
    epsilon_abc = _validate.non_negative("epsilon_abc", epsilon_abc)
    n_points = _validate.size("n_points", n_points, maximum=10**7)
    resample = _validate.flag("resample", resample)
    generator = as_generator(rng)
    import matplotlib.pyplot as plt

    rho = np.sort(generator.uniform(0, 1, size=n_points))
    fig, axes = plt.subplots(
        len(accepted),
        len(sizes),
        figsize=(3 * len(sizes), 2.4 * len(accepted)),
        sharex=True,
        sharey=True,
        squeeze=False,
    )
    for i, c in enumerate(accepted):
        for j, n in enumerate(sizes):
            panel = axes[i, j]
            for eps in epsilon_totals:
                b = accounting.svt_scale(eps, 2.0 / n, c, resample=resample)
                panel.plot(
                    rho,
                    flip_probability(np.abs(rho - epsilon_abc), b),
                    label=f"$\\epsilon_{{total}}$={eps:g}",
                )
            panel.axvline(epsilon_abc, color="grey", lw=0.8, ls=":")
            panel.set_title(f"N={n}, c={c}", fontsize=9)
            if i == len(accepted) - 1:
                panel.set_xlabel(r"$\rho$")
            if j == 0:
                panel.set_ylabel("flip probability")
    axes[0, 0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def _positive_ints(name: str, values) -> list[int]:
    if isinstance(values, str) or not hasattr(values, "__iter__"):
        raise TypeError(f"{name} must be a sequence of positive integers, got {values!r}")
    out = [_validate.positive_int(f"{name}[{i}]", v) for i, v in enumerate(values)]
    if not out:
        raise ValueError(f"{name} must not be empty")
    return out
