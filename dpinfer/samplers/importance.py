"""Importance-sampling ABC for a DP release (Gong 2022, end of Section 3)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import logsumexp

from .. import _validate, parallel
from .._progress import progress_bar
from .._rng import RNGLike, as_seed_sequence, child_sequence, chunk_generator
from ..model import as_prior
from . import _mcse, _weights
from ._common import AbcCall, check_count
from ._precision import warn_if_coarse_release, warn_if_unresolved_log_weights
from .rejection import SimulationBudgetExceeded

if TYPE_CHECKING:
    from ..mechanisms.base import Mechanism
    from ..model import Model, PriorLike
    from ..results import InferenceData

__all__ = ["ESS_WARNING_FRACTION", "importance_abc"]

REFERENCE = (
    "Gong, R. (2022). Exact inference with approximate computation for differentially "
    "private data via perturbations. Journal of Privacy and Confidentiality 12(2), Section 3, "
    "eq. (3.3)."
)

# Below this ESS per particle the weights are degenerate: a few particles carry the
# posterior, the ESS estimate itself is unreliable, and importance_abc warns.
ESS_WARNING_FRACTION = 0.05


def importance_abc(
    model: Model,
    mechanism: Mechanism,
    released: ArrayLike,
    *,
    draws: int,
    chains: int = 4,
    proposal: PriorLike | Mapping[str, Any] | None = None,
    target_ess: float | None = None,
    max_simulations: int = 10**7,
    rng: RNGLike = None,
    batch_size: int = 100_000,
    executor: Executor | None = None,
    progressbar: bool = True,
) -> InferenceData:
    r"""Weighted posterior draws given a DP release, by importance sampling.

    Each particle draws ``theta`` from the proposal ``g`` (the prior by
    default) and ``s`` from the model, with weight
    ``eta(released | s) pi0(theta) / g(theta)``. The particles are split into
    ``chains`` independent importance samplers, each resampled on its own, so
    that R-hat compares them: a weight that dominates one chain shows.

    Parameters
    ----------
    model, mechanism, released
        As in :func:`rejection_abc`.
    draws : int
        Number of particles (and of resampled posterior draws) over all chains
        together, rounded up to a multiple of ``chains``; with ``target_ess``,
        the particles of each round.
    chains : int, default 4
        Independent importance samplers, of ``ceil(draws / chains)``
        particles per round each.
    proposal : dict or object, optional
        Frozen distributions per parameter, or an object with ``sample(n, rng)``
        and ``logpdf(params)``; positive wherever the prior is. Default: the prior.
    target_ess : float, optional
        Keep simulating rounds of ``draws`` particles until the weights' ESS
        (the sum of the chains' Kish ESS, ``attrs['ess_kish']``) reaches
        ``target_ess``; the posterior then holds as many draws as particles.
        Default: one round.
    max_simulations : int, default 10**7
        With ``target_ess``: stop with :class:`SimulationBudgetExceeded` past
        this many particles (all of them are kept in memory).
    rng, batch_size, executor, progressbar
        As in :func:`rejection_abc`.

    Returns
    -------
    arviz.InferenceData
        ``posterior``: one equally weighted draw per particle, resampled
        systematically within each chain (in particle order, so that copies
        are adjacent and ArviZ's ESS counts them as correlated draws);
        ``sample_stats``: the raw particles
        (``particle_<name>``) of each chain and their ``log_weight``,
        normalised over all particles (the pooled estimator);
        ``attrs``: ``ess`` (see :mod:`dpinfer.results`; ``ess_sampler`` is
        the delta-method ESS of the weighted means), ``ess_kish`` (the sum
        of the chains' Kish ESS, which ``target_ess`` and the warning use),
        per chain ``chain_ess`` (Kish) and ``chain_log_evidence``, and the log evidence
        estimate ``log mean w`` over all particles.

    Warns
    -----
    RuntimeWarning
        Without ``target_ess``, when the ESS is below ``ESS_WARNING_FRACTION``
        (5%) of the particles: the proposal is far from the posterior.
    PrecisionWarning
        When float64 rounding swamps the noise at the release (as in
        :func:`rejection_abc`), when the largest log weight is so large in
        magnitude that its rounding exceeds 0.01 nats, or when the draws are so
        large that the sums of their squares overflow
        (:mod:`dpinfer.samplers._precision`).

    Notes
    -----
    Self-normalised weights give consistent estimates of posterior
    expectations under the exact posterior (Gong 2022, eq. 3.3): the mechanism
    density is the ABC kernel, so no tolerance enters; only Monte Carlo error
    remains, of order ``1/sqrt(ESS)``. ``exp(log_evidence)`` is an unbiased
    estimate of the evidence ``pi(s_dp)``, and so is each chain's. Particles
    are i.i.d., so consecutive blocks of the one simulated stream are
    independent chains; splitting costs nothing.

    References
    ----------
    .. [1] Gong, R. (2022). JPC 12(2), Section 3.

    Examples
    --------
    The release of :func:`rejection_abc`'s example, by 1000 weighted particles:

    >>> import scipy.stats as st, dpinfer as dp
    >>> model = dp.Model(prior={"theta": st.gamma(25)},
    ...                  simulate=lambda p, rng: rng.poisson(p["theta"]))
    >>> mech = dp.Laplace.from_privacy(epsilon=0.2, sensitivity=1.0)
    >>> idata = dp.importance_abc(model, mech, 37.4, draws=1000, rng=1, progressbar=False)
    >>> idata.posterior["theta"].shape, idata.attrs["ess"] > 100
    ((4, 250), True)
    """
    call = AbcCall.check(
        "importance_abc", REFERENCE, model, mechanism, released, ("draws", draws), chains,
        rng=rng, executor=executor, progressbar=progressbar,
    )  # fmt: skip
    released, chains, per = call.released, call.chains, call.per_chain
    batch_size = check_count("batch_size", batch_size)
    max_simulations = check_count("max_simulations", max_simulations)
    target = None if target_ess is None else _validate.positive_finite("target_ess", target_ess)
    proposal = None if proposal is None else as_prior(proposal, name="proposal")
    if proposal is not None and not model.require_prior("importance_abc").has_logpdf:
        raise ValueError("importance_abc with a proposal needs a prior with a logpdf")
    root = as_seed_sequence(rng)
    warn_if_coarse_release("importance_abc", mechanism, released, float_simulations=False)
    stream = _ParticleStream(model, mechanism, released, proposal, child_sequence(root, 0))
    rounds, kish = [], _RunningKish(chains)
    total = chains * per if target is None else target
    with progress_bar("importance ABC", total=total, enabled=progressbar) as bar:
        while True:
            rounds.append(stream.round(chains * per, batch_size, executor).reshape(chains, per))
            chain_ess = kish.add(rounds[-1].log_weight)
            if target is None:
                bar.advance(chains * per)
                break
            bar.update(completed=min(float(chain_ess.sum()), target))
            if chain_ess.sum() >= target:
                break
            if stream.n >= max_simulations:
                raise _budget_error(float(chain_ess.sum()), stream.n, target)
    log_w = np.concatenate([r.log_weight for r in rounds], axis=1)
    particles = {k: np.concatenate([r.params[k] for r in rounds], axis=1) for k in stream.names}
    if target is None:
        _warn_if_degenerate(float(chain_ess.sum()), stream.n)
    if stream.float_simulations and mechanism.discrete:  # only float simulations round
        warn_if_coarse_release("importance_abc", mechanism, released)
    warn_if_unresolved_log_weights("importance_abc", log_w)
    index = _resample_each_chain(log_w, child_sequence(root, 1))
    rows = np.arange(chains)[:, None]
    flat = log_w.reshape(-1)
    return call.result(
        {k: v[rows, index].reshape(stream.n, *v.shape[2:]) for k, v in particles.items()},
        sample_stats={
            "log_weight": flat - logsumexp(flat),
            **{f"particle_{k}": v.reshape(-1, *v.shape[2:]) for k, v in particles.items()},
        },
        root=root,
        n_simulations=stream.n,
        acceptance_rate=math.nan,
        ess=_mcse.weighted_ess(_mcse.columns_by_chain(particles), log_w),
        ess_kish=float(chain_ess.sum()),
        log_evidence=float(logsumexp(flat) - math.log(flat.size)),
        chain_ess=chain_ess,
        chain_log_evidence=logsumexp(log_w, axis=1) - math.log(log_w.shape[1]),
        n_rounds=len(rounds),
        target_ess=math.nan if target is None else target,
        proposal="prior" if proposal is None else repr(proposal),
    )


class _RunningKish:
    """Kish ESS per chain, ``(sum w)^2 / sum w^2``, updated round by round in log space."""

    def __init__(self, chains: int):
        self.log_sum = np.full(chains, -np.inf)
        self.log_sum_sq = np.full(chains, -np.inf)

    def add(self, log_weight: np.ndarray) -> np.ndarray:
        """Add a round of log weights ``(chains, per)``; return the chains' ESS."""
        self.log_sum = np.logaddexp(self.log_sum, logsumexp(log_weight, axis=1))
        self.log_sum_sq = np.logaddexp(self.log_sum_sq, logsumexp(2 * log_weight, axis=1))
        with np.errstate(invalid="ignore"):  # a chain without weight yet: ESS 0
            return np.nan_to_num(np.exp(2 * self.log_sum - self.log_sum_sq), nan=0.0)


class _Round:
    """Particles and log weights of one round, in stream order."""

    def __init__(self, params: dict, log_weight: np.ndarray):
        self.params, self.log_weight = params, log_weight

    def reshape(self, chains: int, per: int) -> _Round:
        """Split into ``chains`` consecutive blocks of ``per`` particles."""
        return _Round(
            {k: v.reshape(chains, per, *v.shape[1:]) for k, v in self.params.items()},
            self.log_weight.reshape(chains, per),
        )


class _ParticleStream:
    """The i.i.d. weighted particles, simulated chunk by chunk; chunk seeds by index."""

    def __init__(self, model, mechanism, released, proposal, root):
        self.model, self.mechanism, self.released = model, mechanism, released
        self.proposal, self.root = proposal, root
        self.next_chunk, self.n = 0, 0
        self.names: list[str] = []  # the parameters, known from the first round on
        self.float_simulations = False

    def round(self, size: int, batch_size: int, executor) -> _Round:
        sizes = _chunk_sizes(size, batch_size)
        first = self.next_chunk
        model, mech, released, proposal = self.model, self.mechanism, self.released, self.proposal

        def task(index, chunk_rng):
            n = sizes[index - first]
            return _importance_chunk(model, mech, released, proposal, n, chunk_rng)

        chunks = list(
            parallel.iter_chunks(
                task,
                self.root,
                executor=executor,
                start=first,
                stop=first + len(sizes),
                in_flight=len(sizes),
            )
        )
        self.next_chunk += len(sizes)
        self.n += size
        self.names = [k for k in chunks[0] if k not in ("_log_weight", "_float")]
        self.float_simulations |= any(c["_float"] for c in chunks)
        return _Round(
            {k: np.concatenate([c[k] for c in chunks]) for k in self.names},
            np.concatenate([c["_log_weight"] for c in chunks]),
        )


def _importance_chunk(model, mechanism, released, proposal, size, rng) -> dict:
    source = model.prior if proposal is None else proposal
    params = source.sample(size, rng)
    s = model.simulate_checked(params, rng, event_shape=mechanism.event_shape)
    log_w = mechanism.logpdf(released, s)
    if proposal is not None:
        log_w = log_w + model.prior.logpdf(params) - proposal.logpdf(params)
    return {**params, "_log_weight": log_w, "_float": s.dtype.kind == "f"}


def _resample_each_chain(log_w: np.ndarray, seed) -> np.ndarray:
    """Systematic resampling within each chain (row of ``log_w``), one draw per particle."""
    out = []
    for c, row in enumerate(log_w):
        try:
            weights = _weights.normalise(row)
        except ValueError as err:
            raise ValueError(
                f"chain {c} of importance_abc: {err}. With several chains each needs a particle "
                "of positive weight: use more draws, fewer chains, or smc_abc"
            ) from None
        out.append(_weights.systematic_resample(weights, len(row), chunk_generator(seed, c)))
    return np.array(out)


def _warn_if_degenerate(ess: float, n: int) -> None:
    if ess < ESS_WARNING_FRACTION * n:
        warnings.warn(
            f"importance_abc: the weights are degenerate, ESS {ess:.0f} of {n} particles "
            f"({ess / n:.2%}, below {ESS_WARNING_FRACTION:.0%}); a few particles carry the "
            "posterior and the ESS itself is unreliable. The proposal (the prior by default) is "
            "far from the posterior: use smc_abc, a proposal closer to the posterior "
            "(proposal=...), or target_ess=... to keep simulating until the ESS is reached.",
            RuntimeWarning,
            stacklevel=3,
        )


def _budget_error(ess: float, n: int, target: float) -> SimulationBudgetExceeded:
    rate = ess / n
    return SimulationBudgetExceeded(
        f"importance_abc reached max_simulations={n} with an ESS of {ess:.0f} of the "
        f"target_ess={target:g} ({rate:.3g} per particle; the target needs about "
        f"{target / max(rate, 1e-300):.3g} particles). Raise max_simulations, or use smc_abc."
    )


def _chunk_sizes(total: int, batch_size: int) -> list[int]:
    full, rest = divmod(total, batch_size)
    return [batch_size] * full + ([rest] if rest else [])
