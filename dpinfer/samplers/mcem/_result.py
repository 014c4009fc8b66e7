r"""The result of Monte Carlo EM: estimate, Louis information, intervals, trace.

:class:`MCEMResult` holds what :func:`dpinfer.mcem` found; its Wald interval
comes from the Louis information, its profile-likelihood interval
(:meth:`MCEMResult.profile_interval`) from simulating again at the nodes of the
profile (:mod:`dpinfer.samplers.mcem._profile`), for which the result keeps the model,
the mechanism and the release.
"""

from __future__ import annotations

import math
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from ... import _validate
from ..._rng import RNGLike, as_seed_sequence, child_sequence
from ...likelihood import Likelihood
from .._common import check_count, check_options
from . import _profile

if TYPE_CHECKING:
    import xarray as xr

__all__ = ["MCEMResult"]


class _FitContext(NamedTuple):
    """What a result needs to simulate again (for its profile likelihood)."""

    model: object
    mechanism: object
    released: np.ndarray
    likelihood: Likelihood
    batch_size: int
    root: np.random.SeedSequence


@dataclass(frozen=True, repr=False)
class MCEMResult:
    r"""Maximum likelihood estimate from a DP release, with Louis standard errors.

    Intervals per parameter: :meth:`wald_interval` from the Louis standard
    errors, :meth:`profile_interval` from the likelihood ratio (which follows
    the skew Laplace noise gives the likelihood, with its Monte Carlo error).

    Attributes
    ----------
    estimate : dict
        The MLE, parameter name to value (natural scale).
    observed_information : ndarray (p, p)
        Louis' observed Fisher information at the estimate (Gong 2022, 4.7),
        over the flat parameters ``labels``.
    covariance : ndarray (p, p)
        Its inverse: the asymptotic covariance of the MLE.
    standard_error : dict
        Square roots of the covariance diagonal, per parameter; NaN for a
        parameter whose MLE lies on the boundary (see :attr:`at_boundary`),
        whose neighbours' covariance is then that of the free block.
    score : ndarray (p,)
        The observed score (4.6) at the estimate, on a fresh sample: zero up
        to Monte Carlo error.
    converged : bool
        Whether the schedule's stopping rule was met with every check passed
        (the last E-step and the information pass above the ESS floor); when
        False, ``attrs["convergence_note"]`` says why.
    trace : xarray.Dataset
        Per iteration: parameter values after the M-step, ``n_simulations``
        (E-step sample size N), ``ess`` (4.4), ``q_increase`` with its Monte
        Carlo ``q_increase_se``, ``step`` (largest absolute parameter change),
        ``stage`` and ``limit_cycle`` (the iterate repeated an earlier one).
    complete_information : ndarray (p, p)
        ``E(-d^2 log pi(s|theta) | s_dp)``: the information had ``s`` been
        seen; ``complete - observed`` is the information lost to the noise.
    monte_carlo_se : dict
        Approximate Monte Carlo standard error of the estimate,
        ``sqrt(diag(I^-1 V I^-1))`` with ``V`` the Monte Carlo covariance of
        the score estimated with the last E-step's sample size (exact to first
        order for the fixed point of the staged schedule's common random
        numbers; an upper bound for fresh samples). NaN, like
        ``standard_error``, when the importance sampler collapsed (an
        effective sample size below 100; see ``attrs["standard_error_note"]``).
    naive_estimate, naive_information, naive_standard_error
        The naive analysis that treats the release as the confidential
        statistic: the maximiser of ``log pi(s_dp | theta)`` and
        ``-d^2 log pi(s_dp | theta)`` there (NaN where it does not exist,
        with the reason in ``attrs["naive_note"]``: e.g. a release that the
        confidential model gives probability zero).
    labels : tuple of str
        Names of the flat parameters, the order of the matrices.
    n_simulations : int
        Statistics simulated in all E-steps and for the information.
    attrs : dict
        Method, reference, mechanism, epsilon, delta, schedule, seed.
    """

    estimate: dict
    observed_information: np.ndarray
    covariance: np.ndarray
    standard_error: dict
    score: np.ndarray
    converged: bool
    trace: xr.Dataset
    complete_information: np.ndarray
    monte_carlo_se: dict
    naive_estimate: dict
    naive_information: np.ndarray
    naive_standard_error: dict
    labels: tuple
    n_simulations: int
    attrs: dict = field(default_factory=dict)
    _context: _FitContext | None = field(default=None, repr=False, compare=False)
    _profiles: dict = field(default_factory=dict, repr=False, compare=False)

    def __getstate__(self):
        # the model (often lambdas) is not saved: profile_interval then asks for a refit
        return {**self.__dict__, "_context": None, "_profiles": {}}

    @property
    def iterations(self) -> int:
        """Number of EM iterations."""
        return int(self.trace.sizes["iteration"])

    @property
    def at_boundary(self) -> tuple:
        """Labels of the parameters whose MLE lies on a finite end of their support.

        Their ``standard_error`` and Wald interval are NaN: a boundary MLE is
        not a zero of the score and is not asymptotically normal.
        """
        names = self.attrs.get("at_boundary", "")
        return tuple(names.split(", ")) if names else ()

    @property
    def fraction_missing_information(self) -> np.ndarray:
        """Eigenvalues of ``I_complete^-1 (I_complete - I_observed)``: the EM rate."""
        rate = np.linalg.solve(
            self.complete_information, self.complete_information - self.observed_information
        )
        return np.sort(np.real(np.linalg.eigvals(rate)))[::-1]

    def wald_interval(self, level: float = 0.95) -> dict:
        """Wald intervals ``estimate -/+ z se`` per parameter, as ``(lower, upper)``."""
        from scipy.stats import norm

        if not 0 < level < 1:
            raise ValueError(f"level must lie in (0, 1), got {level!r}")
        z = float(norm.isf((1 - level) / 2))
        return {
            k: (
                np.asarray(v) - z * np.asarray(self.standard_error[k]),
                np.asarray(v) + z * np.asarray(self.standard_error[k]),
            )
            if np.ndim(v)
            else (v - z * self.standard_error[k], v + z * self.standard_error[k])
            for k, v in self.estimate.items()
        }

    def profile_interval(
        self,
        level: float = 0.95,
        *,
        simulations: int = 100_000,
        rng: RNGLike = None,
        executor: Executor | None = None,
        progressbar: bool = True,
    ) -> _profile.ProfileIntervals:
        r"""Profile-likelihood intervals per parameter, as ``{name: (lower, upper)}``.

        The likelihood-ratio interval
        ``{theta_j : 2 (max log pi(s_dp | theta) - max_{psi} log pi(s_dp | theta_j, psi))
        <= chi2_1(level)}``, the nuisance parameters ``psi`` maximised out.
        Unlike the Wald interval it follows the shape of the likelihood,
        which Laplace noise makes far from quadratic (peaked at the centre,
        linear in the tails): on Gong's Poisson count the exact profile
        interval is (21.71, 55.71) against Wald (21.65, 52.82).

        Parameters
        ----------
        level : float, default 0.95
            Confidence level, in (0, 1).
        simulations : int, default 100_000
            Simulations of each pass (see Notes); more shrink the Monte Carlo
            error of the ends, reported in ``monte_carlo_se``.
        rng : None, int, SeedSequence or Generator, optional
            Seed of the passes; None derives it from the fit's own seed, so
            the same fit gives the same intervals.
        executor : concurrent.futures.Executor, optional
            Runs the simulation chunks.
        progressbar : bool, default True
            Show a progress bar.

        Returns
        -------
        ProfileIntervals
            A dict ``{name: (lower, upper)}`` like :meth:`wald_interval`
            (arrays for vector parameters), with attributes
            ``monte_carlo_se`` (``{name: (se_lower, se_upper)}``), ``nodes``
            (the traced profile deviance per parameter and side),
            ``simulations`` and ``notes``. An end that cannot be traced is
            NaN, with a :class:`ProfileWarning` saying why (a parameter on
            the boundary, a collapsed importance sample, a likelihood too
            flat for the end to be within 12 standard errors).

        Notes
        -----
        The profile is traced from the estimate outwards by nodes half a
        local standard error apart, on the unconstrained scale of the
        parameter (log for a positive one). At each node a fresh importance
        sample *drawn at the node* gives the observed score (Fisher's
        identity, Gong 2022, eq. 4.6) and Louis' information (4.7); Newton
        steps with them maximise the nuisance parameters (at most 3 passes).
        By the envelope theorem the derivative of the profile
        log-likelihood is the parameter's score there, corrected to first
        order for the nuisance's remaining Monte Carlo error (the efficient
        score), and its second derivative is minus the profile information.
        The profile between nodes is the integral of the cubic Hermite
        interpolant of that derivative, and each end is where the deviance
        crosses ``chi2_1(level)``.

        Monte Carlo error: each node's score comes from its own sample, with
        the Monte Carlo variance the Louis pass estimates; the deviance at the
        end is linear in them, and the end's Monte Carlo standard error is
        the deviance's over its slope. On the Poisson count, with the default
        ``simulations``, it is about 0.025 on an interval of width 34.
        Sampling at each node means that the importance weights never span
        the distance from the estimate to the end, as reweighting the
        estimate's sample would.

        Examples
        --------
        Gong's Poisson count (Section 5.1), fitted by :func:`mcem`:

        >>> from dpinfer.models import poisson_count as pc
        >>> fit = pc.mle(schedule="auto", rng=1)
        >>> profile = fit.profile_interval(0.95, progressbar=False)
        >>> lower, upper = profile["theta"]
        >>> round(lower), round(upper)  # exact: 21.71 and 55.71
        (22, 56)
        >>> bool(max(profile.monte_carlo_se["theta"]) < 0.05)
        True
        """
        level = _validate.probability_open("level", level)
        simulations = check_count("simulations", simulations)
        check_options(rng=rng, executor=executor, progressbar=progressbar)
        key = (level, simulations) if rng is None else None
        if key is not None and key in self._profiles:
            return self._profiles[key]
        if self._context is not None:
            root = child_sequence(self._context.root, 3) if rng is None else as_seed_sequence(rng)
        else:
            root = None
        out = _profile.profile_intervals(
            self,
            level,
            simulations=simulations,
            rng=root,
            executor=executor,
            progressbar=progressbar,
        )
        if key is not None:
            self._profiles[key] = out
        return out

    def to_xarray(self) -> xr.Dataset:
        """Everything as one :class:`xarray.Dataset`: estimates, matrices and the trace."""
        import xarray as xr

        labels = list(self.labels)
        flat = _flat(self.estimate, labels)
        data = {
            "estimate": ("parameter", flat),
            "standard_error": ("parameter", _flat(self.standard_error, labels)),
            "monte_carlo_se": ("parameter", _flat(self.monte_carlo_se, labels)),
            "score": ("parameter", np.asarray(self.score)),
            "naive_estimate": ("parameter", _flat(self.naive_estimate, labels)),
            "naive_standard_error": ("parameter", _flat(self.naive_standard_error, labels)),
            "observed_information": (("parameter", "parameter_"), self.observed_information),
            "covariance": (("parameter", "parameter_"), self.covariance),
            "complete_information": (("parameter", "parameter_"), self.complete_information),
            "naive_information": (("parameter", "parameter_"), self.naive_information),
        }
        summary = xr.Dataset(data, coords={"parameter": labels, "parameter_": labels})
        trace = self.trace.rename({k: f"trace_{k}" for k in self.trace.data_vars})
        out = xr.merge([summary, trace], combine_attrs="override")
        out.attrs = {**_netcdf_safe(self.attrs), "converged": int(self.converged)}
        return out

    def __repr__(self) -> str:
        status = "converged" if self.converged else "NOT converged"
        head = (
            f"MCEMResult: {status} after {self.iterations} iterations, "
            f"{self.n_simulations:,} simulations ({self.attrs.get('schedule', '?')} schedule)"
        )
        rows = [
            f"{'parameter':<12}{'estimate':>12}{'std. err.':>12}{'MC s.e.':>11}"
            f"{'95% Wald interval':>26}{'naive':>12}{'naive s.e.':>12}"
        ]
        se = _flat(self.standard_error, self.labels)
        mc = _flat(self.monte_carlo_se, self.labels)
        nv = _flat(self.naive_estimate, self.labels)
        nse = _flat(self.naive_standard_error, self.labels)
        for i, label in enumerate(self.labels):
            est = _flat(self.estimate, self.labels)[i]
            lo, hi = est - 1.959964 * se[i], est + 1.959964 * se[i]
            wald = "at boundary" if label in self.at_boundary else f"[{lo:.4g}, {hi:.4g}]"
            rows.append(
                f"{label:<12}{est:>12.5g}{se[i]:>12.4g}{mc[i]:>11.2g}"
                f"{wald:>26}{nv[i]:>12.5g}{nse[i]:>12.4g}"
            )
        info = np.array2string(self.observed_information, precision=4, separator=", ")
        tail = [f"observed information (Louis):\n{info}"]
        if self.attrs.get("convergence_note"):
            tail.append(f"NOT converged: {self.attrs['convergence_note']}")
        if self.attrs.get("standard_error_note"):
            tail.append("standard errors and Monte Carlo s.e. not reported (nan)")
        if self.attrs.get("naive_note"):
            tail.append(f"naive: {self.attrs['naive_note']}")
        return "\n".join([head, *rows, *tail])


def _flat(values: dict, labels) -> np.ndarray:
    return np.concatenate([np.asarray(v, dtype=float).reshape(-1) for v in values.values()])


def _netcdf_safe(attrs: dict) -> dict:
    out = {}
    for key, value in attrs.items():
        if isinstance(value, bool):
            value = int(value)
        if isinstance(value, float) and not math.isfinite(value):
            value = str(value)
        out[key] = value
    return out
