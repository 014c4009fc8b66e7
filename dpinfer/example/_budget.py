"""What an example's sampler will cost, predicted before it runs, and the switch it makes.

Exact rejection ABC accepts a proposal with probability
``eta(s_dp | s) / sup eta``; its acceptance rate is the evidence over the
mechanism's largest density, ``pi(s_dp) / sup eta`` (Gong 2022, Appendix B),
so ``draws`` accepted draws cost about ``draws / rate`` simulations. An example
that knows the evidence in closed form (the Poisson count) or can estimate it
cheaply (:func:`dpinfer.estimate_acceptance_rate`) predicts that cost up front
(:func:`plan_sampler`) and runs rejection ABC only within
:data:`REJECTION_BUDGET`; otherwise it switches to ``importance_abc`` or
``smc_abc`` and its report says so (:attr:`SamplerPlan.note`).

Examples
--------
>>> import math
>>> plan = plan_sampler(math.log(0.16), 10_000, fallback="smc_abc", source="closed form")
>>> plan.method, round(plan.expected_simulations)
('rejection_abc', 62500)
>>> plan = plan_sampler(-20.8, 10_000, fallback="smc_abc", source="closed form")
>>> plan.method
'smc_abc'
>>> print(plan.note)  # doctest: +NORMALIZE_WHITESPACE
rejection ABC would need about 1.1e+13 simulations for 10,000 draws (acceptance rate 9.3e-10,
from the closed form), more than its budget of 20,000,000: smc_abc is used instead
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["REJECTION_BUDGET", "SamplerPlan", "plan_sampler"]

#: Rejection ABC runs only when it is predicted to need at most this many simulations
#: (a few seconds for the examples' simulators); the run itself stops at twice as many.
REJECTION_BUDGET = 2 * 10**7


@dataclass(frozen=True)
class SamplerPlan:
    """The sampler an example runs, and why.

    Attributes
    ----------
    method : str
        ``"rejection_abc"``, or the example's fallback.
    log_acceptance : float
        Log of rejection ABC's acceptance rate (predicted).
    expected_simulations : float
        Simulations rejection ABC needs for the draws, ``draws / rate``.
    budget : int
        The budget it was compared with.
    source : str
        Where the acceptance rate comes from (closed form, a pilot run).
    draws : int
        The draws asked for.
    """

    method: str
    log_acceptance: float
    expected_simulations: float
    budget: int
    source: str
    draws: int

    @property
    def switched(self) -> bool:
        """Whether rejection ABC was replaced by the fallback."""
        return self.method != "rejection_abc"

    @property
    def max_simulations(self) -> int:
        """The cap passed to rejection ABC: twice the budget."""
        return 2 * self.budget

    @property
    def note(self) -> str:
        """The report's sentence on the choice."""
        rate = math.exp(self.log_acceptance)
        head = (
            f"rejection ABC would need about {_count(self.expected_simulations)} simulations "
            f"for {self.draws:,} draws (acceptance rate {_rate(self.log_acceptance, rate)}, "
            f"from the {self.source})"
        )
        if self.switched:
            return (
                f"{head}, more than its budget of {self.budget:,}: {self.method} is used instead"
            )
        return f"{head}, within its budget of {self.budget:,}"


def plan_sampler(
    log_acceptance: float,
    draws: int,
    *,
    fallback: str,
    source: str,
    budget: int = REJECTION_BUDGET,
) -> SamplerPlan:
    """Choose rejection ABC when ``draws / acceptance rate`` fits ``budget``, else ``fallback``.

    Parameters
    ----------
    log_acceptance : float
        Log of rejection ABC's acceptance rate, ``log pi(s_dp) - log sup eta``
        (``-inf`` when nothing can be accepted).
    draws : int
        Accepted draws wanted.
    fallback : str
        The sampler used otherwise (``"importance_abc"``, ``"smc_abc"``).
    source : str
        Where the rate comes from, for the note.
    budget : int, default REJECTION_BUDGET
        Largest predicted number of simulations for rejection ABC.

    Returns
    -------
    SamplerPlan

    Examples
    --------
    >>> from dpinfer.example import plan_sampler
    >>> plan = plan_sampler(-3.0, 1000, fallback="smc_abc", source="a pilot run")
    >>> plan.method, plan.switched, plan.max_simulations
    ('rejection_abc', False, 40000000)
    """
    log_expected = math.log(draws) - log_acceptance
    expected = math.exp(log_expected) if log_expected < 700 else math.inf
    method = "rejection_abc" if expected <= budget else fallback
    return SamplerPlan(method, float(log_acceptance), expected, budget, source, int(draws))


def _count(x: float) -> str:
    return f"{x:,.0f}" if x < 1e7 else f"{x:.2g}"


def _rate(log_rate: float, rate: float) -> str:
    return f"{rate:.2g}" if rate > 1e-300 else f"exp({log_rate:.4g})"
