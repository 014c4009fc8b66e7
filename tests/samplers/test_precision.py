"""Numerics at the extremes in the ABC samplers (issue 19, section 4).

* a vague prior sends simulations to billions, where the discrete Gaussian's int64 square
  overflowed: ``smc_abc`` put every draw at log theta = 23 (truth 4.6) and
  ``rejection_abc`` blamed the density bound. Both now match the exact posterior, and a
  planted copy of the old formula fails the same checks; the density-bound error names
  overflow as the cause when the values are that large;
* a release so large that float64 rounding swamps the noise (1e17 against Laplace(5)),
  named in a :class:`dpinfer.PrecisionWarning` by every sampler of the registry that
  supports it (``_sampler_registry.py``), and a prior of scale 1e300: named, or refused
  where the sampler cannot run (SMC's random-walk covariance).

Seeds are fixed, so the outcomes are deterministic; the quoted false-failure rates are
those of the checks under a random seed.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
import scipy.stats as st
from scipy.special import logsumexp

import dpinfer as dp

from ._sampler_registry import SAMPLERS, Problem

Z_MAX = 4.0  # |z| threshold: false-failure rate 6e-5 per two-sided normal-approximation test
RELEASE = 100


def _poisson_model(**kwargs):
    """log theta ~ N(0, 10): prior draws reach theta = e^40, simulations 2e17."""
    return dp.Model(
        prior={"log_theta": st.norm(0, 10)},
        simulate=lambda p, rng: rng.poisson(np.exp(np.minimum(p["log_theta"], 40.0))),
        **kwargs,
    )


class OldSquare(dp.DiscreteGaussian):
    """Planted bug: the former log-density, whose int64 square overflows from 3.04e9 on."""

    def _log_density(self, xp, released, value):
        return self._log_norm - xp.square(released - value) / (2 * self.sigma**2)


@pytest.fixture(scope="module")
def exact_posterior():
    """Mean and sd of log theta given the release, by quadrature over log theta and counts."""
    grid = np.linspace(3.6, 5.6, 4001)
    k = np.arange(0, 400)
    log_pmf = dp.DiscreteGaussian(1.0).logpdf(RELEASE, k)  # exact for these small counts
    log_lik = logsumexp(st.poisson.logpmf(k[None, :], np.exp(grid)[:, None]) + log_pmf, axis=1)
    log_post = st.norm(0, 10).logpdf(grid) + log_lik
    w = np.exp(log_post - logsumexp(log_post))
    mean = float(w @ grid)
    return mean, float(np.sqrt(w @ (grid - mean) ** 2))


def check_posterior_mean(idata, exact, ess):
    """|mean - exact| within Z_MAX Monte Carlo standard errors (sd / sqrt(ESS))."""
    mean, sd = exact
    got = float(idata.posterior["log_theta"].mean())
    se = sd / np.sqrt(ess)
    assert abs(got - mean) < Z_MAX * se, f"posterior mean {got} against exact {mean} (se {se})"


def _smc(mech):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the planted run degenerates
        return dp.smc_abc(
            _poisson_model(),
            mech,
            RELEASE,
            particles=400,
            chains=2,
            simulations_per_particle=1,
            rng=1,
            progressbar=False,
        )


def test_smc_with_a_vague_prior_matches_the_exact_posterior(exact_posterior):
    idata = _smc(dp.DiscreteGaussian(1.0, sensitivity=1))
    check_posterior_mean(idata, exact_posterior, idata.attrs["ess"])


def test_smc_planted_old_square_fails_the_check(exact_posterior):
    idata = _smc(OldSquare(1.0, sensitivity=1))
    with pytest.raises(AssertionError, match="posterior mean"):
        check_posterior_mean(idata, exact_posterior, max(idata.attrs["ess"], 1.0))


def test_rejection_with_a_vague_prior_matches_the_exact_posterior(exact_posterior):
    mech = dp.DiscreteGaussian(1.0, sensitivity=1)
    idata = dp.rejection_abc(_poisson_model(), mech, RELEASE, draws=400, rng=2, progressbar=False)
    check_posterior_mean(idata, exact_posterior, 400)


def test_rejection_names_integer_overflow_as_the_cause_of_an_exceeded_bound():
    # the planted old formula: its density exceeds the bound at simulations above 3.04e9
    with pytest.raises(RuntimeError) as info:
        dp.rejection_abc(
            _poisson_model(), OldSquare(1.0), RELEASE, draws=100, rng=2, progressbar=False
        )
    message = str(info.value)
    assert "exceeded its stated supremum" in message
    assert re.search(r"overflows \(from 3\.04e\+09 on\)", message), message
    assert "OldSquare.logpdf is not exact there" in message


class WrongBound(dp.Laplace):
    """Planted bug: a supremum 1 nat too small, at ordinary values."""

    def log_max_density_at(self, released):
        return super().log_max_density_at(released) - 1.0


class NanDensity(dp.Laplace):
    """Planted bug: NaN (0 * inf) at values beyond 10."""

    def _log_density(self, xp, released, value):
        base = super()._log_density(xp, released, value)
        return np.where(np.abs(value) > 10, np.nan, base)


def test_rejection_blames_the_bound_only_when_no_numerics_explain_it():
    model = dp.Model(prior={"mu": st.norm(0, 3)}, simulate=lambda p, rng: rng.normal(p["mu"], 1))
    with pytest.raises(RuntimeError, match="log_max_density_at is wrong for this release"):
        dp.rejection_abc(model, WrongBound(2.0), 1.0, draws=10, rng=1, progressbar=False)
    with pytest.raises(RuntimeError, match=r"NanDensity.logpdf returned NaN at \d+ of"):
        dp.rejection_abc(model, NanDensity(2.0), 1.0, draws=10, rng=1, progressbar=False)


# --- releases where float64 rounding swamps the noise -----------------------------------------

OFFSET = 1e17  # float64 spacing 16 here, against a Laplace scale of 5


def _shifted(integer: bool, mechanism, released) -> Problem:
    """Counts shifted by 1e17: floats are rounded to multiples of 16, int64 are exact."""
    shift = 10**17 if integer else OFFSET

    def shifted_counts(p, rng):
        return shift + rng.poisson(p["theta"])

    return Problem(simulate=shifted_counts, mechanism=mechanism, released=released, offset=shift)


PRECISION = [case for case in SAMPLERS if case.supports("precision")]
COARSE = r"the release 1e\+17 is so large that float64 rounding \(spacing 16\) swamps the Laplace"


def _run(case, problem):
    return case.run(problem, rng=1)


@pytest.mark.parametrize("case", PRECISION, ids=str)
def test_a_release_where_rounding_swamps_the_noise_is_named(case):
    with pytest.warns(dp.PrecisionWarning, match=f"{case.name}: {COARSE} noise of scale 5"):
        _run(case, _shifted(False, dp.Laplace(5.0), OFFSET + 17.4))


def test_a_release_that_rounding_leaves_alone_is_not_flagged():
    # spacing(1e12) = 1.2e-4 against a scale of 5: below 1/100 of it (the planted check)
    with warnings.catch_warnings():
        warnings.simplefilter("error", dp.PrecisionWarning)
        model = dp.Model(prior={"theta": st.gamma(25)}, simulate=lambda p, rng: 1e12 + p["theta"])
        dp.importance_abc(model, dp.Laplace(5.0), 1e12 + 25.0, draws=400, rng=1, progressbar=False)


@pytest.mark.parametrize("case", PRECISION, ids=str)
def test_integer_families_flag_only_float_simulations(case):
    mech = dp.DiscreteLaplace(5.0)
    released = 10**17 + 17
    with pytest.warns(
        dp.PrecisionWarning, match="the simulator returns floats, and at the release"
    ):
        _run(case, _shifted(False, mech, released))
    with warnings.catch_warnings():  # int64 simulations are exact at any size
        warnings.simplefilter("error", dp.PrecisionWarning)
        _run(case, _shifted(True, mech, released))


# --- a prior of scale 1e300 -------------------------------------------------------------------


def _vast_prior_model():
    return dp.Model(
        prior={"mu": st.norm(0, 1e300)}, simulate=lambda p, rng: rng.normal(p["mu"], 1.0)
    )


def test_smc_refuses_particles_whose_covariance_overflows_and_names_the_parameter():
    # issue 19: mean 6.8e296 and sd inf, with NumPy warnings only
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # and no NumPy warning on the way
        warnings.simplefilter("ignore", dp.PrecisionWarning)
        with pytest.raises(
            ValueError, match=r"the particles of 'mu' reach .*covariance overflows"
        ):
            dp.smc_abc(_vast_prior_model(), dp.Laplace(5.0), 3.0, particles=200, rng=1,
                       progressbar=False)  # fmt: skip


def test_importance_names_unresolved_weights_and_overflowing_draws():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dp.importance_abc(
            _vast_prior_model(), dp.Laplace(5.0), 3.0, draws=400, rng=1, progressbar=False
        )
    messages = [str(w.message) for w in caught]
    precision = [
        m for w, m in zip(caught, messages, strict=True) if w.category is dp.PrecisionWarning
    ]
    assert any(
        "the largest log weight is" in m and "swamps the differences" in m for m in precision
    )
    assert any("posterior draws of 'mu' reach" in m for m in precision)
    # nothing but dpinfer's own words: no bare NumPy overflow warning
    assert not [m for m in messages if m.startswith(("overflow", "invalid value"))], messages
