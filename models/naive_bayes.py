r"""Naive Bayes log-linear model from Laplace-privatised cell proportions.

The example of Xiong, Ju and Zhang (2023, Supplement S3.3), after Karwa et al.
(2015). Each of ``n = 100`` records has a class :math:`y \in \{1, 2\}` and
``K = 2`` features :math:`x_k \in \{1, 2\}`, independent given the class:

.. math:: y \sim \mathrm{Categorical}(p_1, p_2), \qquad
          x_k \mid y = i \sim \mathrm{Categorical}(p^k_{i,1}, p^k_{i,2}).

Every probability vector has a Dirichlet(2, 2) prior. With two levels a
Dirichlet(2, 2) vector :math:`(q, 1 - q)` is :math:`q \sim \mathrm{Beta}(2, 2)`,
so the model has five free parameters (:data:`PARAMETER_NAMES`):
``p_class`` :math:`= p_1 = \Pr(y = 1)` and ``p_x{k}_y{i}``
:math:`= p^k_{i,1} = \Pr(x_k = 1 \mid y = i)`.

**Statistics.** The sufficient statistics are the ``K`` class-by-feature
tables :math:`n^k_{i,j} = \#\{y = i, x_k = j\}`, released as proportions
:math:`r^k_{i,j} = n^k_{i,j} / n`: eight numbers in the paper's order
(class ``i``, then feature ``k``, then level ``j``; :data:`CELL_NAMES`).

**Mechanism and neighbouring relation.** Neighbouring datasets differ by
*replacing* one record (``n`` is public). A replacement moves one count of
each of the ``K`` tables from one cell to another, so the l1 sensitivity of
the counts is ``2K = 4`` and that of the proportions ``2K / n``. Independent
Laplace noise of scale :math:`2K / (n\epsilon)` on each proportion, as in
the paper, gives ε-DP; :func:`mechanism` declares exactly this. (Under
add/remove-one neighbours ``n`` would itself be private and the sensitivity
of the counts would be ``K``; that is not the relation used here.)

**Exact likelihood.** Because the noise is independent across cells and the
tables are independent binomials given the class counts, the likelihood of
a release is a finite sum (:func:`log_likelihood`),

.. math:: \pi(r_{dp} \mid \theta) = \sum_{n_1 = 0}^{n} \binom{n}{n_1} p_1^{n_1}
          p_2^{n - n_1} \prod_{k} T^k_1(n_1)\, T^k_2(n - n_1), \qquad
          T^k_i(m) = \sum_{a = 0}^{m} \binom{m}{a} (p^k_{i,1})^a (p^k_{i,2})^{m - a}
          \eta(r^k_{dp,i,1} \mid a/n)\, \eta(r^k_{dp,i,2} \mid (m - a)/n),

which the PyMC reference (:func:`pymc_reference`) samples with NUTS: a
route to the posterior that simulates nothing, independent of ABC.

**Which sampler.** Exact SMC-ABC keeps one simulated table per particle, and
its moves need a fresh table within a few noise scales of the release in
all eight cells. At ε = 1 (noise scale 4 counts) that works and SMC agrees
with the reference (see the tests). At the paper's ε = 10 (scale 0.4 counts)
it does not: on :data:`RELEASED`, with 2000 particles, the final moves
accept almost nothing, about 40 distinct particles remain and the result is
far from the reference. Use :func:`pymc_reference` there.

References
----------
.. [1] Xiong, Y., Ju, N. and Zhang, S. (2023). Simulation-based inference
   for privacy-protected data. Supplement S3.3.
.. [2] Karwa, V., Kifer, D. and Slavković, A. B. (2015). Private posterior
   distributions from variational approximations. arXiv:1511.07896.

Examples
--------
>>> from dpinfer.models import naive_bayes as nb
>>> nb.mechanism(epsilon=10).scale[0].round(4)
np.float64(0.004)
>>> y, x = nb.confidential_data(rng=1)
>>> nb.statistics(y, x).sum().round(6)  # each of the K tables sums to 1
np.float64(2.0)
"""

from __future__ import annotations

import math

import numpy as np
import scipy.stats as st
from scipy.special import gammaln, logsumexp

import dpinfer as dp
from dpinfer import _validate
from dpinfer._rng import RNGLike, as_generator, as_seed_sequence

from ._example import Example, Option, between, integer, vector
from ._report import (
    Report,
    Result,
    distribution_rows,
    draw_rows,
    idata_draws,
    nuts_note,
    value_rows,
)

__all__ = [
    "ALPHA",
    "CELL_NAMES",
    "EPSILON",
    "N",
    "N_FEATURES",
    "PARAMETER_NAMES",
    "RELEASED",
    "TRUE_PARAMS",
    "confidential_data",
    "exact_posterior",
    "log_likelihood",
    "mechanism",
    "model",
    "naive_posterior",
    "pymc_model",
    "pymc_reference",
    "record_model",
    "release",
    "run",
    "sensitivity",
    "simulate_statistics",
    "statistics",
]

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

EXAMPLE = Example(
    name="naive-bayes",
    title="Naive Bayes from Laplace-noised cell proportions: exact-likelihood NUTS vs naive",
    paper="Xiong, Ju & Zhang (2023), Supplement S3.3",
    seconds=40,
    module=__name__,
    smallest={"nuts_draws": 100},
    options=(
        Option(
            "released",
            RELEASED,
            "the eight released proportions",
            vector(8, between(-1, 2, hint="a proportion lies in [0, 1]")),
            flag="--release",
        ),
        Option("epsilon", EPSILON, "privacy budget of the release", between(0.5, 1000)),
        Option(
            "nuts_draws",
            1000,
            "draws and tuning steps per chain of NUTS",
            integer(100, 10_000),
        ),
    ),
)


def sensitivity(*, n: int = N) -> float:
    """Return the l1 sensitivity ``2K / n`` of the proportions under replace-one neighbours.

    Examples
    --------
    >>> sensitivity()
    0.04
    """
    return 2 * N_FEATURES / _validate.positive_int("n", n)


def mechanism(*, epsilon: float = EPSILON, n: int = N) -> dp.Laplace:
    """Return the Laplace mechanism of the eight proportions, scale ``2K / (n epsilon)``.

    Parameters
    ----------
    epsilon : float, default 10
        Privacy-loss budget (positive, finite).
    n : int, default 100
        Number of records.

    Returns
    -------
    dpinfer.Laplace
        ``event_shape == (8,)``; ``privacy.epsilon == epsilon``.

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

    Parameters
    ----------
    n : int, default 100
        Records per simulated dataset.

    Returns
    -------
    dpinfer.Model
        Prior over :data:`PARAMETER_NAMES`; ``simulate(params, rng)`` returns
        ``(batch, 8)`` proportions.

    Examples
    --------
    >>> m = model()
    >>> p = m.prior.sample(4, np.random.default_rng(0))
    >>> m.simulate(p, np.random.default_rng(1)).shape
    (4, 8)
    """
    n = _validate.positive_int("n", n)

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
    n = _validate.positive_int("n", n)
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
    n = _validate.positive_int("n", n)
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

    Parameters
    ----------
    y, x : array_like
        Records as in :func:`statistics`.
    epsilon : float
        Privacy-loss budget.
    rng : None, int, SeedSequence or Generator
        Source of the privacy noise; None (fresh OS entropy) for a real release.

    Returns
    -------
    numpy.ndarray
        The eight released proportions.

    Notes
    -----
    A floating-point release; see :class:`dpinfer.Laplace` for Mironov's
    (2012) caveat.

    Examples
    --------
    >>> y, x = confidential_data(rng=0)
    >>> release(y, x, epsilon=1.0, rng=1).shape
    (8,)
    """
    y, x = _check_records(y, x)
    return mechanism(epsilon=epsilon, n=len(y)).release(statistics(y, x), rng=rng)


def log_likelihood(params, released, *, epsilon: float, n: int = N) -> np.ndarray:
    """Exact log-likelihood ``log pi(r_dp | theta)`` of a release, by finite sums.

    Parameters
    ----------
    params : dict
        Arrays of shape ``(batch,)`` for every name of :data:`PARAMETER_NAMES`.
    released : array_like
        The eight released proportions.
    epsilon : float
        Privacy-loss budget of the release.
    n : int, default 100
        Number of records.

    Returns
    -------
    numpy.ndarray
        Shape ``(batch,)``.

    Notes
    -----
    The sums of the module docstring, in log space: ``(n + 1)^2`` terms per
    class and feature.

    Examples
    --------
    >>> p = {k: np.array([TRUE_PARAMS[k]]) for k in PARAMETER_NAMES}
    >>> bool(np.isfinite(log_likelihood(p, RELEASED, epsilon=10.0))[0])
    True
    """
    n = _validate.positive_int("n", n)
    mech = mechanism(epsilon=epsilon, n=n)
    released = mech._check_released(released)
    q = _check_params(params)
    log_choose, tables = _likelihood_terms(released, float(mech.scale[0]), n)
    a = np.arange(n + 1)
    m = a[:, None]
    out = np.empty(len(q))
    for lo in range(0, len(q), 256):
        qb = q[lo : lo + 256]
        per_class = np.zeros((len(qb), 2, n + 1))
        for (i, k), table in tables.items():
            p1 = qb[:, _column(i, k), None, None]
            with np.errstate(divide="ignore"):
                terms = a * np.log(p1) + (m - a) * np.log1p(-p1)
            terms = np.where(a <= m, terms, -np.inf) + log_choose + table
            per_class[:, i] += logsumexp(terms, axis=2)
        with np.errstate(divide="ignore"):
            log_n1 = st.binom.logpmf(a, n, qb[:, :1])
        out[lo : lo + len(qb)] = logsumexp(
            log_n1 + per_class[:, 0] + per_class[:, 1, ::-1], axis=1
        )
    return out


def record_model(*, n: int = N) -> dp.RecordModel:
    """Return the model as a :class:`dpinfer.RecordModel` of ``n`` records.

    Parameters
    ----------
    n : int, default 100
        Number of records; the per-record statistic is divided by it, so
        pass the same ``n`` to :func:`dpinfer.da_mcmc`.

    Returns
    -------
    dpinfer.RecordModel
        Beta(2, 2) priors over :data:`PARAMETER_NAMES`; records ``(y, x_1, x_2)``
        in ``{1, 2}``, shape ``(batch, n, 3)``; the per-record statistic, each
        record's one-hot cell of the ``K`` tables over ``n``, shape
        ``(batch, n, 8)`` in the order of :data:`CELL_NAMES`; the conjugate
        Beta ``update`` and the Bernoulli ``loglik``.

    Examples
    --------
    >>> m, rng = record_model(), np.random.default_rng(0)
    >>> records = m.simulate_records({k: np.full(2, 0.5) for k in PARAMETER_NAMES}, 100, rng)
    >>> t = m.statistics(records)
    >>> records.shape, t.shape
    ((2, 100, 3), (2, 100, 8))
    >>> bool(np.allclose(t[0].sum(axis=0), statistics(records[0, :, 0], records[0, :, 1:])))
    True
    """
    from ._naive_bayes_records import build

    return build(_validate.positive_int("n", n))


def exact_posterior(released=RELEASED, *, epsilon: float = EPSILON, n: int = N) -> dict:
    r"""Exact marginal posteriors of the five probabilities given a release, by finite sums.

    Parameters
    ----------
    released, epsilon, n
        As in :func:`log_likelihood`.

    Returns
    -------
    dict
        Per parameter name, a mixture of Beta laws with ``mean()``, ``std()``,
        ``cdf(x)`` and ``ppf(q)``.

    Notes
    -----
    The Beta priors integrate out in closed form (Beta-binomial tables), the
    posterior of the class count is a sum over ``n + 1`` values, and given the
    counts each probability is conjugate; see
    :mod:`dpinfer.models._naive_bayes_records`. ``O(n^2)`` work, no sampling:
    an independent reference for any sampler, at any epsilon.

    Examples
    --------
    >>> post = exact_posterior(RELEASED, epsilon=10.0)
    >>> round(post["p_class"].mean(), 3)
    0.768
    """
    from ._naive_bayes_records import exact_posterior as exact

    mech = mechanism(epsilon=epsilon, n=n)
    return exact(mech._check_released(released), epsilon=epsilon, n=_validate.positive_int("n", n))


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
    s = _validate.finite_array("released", released, shape=(len(CELL_NAMES),))
    n = _validate.positive_int("n", n)
    counts = np.maximum(s, 0.0).reshape(2, N_FEATURES, 2) * n
    out = {}
    class_counts = counts.sum(axis=2).mean(axis=1)
    out["p_class"] = st.beta(ALPHA + class_counts[0], ALPHA + class_counts[1])
    for i in range(2):
        for k in range(N_FEATURES):
            name = PARAMETER_NAMES[_column(i, k)]
            out[name] = st.beta(ALPHA + counts[i, k, 0], ALPHA + counts[i, k, 1])
    return {name: out[name] for name in PARAMETER_NAMES}


def pymc_model(released=RELEASED, *, epsilon: float = EPSILON, n: int = N):
    """Build the PyMC model of the release with the counts summed out exactly.

    Parameters
    ----------
    released, epsilon, n
        As in :func:`log_likelihood`.

    Returns
    -------
    pymc.Model
        Five ``Beta(2, 2)`` variables named as :data:`PARAMETER_NAMES` and the
        potential ``s_dp``: the log-likelihood of :func:`log_likelihood`,
        written in PyTensor (built by :func:`dpinfer.reference.reference_model`).
    """
    import pymc as pm
    import pytensor.tensor as pt

    from dpinfer.reference import reference_model

    n = _validate.positive_int("n", n)
    mech = mechanism(epsilon=epsilon, n=n)
    released = mech._check_released(released)
    log_choose, tables = _likelihood_terms(released, float(mech.scale[0]), n)
    a = np.arange(n + 1)
    m = a[:, None]
    valid = a <= m
    # exponents of p and 1 - p, zero outside the triangle a <= m (whose terms are -inf)
    a_exp = np.where(valid, a, 0).astype(float)
    b_exp = np.where(valid, m - a, 0).astype(float)
    log_binom_n1 = gammaln(n + 1) - gammaln(a + 1) - gammaln(n - a + 1)

    def build():
        return {name: pm.Beta(name, ALPHA, ALPHA) for name in PARAMETER_NAMES}

    def loglik(params, _released):
        per_class = [pt.zeros(n + 1), pt.zeros(n + 1)]
        for (i, k), table in tables.items():
            p1 = params[PARAMETER_NAMES[_column(i, k)]]
            terms = a_exp * pt.log(p1) + b_exp * pt.log1p(-p1) + (log_choose + table)
            per_class[i] = per_class[i] + pm.math.logsumexp(terms, axis=1)
        p = params["p_class"]
        log_n1 = log_binom_n1 + a * pt.log(p) + (n - a) * pt.log1p(-p)
        return pm.math.logsumexp(log_n1 + per_class[0] + per_class[1][::-1])

    return reference_model(build, mech, released, loglik=loglik)


def pymc_reference(
    released=RELEASED,
    *,
    epsilon: float = EPSILON,
    n: int = N,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 2,
    rng: RNGLike = None,
    progressbar: bool = False,
    **nuts_kwargs,
):
    """Sample the posterior with NUTS on the exact marginal likelihood (no simulation).

    Parameters
    ----------
    released, epsilon, n
        As in :func:`log_likelihood`.
    draws, tune, chains, rng, progressbar, **nuts_kwargs
        As in :func:`dpinfer.reference.sample_nuts`.

    Returns
    -------
    arviz.InferenceData
        ``posterior`` with one variable per parameter name; ``attrs`` carry
        ``divergences``, ``rhat_max`` and ``ess``.

    Notes
    -----
    The model is :func:`pymc_model`. Nothing is simulated, so it checks
    ABC (which only simulates) by an independent route.
    """
    from dpinfer.reference import sample_nuts
    from dpinfer.samplers._common import mechanism_constants, privacy_attrs

    mech = mechanism(epsilon=epsilon, n=n)
    released = mech._check_released(released)
    return sample_nuts(
        pymc_model(released, epsilon=epsilon, n=n),
        draws=draws,
        tune=tune,
        chains=chains,
        rng=rng,
        progressbar=progressbar,
        var_names=list(PARAMETER_NAMES),
        observed=released,
        constant_data=mechanism_constants(mech),
        attrs={
            "mechanism": repr(mech),
            **privacy_attrs(mech),
            "likelihood": "counts summed out exactly",
            "model": REFERENCE,
        },
        **nuts_kwargs,
    )


def run(
    *,
    released=RELEASED,
    epsilon: float = EPSILON,
    nuts_draws: int = 1000,
    rng: RNGLike = None,
    progressbar: bool = True,
    verbose: bool = False,
) -> Result:
    """Compare the exact posterior (NUTS on the exact marginal likelihood) with the naive one.

    Exact SMC-ABC needs a fresh table within a few noise scales of the release
    in all eight cells, which fails at the paper's ε = 10 (see the module
    docstring); the likelihood summed over the counts does not, so it is the
    exact method here.

    Parameters
    ----------
    released : array_like
        The eight released proportions (default :data:`RELEASED`).
    epsilon : float
        Privacy budget of the release.
    nuts_draws : int
        Draws and tuning steps per chain (2 chains).
    rng : seed, optional
        Seed of NUTS.
    progressbar : bool
        Unused (no dpinfer sampler runs); part of every example's ``run``.
    verbose : bool
        Show PyMC's progress bars.

    Returns
    -------
    Result
        ``posterior`` is the NUTS result.
    """
    mech = mechanism(epsilon=epsilon)
    released = mech._check_released(released)
    exact = pymc_reference(
        released,
        epsilon=epsilon,
        draws=nuts_draws,
        tune=nuts_draws,
        chains=2,
        rng=as_seed_sequence(rng),
        progressbar=progressbar and verbose,
    )
    rows = [
        *draw_rows("NUTS, counts summed out", "exact", idata_draws(exact, PARAMETER_NAMES)),
        *distribution_rows("naive (release as counts)", "naive", naive_posterior(released)),
        *value_rows("truth", "truth", TRUE_PARAMS),
    ]
    nuts_text, diagnostics = nuts_note("NUTS", exact, "nuts")
    notes = [
        nuts_text,
        f"privacy: {mech.privacy} (replace-one neighbours, sensitivity {sensitivity():g})",
    ]
    report = Report(
        "Naive Bayes from a Laplace release of cell proportions (Xiong et al. 2023, S3.3)",
        [
            f"n = {N} records, {N_FEATURES} binary features, Beta({ALPHA:g}, {ALPHA:g}) priors; "
            f"epsilon = {epsilon:g}",
            f"released {np.round(released, 4).tolist()} ({', '.join(CELL_NAMES)})",
        ],
        rows,
        notes,
        diagnostics,
    )
    return Result(report, exact)


# --- internals ---------------------------------------------------------------------


def _column(i: int, k: int) -> int:
    """Return the column of ``P(x_{k+1} = 1 | y = i+1)`` in the parameter matrix (0-based i, k)."""
    return 1 + 2 * k + i


def _likelihood_terms(released, scale, n):
    """Return ``log C(m, a)`` and, per (class, feature), ``log eta`` at ``(a, m - a)``."""
    a = np.arange(n + 1)
    m = a[:, None]
    with np.errstate(invalid="ignore"):
        log_choose = np.where(
            a <= m, gammaln(m + 1) - gammaln(a + 1) - gammaln(np.maximum(m - a, 0) + 1), -np.inf
        )
    r = released.reshape(2, N_FEATURES, 2)
    log_norm = -2 * math.log(2 * scale)
    tables = {}
    for i in range(2):
        for k in range(N_FEATURES):
            first = np.abs(r[i, k, 0] - a / n)
            second = np.abs(r[i, k, 1] - np.maximum(m - a, 0) / n)
            tables[(i, k)] = log_norm - (first + second) / scale
    return log_choose, tables


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
    y = np.asarray(y)
    x = np.asarray(x)
    if y.ndim != 1 or x.shape != (len(y), N_FEATURES) or len(y) < 1:
        raise ValueError(
            f"y must have shape (n,) and x shape (n, {N_FEATURES}) with n >= 1; got y of "
            f"shape {y.shape} and x of shape {x.shape}"
        )
    if not (np.isin(y, (1, 2)).all() and np.isin(x, (1, 2)).all()):
        raise ValueError("classes y and features x must take the values 1 and 2")
    return y, x
