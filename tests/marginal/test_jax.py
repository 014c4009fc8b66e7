"""PyTensor's JAX backend on to_pymc models: the same numbers as the default backend.

Each model below is compiled twice, by the default backend and with ``mode="JAX"``
(:mod:`dpinfer.marginal._jax`), and its per-variable log-likelihoods and gradient
compared at a few points; then JAX differentiates the log-density itself
(``jax.grad``, as the JAX samplers do), also under ``vmap`` and ``jit``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
import pytensor
import pytest
from pytensor.graph.traversal import io_toposort

import dpinfer as dp

jax = pytest.importorskip("jax")
pytest.importorskip("pymc.sampling.jax")

from pymc.sampling.jax import get_jaxified_logp  # noqa: E402

from dpinfer.marginal import _jax as marginal_jax  # noqa: E402
from dpinfer.marginal._op import MarginalLogp  # noqa: E402

POP = np.array([900, 2500, 400, 7000, 1300, 3100])

#: every noise kind of the per-cell form, with releases of the six cells
NOISE = {
    "laplace": (dp.Laplace(2.5), np.array([3.2, 11.7, -1.4, 40.3, 5.0, 9.9])),
    "discrete laplace": (dp.DiscreteLaplace(2.0), np.array([3, 12, 0, 40, 5, 9])),
    "gaussian": (
        dp.Gaussian(np.array([1.5, 3.0, 0.8, 6.0, 2.0, 4.0])),
        np.array([3.2, 11.7, -1.4, 40.3, 5.0, 9.9]),
    ),
    "discrete gaussian": (dp.DiscreteGaussian(3.0), np.array([3, 21, -9, 30, 6, 2])),
    "binomial release": (
        dp.BinomialRelease(n=200, m=50, population=1000, length=6),
        np.array([9, 20, 3, 60, 12, 30]),
    ),
    "thresholded": (
        dp.Thresholded(dp.DiscreteGaussian(3.0), threshold=8),
        np.array([np.nan, 21, np.nan, 30, np.nan, 12]),
    ),
}


def _latents(rate, size):
    """Every discrete latent family of the kernel, at parameters that follow ``rate``."""
    mu = POP * rate
    return {
        "poisson": pm.Poisson.dist(mu=mu),
        "negative binomial": pm.NegativeBinomial.dist(mu=mu, alpha=size),
        "binomial": pm.Binomial.dist(n=1000, p=pm.math.minimum(mu / 1000, 0.9)),
        "geometric": pm.Geometric.dist(p=1 / (1 + mu)),
        "discrete uniform": pm.DiscreteUniform.dist(lower=0, upper=60),
        "dirac delta": pm.DiracDelta.dist(np.array([4, 20, 1, 45, 6, 11])),
    }


def _discrete(rate, size):
    """One observed variable per latent family and per noise kind (each with a Poisson one)."""
    pairs = [(family, "discrete gaussian") for family in _latents(1.0, 1.0)]
    pairs += [("poisson", noise) for noise in NOISE if noise != "discrete gaussian"]
    pairs += [("negative binomial", "thresholded"), ("geometric", "laplace")]
    for family, noise in pairs:
        mech, released = NOISE[noise]
        mech.to_pymc(f"{family}, {noise}", _latents(rate, size)[family], observed=released)


#: the observed variables of continuous latents: the quadrature's sums of many terms
#: differ in their last digits between XLA and PyTensor's C code
CONTINUOUS_RTOL = 1e-8
#: the discrete ones: each cell is summed exactly to tol = 1e-10 (relative) from whatever
#: mode its state holds, and the two backends keep their own states, so two exact
#: evaluations may differ by about tol; a gradient adds scores that cancel (9.7e-11
#: relative seen on d/d rate_log__), so its agreement is a few tol, not the last digit
DISCRETE_RTOL = 1e-9


def _continuous(mu, sd):
    """Normal latents (closed forms), LogNormal and Gamma ones (quadrature)."""
    gaussian, laplace = dp.Gaussian(2.5), dp.Laplace(2.5)
    released = np.array([3.0, 9.4, 12.0])
    gaussian.to_pymc("normal, gaussian", pm.Normal.dist(mu, sd), observed=released)
    # erfcx and gammaincinv: PyTensor has them in JAX only with tensorflow-probability,
    # dpinfer._jax_special otherwise
    laplace.to_pymc("normal, laplace", pm.Normal.dist(mu, sd), observed=released)
    laplace.to_pymc("gamma, laplace", pm.Gamma.dist(mu=mu, sigma=sd), observed=released)
    laplace.to_pymc("lognormal, laplace", pm.LogNormal.dist(mu / 5, sd), observed=released)
    gaussian.to_pymc("lognormal, gaussian", pm.LogNormal.dist(1.0, sd), observed=released)


def _thresholded_value():
    """A Thresholded release of a model variable (the discrete Gaussian log-CDF Op)."""
    mech = dp.Thresholded(dp.DiscreteGaussian(3.0, event_shape=(4,)), threshold=8)
    s = pm.Normal("s", 10.0, 5.0, shape=4)
    mech.to_pymc("released", s, observed=np.array([np.nan, 21.0, np.nan, 12.0]))


def _totals():
    """Cells with exact group totals (the group Op), a county without one, suppressed cells."""
    released = np.array([[np.nan, 9, 6], [12, np.nan, np.nan], [7, 5, np.nan]])
    mech = dp.Thresholded(dp.DiscreteGaussian(2.0), threshold=5)
    log_rate = pm.Normal("log_rate", 1.5, 0.5, shape=(3, 3))
    size = pm.Exponential("total size", 0.2)
    groups = (np.array([0, 1, -1])[:, None], np.array([20, 15]))
    dist = pm.NegativeBinomial.dist(mu=pm.math.exp(log_rate), alpha=size)
    mech.to_pymc("y", dist, observed=released, totals=groups)


@pytest.fixture(scope="module")
def model():
    """Every Op with a JAX implementation, in one model (compiled once per module)."""
    with pm.Model() as model, warnings.catch_warnings():
        warnings.simplefilter("ignore", dp.SharedLatentWarning)
        _discrete(pm.LogNormal("rate", -5.0, 1.0), pm.Exponential("size", 0.2))
        _continuous(pm.Normal("mu", 5.0, 3.0), pm.HalfNormal("sd", 3.0))
        _thresholded_value()
        _totals()
    return model


def _points(model, n=3):
    rng = np.random.default_rng(3)
    base = model.initial_point()
    return [
        {k: v + 0.3 * rng.standard_normal(np.shape(v)) for k, v in base.items()} for _ in range(n)
    ]


def _compiled(model, mode=None):
    """Each observed variable's summed log-likelihood, the log-density and its gradient."""
    terms = [v.sum() for v in model.logp(vars=model.observed_RVs, sum=False)]
    grads = pytensor.grad(model.logp(), model.value_vars)
    return pytensor.function(model.value_vars, [*terms, model.logp(), *grads], mode=mode)


@pytest.fixture(scope="module")
def backends(model):
    """The default backend's and the JAX backend's compiled functions, with each output's rtol."""
    names = [v.name for v in model.observed_RVs] + ["logp"]
    names += [f"d/d {v.name}" for v in model.value_vars]
    continuous = ("normal", "lognormal", "gamma", "logp", "d/d mu", "d/d sd")
    rtols = [CONTINUOUS_RTOL if n.startswith(continuous) else DISCRETE_RTOL for n in names]
    return _compiled(model), _compiled(model, mode="JAX"), names, rtols


def assert_backends_agree(model, backends):
    default, jaxed, names, rtols = backends
    for point in _points(model):
        args = [point[v.name] for v in model.value_vars]
        for name, rtol, want, got in zip(names, rtols, default(*args), jaxed(*args), strict=True):
            np.testing.assert_allclose(np.asarray(got), want, rtol=rtol, atol=0, err_msg=name)


def test_jax_mode_gives_the_default_backends_logp_and_gradient(model, backends):
    assert_backends_agree(model, backends)


def _jax_value_and_grad(model):
    """The log-density and its gradient (negative_logp=False: PyMC returns minus it)."""
    logp = get_jaxified_logp(model, negative_logp=False)
    return jax.jit(jax.value_and_grad(lambda x: -logp(x)))


@pytest.fixture(scope="module")
def value_and_grad(model):
    return _jax_value_and_grad(model)


def test_jax_grad_of_the_logp_equals_pytensors_gradient(model, backends, value_and_grad):
    default, n_terms = backends[0], len(model.observed_RVs)
    for point in _points(model):
        args = [point[v.name] for v in model.value_vars]
        value, grads = value_and_grad(args)
        want_value, *want_grads = default(*args)[n_terms:]
        np.testing.assert_allclose(float(value), want_value, rtol=CONTINUOUS_RTOL)
        for got, want in zip(grads, want_grads, strict=True):
            np.testing.assert_allclose(np.asarray(got), want, rtol=CONTINUOUS_RTOL)


def test_vmap_and_jit_give_each_row_its_own_result(model, value_and_grad):
    points = _points(model, n=2)
    stacked = [np.stack([p[v.name] for p in points]) for v in model.value_vars]
    batched_fn = jax.jit(jax.vmap(value_and_grad))
    batched = batched_fn(stacked)
    batched = batched_fn(stacked)  # a second call starts from the states the first left
    for i, point in enumerate(points):
        value, grads = value_and_grad([point[v.name] for v in model.value_vars])
        np.testing.assert_allclose(batched[0][i], value, rtol=1e-12)
        for got, want in zip(batched[1], grads, strict=True):
            np.testing.assert_allclose(got[i], want, rtol=1e-12)


def _swapped_scores(self, a, b):
    """Planted bug: the callback returns the score of the other parameter for ``a``."""
    logp, score_a, score_b = _HOST_SWEEP_CALL(self, a, b)
    return logp, score_b, score_a


_HOST_SWEEP_CALL = marginal_jax.HostSweep.__call__


def test_planted_bug_a_wrong_score_is_caught(model, backends, monkeypatch):
    # the compiled JAX function calls the class's method at each evaluation
    monkeypatch.setattr(marginal_jax.HostSweep, "__call__", _swapped_scores)
    with pytest.raises(AssertionError, match="d/d"):
        assert_backends_agree(model, backends)


def test_a_cell_beyond_float64s_integers_is_nan_with_the_kernels_message():
    # wide noise leaves the count to the latent: at rate 1e17 its posterior lies beyond 2**53
    with pm.Model() as model:
        rate = pm.LogNormal("rate", 0.0, 1.0)
        dp.DiscreteGaussian(1e14).to_pymc(
            "y", pm.Poisson.dist(mu=rate * 1e15, shape=2), observed=np.array([10**15, 5])
        )
    value_and_grad = _jax_value_and_grad(model)
    with pytest.warns(RuntimeWarning, match=r"2 cell\(s\).*beyond 2\*\*53.*NaN"):
        value, (grad,) = jax.block_until_ready(value_and_grad([np.array(np.log(100.0))]))
    assert np.isnan(value) and np.isnan(grad)


def test_a_second_derivative_is_refused_not_computed():
    mech = dp.DiscreteGaussian(2.0)
    with pm.Model() as model:
        log_rate = pm.Normal("log_rate", 0.0, 1.0)
        mech.to_pymc("cases", pm.Poisson.dist(mu=pm.math.exp(log_rate)), observed=np.array([3, 4]))
    logp = get_jaxified_logp(model, negative_logp=False)
    # JAX's forward mode meets the callback: it raises rather than returning a number
    with pytest.raises(ValueError, match="do not support JVP"):
        jax.hessian(lambda x: logp([x]))(1.0)
    # a gradient of the scores (as PyTensor's own gradient graph, differentiated again)
    (node,) = (n for n in io_toposort([], [model.logp()]) if isinstance(n.op, MarginalLogp))
    op, (form, table) = node.op, (i.data for i in node.inputs[2:4])
    marginal = marginal_jax.marginal_logp_jax(marginal_jax.HostSweep(op, form, table))
    a, b = np.array([3.0, 4.0]), np.zeros(2)
    with pytest.raises(NotImplementedError, match="second derivatives"):
        jax.grad(lambda a: marginal(a, b)[1].sum())(a)


def _host_sweep(counts, kind=None):
    """A HostSweep (or ``kind``) of Poisson cells released with discrete Gaussian noise."""
    mech = dp.DiscreteGaussian(2.0)
    with pm.Model() as model:
        log_rate = pm.Normal("log_rate", 0.0, 1.0)
        mech.to_pymc("cases", pm.Poisson.dist(mu=pm.math.exp(log_rate)), observed=counts)
    (node,) = (n for n in io_toposort([], [model.logp()]) if isinstance(n.op, MarginalLogp))
    kind = kind or marginal_jax.HostSweep
    return kind(node.op, *(i.data for i in node.inputs[2:4]))


def _on_another_thread(call):
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(call).result()


def _warm_on_another_thread(host) -> bool:
    """Whether a call on another thread finds the modes the last call left."""
    a, b = np.array([31.0, 40.0, 55.0]), np.zeros(3)
    host(a, b)
    taken = _on_another_thread(lambda: host._take(1, 3))
    host._put_back(taken)
    return bool(np.all(taken[0][:, 0] >= 0))


def test_a_call_on_another_thread_takes_the_state_the_last_call_left():
    """XLA runs a chain's callbacks on any thread of its pool: the warm state must follow."""
    host = _host_sweep(np.array([30, 41, 52]))
    assert _warm_on_another_thread(host)
    # a call under way keeps its states: one at the same time gets fresh ones
    held = host._take(1, 3)
    other = _on_another_thread(lambda: host._take(1, 3))
    assert other is not held and np.isnan(other[0]).all()


class _PerThread(marginal_jax.HostSweep):
    """Planted bug: states kept per thread (the layout the pool replaced)."""

    def _take(self, rows, n):
        import threading

        local = self.__dict__.setdefault("_local", threading.local())
        if not hasattr(local, "states"):
            local.states = super()._take(rows, n)
        return local.states

    def _put_back(self, states):
        pass


def test_companion_states_kept_per_thread_are_cold_on_another_thread():
    assert not _warm_on_another_thread(_host_sweep(np.array([30, 41, 52]), _PerThread))


def test_the_special_functions_fallbacks_match_scipy_and_their_derivatives():
    from scipy.special import erfcx, gammainc

    from dpinfer import _jax_special as special

    x, a, p = np.array([-2.0, 0.3, 5.0, 40.0]), 2.5, np.array([0.1, 0.5, 0.9, 0.999])
    np.testing.assert_allclose(special.erfcx(x), erfcx(x), rtol=1e-15)
    step = 1e-6
    slope = (erfcx(x + step) - erfcx(x - step)) / (2 * step)
    np.testing.assert_allclose(jax.vmap(jax.grad(special.erfcx))(x), slope, rtol=1e-7)
    q = np.asarray(special.gammaincinv(a, p))
    np.testing.assert_allclose(gammainc(a, q), p, rtol=1e-13)
    slope = (special.gammaincinv(a, p + step) - special.gammaincinv(a, p - step)) / (2 * step)
    dq = jax.vmap(jax.grad(special.gammaincinv, argnums=1), (None, 0))(a, p)
    np.testing.assert_allclose(dq, slope, rtol=1e-6)
    with pytest.raises(NotImplementedError, match="shape a"):
        jax.grad(special.gammaincinv)(a, 0.5)
