"""The model, data and public draws of the mixture-of-uniforms example.

Imported by :mod:`dpinfer.models.mixture_uniform`, which documents the example.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.stats as st

import dpinfer as dp
from dpinfer import validate
from dpinfer.distances import Distance
from dpinfer.random import RNGLike, as_generator, as_seed_sequence, chunk_generator

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
    observed = validate.confidential_data("observed", observed)
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
