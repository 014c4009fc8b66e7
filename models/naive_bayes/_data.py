r"""The naive Bayes example's data, model, mechanism and naive posterior.

See :mod:`dpinfer.models.naive_bayes` for the example.

Five probabilities (:data:`PARAMETER_NAMES`) with Beta(2, 2) priors; ``n``
records of a class and ``K = 2`` features, each in ``{1, 2}``; the eight
class-by-feature cell proportions (:data:`CELL_NAMES`), released with Laplace
noise of scale ``2K / (n epsilon)`` (replace-one neighbours).

Examples
--------
>>> from dpinfer.models.naive_bayes import _data as nbd
>>> nbd.CELL_NAMES[:3]
('y1_x1=1', 'y1_x1=2', 'y1_x2=1')
"""

from __future__ import annotations

import numpy as np
import scipy.stats as st

import dpinfer as dp
from dpinfer import validate
from dpinfer.random import RNGLike, as_generator

#: Number of records.
N = 100
#: Number of features (each with two levels; two classes).
N_FEATURES = 2
#: The Dirichlet concentration of every prior.
ALPHA = 2.0
#: Privacy-loss budget of the published release.
EPSILON = 10.0
#: Free parameters: P(y = 1) and P(x_k = 1 | y = i).
PARAMETER_NAMES = ("p_class", "p_x1_y1", "p_x1_y2", "p_x2_y1", "p_x2_y2")
#: The data-generating parameters of Supplement S3.3.
TRUE_PARAMS = {
    "p_class": 0.8489,
    "p_x1_y1": 0.3887,
    "p_x1_y2": 0.6534,
    "p_x2_y1": 0.7537,
    "p_x2_y2": 0.5834,
}
#: Cells of the released proportions, in order (class i, feature k, level j).
CELL_NAMES = tuple(
    f"y{i}_x{k}={j}" for i in (1, 2) for k in range(1, N_FEATURES + 1) for j in (1, 2)
)
#: The epsilon = 10 release of Supplement S3.3 (proportions, order of CELL_NAMES).
RELEASED = np.array([0.3275, 0.4520, 0.5862, 0.1827, 0.1293, 0.0858, 0.1288, 0.0954])

REFERENCE = (
    "Xiong, Y., Ju, N. and Zhang, S. (2023). Simulation-based inference for "
    "privacy-protected data. Supplement S3.3."
)


def sensitivity(*, n: int = N) -> float:
    """Return the l1 sensitivity ``2K / n`` of the proportions under replace-one neighbours.

    Examples
    --------
    >>> sensitivity()
    0.04
    """
    return 2 * N_FEATURES / validate.positive_int("n", n)


def mechanism(*, epsilon: float = EPSILON, n: int = N) -> dp.Laplace:
    """Return the Laplace mechanism of the eight proportions, scale ``2K / (n epsilon)``.

    An ``epsilon``-DP release (``epsilon`` positive and finite) of the
    proportions of ``n`` records: a :class:`dpinfer.Laplace` with
    ``event_shape == (8,)``.

    Examples
    --------
    >>> mechanism(epsilon=1).privacy.epsilon
    1.0
    """
    return dp.Laplace.from_privacy(
        epsilon=epsilon, sensitivity=sensitivity(n=n), event_shape=(len(CELL_NAMES),)
    )


def model(*, n: int = N) -> dp.Model:
    """Return the Bayesian model: Beta(2, 2) priors and the simulator of the proportions.

    The prior is over :data:`PARAMETER_NAMES`; ``simulate(params, rng)``
    returns the ``(batch, 8)`` proportions of ``n`` records per parameter set.

    Examples
    --------
    >>> m = model()
    >>> p = m.prior.sample(4, np.random.default_rng(0))
    >>> m.simulate(p, np.random.default_rng(1)).shape
    (4, 8)
    """
    n = validate.positive_int("n", n)

    def simulate(params, rng):
        return simulate_statistics(params, rng=rng, n=n)

    prior = {name: st.beta(ALPHA, ALPHA) for name in PARAMETER_NAMES}
    return dp.Model(prior=prior, simulate=simulate)


def simulate_statistics(params, *, rng: RNGLike, n: int = N) -> np.ndarray:
    r"""Simulate the eight cell proportions for a batch of parameter sets.

    Parameters
    ----------
    params : dict
        Arrays of shape ``(batch,)`` for every name in :data:`PARAMETER_NAMES`,
        each in ``[0, 1]``.
    rng : None, int, SeedSequence or Generator
        Source of randomness.
    n : int, default 100
        Records per dataset.

    Returns
    -------
    numpy.ndarray
        Shape ``(batch, 8)``, in the order of :data:`CELL_NAMES`.

    Notes
    -----
    The class count is :math:`n_1 \sim \mathrm{Binomial}(n, p_1)` and, given
    it, :math:`n^k_{i,1} \sim \mathrm{Binomial}(n_i, p^k_{i,1})`
    independently over classes and features: the exact distribution of the
    tables of ``n`` records from the model, without drawing the records.

    Examples
    --------
    >>> p = {k: np.full(3, 0.5) for k in PARAMETER_NAMES}
    >>> simulate_statistics(p, rng=0).shape
    (3, 8)
    """
    gen = as_generator(rng)
    n = validate.positive_int("n", n)
    q = _check_params(params)
    batch = len(q)
    n1 = gen.binomial(n, q[:, 0])
    sizes = np.stack([n1, n - n1], axis=1)  # (batch, class)
    counts = np.empty((batch, 2, N_FEATURES, 2), dtype=np.int64)
    for i in range(2):
        for k in range(N_FEATURES):
            ones = gen.binomial(sizes[:, i], q[:, _column(i, k)])
            counts[:, i, k, 0] = ones
            counts[:, i, k, 1] = sizes[:, i] - ones
    return counts.reshape(batch, -1) / n


def confidential_data(
    *, params=None, n: int = N, rng: RNGLike = None
) -> tuple[np.ndarray, np.ndarray]:
    """Draw ``n`` confidential records from the model.

    Parameters
    ----------
    params : dict, optional
        A value in ``[0, 1]`` for every name of :data:`PARAMETER_NAMES`;
        default :data:`TRUE_PARAMS`.
    n : int, default 100
        Number of records.
    rng : None, int, SeedSequence or Generator
        Source of randomness (None: fresh OS entropy).

    Returns
    -------
    y : numpy.ndarray
        Classes in ``{1, 2}``, shape ``(n,)``.
    x : numpy.ndarray
        Features in ``{1, 2}``, shape ``(n, 2)``.

    Examples
    --------
    >>> y, x = confidential_data(rng=0)
    >>> y.shape, x.shape, sorted(set(y.tolist()))
    ((100,), (100, 2), [1, 2])
    """
    params = TRUE_PARAMS if params is None else params
    q = _check_params({k: np.atleast_1d(params[k]) for k in PARAMETER_NAMES})[0]
    n = validate.positive_int("n", n)
    gen = as_generator(rng)
    y = np.where(gen.random(n) < q[0], 1, 2)
    x = np.empty((n, N_FEATURES), dtype=np.int64)
    for k in range(N_FEATURES):
        p_one = np.where(y == 1, q[_column(0, k)], q[_column(1, k)])
        x[:, k] = np.where(gen.random(n) < p_one, 1, 2)
    return y, x


def statistics(y, x) -> np.ndarray:
    """Tabulate records into the eight proportions ``#(y = i, x_k = j) / n``.

    Parameters
    ----------
    y : array_like
        Classes in ``{1, 2}``, shape ``(n,)``.
    x : array_like
        Features in ``{1, 2}``, shape ``(n, 2)``.

    Returns
    -------
    numpy.ndarray
        Shape ``(8,)``, in the order of :data:`CELL_NAMES`.

    Examples
    --------
    >>> statistics([1, 1, 2], [[1, 2], [2, 2], [1, 1]]) * 3
    array([1., 1., 0., 2., 1., 0., 1., 0.])
    """
    y, x = _check_records(y, x)
    out = [
        np.mean((y == i) & (x[:, k] == j))
        for i in (1, 2)
        for k in range(N_FEATURES)
        for j in (1, 2)
    ]
    return np.asarray(out)


def release(y, x, *, epsilon: float, rng: RNGLike = None) -> np.ndarray:
    """Release the proportions of confidential records through the ε-DP Laplace mechanism.

    ``y, x`` are records as in :func:`statistics`; ``rng`` draws the privacy
    noise (leave it None, fresh OS entropy, for a real release). Returns the
    eight released proportions, in floating point: see
    :class:`dpinfer.Laplace` for Mironov's (2012) caveat.

    Examples
    --------
    >>> y, x = confidential_data(rng=0)
    >>> release(y, x, epsilon=1.0, rng=1).shape
    (8,)
    """
    y, x = _check_records(y, x)
    return mechanism(epsilon=epsilon, n=len(y)).release(statistics(y, x), rng=rng)


def naive_posterior(released, *, n: int = N) -> dict:
    r"""Return the naive posterior, which takes the release for the confidential proportions.

    Parameters
    ----------
    released : array_like
        The eight released proportions.
    n : int, default 100
        Number of records.

    Returns
    -------
    dict
        A frozen ``scipy.stats.beta`` per parameter name.

    Notes
    -----
    The conjugate Beta updates with the released counts :math:`n\,r_{dp}`
    (negative ones set to 0) as if they were observed:
    ``p_x{k}_y{i} ~ Beta(2 + n r_{i,k,1}, 2 + n r_{i,k,2})`` and
    ``p_class ~ Beta(2 + n_1, 2 + n_2)``, with the class counts averaged
    over the ``K`` tables. It ignores the noise: the wrong posterior, shown
    for comparison.

    Examples
    --------
    >>> post = naive_posterior(RELEASED)
    >>> round(float(post["p_x1_y1"].mean()), 3)
    0.424
    """
    s = validate.finite_array("released", released, shape=(len(CELL_NAMES),))
    n = validate.positive_int("n", n)
    counts = np.maximum(s, 0.0).reshape(2, N_FEATURES, 2) * n
    out = {}
    class_counts = counts.sum(axis=2).mean(axis=1)
    out["p_class"] = st.beta(ALPHA + class_counts[0], ALPHA + class_counts[1])
    for i in range(2):
        for k in range(N_FEATURES):
            name = PARAMETER_NAMES[_column(i, k)]
            out[name] = st.beta(ALPHA + counts[i, k, 0], ALPHA + counts[i, k, 1])
    return {name: out[name] for name in PARAMETER_NAMES}


# --- internals ---------------------------------------------------------------------


def _column(i: int, k: int) -> int:
    """Return the column of ``P(x_{k+1} = 1 | y = i+1)`` in the parameter matrix (0-based i, k)."""
    return 1 + 2 * k + i


def _check_params(params) -> np.ndarray:
    """Stack the parameters as a ``(batch, 5)`` matrix, checking range and shape."""
    if not hasattr(params, "keys"):
        raise TypeError(f"params must be a dict of arrays, got {type(params).__name__}")
    missing = [k for k in PARAMETER_NAMES if k not in params]
    if missing:
        raise ValueError(f"params is missing {missing}; expected {list(PARAMETER_NAMES)}")
    cols = [np.asarray(params[k], dtype=float) for k in PARAMETER_NAMES]
    if any(c.ndim != 1 or c.shape != cols[0].shape for c in cols):
        shapes = {k: c.shape for k, c in zip(PARAMETER_NAMES, cols, strict=True)}
        raise ValueError(f"every parameter must have the same shape (batch,), got {shapes}")
    q = np.stack(cols, axis=1)
    if not np.all((q >= 0) & (q <= 1)):
        raise ValueError("every parameter is a probability and must lie in [0, 1]")
    return q


def _check_records(y, x) -> tuple[np.ndarray, np.ndarray]:
    # confidential records: numbers only (a bool True is not the class 1), no value shown
    y = validate.numeric_array("y", y, confidential=True)
    x = validate.numeric_array("x", x, confidential=True)
    if y.ndim != 1 or x.shape != (len(y), N_FEATURES) or len(y) < 1:
        raise ValueError(
            f"y must have shape (n,) and x shape (n, {N_FEATURES}) with n >= 1; got y of "
            f"shape {y.shape} and x of shape {x.shape}"
        )
    if not (np.isin(y, (1, 2)).all() and np.isin(x, (1, 2)).all()):
        raise ValueError("classes y and features x must take the values 1 and 2")
    return y, x
