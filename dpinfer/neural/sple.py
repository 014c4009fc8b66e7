"""Sequential private-data likelihood estimation (SPLE; Xiong, Ju and Zhang 2023, Algorithm 2)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from concurrent.futures import Executor
from typing import TYPE_CHECKING

import numpy as np
import torch
from numpy.typing import ArrayLike

from .._rng import RNGLike
from . import _losses
from ._checks import require_prior_density, setup, shared
from ._estimators import NeuralLikelihood, _check_mcmc
from ._result import problem_info, total_draws
from ._sequential import Final, Setup, build_density, run_result, run_rounds

if TYPE_CHECKING:
    from ..mechanisms.base import Mechanism
    from ..model import Model
    from ..results import InferenceData
    from ._mcmc import MCMC
    from ._sequential import RoundInfo
    from ._training import Training

__all__ = ["sple"]

RHAT_WARNING = 1.05


def sple(
    model: Model,
    mechanism: Mechanism,
    released: ArrayLike,
    *,
    rounds: int = 10,
    simulations: int = 1000,
    settings: str = "default",
    noise_copies: int | None = None,
    draws: int = 4000,
    chains: int = 4,
    rng: RNGLike = None,
    flow: Callable | None = None,
    training: Training | None = None,
    mcmc: MCMC | None = None,
    noise: str = "rqmc",
    device: str | torch.device = "cpu",
    executor: Executor | None = None,
    callback: Callable[[RoundInfo], object] | None = None,
    progressbar: bool = True,
) -> tuple[InferenceData, NeuralLikelihood]:
    r"""Estimate the likelihood of a DP release with a neural density, then sample the posterior.

    Each round draws ``simulations`` parameters from the proposal (the prior,
    then the current posterior :math:`\propto \pi(\theta) q_\phi(s_{dp}^{o} \mid
    \theta)`), simulates their confidential statistics, privatises each
    ``noise_copies`` times and trains a conditional normalizing flow
    :math:`q_\phi(s_{dp} \mid \theta)` on all simulations so far by minimising

    .. math:: \ell_{PLE}(\phi) = \mathbb E_{\tilde p(\theta) f(x \mid \theta)}
              \Big[-\int \eta(s_{dp} \mid x) \log q_\phi(s_{dp} \mid \theta)\, ds_{dp}\Big],

    the inner integral being the average over the copies. No proposal
    correction is needed: for any proposal the minimiser is the likelihood
    where the proposal has mass (Lemma 5 of the paper). The posterior
    :math:`\pi(\theta)\, q_\phi(s_{dp}^{o} \mid \theta)` is sampled by
    vectorised random-walk Metropolis with several chains.

    Parameters
    ----------
    model, mechanism, released
        As in :func:`sppe`.
    rounds, simulations, settings, noise_copies, rng, flow, training, noise, device
        As in :func:`sppe`.
    executor, callback, progressbar
        As in :func:`sppe`.
    draws : int, default 4000
        Posterior draws kept, over all chains together (rounded up to a
        multiple of ``chains``).
    chains : int, default 4
        Independent Markov chains of the final posterior (R-hat compares them).
    mcmc : MCMC, optional
        Warm-up, thinning, and the chains that draw each round's proposals
        (default :class:`MCMC`).

    Returns
    -------
    idata : arviz.InferenceData
        ``posterior``: the kept states of ``chains`` Markov chains;
        ``sample_stats``: ``log_likelihood_estimate`` and ``lp`` per draw;
        ``attrs``: the training history as for :func:`sppe`, ``rhat_max`` and
        ``mcmc_acceptance_rate`` of the final chains, and ``round_rhat_max``
        of each round's proposal chains. A ``RuntimeWarning`` flags an R-hat
        above 1.05.
    estimator : NeuralLikelihood
        The trained likelihood, the **second return value**: it saves with
        ``estimator.save(path)``, loads with :func:`dpinfer.neural.load`, and
        ``estimator.posterior(new_release, model.prior)`` samples the posterior
        of another release without retraining.

    Notes
    -----
    An approximation, like :func:`sppe`: exact in the limit of a flexible enough
    flow and enough simulations. Integer releases (the discrete mechanisms, the
    binomial release) are dequantised: the flow models ``s_dp + U(0, 1)`` and
    the likelihood is read at ``s_dp + 1/2``. The likelihood estimate depends on
    the release only through where it is evaluated, so the same estimator
    serves other releases, as long as the simulations covered their posterior.

    References
    ----------
    .. [1] Xiong, Y., Ju, N. and Zhang, S. (2023). Simulation-based inference from
       privacy-protected data. Section 3, Algorithm 2, Supplement S1 and S3.
    .. [2] Papamakarios, G., Sterratt, D. and Murray, I. (2019). Sequential neural
       likelihood: fast likelihood-free inference with autoregressive flows. AISTATS.

    Examples
    --------
    >>> import scipy.stats as st, dpinfer as dp
    >>> from dpinfer.neural import MCMC, SplineFlow, Training, sple
    >>> def simulate(p, rng):
    ...     return p["theta"] + 0.5 * rng.standard_normal(len(p["theta"]))
    >>> model = dp.Model(prior={"theta": st.norm(0, 1)}, simulate=simulate)
    >>> quick = MCMC(warmup=100, thin=10, proposal_chains=4, initial_candidates=100)
    >>> idata, likelihood = sple(model, dp.Laplace(0.5), 0.8, rounds=1, simulations=200,
    ...                          draws=200, flow=SplineFlow(transforms=1, hidden_features=8),
    ...                          training=Training(max_epochs=3), mcmc=quick, rng=1,
    ...                          progressbar=False)
    >>> idata.posterior["theta"].shape
    (4, 50)
    """
    run_setup, rounds, simulations = setup(
        model, mechanism, released, dequantise_discrete=True, **shared(locals())
    )
    require_prior_density(model, "sple (the posterior is pi(theta) q(s_dp | theta))")
    method = _SPLE(run_setup, _check_mcmc(mcmc), *total_draws(draws, chains))
    run = run_rounds(run_setup, method, rounds, simulations, callback)
    rhat = method.round_rhat[-1]  # the final chains' (on the unconstrained scale)
    if rhat > RHAT_WARNING:
        warnings.warn(
            f"sple: the final chains have R-hat {rhat:.3f} > {RHAT_WARNING}; "
            "use a longer warm-up or more thinning (mcmc=MCMC(...))",
            RuntimeWarning,
            stacklevel=2,
        )
    idata = run_result(run, run_setup, method, "sple", settings=settings)
    return idata, run["estimator"]


class _SPLE:
    """SPLE's side of the round loop: ``q(s_dp | z)``, its loss, and MCMC draws."""

    label = "SPLE"

    def __init__(self, run_setup: Setup, mcmc, chains: int, draws: int):
        self.mcmc, self.chains, self.draws = mcmc, chains, draws
        self.info = problem_info(run_setup.mechanism, dequantise=run_setup.dequantise)
        self.released = run_setup.released.reshape(-1).astype(float)
        self.round_rhat: list[float] = []

    def build(self, run_setup: Setup, pool):
        s = pool.column("s")
        z = np.repeat(pool.column("z"), s.shape[1], axis=0)
        return build_density(run_setup, s.reshape(-1, s.shape[-1]), z)

    def loss(self, round_index: int, copies: int | None):
        return _losses.likelihood_loss(copies)

    def estimator(self, run_setup: Setup, density) -> NeuralLikelihood:
        return NeuralLikelihood(density, run_setup.space, self.info, run_setup.flow_spec())

    def propose(self, run_setup: Setup, estimator, n: int, seq):
        n_chains = self.mcmc.proposal_chains
        per_chain = math.ceil(n / n_chains)
        run = estimator.chains(
            self.released, run_setup.model.prior, n_chains, per_chain, self.mcmc, seq
        )
        self.round_rhat.append(run.rhat_max())
        return run.z.reshape(-1, run.z.shape[-1])[:n]

    def final(self, run_setup: Setup, estimator, seq) -> Final:
        per_chain = self.draws // self.chains
        run = estimator.chains(
            self.released, run_setup.model.prior, self.chains, per_chain, self.mcmc, seq
        )
        params, stats = estimator.chain_draws(self.released, run)
        self.round_rhat.append(run.rhat_max())
        # rhat_max itself is filled by dpinfer.results from the final draws
        return Final(
            params,
            stats,
            {
                "mcmc_acceptance_rate": run.acceptance_rate,
                "round_rhat_max": np.array(self.round_rhat),
            },
        )
