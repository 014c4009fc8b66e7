r"""Monte Carlo sample-size schedules for MCEM: Gong's stages and ascent-based growth.

A schedule decides, iteration by iteration, how many statistics the E-step
simulates, whether an update is trusted, and when to stop. Both schedules
are small frozen dataclasses with pure decision methods; the one loop that
drives them is :func:`dpinfer.mcem`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy.stats import norm

from ... import _validate
from ._estep import MIN_ESS

__all__ = ["AscentSchedule", "StagedSchedule", "as_schedule"]


@dataclass(frozen=True)
class StagedSchedule:
    r"""Stages of fixed sample size and tolerance (Gong 2022, Appendix E).

    Stage ``k`` iterates with ``N_k`` simulations per E-step until
    ``max_j |theta_j(t) - theta_j(t-1)| < tol_k``, then the next stage starts
    from the stage's last value.

    Parameters
    ----------
    stages : tuple of (int, float)
        ``(N, tol)`` per stage; default Gong's ``(10^3, 10^-3), (10^5, 10^-4),
        (10^7, 10^-5)``.
    max_iterations : int, default 500
        Per stage; a stage that does not meet its tolerance within this many
        iterations makes the fit report ``converged=False``.

    Notes
    -----
    Within a stage every E-step reuses the same random numbers (common random
    numbers: the chunk seeds of the stage), so the Monte Carlo EM map is
    deterministic and the tolerance on successive parameter values is
    meaningful. With fresh draws at every iteration ``|theta(t) - theta(t-1)|``
    never falls below the Monte Carlo noise, of order ``sd / sqrt(ESS)``
    (about ``2e-3`` for Gong's Poisson example at ``N = 10^7``), so the
    tolerance ``10^-5`` could not be met. Stages use independent seeds.

    For a discrete statistic the deterministic map is piecewise constant in
    ``theta`` and may end in a limit cycle whose points differ by the effect
    of one simulated value changing (order ``1 / ESS``, far below the Monte
    Carlo error); a stage also ends, converged, when an iterate repeats a
    previous one exactly.

    Examples
    --------
    >>> StagedSchedule(stages=((1000, 1e-3), (10_000, 1e-4))).final_size
    10000
    """

    stages: tuple = ((10**3, 1e-3), (10**5, 1e-4), (10**7, 1e-5))
    max_iterations: int = 500

    def __post_init__(self):
        if isinstance(self.stages, str) or not hasattr(self.stages, "__iter__"):
            raise TypeError(f"stages must be a sequence of (N, tol) pairs, got {self.stages!r}")
        if not self.stages:
            raise ValueError("stages must hold at least one (N, tol) pair, got none")
        stages = []
        for i, stage in enumerate(self.stages):
            try:
                n, tol = stage
            except (TypeError, ValueError):
                raise ValueError(f"stages[{i}] must be a pair (N, tol), got {stage!r}") from None
            stages.append(
                (
                    _validate.size(f"stages[{i}] N", n),
                    _validate.positive_finite(f"stages[{i}] tol", tol),
                )
            )
        object.__setattr__(self, "stages", tuple(stages))
        object.__setattr__(
            self, "max_iterations", _validate.positive_int("max_iterations", self.max_iterations)
        )

    name = "staged"
    common_random_numbers = True

    @property
    def final_size(self) -> int:
        """``N`` of the last stage (also used for the information at the estimate)."""
        return self.stages[-1][0]

    def initial_size(self) -> int:
        """Sample size of the first E-step."""
        return self.stages[0][0]

    def accept(self, dq: float, se: float, n: int) -> int:
        """Staged schedules accept every update (no extra draws)."""
        return 0

    def advance(
        self,
        stage: int,
        stage_iter: int,
        step: float,
        dq: float,
        se: float,
        n_start: int,
        n_final: int,
        *,
        cycled: bool = False,
        ess: float = math.inf,
    ) -> tuple[bool, bool | None, int, int]:
        """Return ``(done, stage_converged, next_stage, next_size)`` after an iteration.

        ``stage_converged`` is None while the stage goes on, True when it met
        its tolerance (or reached a limit cycle, ``cycled``), False when it ran
        out of iterations.
        """
        n = n_start
        _, tol = self.stages[stage]
        last = stage + 1 == len(self.stages)
        if step < tol or cycled:
            ok = True
        elif stage_iter + 1 >= self.max_iterations:
            ok = False
        else:
            return False, None, stage, n
        if last:
            return True, ok, stage, n
        return False, ok, stage + 1, self.stages[stage + 1][0]


@dataclass(frozen=True)
class AscentSchedule:
    r"""Ascent-based sample sizes (Caffo, Jank and Jones 2005).

    Each iteration draws a fresh sample. An update is accepted when the
    asymptotic lower confidence bound of its Q increase is positive,
    ``dQ - z_alpha se > 0``; otherwise the Monte Carlo error swamps the
    increase, ``N / k`` more draws are appended and the M-step is redone. The
    next iteration starts with
    ``max(N_t, se^2 (z_alpha + z_beta)^2 / dQ^2)`` draws (enough to detect an
    increase of the current size with power ``1 - beta``). The algorithm stops
    when the upper bound ``dQ + z_gamma se`` falls below ``tol``.

    Parameters
    ----------
    start : int, default 1000
        Sample size of the first iteration.
    tol : float, default 3e-5
        Stop when the Q increase is below ``tol`` nats with confidence
        ``1 - gamma``. Near the maximum ``dQ ~ (1/2) dtheta' I_c dtheta``
        (``I_c`` the complete-data information), so ``3e-5`` stops once steps
        are below about ``sqrt(2 tol) = 0.008`` complete-data standard
        errors. EM's remaining distance to its fixed point is then at most
        about ``sqrt(2 tol) f / sqrt(1 - f)`` observed standard errors, for
        a fraction ``f`` of missing information: 0.014 at ``f = 0.8``, 0.03
        at ``f = 0.93`` (Lalonde's means), below the estimate's Monte Carlo
        error. The sample size the stopping rule needs grows like
        ``1 / tol``: Caffo et al.'s ``1e-7`` took the sample to ``10^7`` and
        minutes on a two-parameter survey release that ``3e-5`` fits in a
        second or two to the same estimate (``benchmarks/mcem_survey.py``).
    alpha, beta, gamma : float, default 0.25, 0.25, 0.10
        Error rates of the ascent test, of the sample-size rule and of the
        stopping rule (Caffo et al.'s recommended values).
    k : float, default 3
        Append ``N / k`` draws when an update is not trusted.
    max_size : int, default 10**7
        Cap on the sample size of one iteration.
    max_iterations : int, default 500
    information_size : int, default 10**6
        Sample size (at least) of the final pass at the estimate, for the
        observed score and the Louis information.

    References
    ----------
    .. [1] Caffo, B. S., Jank, W. and Jones, G. L. (2005). Ascent-based Monte
       Carlo expectation-maximization. JRSS B 67(2), 235-251.

    Examples
    --------
    >>> AscentSchedule().initial_size()
    1000
    """

    start: int = 1000
    tol: float = 3e-5
    alpha: float = 0.25
    beta: float = 0.25
    gamma: float = 0.10
    k: float = 3.0
    max_size: int = 10**7
    max_iterations: int = 500
    information_size: int = 10**6

    def __post_init__(self):
        _validate.size("start", self.start)
        _validate.size("information_size", self.information_size)
        _validate.positive_finite("tol", self.tol)
        for name in ("alpha", "beta", "gamma"):
            _validate.probability_open(name, getattr(self, name))
        _validate.positive_finite("k", self.k)
        _validate.size("max_size", self.max_size)
        _validate.positive_int("max_iterations", self.max_iterations)
        if self.start > self.max_size:
            raise ValueError(f"start must not exceed max_size, got {self.start} > {self.max_size}")

    name = "ascent"
    common_random_numbers = False

    @property
    def final_size(self) -> int:
        """Lower bound of the sample size for the information at the estimate."""
        return self.information_size

    def initial_size(self) -> int:
        """Sample size of the first E-step."""
        return int(self.start)

    def _z(self, p: float) -> float:
        return float(norm.isf(p))

    def accept(self, dq: float, se: float, n: int) -> int:
        """Return how many draws to append before trusting the update (0: accept).

        An update whose increase is already below ``tol`` with confidence
        ``1 - gamma`` is accepted too: the stopping rule ends the run, and
        more draws would only confirm that the step is negligible.
        """
        if dq - self._z(self.alpha) * se > 0 or n >= self.max_size:
            return 0
        if dq + self._z(self.gamma) * se < self.tol:
            return 0
        return max(1, min(math.ceil(n / self.k), self.max_size - n))

    def advance(
        self,
        stage: int,
        stage_iter: int,
        step: float,
        dq: float,
        se: float,
        n_start: int,
        n_final: int,
        *,
        cycled: bool = False,
        ess: float = math.inf,
    ) -> tuple[bool, bool | None, int, int]:
        """Return ``(done, converged, next_stage, next_size)`` after an iteration.

        ``se`` was estimated on ``n_final`` draws, so the asymptotic variance
        of the increase is ``n_final * se^2``. When the stopping rule is met
        but the E-step's effective sample size ``ess`` is below
        :data:`~dpinfer.samplers.mcem._estep.MIN_ESS`, the Monte Carlo error that
        met it cannot be trusted: the run goes on with a sample large enough
        to reach that floor at the same ESS per draw (at most ten times
        larger), and ends not converged if ``max_size`` cannot reach it.
        """
        if dq + self._z(self.gamma) * se < self.tol:
            if not ess < MIN_ESS:
                return True, True, stage, n_start
            if n_final >= self.max_size:
                return True, False, stage, n_start
            grown = math.ceil(n_final * min(MIN_ESS / max(ess, 1.0), 10.0))
            return False, None, stage, int(min(self.max_size, max(n_start, grown)))
        if stage_iter + 1 >= self.max_iterations:
            return True, False, stage, n_start
        za, zb = self._z(self.alpha), self._z(self.beta)
        wanted = n_final * se * se * (za + zb) ** 2 / dq**2 if dq > 0 else math.inf
        size = int(min(self.max_size, max(n_start, math.ceil(min(wanted, 1e18)))))
        return False, None, stage, size


def as_schedule(
    schedule: str | StagedSchedule | AscentSchedule,
) -> StagedSchedule | AscentSchedule:
    """Normalise ``schedule``: ``"staged"``, ``"auto"`` (ascent-based) or an instance."""
    if isinstance(schedule, StagedSchedule | AscentSchedule):
        return schedule
    also = "a StagedSchedule/AscentSchedule instance"
    if _validate.choice("schedule", schedule, ("staged", "auto", "ascent"), alternatives=also) == (
        "staged"
    ):
        return StagedSchedule()
    return AscentSchedule()
