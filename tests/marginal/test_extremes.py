"""Marginal likelihoods at extreme sizes: exact to ``tol`` over the whole range, or refused.

Issue 28: a latent mean of 10^12 and above put the log-likelihood beyond its ``tol``
(7.4e-5 at 10^12, 1.8 nats at 10^15: the textbook log-pmf ``s log mu - mu - log s!``
cancels its digits away), and a release at 2**53 made ``to_pymc`` hang (float64 stops
counting in steps of one there). The log-pmfs (Loader's forms) are checked against
mpmath across the decades, with the textbook formula as the planted companion that
must fail the same check; the whole kernel against an mpmath sum at ``y = mean + 3``
for every family whose log-pmf cancels (Poisson, binomial, negative binomial), in
its general path and (Poisson) its fast path; releases and latent means beyond 2**53
are refused with the cells named.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pymc as pm
import pytest

import dpinfer as dp
from dpinfer.marginal import _families as F
from dpinfer.marginal._forms import joined_form, kernel_form, release_form
from dpinfer.marginal._log_pmf import TEXTBOOK, poisson_log_shape
from dpinfer.marginal._poisson import STATE
from dpinfer.marginal._sweep import sweep_cells

TOL = 1e-10
DECADES = [10.0**k for k in range(16)]
# a log-pmf must be within this of the exact value: a tenth of the kernel's tol
PMF_ATOL = 1e-11


def _textbook(family, a, b, s, lib=math):
    """The log-pmf as textbooks write it: in float64 (``math``), the planted bug."""
    lgamma = getattr(lib, "lgamma", None) or lib.loggamma
    if family == "poisson":
        return s * lib.log(a) - a - lgamma(s + 1)
    if family == "binomial":
        return (
            lgamma(a + 1)
            - lgamma(s + 1)
            - lgamma(a - s + 1)
            + s * lib.log(b)
            + (a - s) * lib.log1p(-b)
        )
    return lgamma(s + a) - lgamma(a) - lgamma(s + 1) + a * lib.log(b) + s * lib.log1p(-b)


def _exact_log_pmf(family, a, b, s):
    """The same formula at 60 digits (mpmath)."""
    with mp.workdps(60):
        return float(_textbook(family, mp.mpf(a), mp.mpf(b), mp.mpf(s), lib=mp))


def _parameters(family, mean):
    """``(a, b)`` of ``family`` with the given mean."""
    if family == "poisson":
        return mean, 0.0
    if family == "binomial":
        return 4.0 * mean, 0.25
    return 10.0, 10.0 / (10.0 + mean)


FAMILIES = {"poisson": F.POISSON, "binomial": F.BINOMIAL, "negative_binomial": F.NEGATIVE_BINOMIAL}


def _worst_error(family, log_pmf):
    worst = 0.0
    for mean in DECADES:
        a, b = _parameters(family, mean)
        for offset in (-3, 0, 3, 1000):
            s = float(max(0, round(mean) + offset))
            if family == "binomial" and s > a:
                continue
            worst = max(worst, abs(log_pmf(family, a, b, s) - _exact_log_pmf(family, a, b, s)))
    return worst


@pytest.mark.parametrize("family", FAMILIES)
def test_log_pmfs_are_exact_across_the_decades(family):
    compiled = FAMILIES[family].log_pmf
    assert _worst_error(family, lambda _, a, b, s: compiled(a, b, s)) < PMF_ATOL


@pytest.mark.parametrize("family", FAMILIES)
def test_companion_the_textbook_log_pmf_fails_the_same_check(family):
    assert _worst_error(family, _textbook) > 1e3 * PMF_ATOL


def _exact_marginal(family, a, b, y, sigma=2.0):
    """``log sum_s p(s) eta(y | s)`` for discrete Gaussian noise, at 60 digits."""
    log_z = dp.DiscreteGaussian(sigma).cell_form(0)["log_norm"][0]
    with mp.workdps(60):
        terms = []
        for s in range(max(0, y - 60), y + 61):
            if family == "binomial" and s > a:
                continue
            log_noise = -(mp.mpf(y - s) ** 2) / (2 * sigma**2) + log_z
            terms.append(_exact_log_pmf(family, a, b, s) + log_noise)
        top = max(terms)
        return float(top + mp.log(mp.fsum(mp.exp(mp.mpf(t) - top) for t in terms)))


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("mean", [1e3, 1e6, 1e9, 1e12, 1e15], ids=lambda m: f"{m:.0e}")
def test_marginal_log_likelihood_within_tol_at_every_size(family, mean):
    # DG(2) over the latent at y = mean + 3, in the general sum (a fresh state) and then,
    # for the Poisson, the fast path (the kept state)
    y = int(mean) + 3
    a, b = _parameters(family, mean)
    form = kernel_form(*joined_form([release_form(dp.DiscreteGaussian(2.0), np.array([y]), True)]))
    state = np.full((1, STATE), np.nan)
    out = [np.empty(1) for _ in range(3)]
    exact = _exact_marginal(family, a, b, y)
    for _ in range(2):
        sweep_cells(
            FAMILIES[family], np.array([a]), np.array([b]), *form, TOL, state,
            *out, np.empty(1, dtype=np.int64), 0, 1,
        )  # fmt: skip
        assert abs(out[0][0] - exact) <= TOL


def test_a_release_at_or_beyond_2_53_is_refused_naming_the_cell():
    released = np.array([3, 2**53, 7, -(2**60)])
    with pm.Model(), pytest.raises(ValueError, match=r"2\*\*53.*2 of 4 entries.*\[1\], \[3\]"):
        dp.DiscreteGaussian(2.0).to_pymc("y", pm.Poisson.dist(mu=30.0, shape=4), observed=released)


def test_a_latent_mean_that_puts_the_count_beyond_2_53_is_refused_naming_the_cell():
    # wide noise leaves the count to the latent: at rate 1e17 its posterior lies beyond 2**53
    with pm.Model() as model:
        rate = pm.LogNormal("rate", 0.0, 1.0)
        dp.DiscreteGaussian(1e14).to_pymc(
            "y", pm.Poisson.dist(mu=rate * 1e15, shape=2), observed=np.array([10**15, 5])
        )
    logp = model.compile_logp()
    with pytest.raises(FloatingPointError, match=r"2 cell\(s\).*beyond 2\*\*53"):
        logp({"rate_log__": np.log(100.0)})


def test_a_count_pinned_just_below_2_53_is_summed_exactly():
    # noise far narrower than a count: all the mass sits at the release, 2**53 - 2 (where the
    # log-likelihood is -6.9e16: a float64 holds it to 1e-15 relative, not 1e-10 absolute)
    y = 2**53 - 2
    with pm.Model() as model:
        dp.DiscreteGaussian(0.01).to_pymc("y", pm.Poisson.dist(mu=1e17), observed=np.array(y))
    got = model.compile_logp()({})
    log_norm = dp.DiscreteGaussian(0.01).cell_form(0)["log_norm"][0]
    assert got == pytest.approx(_exact_log_pmf("poisson", 1e17, 0.0, y) + log_norm, rel=1e-15)


def _worst_shape_error(shape) -> float:
    """The largest relative error of ``shape(s)`` as ``-log s!``, s = 0 to TEXTBOOK + 4."""
    worst = 0.0
    for s in range(int(TEXTBOOK) + 5):
        with mp.workdps(40):
            exact = -mp.log(mp.factorial(s))
        if s >= TEXTBOOK:  # Stirling's form: the part of log p that depends on s alone there
            with mp.workdps(40):
                exact += s * mp.log(s) - s
        worst = max(worst, abs(shape(float(s)) - float(exact)) / max(1.0, abs(float(exact))))
    return worst


def test_the_poisson_log_shape_read_from_its_table_is_log_factorial():
    assert _worst_shape_error(poisson_log_shape) < 1e-14


def test_companion_a_table_read_one_entry_off_fails_the_same_check():
    assert _worst_shape_error(lambda s: poisson_log_shape(s + 1.0)) > 1e-3
