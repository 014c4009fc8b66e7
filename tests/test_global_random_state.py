"""No public function touches numpy's global random state (design principle 4).

Each test saves ``np.random.get_state()``, calls public functions with ``rng=None``
and with seeds, and asserts the state is unchanged. The companion shows the
check catches a function that draws from the global state. The neural methods
(``dpinfer.neural``) are checked against torch's global generator as well. Every sampler
is checked with every form of ``rng`` over the sampler registry
(``samplers/test_executors.py``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import dpinfer as dp
from dpinfer import accounting
from dpinfer.audit import audit_epsilon

sys.path.insert(0, str(Path(__file__).parent / "mechanisms"))
from _mechanism_registry import CASES, IDS  # noqa: E402

SEEDS = [None, 0, np.random.SeedSequence(1), "generator"]


def _rng(seed):
    return np.random.default_rng(2) if seed == "generator" else seed


def _global_state():
    return np.random.get_state()  # noqa: NPY002 - reading the legacy state is the point


def _assert_untouched(before):
    after = _global_state()
    message = "numpy's global random state was advanced"
    assert before[0] == after[0], message
    np.testing.assert_array_equal(before[1], after[1], err_msg=message)
    assert before[2:] == after[2:], message


def _check(fn):
    saved = _global_state()
    try:
        np.random.seed(12345)  # noqa: NPY002 - a known global state to compare against
        before = _global_state()
        fn()
        _assert_untouched(before)
    finally:
        np.random.set_state(saved)  # noqa: NPY002 - leave the process as we found it


@pytest.mark.parametrize("case", CASES, ids=IDS)
@pytest.mark.parametrize("seed", SEEDS, ids=["None", "int", "SeedSequence", "Generator"])
def test_mechanisms_leave_the_global_state_alone(case, seed):
    def work():
        es = case.event_shapes[-1]
        mech = case.make(es)
        values = case.draw_values(np.random.default_rng(0), (3, *es))
        released = mech.release(values, rng=_rng(seed))
        mech.logpdf(released[0], values)
        mech.log_max_density_at(released[0])
        _ = mech.log_max_density, mech.privacy

    _check(work)


@pytest.mark.parametrize("seed", SEEDS, ids=["None", "int", "SeedSequence", "Generator"])
def test_sparse_vector_and_audit_leave_the_global_state_alone(seed):
    def work():
        for resample in (False, True):
            svt = dp.SparseVector.from_privacy(
                epsilon=1.0, threshold=0.0, c=2, sensitivity=1.0, resample=resample
            )
            svt.run(np.linspace(-2, 2, 30), rng=_rng(seed))
        mech = dp.Laplace(1.0)
        audit_epsilon(
            lambda n, rng: mech.release(np.zeros(n), rng=rng),
            lambda n, rng: mech.release(np.ones(n), rng=rng),
            n_select=500,
            n_test=500,
            rng=_rng(seed),
        )

    _check(work)


def test_calibration_and_accounting_leave_the_global_state_alone():
    def work():
        dp.Gaussian.from_privacy(epsilon=1.0, delta=1e-5, sensitivity=1.0).privacy
        dp.DiscreteGaussian.from_privacy(epsilon=1.0, delta=1e-5, sensitivity=1).privacy
        dp.DiscreteGaussian(3.0, sensitivity=1, delta=1e-6).privacy
        accounting.rdp_to_approx([2.0, 4.0], [0.1, 0.2], 1e-5)

    _check(work)


@pytest.mark.parametrize("seed", SEEDS, ids=["None", "int", "SeedSequence", "Generator"])
def test_prior_sample_leaves_the_global_state_alone(seed):
    import scipy.stats as st

    prior = dp.Prior({"theta": st.gamma(3.0), "mu": st.norm(0, 1)})
    _check(lambda: prior.sample(5, _rng(seed)))
    _check(lambda: prior.sample(5))  # rng left out: fresh OS entropy, not np.random


def test_companion_a_prior_drawn_from_the_global_state_is_caught():
    import scipy.stats as st

    prior = dp.Prior({"theta": st.gamma(3.0)})
    # scipy draws from NumPy's global RandomState when random_state is None
    with pytest.raises(AssertionError, match="global random state was advanced"):
        _check(lambda: prior._spec["theta"].rvs(size=5, random_state=None))


def test_companion_a_global_draw_is_caught():
    class LegacyLaplace(dp.Laplace):
        def _sample(self, value, rng):
            return value + np.random.laplace(0.0, 1.0, size=value.shape) * self.scale  # noqa: NPY002

    with pytest.raises(AssertionError, match="global random state was advanced"):
        _check(lambda: LegacyLaplace(1.0).release(np.zeros(3), rng=0))


def _torch_check(fn):
    """Run ``fn`` under :func:`_check` and assert torch's global generator did not move."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(2024)
    before = torch.random.get_rng_state()
    _check(fn)
    assert torch.equal(torch.random.get_rng_state(), before), "torch's global state was advanced"


# the runs are tiny on purpose: their R-hat warning is expected and beside the point here
@pytest.mark.filterwarnings("ignore:sple. the final chains have R-hat:RuntimeWarning")
@pytest.mark.parametrize("seed", SEEDS, ids=["None", "int", "SeedSequence", "Generator"])
def test_neural_methods_leave_numpy_and_torch_global_states_alone(seed):
    pytest.importorskip("torch")
    import scipy.stats as st
    from neural import _toy

    from dpinfer.neural import MCMC, SplineFlow, Training, c2st, sple, sppe

    model = dp.Model(
        prior={"theta": st.norm(0, 1)},
        simulate=lambda p, rng: p["theta"] + rng.standard_normal(len(p["theta"])),
    )
    tiny = _toy.tiny_settings(
        rounds=2,
        simulations=60,
        flow=SplineFlow(transforms=1, hidden_features=4, residual_blocks=1, bins=3),
        training=Training(max_epochs=1, batch_size=30),
    )

    def work():
        _, post = sppe(model, dp.Laplace(1.0), 0.5, rng=_rng(seed), **tiny)
        post.sample(0.1, draws=8, rng=_rng(seed))
        mcmc = MCMC(warmup=5, thin=1, proposal_chains=2, initial_candidates=20)
        _, lik = sple(model, dp.Laplace(1.0), 0.5, rng=_rng(seed), mcmc=mcmc, **tiny)
        lik.posterior(0.1, model.prior, draws=8, mcmc=mcmc, rng=_rng(seed))
        c2st(np.zeros((40, 1)), np.ones((40, 1)), folds=2, epochs=1, rng=_rng(seed))

    _torch_check(work)


def test_companion_a_global_torch_draw_is_caught():
    torch = pytest.importorskip("torch")
    with pytest.raises(AssertionError, match="torch's global state was advanced"):
        _torch_check(lambda: torch.randn(2))
