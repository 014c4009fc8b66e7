"""Importance-sampling ABC for a DP release (Gong 2022, end of Section 3)."""

from __future__ import annotations

import math
from concurrent.futures import Executor

import numpy as np
from scipy.special import logsumexp

from .. import parallel
from .._progress import progress_bar
from .._rng import RNGLike, as_seed_sequence, chunk_generator
from ..model import as_prior
from . import _weights
from ._common import abc_result, check_count, check_inputs, stack_draws

__all__ = ["importance_abc"]

REFERENCE = (
    "Gong, R. (2022). Exact inference with approximate computation for differentially "
    "private data via perturbations. Journal of Privacy and Confidentiality 12(2), Section 3, "
    "eq. (3.3)."
)


def importance_abc(
    model,
    mechanism,
    released,
    *,
    draws: int,
    proposal=None,
    rng: RNGLike = None,
    batch_size: int = 100_000,
    executor: Executor | None = None,
    progressbar: bool = True,
):
    r"""Weighted posterior draws given a DP release, by importance sampling.

    Each of ``draws`` particles draws ``theta`` from the proposal ``g`` (the
    prior by default) and ``s`` from the model, with weight
    ``eta(released | s) pi0(theta) / g(theta)``.

    Parameters
    ----------
    model : Model
        Prior and simulator of the confidential statistic.
    mechanism : Mechanism
        The public mechanism that produced the release.
    released : array_like
        The release, of shape ``mechanism.event_shape``.
    draws : int
        Number of particles (and of resampled posterior draws).
    proposal : dict or object, optional
        Frozen distributions per parameter, or an object with ``sample(n, rng)``
        and ``logpdf(params)``; positive wherever the prior is. Default: the prior.
    rng, batch_size, executor, progressbar
        As in :func:`rejection_abc`.

    Returns
    -------
    arviz.InferenceData
        ``posterior``: ``draws`` equally weighted draws by systematic
        resampling; ``sample_stats``: the raw particles (``particle_<name>``)
        and their normalised ``log_weight``; ``attrs``: Kish ESS and the log
        evidence estimate ``log mean w``.

    Notes
    -----
    Self-normalised weights give consistent estimates of posterior
    expectations under the exact posterior (Gong 2022, eq. 3.3): the mechanism
    density is the ABC kernel, so no tolerance enters; only Monte Carlo error
    remains, of order ``1/sqrt(ESS)``. ``exp(log_evidence)`` is an unbiased
    estimate of the evidence ``pi(s_dp)``.

    References
    ----------
    .. [1] Gong, R. (2022). JPC 12(2), Section 3.

    Examples
    --------
    >>> import scipy.stats as st, dpinfer as dp
    >>> model = dp.Model(prior={"theta": st.gamma(25)},
    ...                  simulate=lambda p, rng: rng.poisson(p["theta"]))
    >>> mech = dp.Laplace.from_privacy(epsilon=0.2, sensitivity=1.0)
    >>> idata = dp.importance_abc(model, mech, 37.4, draws=1000, rng=1, progressbar=False)
    >>> idata.posterior.attrs["ess"] > 100
    True
    """
    released = check_inputs(model, mechanism, released)
    draws = check_count("draws", draws)
    batch_size = check_count("batch_size", batch_size)
    proposal = None if proposal is None else as_prior(proposal, name="proposal")
    if proposal is not None and not model.prior.has_logpdf:
        raise ValueError("importance_abc with a proposal needs a prior with a logpdf")
    root = as_seed_sequence(rng)
    sizes = _chunk_sizes(draws, batch_size)

    def task(index, chunk_rng):
        return _importance_chunk(model, mechanism, released, proposal, sizes[index], chunk_rng)

    with progress_bar("importance ABC", total=draws, enabled=progressbar) as bar:
        chunks = parallel.map_chunks(
            task,
            root,
            len(sizes),
            executor=executor,
            on_result=lambda c: bar.advance(len(c["_log_weight"])),
        )
    names = [k for k in chunks[0] if k != "_log_weight"]
    particles = stack_draws(chunks, names)
    log_w = np.concatenate([c["_log_weight"] for c in chunks])
    weights = _weights.normalise(log_w)
    index = _weights.systematic_resample(weights, draws, chunk_generator(root, len(sizes)))
    return abc_result(
        {k: v[index] for k, v in particles.items()},
        sample_stats={
            "log_weight": log_w - logsumexp(log_w),
            **{f"particle_{k}": v for k, v in particles.items()},
        },
        mechanism=mechanism,
        released=released,
        method="importance_abc",
        reference=REFERENCE,
        root=root,
        n_simulations=draws,
        acceptance_rate=math.nan,
        ess=_weights.ess(log_w),
        log_evidence=float(logsumexp(log_w) - math.log(draws)),
        proposal="prior" if proposal is None else repr(proposal),
    )


def _importance_chunk(model, mechanism, released, proposal, size, rng) -> dict:
    source = model.prior if proposal is None else proposal
    params = source.sample(size, rng)
    s = model.simulate_checked(params, rng, event_shape=mechanism.event_shape)
    log_w = mechanism.logpdf(released, s)
    if proposal is not None:
        log_w = log_w + model.prior.logpdf(params) - proposal.logpdf(params)
    return {**params, "_log_weight": log_w}


def _chunk_sizes(total: int, batch_size: int) -> list[int]:
    full, rest = divmod(total, batch_size)
    return [batch_size] * full + ([rest] if rest else [])
