r"""Profile-likelihood intervals of Monte Carlo EM: the profile score, integrated.

The likelihood-ratio interval of a parameter ``theta_j`` at level ``1 - alpha``
is ``{u : 2 (pl(u_hat) - pl(u)) <= chi2_1(1 - alpha)}``, with the profile
log-likelihood ``pl(u) = max_psi log pi(s_dp | u, psi)`` (nuisance ``psi``
maximised out). Monte Carlo EM never evaluates ``log pi(s_dp | theta)``, but at
any ``theta`` its importance sample gives the observed score (Fisher's
identity, Gong 2022, eq. 4.6) and Louis' observed information (4.7). So the
profile is traced from the MLE outwards, on each side, by *nodes*:

1. at a node ``u`` the nuisance is maximised by Newton steps
   ``psi += I_psipsi^-1 score_psi`` with the Louis quantities, each on a fresh
   sample drawn at the node itself (so no importance weight ever spans the
   distance from the MLE, and nothing degrades far from it); ``I_psipsi``
   keeps at least 1% of the complete-data information in every direction
   (:func:`_observed_floor`), so a nuisance on a plateau of the likelihood,
   which Laplace noise makes, gets bounded steps;
2. by the envelope theorem ``pl'(u)`` is the score of ``theta_j`` at
   ``(u, psi_hat(u))``; what remains of the nuisance's Monte Carlo error is
   removed to first order by the efficient score
   ``g = score_j - I_jpsi I_psipsi^-1 score_psi``, and
   ``pl''(u) = -(I_jj - I_jpsi I_psipsi^-1 I_psij)``;
3. ``pl`` between nodes is the integral of the cubic Hermite interpolant of
   ``pl'`` (values and slopes at both ends), and the interval's end is where
   the deviance crosses the chi-squared quantile. The deviance starts at
   ``g0^2 / i0`` at the estimate: the Monte Carlo estimate lies that far
   (a Newton step) below the profile's maximum.

Nodes are half a (local) standard error apart on the unconstrained scale of
``theta_j`` (log for a positive parameter), so the interval respects the
support, and the next node's nuisance is predicted along the tangent
``dpsi/du = -I_psipsi^-1 I_psij``.

Monte Carlo error: the deviance at the end is linear in the nodes' scores,
whose Monte Carlo covariances the Louis pass estimates (independent samples at
each node); the end's Monte Carlo standard error is that of the deviance over
its slope ``|2 pl'(u)|``. The informations enter only through the Hermite
correction terms (weights ``h^2 / 12``); their error is neglected.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from typing import NamedTuple

import numpy as np
from scipy.optimize import brentq
from scipy.stats import chi2

from ..._progress import progress_bar
from ..._rng import child_sequence
from . import _mstep
from ._estep import MIN_ESS, WeightedSample, make_draw

__all__ = ["ProfileIntervals", "ProfileWarning", "profile_intervals"]

#: Distance between nodes, in local standard errors of the parameter (unconstrained scale).
STEP = 0.5
#: Nodes at most this many per side.
MAX_NODES = 24
#: Newton passes at most per node to maximise the nuisance parameters.
NEWTON_PASSES = 3
#: A Newton step of the nuisance below this many of its standard errors ends the passes.
NEWTON_TOL = 0.05
#: Smallest fraction of the complete-data information the nuisance's observed information
#: is taken to keep in any direction (see :func:`_observed_floor`).
OBSERVED_FLOOR = 0.01


class ProfileWarning(UserWarning):
    """A profile-likelihood interval could not be traced (its end is NaN; the message says why)."""


class ProfileIntervals(dict):
    """Profile-likelihood intervals: ``{name: (lower, upper)}``, with their Monte Carlo errors.

    Attributes
    ----------
    level : float
        The confidence level.
    monte_carlo_se : dict
        ``{name: (se_lower, se_upper)}``, the Monte Carlo standard errors of
        the ends (same shapes as the ends).
    nodes : dict
        Per flat label, per side (``"lower"``, ``"upper"``): the traced profile
        as a dict of arrays ``theta`` (the node's value of the parameter),
        ``deviance`` (``2 (pl(u_hat) - pl(u))``), ``deviance_se`` (its Monte
        Carlo s.e.) and ``ess`` (of the node's last pass).
    simulations : int
        Statistics simulated for all nodes.
    notes : list of str
        Why an end is NaN, where one is.
    """

    def __init__(
        self,
        intervals: Mapping[str, tuple[np.ndarray, np.ndarray]],
        *,
        level: float,
        monte_carlo_se: dict[str, tuple[np.ndarray, np.ndarray]],
        nodes: dict[str, dict],
        simulations: int,
        notes: list[str],
    ) -> None:
        super().__init__(intervals)
        self.level = level
        self.monte_carlo_se = monte_carlo_se
        self.nodes = nodes
        self.simulations = simulations
        self.notes = notes


class _Louis(NamedTuple):
    score: np.ndarray
    info: np.ndarray  # observed
    complete: np.ndarray  # complete-data information: a metric that is always positive
    cov: np.ndarray  # Monte Carlo covariance of the score
    ess: float


class _Node(NamedTuple):
    phi: np.ndarray  # the full unconstrained parameter at the node (nuisance maximised)
    g: float  # efficient score of the parameter, in its unconstrained coordinate
    info: float  # profile information (minus the derivative of g)
    var: float  # Monte Carlo variance of g
    ess: float
    newton: np.ndarray  # the last Newton step of the nuisance (not yet applied)
    tangent: np.ndarray  # dpsi/du
    newton_size: float  # that step in standard errors of the nuisance


class _Tracer:
    """Evaluates profile nodes of a fit: Louis passes on fresh samples at the node."""

    def __init__(self, context, size, executor):
        self.context, self.size, self.executor = context, size, executor
        self.space = context.likelihood.space
        self.simulations = 0

    def louis_at(self, phi, seed) -> _Louis:
        """Return the Louis quantities at ``phi`` on the unconstrained scale."""
        ctx, space = self.context, self.space
        theta, d1, d2 = space.to_natural(phi)
        draw = make_draw(ctx.model, ctx.mechanism, ctx.released, space, theta, compress=True)
        full, rest = divmod(self.size, ctx.batch_size)
        sizes = [ctx.batch_size] * full + ([rest] if rest else [])
        sample = WeightedSample(draw, sizes, seed, executor=self.executor)
        louis = _mstep.louis(sample, ctx.likelihood, theta)
        self.simulations += sample.n
        jac = np.outer(d1, d1)
        info = jac * louis.information - np.diag(louis.score * d2)
        return _Louis(
            louis.score * d1,
            info,
            jac * louis.complete_information,
            jac * louis.score_covariance,
            louis.ess,
        )

    def node(self, j, phi, seed) -> _Node | str:
        """Maximise the nuisance at ``phi[j]`` and return the node (or why it failed)."""
        phi = np.array(phi, dtype=float)
        for k in range(NEWTON_PASSES):
            node = _efficient(j, phi, self.louis_at(phi, child_sequence(seed, k)))
            if isinstance(node, str):
                return f"{node} at the profile node {self._natural(phi)}"
            if node.newton_size < NEWTON_TOL or k + 1 == NEWTON_PASSES:
                return node
            phi = phi.copy()
            phi[np.arange(len(phi)) != j] += node.newton
        raise AssertionError("unreachable")

    def _natural(self, phi):
        return self.space.unflatten(self.space.to_natural(phi)[0])


def profile_intervals(fit, level, *, simulations, rng, executor, progressbar) -> ProfileIntervals:
    """Trace the profile likelihood of every parameter of ``fit`` on both sides (see module)."""
    labels = fit.labels
    q = float(chi2.ppf(level, 1))
    ends = np.full((len(labels), 2), np.nan)
    ses = np.full((len(labels), 2), np.nan)
    nodes: dict = {label: {} for label in labels}
    notes = _refusals(fit)
    if not notes and not fit.converged:
        warnings.warn(
            "profile interval: the fit did not converge "
            f"({fit.attrs.get('convergence_note', '')}); the profile is traced from its last "
            "iterate, and an end is NaN where the likelihood there exceeds the estimate's",
            ProfileWarning,
            stacklevel=3,
        )
    tracer = None if notes else _Tracer(fit._context, simulations, executor)
    if tracer is not None:
        space = tracer.space
        phi_hat = space.to_unconstrained(space.flatten(fit.estimate))
        with progress_bar("profile likelihood", total=2 * len(labels), enabled=progressbar) as bar:
            # the Louis pass at the estimate is shared by every parameter and both sides
            center = tracer.louis_at(phi_hat, child_sequence(rng, 0)), phi_hat
            for j, label in enumerate(labels):
                for side, name in ((-1, "lower"), (1, "upper")):
                    seed = child_sequence(child_sequence(rng, 1 + j), int(side > 0))
                    found = _trace(tracer, j, side, center, q, seed)
                    if isinstance(found, str):
                        notes.append(f"{label}, {name} end: {found}")
                    else:
                        end, se, traced = found
                        ends[j, int(side > 0)], ses[j, int(side > 0)] = end, se
                        nodes[label][name] = traced
                    bar.advance(1)
    for note in notes:
        warnings.warn(f"profile interval: {note}", ProfileWarning, stacklevel=3)
    return ProfileIntervals(
        _by_name(fit.estimate, ends),
        level=level,
        monte_carlo_se=_by_name(fit.estimate, ses),
        nodes=nodes,
        simulations=0 if tracer is None else tracer.simulations,
        notes=notes,
    )


def _refusals(fit) -> list:
    """Reasons not to trace any profile: a boundary estimate, a collapsed fit."""
    if fit._context is None:
        return ["not computed: this result was unpickled without its model; refit to trace it"]
    if fit.at_boundary:
        return [
            f"not computed: {', '.join(fit.at_boundary)} lies on the boundary of the parameter "
            "space, where the likelihood-ratio statistic is not chi-squared (Self and Liang 1987)"
        ]
    if fit.attrs.get("standard_error_note"):
        return [f"not computed: the fit is not usable ({fit.attrs['standard_error_note']})"]
    return []


def _efficient(j, phi, louis: _Louis) -> _Node | str:
    """Return the node at ``phi``: efficient score and profile information of ``j``."""
    score, info, cov, ess = louis.score, louis.info, louis.cov, louis.ess
    if not ess >= MIN_ESS:
        return f"the importance sample has ESS {ess:.3g} < {MIN_ESS:g}"
    others = np.arange(len(phi)) != j
    if not others.any():
        return _Node(phi, score[j], info[j, j], cov[j, j], ess, phi[others], phi[others], 0.0)
    block = _observed_floor(info[np.ix_(others, others)], louis.complete[np.ix_(others, others)])
    if block is None:
        return "the complete-data information of the nuisance parameters is not positive definite"
    step = np.linalg.solve(block, score[others])
    weights = np.linalg.solve(block, info[others, j])
    contrast = np.zeros(len(phi))
    contrast[j], contrast[others] = 1.0, -weights
    return _Node(
        phi,
        float(score[j] - info[j, others] @ step),
        float(info[j, j] - info[j, others] @ weights),
        float(contrast @ cov @ contrast),
        ess,
        step,
        -weights,
        math.sqrt(max(float(step @ block @ step), 0.0)),
    )


def _observed_floor(observed, complete):
    """Return the nuisance's observed information with every direction at least ``FLOOR`` observed.

    In the metric of the complete-data information ``C``, the observed
    information's eigenvalues are the fractions of information the release
    keeps, in ``(0, 1]`` at a maximum. Where the likelihood is nearly flat in a
    nuisance direction (Laplace noise makes plateaus), Monte Carlo error can
    make one negative; raising each to :data:`OBSERVED_FLOOR` keeps the Newton
    steps and the efficient score's correction bounded (a step in a flat
    direction changes the profile little, whatever its length).
    """
    try:
        chol = np.linalg.cholesky((complete + complete.T) / 2)
    except np.linalg.LinAlgError:
        return None
    inv = np.linalg.inv(chol)
    kept, vectors = np.linalg.eigh(inv @ ((observed + observed.T) / 2) @ inv.T)
    kept = np.maximum(kept, OBSERVED_FLOOR)
    root = chol @ vectors
    return (root * kept) @ root.T


def _trace(tracer, j, side, center, q, seed):
    """Walk from the estimate until the deviance crosses ``q``; return (end, se, nodes)."""
    first = _efficient(j, center[1], center[0])
    if isinstance(first, str):
        return f"{first} at the estimate"
    if not first.info > 0:
        return "the profile information at the estimate is not positive"
    h0 = STEP / math.sqrt(first.info)
    path = _Path(first, j)
    others = np.arange(len(first.phi)) != j
    for k in range(MAX_NODES):
        last = path.nodes[-1]
        h = side * (STEP / math.sqrt(last.info) if last.info > 0 else h0)
        h = side * min(max(abs(h), 0.25 * h0), 2 * h0)
        phi = last.phi.copy()
        phi[j] += h
        phi[others] += last.newton + h * last.tangent
        node = tracer.node(j, phi, child_sequence(seed, k))
        if isinstance(node, str):
            return node
        if not math.isfinite(node.g) or not math.isfinite(node.info):
            return f"the score at a profile node is not finite ({tracer._natural(node.phi)})"
        path.add(node)
        low, low_se = path.lowest()
        if low < -max(4 * low_se, 0.05):
            u = tracer.space.to_natural(node.phi)[0][j]
            return (
                f"the profile likelihood near {u:.4g} exceeds the estimate's by {low / 2:.3g} "
                f"(Monte Carlo s.e. {low_se / 2:.2g}): the estimate is not the maximum on this "
                "side; refit from there"
            )
        if path.deviance[-1] >= q:
            return path.end(q, tracer.space)
    u = tracer.space.to_natural(path.nodes[-1].phi)[0][j]
    return (
        f"the deviance stayed below {q:.3g} up to {u:.4g} ({MAX_NODES} nodes): the likelihood "
        "is too flat on this side for the interval to end within reach"
    )


class _Path:
    """Nodes along one side, with the deviance at each by Hermite integration of the score.

    On the segment from node ``a`` to node ``b`` (signed width ``h``), ``pl'``
    is the cubic Hermite interpolant of the scores ``g`` with slopes
    ``m = -info``, so ``pl(a + t h) - pl(a) = h (H00(t) g_a + h H10(t) m_a +
    H01(t) g_b + h H11(t) m_b)`` with ``H`` the integrated Hermite basis. The
    deviance is linear in the nodes' scores; ``coef[k]`` holds its
    coefficients at node ``k``, which give its Monte Carlo variance.
    """

    def __init__(self, first: _Node, j: int):
        self.j, self.nodes = j, [first]
        # the profile's maximum lies g0^2 / (2 i0) above the estimate's (a Newton step)
        self.deviance = [first.g**2 / first.info]
        self.coef = [[2 * first.g / first.info]]

    def add(self, node: _Node) -> None:
        self.nodes.append(node)
        deviance, coef = self._within(1.0)
        self.deviance.append(deviance)
        self.coef.append(coef)

    def _width(self) -> float:
        return float(self.nodes[-1].phi[self.j] - self.nodes[-2].phi[self.j])

    def _within(self, t: float) -> tuple[float, list]:
        """Deviance at ``t`` in the last segment, and its coefficients on the scores."""
        a, b, h = self.nodes[-2], self.nodes[-1], self._width()
        w = _integrated_hermite(t)
        area = h * (w[0] * a.g - h * w[1] * a.info + w[2] * b.g - h * w[3] * b.info)
        coef = list(self.coef[len(self.nodes) - 2])
        coef[-1] -= 2 * h * w[0]
        return self.deviance[len(self.nodes) - 2] - 2 * area, [*coef, -2 * h * w[2]]

    def _score(self, t: float) -> float:
        a, b, h = self.nodes[-2], self.nodes[-1], self._width()
        w = _hermite(t)
        return w[0] * a.g - h * w[1] * a.info + w[2] * b.g - h * w[3] * b.info

    def _se(self, coef) -> float:
        return math.sqrt(sum(c * c * n.var for c, n in zip(coef, self.nodes, strict=False)))

    def end(self, q: float, space):
        """Return the end of the interval in the last segment, its Monte Carlo s.e., the trace."""
        t = brentq(lambda x: self._within(x)[0] - q, 0.0, 1.0, xtol=1e-12)
        a, b = self.nodes[-2], self.nodes[-1]
        theta, d1, _ = space.to_natural(a.phi + t * (b.phi - a.phi))
        slope = abs(2 * self._score(t))
        se = self._se(self._within(t)[1]) / slope * abs(d1[self.j]) if slope > 0 else math.nan
        return float(theta[self.j]), float(se), self.trace(space)

    def lowest(self) -> tuple[float, float]:
        """Return the lowest deviance along the path and its Monte Carlo s.e."""
        k = int(np.argmin(self.deviance))
        return self.deviance[k], self._se(self.coef[k])

    def trace(self, space) -> dict:
        """Return the traced profile: values, deviances with their s.e., ESS per node."""
        return {
            "theta": np.array([space.to_natural(n.phi)[0][self.j] for n in self.nodes]),
            "deviance": np.array(self.deviance),
            "deviance_se": np.array([self._se(c) for c in self.coef]),
            "ess": np.array([n.ess for n in self.nodes]),
        }


def _hermite(t: float):
    """Return the cubic Hermite basis ``h00, h10, h01, h11`` at ``t``."""
    return (2 * t**3 - 3 * t**2 + 1, t**3 - 2 * t**2 + t, -2 * t**3 + 3 * t**2, t**3 - t**2)


def _integrated_hermite(t: float):
    """Return the integrals from 0 to ``t`` of the cubic Hermite basis."""
    return (
        t - t**3 + t**4 / 2,
        t**2 / 2 - 2 * t**3 / 3 + t**4 / 4,
        t**3 - t**4 / 2,
        -(t**3) / 3 + t**4 / 4,
    )


def _by_name(estimate: dict, flat_pairs: np.ndarray) -> dict:
    """``{name: (lower, upper)}`` from per-label ends, shaped like the estimate."""
    out, i = {}, 0
    for name, value in estimate.items():
        shape = np.shape(value)
        size = int(np.prod(shape, dtype=int))
        lower, upper = flat_pairs[i : i + size, 0], flat_pairs[i : i + size, 1]
        out[name] = (
            (float(lower[0]), float(upper[0]))
            if not shape
            else (lower.reshape(shape), upper.reshape(shape))
        )
        i += size
    return out
