r"""The discrete latent families of the marginal kernel: one record per family.

A record says what the kernel needs to sum a family's pmf against a cell's mechanism
densities (:mod:`._kernels`): its compiled log-pmf (exact to the last digits at any
size, :mod:`._log_pmf`), the ratio :math:`p(s + 1) / p(s)`, mode, support, validity and
log-concavity in its two parameters ``(a, b)``, the scores (the gradient of the log-pmf,
as posterior means of ``s`` and of one more statistic), which PyMC or PyTensor random
variable it is and how its parameters read as ``(a, b)``, and a NumPy sampler for
posterior predictive draws. The marginal finds a distribution's record by the class of
its op (:func:`dpinfer.marginal._latent.read_latent`) and compiles the kernel for it
(:mod:`._dispatch`); adding a family is adding a record here.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass

import numba as nb
import numpy as np

from . import _dispatch
from ._log_pmf import binomial_log_pmf, negative_binomial_log_pmf, poisson_log_pmf

__all__ = [
    "BINOMIAL",
    "DIRAC_DELTA",
    "DISCRETE_UNIFORM",
    "GEOMETRIC",
    "NEGATIVE_BINOMIAL",
    "POISSON",
    "LatentFamily",
]

_JIT = {"cache": True, "error_model": "numpy"}


@dataclass(frozen=True, eq=False)
class LatentFamily:
    """One discrete latent family of the marginal kernel (see the module notes).

    The compiled members take the parameters ``a, b`` (a family with one
    parameter ignores ``b``) and a value ``s`` where they say so.

    Attributes
    ----------
    name : str
        Unique; the kernel is compiled and cached once per name.
    op : str
        ``"module:Class"`` of the PyMC or PyTensor RandomVariable (read when a
        model is built, so that ``import dpinfer`` does not load PyTensor).
    parameters : callable
        ``parameters(dist_params) -> (a, b)``: the op's parameter tensors as the
        kernel's two (a missing one is ``None``, read as 0).
    log_pmf, ratio : compiled ``(a, b, s) -> float``
        ``log p(s)``, and ``p(s + 1) / p(s)`` for ``s`` and ``s + 1`` in the support.
    mode, support : compiled ``(a, b)``
        A mode, and ``(lower, upper)``.
    valid, log_concave : compiled ``(a, b) -> bool``
        Whether the parameters are valid; whether the pmf is log-concave in ``s``.
    ratio_bound : compiled ``(a, b) -> float``
        ``sup_s p(s + 1) / p(s)``: the bound of the tail of a pmf that is not log-concave.
    statistic, statistic_step : compiled ``(a, b, s) -> float``
        A second statistic ``t(s)`` that the scores need (besides ``s``), and
        ``t(s + 1) - t(s)``; ``has_statistic`` is False where there is none.
    scores : compiled ``(a, b, mean_s, mean_t) -> (float, float)``
        ``d log p / da`` and ``d log p / db`` of the marginal from the posterior
        means of ``s`` and ``t(s)`` (Fisher's identity).
    at_boundary, boundary_scores : compiled
        ``at_boundary(a, b)``: where ``scores`` is undefined; there
        ``boundary_scores(a, b, up)`` gives its limit from ``up``, the
        mechanisms' ratio ``eta(s + 1) / eta(s)`` at the support's lower end.
    poisson_fast_path : bool
        Whether the pmf is Poisson with mean ``a``: then a cell whose releases
        are all published Gaussian ones is summed by :mod:`._poisson`, whose loop
        is written for that pmf (and inlined into the sweep's: a call would cost
        a seventh of it).
    sample : callable
        ``sample(rng, a, b, size)``: NumPy draws.
    """

    name: str
    op: str
    parameters: Callable
    log_pmf: Callable
    ratio: Callable
    mode: Callable
    support: Callable
    valid: Callable
    log_concave: Callable
    scores: Callable
    sample: Callable
    ratio_bound: Callable | None = None
    has_statistic: bool = False
    statistic: Callable | None = None
    statistic_step: Callable | None = None
    at_boundary: Callable | None = None
    boundary_scores: Callable | None = None
    poisson_fast_path: bool = False

    def __post_init__(self):
        defaults = {
            "ratio_bound": _unbounded,
            "statistic": _zero_at,
            "statistic_step": _zero_at,
            "at_boundary": _never,
            "boundary_scores": _no_scores,
        }
        for name, default in defaults.items():
            if getattr(self, name) is None:
                object.__setattr__(self, name, default)
        _dispatch.register(self)

    def __repr__(self) -> str:
        return f"LatentFamily({self.name!r})"


# --- defaults ---------------------------------------------------------------------------


@nb.njit(**_JIT)
def _unbounded(a, b):
    return math.inf


@nb.njit(**_JIT)
def _zero_at(a, b, s):
    return 0.0


@nb.njit(**_JIT)
def _never(a, b):
    return False


@nb.njit(**_JIT)
def _no_scores(a, b, up):
    return math.nan, math.nan


@nb.njit(**_JIT)
def _always(a, b):
    return True


def _pad(params):
    """Return ``(a, b)`` from one or two parameter tensors."""
    return (params[0], None) if len(params) == 1 else tuple(params)


@nb.njit(**_JIT)
def digamma(x):
    """``psi(x)`` for ``x > 0``: recurrence up to 6, then the asymptotic series."""
    result = 0.0
    while x < 6.0:
        result -= 1.0 / x
        x += 1.0
    inv = 1.0 / x
    inv2 = inv * inv
    return (
        result
        + math.log(x)
        - 0.5 * inv
        - inv2 * (1.0 / 12 - inv2 * (1.0 / 120 - inv2 * (1.0 / 252 - inv2 * (1.0 / 240))))
    )


# --- Poisson(mu = a) --------------------------------------------------------------------


@nb.njit(**_JIT)
def _poisson_log_pmf(a, b, s):
    return poisson_log_pmf(s, a)


@nb.njit(**_JIT)
def _poisson_ratio(a, b, s):
    return a / (s + 1.0)


@nb.njit(**_JIT)
def _poisson_mode(a, b):
    return np.floor(a)


@nb.njit(**_JIT)
def _non_negative(a, b):
    return 0.0, math.inf


@nb.njit(**_JIT)
def _poisson_valid(a, b):
    return a >= 0.0 and math.isfinite(a)


@nb.njit(**_JIT)
def _poisson_scores(a, b, mean_s, mean_t):
    return mean_s / a - 1.0, 0.0


@nb.njit(**_JIT)
def _at_zero_rate(a, b):
    return a == 0.0


@nb.njit(**_JIT)
def _poisson_zero_rate_scores(a, b, up):
    # the limit of E[s] / mu - 1 at mu = 0: t(1) / t(0) - 1
    return up - 1.0, 0.0


POISSON = LatentFamily(
    name="poisson",
    op="pytensor.tensor.random.basic:PoissonRV",
    parameters=_pad,
    log_pmf=_poisson_log_pmf,
    ratio=_poisson_ratio,
    mode=_poisson_mode,
    support=_non_negative,
    valid=_poisson_valid,
    log_concave=_always,
    scores=_poisson_scores,
    at_boundary=_at_zero_rate,
    boundary_scores=_poisson_zero_rate_scores,
    poisson_fast_path=True,
    sample=lambda rng, a, b, size: rng.poisson(a, size=size),
)


# --- Binomial(n = a, p = b) -------------------------------------------------------------


@nb.njit(**_JIT)
def _binomial_log_pmf(a, b, s):
    return binomial_log_pmf(s, a, b, 1.0 - b)


@nb.njit(**_JIT)
def _binomial_ratio(a, b, s):
    return (a - s) / (s + 1.0) * (b / (1.0 - b)) if b < 1.0 else math.inf


@nb.njit(**_JIT)
def _binomial_mode(a, b):
    return min(a, np.floor((a + 1.0) * b))


@nb.njit(**_JIT)
def _binomial_support(a, b):
    return 0.0, a


@nb.njit(**_JIT)
def _binomial_valid(a, b):
    return a >= 0.0 and a == np.floor(a) and 0.0 <= b <= 1.0


@nb.njit(**_JIT)
def _binomial_scores(a, b, mean_s, mean_t):
    return 0.0, mean_s / b - (a - mean_s) / (1.0 - b)


BINOMIAL = LatentFamily(
    name="binomial",
    op="pytensor.tensor.random.basic:BinomialRV",
    parameters=_pad,
    log_pmf=_binomial_log_pmf,
    ratio=_binomial_ratio,
    mode=_binomial_mode,
    support=_binomial_support,
    valid=_binomial_valid,
    log_concave=_always,
    scores=_binomial_scores,
    sample=lambda rng, a, b, size: rng.binomial(np.asarray(a, dtype=np.int64), b, size=size),
)


# --- NegativeBinomial(n = a, p = b) -----------------------------------------------------


@nb.njit(**_JIT)
def _negative_binomial_log_pmf(a, b, s):
    return negative_binomial_log_pmf(s, a, b)


@nb.njit(**_JIT)
def _negative_binomial_ratio(a, b, s):
    return (s + a) / (s + 1.0) * (1.0 - b)


@nb.njit(**_JIT)
def _negative_binomial_mode(a, b):
    return max(0.0, np.floor((a - 1.0) * (1.0 - b) / b)) if a > 1.0 else 0.0


@nb.njit(**_JIT)
def _negative_binomial_valid(a, b):
    return a > 0.0 and math.isfinite(a) and 0.0 < b <= 1.0


@nb.njit(**_JIT)
def _negative_binomial_log_concave(a, b):
    return not a < 1.0


@nb.njit(**_JIT)
def _negative_binomial_ratio_bound(a, b):
    # (s + a) / (s + 1) < 1 for a < 1, the only case that is not log-concave
    return 1.0 - b


@nb.njit(**_JIT)
def _digamma_at(a, b, s):
    return digamma(s + a)


@nb.njit(**_JIT)
def _digamma_step(a, b, s):
    return 1.0 / (s + a)


@nb.njit(**_JIT)
def _negative_binomial_scores(a, b, mean_s, mean_t):
    return mean_t - digamma(a) + math.log(b), a / b - mean_s / (1.0 - b)


NEGATIVE_BINOMIAL = LatentFamily(
    name="negative_binomial",
    op="pytensor.tensor.random.basic:NegBinomialRV",
    parameters=_pad,
    log_pmf=_negative_binomial_log_pmf,
    ratio=_negative_binomial_ratio,
    mode=_negative_binomial_mode,
    support=_non_negative,
    valid=_negative_binomial_valid,
    log_concave=_negative_binomial_log_concave,
    ratio_bound=_negative_binomial_ratio_bound,
    has_statistic=True,
    statistic=_digamma_at,
    statistic_step=_digamma_step,
    scores=_negative_binomial_scores,
    sample=lambda rng, a, b, size: rng.negative_binomial(a, b, size=size),
)


# --- Geometric(p = a), on 1, 2, ... -----------------------------------------------------


@nb.njit(**_JIT)
def _geometric_log_pmf(a, b, s):
    out = math.log(a)
    if s > 1.0:
        out += (s - 1.0) * math.log1p(-a) if a < 1.0 else -math.inf
    return out


@nb.njit(**_JIT)
def _geometric_ratio(a, b, s):
    return 1.0 - a


@nb.njit(**_JIT)
def _one(a, b):
    return 1.0


@nb.njit(**_JIT)
def _geometric_support(a, b):
    return 1.0, math.inf


@nb.njit(**_JIT)
def _geometric_valid(a, b):
    return 0.0 < a <= 1.0


@nb.njit(**_JIT)
def _geometric_scores(a, b, mean_s, mean_t):
    return 1.0 / a - (mean_s - 1.0) / (1.0 - a), 0.0


GEOMETRIC = LatentFamily(
    name="geometric",
    op="pytensor.tensor.random.basic:GeometricRV",
    parameters=_pad,
    log_pmf=_geometric_log_pmf,
    ratio=_geometric_ratio,
    mode=_one,
    support=_geometric_support,
    valid=_geometric_valid,
    log_concave=_always,
    scores=_geometric_scores,
    sample=lambda rng, a, b, size: rng.geometric(a, size=size),
)


# --- DiscreteUniform(lower = a, upper = b) ----------------------------------------------


@nb.njit(**_JIT)
def _uniform_log_pmf(a, b, s):
    return -math.log(b - a + 1.0)


@nb.njit(**_JIT)
def _uniform_ratio(a, b, s):
    return 1.0


@nb.njit(**_JIT)
def _lower(a, b):
    return a


@nb.njit(**_JIT)
def _uniform_support(a, b):
    return a, b


@nb.njit(**_JIT)
def _uniform_valid(a, b):
    return a <= b and a == np.floor(a) and b == np.floor(b)


@nb.njit(**_JIT)
def _no_gradient(a, b, mean_s, mean_t):
    return 0.0, 0.0


def _uniform_sample(rng, a, b, size):
    return rng.integers(np.asarray(a, np.int64), np.asarray(b, np.int64) + 1, size=size)


DISCRETE_UNIFORM = LatentFamily(
    name="discrete_uniform",
    op="pymc.distributions.discrete:DiscreteUniformRV",
    parameters=_pad,
    log_pmf=_uniform_log_pmf,
    ratio=_uniform_ratio,
    mode=_lower,
    support=_uniform_support,
    valid=_uniform_valid,
    log_concave=_always,
    scores=_no_gradient,
    sample=_uniform_sample,
)


def _dirac_parameters(params):
    (c,) = params
    if c.dtype.startswith("float"):
        raise ValueError("a DiracDelta confidential value must be an integer")
    return c, c


# DiracDelta(c): the discrete uniform on {c}
DIRAC_DELTA = dataclasses.replace(
    DISCRETE_UNIFORM,
    name="dirac_delta",
    op="pymc.distributions.distribution:DiracDeltaRV",
    parameters=_dirac_parameters,
)
