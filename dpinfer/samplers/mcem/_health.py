r"""Whether a Monte Carlo EM run can be trusted: the E-step's ESS floor and convergence.

Monte Carlo EM's E-step is importance sampling from the confidential model at
the current parameter, weighted by the mechanism density. When the release
lies where that model almost never simulates (far in its tail, or in many
dimensions at once), the weights collapse onto one or a few simulations: the
effective sample size (Gong 2022, eq. 4.4) falls to 1, each M-step follows the
most extreme draw, and the Monte Carlo errors computed from the same weights are
zero whatever the real error. This module turns such runs, and runs that ran
out of iterations, into a :class:`MCEMConvergenceWarning` that says
"not converged" and why, and decides which standard errors can be reported.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._estep import MIN_ESS

__all__ = ["Health", "MCEMConvergenceWarning", "diagnose"]


class MCEMConvergenceWarning(UserWarning):
    """Monte Carlo EM did not converge: the estimate is not the MLE (the message says why)."""


class Health(NamedTuple):
    """What the checks found.

    Attributes
    ----------
    converged : bool
        The schedule's stopping rule was met and no E-step was collapsed.
    collapsed : bool
        The last E-step had an ESS below :data:`MIN_ESS`: no Monte Carlo or
        standard error is reported.
    unreliable_information : bool
        The information pass at the estimate had an ESS below the floor: no
        standard error is reported.
    reasons : tuple of str
        Why the run is not converged (empty when it is).
    """

    converged: bool
    collapsed: bool
    unreliable_information: bool
    reasons: tuple

    def message(self, iterations: int) -> str:
        """Return the warning's text."""
        advice = []
        if self.collapsed:
            advice.append(
                "The release lies where the model at these parameter values almost never "
                "simulates, so a few simulations carry all the weight. Start closer to the "
                "MLE (for instance at the naive estimate, fit.naive_estimate), check that "
                "the model can produce the release, or use a posterior sampler "
                "(dpinfer.smc_abc), which moves through the parameter space gradually"
            )
        elif self.reasons:
            advice.append("Raise max_iterations, or start closer to the MLE")
        consequence = (
            "the estimate is the last iterate, not the MLE, and neither its standard error "
            "nor its Monte Carlo standard error is reported (NaN)"
            if self.collapsed
            else "the estimate is the last iterate, not the MLE"
        )
        return (
            f"Monte Carlo EM not converged after {iterations} iterations: "
            + "; ".join(self.reasons)
            + f". {consequence[0].upper()}{consequence[1:]}. "
            + " ".join(f"{a}." for a in advice)
        )


def collapse_run(ess_values) -> int:
    """Count the E-steps at the end of ``ess_values`` below :data:`MIN_ESS` in a row."""
    count = 0
    for ess in reversed(list(ess_values)):
        if not ess < MIN_ESS:
            break
        count += 1
    return count


def diagnose(infos, outcomes, schedule, info_ess: float) -> Health:
    """Check a finished run: its stopping rule, its last E-steps and its information pass.

    ``infos`` are the iterations' :class:`~dpinfer.samplers.mcem.MCEMInfo`,
    ``outcomes`` whether each stage met its stopping rule, ``info_ess`` the
    ESS of the information pass at the estimate.
    """
    reasons = []
    steps = [i for i in infos if np.isfinite(i.ess)]
    run = collapse_run(i.ess for i in steps)
    collapsed = run > 0
    if collapsed:
        shown = steps[-min(run, 3) :]
        reasons.append(
            "the importance sampler of the E-step collapsed: its effective sample size was "
            f"below the floor of {MIN_ESS:g} in the last {run} of {len(steps)} iterations "
            "(last ESS "
            + ", ".join(f"{i.ess:.3g}" for i in shown)
            + " with N = "
            + ", ".join(f"{i.n_simulations:,}" for i in shown)
            + " simulations)"
        )
    failed = [k for k, ok in enumerate(outcomes) if not ok]
    if failed and not collapsed:
        reasons.append(_stopping_reason(schedule, failed))
    unreliable = bool(info_ess < MIN_ESS)
    if unreliable:
        reasons.append(
            f"the information pass at the estimate has an effective sample size of "
            f"{info_ess:.3g}, below the floor of {MIN_ESS:g}: the Louis information rests on "
            "a few simulations"
        )
    return Health(not reasons, collapsed, unreliable, tuple(reasons))


def _stopping_reason(schedule, failed) -> str:
    if schedule.name == "staged":
        stages = ", ".join(f"{k + 1} (N = {schedule.stages[k][0]:,})" for k in failed)
        return (
            f"stage(s) {stages} did not meet their tolerance within max_iterations = "
            f"{schedule.max_iterations} iterations"
        )
    return (
        f"the Q increase did not fall below tol = {schedule.tol:g} within max_iterations = "
        f"{schedule.max_iterations} iterations"
    )
