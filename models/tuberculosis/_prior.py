"""The joint prior of the tuberculosis example, truncated as a whole (Lintusaari et al. 2019)."""

from __future__ import annotations

import functools
import math

import numpy as np
import scipy.integrate as si
import scipy.special as sc
import scipy.stats as st

from dpinfer import validate

#: The parameters, in the order of Park et al. (2021): index 1 non-compliant, 2 compliant.
PARAMETERS = ("R1", "t1", "R2", "beta")
#: Bounds of the uniform priors of ``R1`` and ``t1``.
R1_BOUNDS = (1.01, 20.0)
T1_BOUNDS = (0.01, 30.0)
#: ``R2 | R1 ~ U(0.01 B, B)`` with ``B = (1 - (1 - p_c) R1) / p_c``.
R2_FRACTION_BOUNDS = (0.01, 1.0)
#: Mean of the normal prior of the burden ``beta``.
BETA_MEAN = 200.0
#: Standard deviation of that prior: Lintusaari et al.'s code (the default).
BETA_SD = 30.0
#: The ABCDP code's standard deviation (it draws ``200 + sqrt(30) * N(0, 1)``).
BETA_SD_ABCDP_CODE = math.sqrt(30.0)
#: The joint truncation: expected observations per year in this open interval ...
MEAN_OBS_BOUNDS = (0.0, 350.0)
#: ... and the non-compliant transmission rate ``alpha_1`` below this bound.
ALPHA1_BOUND = 40.0
#: Probability that a new case complies with therapy, and that a removal is observed.
P_COMPLIANCE = 0.95
P_OBSERVED = 0.80


def r2_bound(r1):
    """``B = (1 - (1 - p_c) R1) / p_c``: ``R2 < B`` keeps the process subcritical."""
    return (1.0 - (1.0 - P_COMPLIANCE) * np.asarray(r1, dtype=float)) / P_COMPLIANCE


def alpha1(r1, t1):
    """Return the non-compliant transmission rate ``alpha_1 = t1 R1 / (R1 - 1)``."""
    r1 = np.asarray(r1, dtype=float)
    return np.asarray(t1, dtype=float) * r1 / (r1 - 1.0)


def mean_observations(r1, r2, beta):
    """Return the expected observations a year, ``p_obs beta / (1 - p_c R2 - (1 - p_c) R1)``."""
    denominator = 1.0 - P_COMPLIANCE * np.asarray(r2) - (1.0 - P_COMPLIANCE) * np.asarray(r1)
    return P_OBSERVED * np.asarray(beta, dtype=float) / denominator


class JointPrior:
    r"""The prior of ``(R1, t1, R2, beta)``, truncated jointly and sampled by rejection.

    .. math::

        \pi(\theta) \propto \mathrm U(R_1; 1.01, 20)\, \mathrm U(t_1; 0.01, 30)\,
        \mathrm U(R_2; 0.01 B, B)\, \mathrm N(\beta; 200, \sigma^2)\;
        \mathbf 1\{0 < m(\theta) < 350\}\, \mathbf 1\{\alpha_1 < 40\},

    with :math:`B = (1 - 0.05 R_1) / 0.95` and :math:`m` the expected
    observations per year (:func:`mean_observations`).

    Parameters
    ----------
    beta_sd : float, default 30
        :math:`\sigma`. Lintusaari et al.'s code uses 30; the ABCDP code draws
        ``200 + sqrt(30) * N(0, 1)``, i.e. :math:`\sigma = \sqrt{30}`
        (:data:`BETA_SD_ABCDP_CODE`); the paper writes ``N(200, 30)``.

    Notes
    -----
    Candidates are drawn from the untruncated product in batches and kept
    when they satisfy the truncation, all four together (the ABCDP code draws
    ``beta`` first and rejects the others given it, which tilts ``beta``'s
    marginal). The normalising constant :math:`Z` (the probability that a
    candidate is kept) is computed by quadrature: given :math:`R_1`,
    :math:`1 - 0.95 R_2 - 0.05 R_1 = 0.95 B (1 - u)` with :math:`u` the
    uniform fraction of :math:`R_2`, so the :math:`\beta` constraint is a
    normal probability and :math:`Z` a two-dimensional integral.
    """

    names = PARAMETERS

    def __init__(self, *, beta_sd=BETA_SD):
        self.beta_sd = validate.positive_finite("beta_sd", beta_sd)

    @property
    def normalising_constant(self) -> float:
        """``Z``, the prior probability of the truncation region under the product."""
        return _normalising_constant(self.beta_sd)

    def sample(self, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """Draw ``n`` parameter sets (rejection in vectorised batches)."""
        if n == 0:
            return {name: np.empty(0) for name in self.names}
        n = validate.positive_int("n", n)
        parts, kept = [], 0
        while kept < n:
            batch = int((n - kept) / self.normalising_constant * 1.1) + 64
            candidates = self.candidates(batch, rng)
            inside = self.inside(candidates)
            parts.append({k: v[inside] for k, v in candidates.items()})
            kept += int(inside.sum())
        return {k: np.concatenate([p[k] for p in parts])[:n] for k in self.names}

    def candidates(self, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """``n`` draws of the untruncated product of the four priors."""
        r1 = rng.uniform(*R1_BOUNDS, size=n)
        t1 = rng.uniform(*T1_BOUNDS, size=n)
        r2 = rng.uniform(*R2_FRACTION_BOUNDS, size=n) * r2_bound(r1)
        beta = rng.normal(BETA_MEAN, self.beta_sd, size=n)
        return {"R1": r1, "t1": t1, "R2": r2, "beta": beta}

    def inside(self, params) -> np.ndarray:
        """Whether each parameter set satisfies the joint truncation."""
        m = mean_observations(params["R1"], params["R2"], params["beta"])
        low, high = MEAN_OBS_BOUNDS
        return (m > low) & (m < high) & (alpha1(params["R1"], params["t1"]) < ALPHA1_BOUND)

    def logpdf(self, params) -> np.ndarray:
        """Normalised log density; ``-inf`` outside the support."""
        r1, t1, r2, beta = (np.asarray(params[k], dtype=float) for k in self.names)
        bound = r2_bound(r1)
        lo_u, hi_u = R2_FRACTION_BOUNDS
        with np.errstate(invalid="ignore", divide="ignore"):
            support = (
                (r1 >= R1_BOUNDS[0])
                & (r1 <= R1_BOUNDS[1])
                & (t1 >= T1_BOUNDS[0])
                & (t1 <= T1_BOUNDS[1])
                & (r2 >= lo_u * bound)
                & (r2 <= hi_u * bound)
                & self.inside({"R1": r1, "t1": t1, "R2": r2, "beta": beta})
            )
            log_density = (
                -math.log(R1_BOUNDS[1] - R1_BOUNDS[0])
                - math.log(T1_BOUNDS[1] - T1_BOUNDS[0])
                - np.log((hi_u - lo_u) * bound)
                + st.norm.logpdf(beta, BETA_MEAN, self.beta_sd)
                - math.log(self.normalising_constant)
            )
        return np.where(support, log_density, -np.inf)

    def __repr__(self) -> str:
        return f"JointPrior(beta_sd={self.beta_sd!r})"


def t1_probability(r1):
    """``P(alpha_1 < 40 | R1)`` under ``t1 ~ U(0.01, 30)``."""
    lo, hi = T1_BOUNDS
    limit = ALPHA1_BOUND * (r1 - 1.0) / r1
    return min(max((limit - lo) / (hi - lo), 0.0), 1.0)


@functools.lru_cache(maxsize=16)
def _normalising_constant(beta_sd: float) -> float:
    lo_u, hi_u = R2_FRACTION_BOUNDS
    low, high = MEAN_OBS_BOUNDS
    beta_low = sc.ndtr((low - BETA_MEAN) / beta_sd)  # m > 0 iff beta > 0

    def beta_probability(u, r1):
        # the largest beta with m < high: high (1 - p_c R2 - (1 - p_c) R1) / p_obs
        beta_high = high * P_COMPLIANCE * r2_bound(r1) * (1.0 - u) / P_OBSERVED
        return sc.ndtr((beta_high - BETA_MEAN) / beta_sd) - beta_low

    def given_r1(r1):
        inner = si.quad(beta_probability, lo_u, hi_u, args=(r1,), epsabs=1e-13, epsrel=1e-11)
        return t1_probability(r1) * inner[0] / (hi_u - lo_u)

    # P(alpha_1 < 40 | R1) has a kink where it reaches 1 (R1 = 4)
    kink = ALPHA1_BOUND / (ALPHA1_BOUND - T1_BOUNDS[1])
    total = si.quad(given_r1, *R1_BOUNDS, points=[kink], epsabs=1e-13, epsrel=1e-11, limit=200)
    return total[0] / (R1_BOUNDS[1] - R1_BOUNDS[0])
