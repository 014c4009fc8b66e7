r"""The toy example of ABCDP: a mixture of five uniforms (Park et al. 2021, Section 6.1).

The parameter is a vector of mixing weights with a flat Dirichlet prior, and
an observation is drawn from the mixture of ``Uniform[i - 1, i]``,
``i = 1..5``:

.. math:: \theta \sim \mathrm{Dirichlet}(1, \dots, 1), \qquad
          p(y \mid \theta) = \sum_{i=1}^5 \theta_i \, \mathrm{U}(y; [i-1, i]).

The confidential data are ``N = 5000`` draws at the true weights
``[0.25, 0.04, 0.33, 0.04, 0.34]``; every pseudo-dataset has ``N`` draws too.
The distance is the random-feature MMD with 100 frequencies of a Gaussian
kernel of bandwidth 0.6 (the authors' code; the paper mentions the median
heuristic on simulated data). Its features have norm 1, so ``B_k = 1`` and
the sensitivity is ``2 / N`` under the replacement of one observation
(Lemma 1). The frequencies are drawn from public randomness, independently
of the data.

Figure 3 of the paper reports the mean squared error of the posterior mean
for ``c`` in {10, 100, 1000}, ``epsilon_abc`` in {0.05, 0.1, 0.2, 0.5},
``epsilon_total`` in {0.5, 1, 10, inf} and both RESAMPLE modes, over
``T = 10000`` prior draws (the authors' code reports the mean absolute
error; we report the squared one, as the figure says). :func:`figure3`
computes that grid: the public draws and their distances are computed once
per repetition, and every setting reuses them with fresh privacy noise.

Examples
--------
>>> from dpinfer.models import mixture_uniform as mu
>>> res = mu.run_experiment(c=10, epsilon_abc=0.1, epsilon_total=10.0,
...                         n_observations=200, n_proposals=300, rng=0,
...                         privacy_rng=1)
>>> res.mse.shape, bool(res.mse[0] < 0.05)
((1,), True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.stats as st

import dpinfer as dp
from dpinfer._rng import RNGLike, as_generator, as_seed_sequence, chunk_generator
from dpinfer.distances import PrecomputedDistances
from dpinfer.distances.base import Distance

from ._example import Example, Option, between, integer, yes_no
from ._report import Report, Result, draw_rows, idata_draws, value_rows

__all__ = [
    "BANDWIDTH",
    "C_VALUES",
    "EPSILON_ABC_VALUES",
    "EPSILON_TOTAL_VALUES",
    "N_FEATURES",
    "N_OBSERVATIONS",
    "N_PROPOSALS",
    "TRUE_WEIGHTS",
    "ExperimentResult",
    "PrecomputedDistances",
    "confidential_data",
    "distance",
    "figure3",
    "model",
    "prior",
    "public_draws",
    "run",
    "run_experiment",
    "sample_mixture",
]

#: The true mixing weights of Section 6.1.
TRUE_WEIGHTS = np.array([0.25, 0.04, 0.33, 0.04, 0.34])
#: Observations in the confidential dataset and in every pseudo-dataset.
N_OBSERVATIONS = 5000
#: Prior draws (public proposals) per run.
N_PROPOSALS = 10_000
#: Random Fourier frequencies of the distance (cos/sin pairs).
N_FEATURES = 100
#: Gaussian kernel bandwidth of the authors' code (a public constant).
BANDWIDTH = 0.6
#: The settings of Figure 3.
C_VALUES = (10, 100, 1000)
EPSILON_ABC_VALUES = (0.05, 0.1, 0.2, 0.5)
EPSILON_TOTAL_VALUES = (0.5, 1.0, 10.0, math.inf)

EXAMPLE = Example(
    name="mixture-uniform",
    title="ABCDP on a mixture of five uniforms: private posterior draws of the weights",
    paper="Park, Vinaroz & Jitkrittum (2021), Section 6.1",
    seconds=120,
    module=__name__,
    smallest={"proposals": 100, "observations": 100, "c": 10},
    options=(
        Option("epsilon_total", 1.0, "privacy budget of the ABCDP run", between(0.01, 1000)),
        Option("epsilon_abc", 0.1, "ABC threshold on the MMD", between(0.001, 10)),
        Option("c", 100, "accepted draws, after which the run halts", integer(1, 10**5)),
        Option("resample", False, "redraw the threshold noise after each acceptance", yes_no),
        Option(
            "proposals",
            N_PROPOSALS,
            "public prior draws T (run time grows with T times N)",
            integer(100, 20_000),
        ),
        Option(
            "observations",
            N_OBSERVATIONS,
            "observations N per dataset (run time grows with T times N)",
            integer(10, 10_000),
        ),
    ),
)

_K = TRUE_WEIGHTS.size
#: Mean of the flat Dirichlet prior: the estimate when a run accepts nothing.
PRIOR_MEAN = np.full(_K, 1.0 / _K)


def prior() -> dp.Prior:
    """Return the flat Dirichlet prior over the five weights, as parameter ``weights``."""
    return dp.Prior({"weights": st.dirichlet(np.ones(_K))})


def sample_mixture(weights, n_observations: int, rng: np.random.Generator) -> np.ndarray:
    """Draw ``n_observations`` points for each weight vector of a batch.

    Component labels come from the inverse CDF of the weights applied to
    uniforms; each point is its label plus a ``U[0, 1)`` offset.

    Parameters
    ----------
    weights : array_like
        Shape ``(n, 5)`` (or ``(5,)`` for one vector); rows sum to 1.
    n_observations : int
        Points per dataset.
    rng : numpy.random.Generator
        Source of randomness.

    Returns
    -------
    numpy.ndarray
        Shape ``(n, n_observations, 1)`` (``(n_observations, 1)`` for one vector).
    """
    w = np.asarray(weights, dtype=float)
    single = w.ndim == 1
    w = np.atleast_2d(w)
    if w.shape[-1] != _K:
        raise ValueError(f"weights must have {_K} components, got shape {np.shape(weights)}")
    cdf = np.cumsum(w, axis=1)
    u = rng.random((len(w), n_observations))
    labels = np.zeros(u.shape)
    for k in range(_K - 1):  # label = number of CDF steps below u (the last step is 1)
        labels += u >= cdf[:, k : k + 1]
    points = (labels + rng.random(u.shape))[..., None]
    return points[0] if single else points


def model(*, n_observations: int = N_OBSERVATIONS) -> dp.Model:
    """Return the prior and the vectorised simulator of pseudo-datasets ``(n, N, 1)``."""
    return dp.Model(
        prior(),
        simulate=lambda p, rng: sample_mixture(p["weights"], n_observations, rng),
    )


def confidential_data(*, n_observations: int = N_OBSERVATIONS, rng: RNGLike = None):
    """Draw the confidential observations ``Y*``: ``(N, 1)`` at :data:`TRUE_WEIGHTS`."""
    return sample_mixture(TRUE_WEIGHTS, n_observations, as_generator(rng))


def distance(
    *, n_features: int = N_FEATURES, bandwidth: float = BANDWIDTH, rng: RNGLike = 0
) -> dp.distances.RandomFeatureMMD:
    """Return the paper's random-feature MMD (sensitivity ``2 / N``); ``rng`` is public."""
    return dp.distances.RandomFeatureMMD(n_features, bandwidth, dim=1, rng=rng)


def public_draws(
    observed,
    dist: Distance,
    *,
    n_proposals: int = N_PROPOSALS,
    n_observations: int | None = None,
    batch_size: int = 250,
    rng: RNGLike = None,
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Public prior draws and their (confidential) distances to ``observed``.

    The pseudo-datasets are simulated in chunks and discarded; only the
    weights and the distances are kept, so memory stays bounded.

    Returns
    -------
    params : dict
        ``{"weights": (T, 5)}``, public.
    distances : numpy.ndarray
        ``(T,)``; confidential until the sparse vector technique answers them.
    """
    observed = np.asarray(observed, dtype=float)
    n_obs = len(observed) if n_observations is None else n_observations
    root = as_seed_sequence(rng)
    sim = model(n_observations=n_obs)
    weights, dists = [], []
    for i, start in enumerate(range(0, n_proposals, batch_size)):
        gen = chunk_generator(root, i)
        params = sim.prior.sample(min(batch_size, n_proposals - start), gen)
        weights.append(params["weights"])
        dists.append(dist(observed, sim.simulate(params, gen)))
    return {"weights": np.concatenate(weights)}, np.concatenate(dists)


@dataclass(frozen=True)
class ExperimentResult:
    """Squared errors of the ABCDP posterior mean over repetitions.

    Attributes
    ----------
    mse : numpy.ndarray
        Mean over the five weights of the squared error of the posterior
        mean, one entry per repetition (the prior mean is used when a run
        accepts nothing).
    n_accepted : numpy.ndarray
        Number of accepted draws per repetition.
    n_queries : numpy.ndarray
        Number of distances the sparse vector technique answered.
    posterior_mean : numpy.ndarray
        ``(repetitions, 5)``.
    """

    mse: np.ndarray
    n_accepted: np.ndarray
    n_queries: np.ndarray
    posterior_mean: np.ndarray


def _one_run(observed, dist, params, *, c, epsilon_abc, epsilon_total, resample, privacy_rng):
    out = dp.abcdp(
        observed,
        dist,
        params=params,
        pseudo_data=np.arange(dist.values.size),
        epsilon_total=epsilon_total,
        epsilon_abc=epsilon_abc,
        c=c,
        resample=resample,
        privacy_rng=privacy_rng,
        progressbar=False,
    )
    draws = np.asarray(out.posterior["weights"]).reshape(-1, _K)
    mean = draws.mean(axis=0) if len(draws) else PRIOR_MEAN
    return mean, len(draws), int(out.posterior.attrs["n_queries"])


def run_experiment(
    *,
    c: int,
    epsilon_abc: float,
    epsilon_total: float,
    resample: bool = False,
    n_observations: int = N_OBSERVATIONS,
    n_proposals: int = N_PROPOSALS,
    n_features: int = N_FEATURES,
    bandwidth: float = BANDWIDTH,
    repetitions: int = 1,
    rng: RNGLike = None,
    privacy_rng: RNGLike = None,
) -> ExperimentResult:
    """Run ABCDP on the toy example for one setting of Figure 3.

    Each repetition draws new confidential data, random features and public
    proposals from ``rng``, then runs :func:`dpinfer.abcdp` with privacy
    noise from ``privacy_rng``.

    Parameters
    ----------
    c, epsilon_abc, epsilon_total, resample
        The ABCDP setting.
    n_observations, n_proposals, n_features, bandwidth
        ``N``, ``T``, ``D`` and the kernel bandwidth (paper: 5000, 10000, 100, 0.6).
    repetitions : int, default 1
        Independent repetitions.
    rng : seed, optional
        Public randomness (data, features, proposals).
    privacy_rng : seed, optional
        Privacy noise; OS entropy by default.

    Returns
    -------
    ExperimentResult
    """
    root, noise = as_seed_sequence(rng), as_seed_sequence(privacy_rng)
    means, accepted, queries = [], [], []
    for r in range(repetitions):
        observed, dist, params = _repetition(
            chunk_generator(root, r), n_observations, n_proposals, n_features, bandwidth
        )
        mean, n_acc, n_q = _one_run(
            observed,
            dist,
            params,
            c=c,
            epsilon_abc=epsilon_abc,
            epsilon_total=epsilon_total,
            resample=resample,
            privacy_rng=chunk_generator(noise, r),
        )
        means.append(mean), accepted.append(n_acc), queries.append(n_q)
    means = np.array(means)
    return ExperimentResult(
        mse=np.mean((means - TRUE_WEIGHTS) ** 2, axis=1),
        n_accepted=np.array(accepted),
        n_queries=np.array(queries),
        posterior_mean=means,
    )


def _repetition(gen, n_observations, n_proposals, n_features, bandwidth):
    observed = sample_mixture(TRUE_WEIGHTS, n_observations, gen)
    base = distance(n_features=n_features, bandwidth=bandwidth, rng=gen)
    params, values = public_draws(observed, base, n_proposals=n_proposals, rng=gen)
    return observed, PrecomputedDistances(base, observed, values), params


def figure3(
    *,
    c_values=C_VALUES,
    epsilon_abc_values=EPSILON_ABC_VALUES,
    epsilon_total_values=EPSILON_TOTAL_VALUES,
    resample_values=(False, True),
    n_observations: int = N_OBSERVATIONS,
    n_proposals: int = N_PROPOSALS,
    n_features: int = N_FEATURES,
    bandwidth: float = BANDWIDTH,
    public_repetitions: int = 1,
    noise_repetitions: int = 10,
    rng: RNGLike = None,
    privacy_rng: RNGLike = None,
):
    """Compute the MSE grid of Figure 3.

    For each of ``public_repetitions`` sets of confidential data, features
    and public proposals, every setting is run ``noise_repetitions`` times
    with fresh privacy noise (the non-private setting once: it has none).

    Returns
    -------
    xarray.DataArray
        Dimensions ``(resample, c, epsilon_total, epsilon_abc, repetition)``.
    """
    import xarray as xr

    root, noise = as_seed_sequence(rng), as_seed_sequence(privacy_rng)
    shape = (
        len(resample_values),
        len(c_values),
        len(epsilon_total_values),
        len(epsilon_abc_values),
        public_repetitions * noise_repetitions,
    )
    mse = np.full(shape, np.nan)
    stream = 0
    for p in range(public_repetitions):
        observed, dist, params = _repetition(
            chunk_generator(root, p), n_observations, n_proposals, n_features, bandwidth
        )
        for idx in np.ndindex(shape[:4]):
            i, j, k, m = idx
            eps_total = epsilon_total_values[k]
            reps = 1 if math.isinf(eps_total) else noise_repetitions
            for r in range(reps):
                mean, _, _ = _one_run(
                    observed,
                    dist,
                    params,
                    c=c_values[j],
                    epsilon_abc=epsilon_abc_values[m],
                    epsilon_total=eps_total,
                    resample=resample_values[i],
                    privacy_rng=chunk_generator(noise, stream),
                )
                stream += 1
                cols = slice(p * noise_repetitions, (p + 1) * noise_repetitions)
                value = np.mean((mean - TRUE_WEIGHTS) ** 2)
                if reps == 1:
                    mse[(*idx, cols)] = value
                else:
                    mse[(*idx, p * noise_repetitions + r)] = value
    return xr.DataArray(
        mse,
        dims=("resample", "c", "epsilon_total", "epsilon_abc", "repetition"),
        coords={
            "resample": list(resample_values),
            "c": list(c_values),
            "epsilon_total": list(epsilon_total_values),
            "epsilon_abc": list(epsilon_abc_values),
        },
        name="mse",
    )


def run(
    *,
    epsilon_total: float = 1.0,
    epsilon_abc: float = 0.1,
    c: int = 100,
    resample: bool = False,
    proposals: int = N_PROPOSALS,
    observations: int = N_OBSERVATIONS,
    rng: RNGLike = None,
    progressbar: bool = True,
    verbose: bool = False,
) -> Result:
    """Run ABCDP once on the toy data, next to the same ABC without privacy noise.

    Draws the confidential data, the random features and the public
    proposals from ``rng``; the privacy noise comes from OS entropy, as a
    data owner's release must, so it is not reproducible from ``rng``.

    Parameters
    ----------
    epsilon_total, epsilon_abc, c, resample
        The ABCDP setting (one point of Figure 3).
    proposals, observations : int
        ``T`` and ``N`` (paper: 10000 and 5000).
    rng : seed, optional
        Public randomness.
    progressbar, verbose : bool
        Unused (the run is a few vectorised passes); part of every example's ``run``.

    Returns
    -------
    Result
        ``posterior`` is the ABCDP output; ``extra["non_private"]`` the
        noiseless run on the same proposals.
    """
    gen = chunk_generator(as_seed_sequence(rng), 0)
    observed, dist, params = _repetition(gen, observations, proposals, N_FEATURES, BANDWIDTH)
    settings = {"epsilon_abc": epsilon_abc, "c": c, "resample": bool(resample)}
    private = _abcdp(observed, dist, params, epsilon_total=epsilon_total, **settings)
    exact = _abcdp(observed, dist, params, epsilon_total=math.inf, **settings)
    label = f"ABCDP, eps_total = {epsilon_total:g}"
    rows = [
        *draw_rows(label, "private", idata_draws(private)),
        *draw_rows("rejection ABC, no noise", "non-private", idata_draws(exact)),
        *value_rows("truth", "truth", {"weights": TRUE_WEIGHTS}),
    ]
    notes, diagnostics = [], {}
    for name, out in ((label, private), ("rejection ABC, no noise", exact)):
        draws = idata_draws(out)["weights"]
        mean = draws.mean(axis=0) if len(draws) else PRIOR_MEAN
        mse = float(np.mean((mean - TRUE_WEIGHTS) ** 2))
        queries = int(out.posterior.attrs["n_queries"])
        notes.append(
            f"{name}: {len(draws)} draws accepted after {queries:,} of {proposals:,} "
            f"distances; MSE of the posterior mean {mse:.2e}"
            + ("" if len(draws) else " (nothing accepted: the prior mean stands in)")
        )
        diagnostics[f"{'private' if out is private else 'non_private'}_mse"] = mse
    notes.append(
        f"privacy: {private.posterior.attrs['epsilon']}-DP for the data owner "
        "(privacy noise from OS entropy)"
    )
    report = Report(
        "A mixture of five uniforms released by ABCDP (Park et al. 2021, Section 6.1)",
        [
            f"weights ~ Dirichlet(1, ..., 1); N = {observations} observations at the true "
            f"weights; random-feature MMD ({N_FEATURES} frequencies, bandwidth {BANDWIDTH})",
            f"T = {proposals} public proposals; c = {c}, epsilon_abc = {epsilon_abc:g}, "
            f"epsilon_total = {epsilon_total:g}, resample = {bool(resample)}",
        ],
        rows,
        notes,
        diagnostics,
    )
    return Result(report, private, extra={"non_private": exact})


def _abcdp(observed, dist, params, **settings):
    return dp.abcdp(
        observed,
        dist,
        params=params,
        pseudo_data=np.arange(dist.values.size),
        progressbar=False,
        **settings,
    )
