"""Continuous latents other than the Normal, integrated by quadrature against scipy's ``quad``.

The reference integrates ``p(s) eta(y | s)`` with ``scipy.integrate.quad`` at relative
tolerance 1e-13 over pieces cut at the latent's quantile decades and at ``y + k a``
(k up to 60 noise scales), on the latent's range between its 1e-14 and 1 - 1e-14
quantiles. Cells span latent-to-noise scale ratios from 1e-3 to 1e3 and releases from
the latent's 1% quantile to 5 noise scales beyond its median. Deterministic: no false
failures. (Not an Exponential with a Python float rate: PyMC stores its scale in float32,
1e-7 off. Not a Gamma of shape 0.1 at a release near 0: there ``quad`` is the one that is
off, by 0.19 in the log, where the closed form a^-0.9 2^-0.95 Gamma(0.05) / (Gamma(0.1)
sqrt(2 pi)) agrees with dpinfer to 1e-9.)

``quad`` evaluates scipy's densities written out with :mod:`math` (a frozen distribution's
``pdf`` costs about 0.1 ms a point, a minute over the ~100 000 points); the test below
checks each against scipy's ``logpdf`` over the latent's range. Each (family, noise)
reference is computed once per module.
"""

from __future__ import annotations

import functools
import math
import warnings

import numpy as np
import pymc as pm
import pytest
import scipy.integrate as si
import scipy.stats as st

import dpinfer as dp
from dpinfer.marginal import _quadrature

# measured worst error 1.2e-10 (log scale); the bound leaves room for the reference's own
TOLERANCE = 1e-8
SCALES = (1e-3, 1.0, 1e3)

FAMILIES = {
    "gamma_singular": (lambda: pm.Gamma.dist(0.5, 1.0), st.gamma(0.5)),
    "gamma_narrow": (lambda: pm.Gamma.dist(400.0, 0.1), st.gamma(400, scale=10.0)),
    "lognormal": (lambda: pm.LogNormal.dist(1.0, 0.5), st.lognorm(0.5, scale=np.e)),
    "beta": (lambda: pm.Beta.dist(2.0, 5.0), st.beta(2, 5)),
    "student_t": (lambda: pm.StudentT.dist(nu=3.0, mu=1.0, sigma=2.0), st.t(3, loc=1, scale=2)),
}


def _gamma(shape, scale):
    const = -math.lgamma(shape) - shape * math.log(scale)
    return lambda s: (shape - 1) * math.log(s) - s / scale + const


def _lognormal(sigma, mu):
    const = -math.log(sigma * math.sqrt(2 * math.pi))
    return lambda s: const - math.log(s) - (math.log(s) - mu) ** 2 / (2 * sigma**2)


def _beta(a, b):
    const = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    return lambda s: (a - 1) * math.log(s) + (b - 1) * math.log1p(-s) + const


def _student_t(nu, loc, scale):
    const = (
        math.lgamma((nu + 1) / 2) - math.lgamma(nu / 2) - math.log(math.sqrt(nu * math.pi) * scale)
    )
    return lambda s: const - (nu + 1) / 2 * math.log1p(((s - loc) / scale) ** 2 / nu)


#: Each family's scipy log-density in scalar :mod:`math` (checked against scipy's below).
LOGPDF = {
    "gamma_singular": _gamma(0.5, 1.0),
    "gamma_narrow": _gamma(400.0, 10.0),
    "lognormal": _lognormal(0.5, 1.0),
    "beta": _beta(2.0, 5.0),
    "student_t": _student_t(3.0, 1.0, 2.0),
}


def _noise_logpdf(noise, y, a):
    """The noise's log-density at ``s`` given the release ``y``: scipy's norm or laplace."""
    if noise is dp.Gaussian:
        const = -math.log(a * math.sqrt(2 * math.pi))
        return lambda s: const - ((s - y) / a) ** 2 / 2
    const = -math.log(2 * a)
    return lambda s: const - abs(s - y) / a


def _cells(frozen):
    return [
        (a, y)
        for a in SCALES
        for y in (frozen.ppf(0.01), frozen.median(), frozen.median() + 5 * a)
    ]


@pytest.fixture(autouse=True)
def _quiet_quad():
    with warnings.catch_warnings():
        # quad's round-off notices on the far pieces, whose integrals are below 1e-12
        warnings.simplefilter("ignore", si.IntegrationWarning)
        yield


def _reference(name, noise, a, y):
    frozen, log_p, log_eta = FAMILIES[name][1], LOGPDF[name], _noise_logpdf(noise, y, a)
    lo, hi = frozen.ppf(1e-14), frozen.isf(1e-14)
    decades = 10.0 ** -np.arange(1, 14)
    cuts = [y + k * a for k in (-60, -30, -10, -3, -1, 0, 1, 3, 10, 30, 60)]
    cuts += [*frozen.ppf(decades), *frozen.isf(decades), frozen.median()]
    points = sorted({lo, hi, *(p for p in cuts if lo < p < hi)})
    total = sum(
        si.quad(lambda s: math.exp(log_p(s) + log_eta(s)), left, right, epsabs=0, epsrel=1e-13)[0]
        for left, right in zip(points[:-1], points[1:], strict=False)
    )
    return np.log(total)


@functools.cache
def _references(name, noise):
    """``_reference`` of every cell of family ``name``: computed once per module and noise."""
    return np.array([_reference(name, noise, a, y) for a, y in _cells(FAMILIES[name][1])])


def test_the_references_use_scipys_densities():
    for name, (_, frozen) in FAMILIES.items():
        s = np.linspace(frozen.ppf(1e-14), frozen.isf(1e-14), 2001)
        s = np.concatenate([s, frozen.ppf(10.0 ** -np.arange(1, 14))])
        got = np.array([LOGPDF[name](v) for v in s])
        np.testing.assert_allclose(got, frozen.logpdf(s), rtol=1e-12, atol=1e-12, err_msg=name)
    for noise, frozen in ((dp.Gaussian, st.norm(1.5, 0.3)), (dp.Laplace, st.laplace(1.5, 0.3))):
        s = np.linspace(-30.0, 30.0, 2001)
        got = np.array([_noise_logpdf(noise, 1.5, 0.3)(v) for v in s])
        np.testing.assert_allclose(got, frozen.logpdf(s), rtol=1e-12, atol=1e-12)


def _marginal_logps(noise):
    """Every family's cells in one model (one compilation): ``{family: per-cell logp}``."""
    with pm.Model() as model:
        for name, (dist, frozen) in FAMILIES.items():
            cells = _cells(frozen)
            mech = noise(np.array([a for a, _ in cells]), sensitivity=1.0)
            dp.to_pymc(name, dist(), observed=[(mech, np.array([y for _, y in cells]))])
    values = model.compile_logp(sum=False)({})
    return dict(zip(FAMILIES, values, strict=True))


@pytest.fixture(scope="module", params=[dp.Gaussian, dp.Laplace], ids=["gaussian", "laplace"])
def noise_and_logps(request):
    return request.param, _marginal_logps(request.param)


def _errors(noise, logps, names=tuple(FAMILIES)):
    errors = {}
    for name in names:
        errors[name] = float(np.max(np.abs(logps[name] - _references(name, noise))))
    return errors


def test_matches_adaptive_integration_across_scales(noise_and_logps):
    errors = _errors(*noise_and_logps)
    assert max(errors.values()) < TOLERANCE, errors


def test_planted_coarse_pieces_fail_the_check(monkeypatch):
    """Without the quantile decades, the Gamma of shape 1/2 (singular at 0) is off by 3.1e-8."""
    monkeypatch.setattr(_quadrature, "_QUANTILES", np.array([0.05, 0.5, 0.95]))
    monkeypatch.setattr(_quadrature, "_MEDIAN", 2)
    errors = _errors(dp.Laplace, _marginal_logps(dp.Laplace), names=["gamma_singular"])
    assert errors["gamma_singular"] > TOLERANCE


def test_gradient_matches_finite_differences():
    released = np.array([3.2, 0.4, 11.0, 6.5])
    with pm.Model() as model:
        shape = pm.HalfNormal("shape", 5.0)
        rate = pm.HalfNormal("rate", 2.0)
        mech = dp.Laplace(np.array([0.5, 1.0, 2.0, 0.1]), sensitivity=1.0)
        dp.to_pymc("totals", pm.Gamma.dist(shape, rate), observed=[(mech, released)])
    logp, dlogp = model.compile_logp(), model.compile_dlogp()
    point = {"shape_log__": np.log(2.5), "rate_log__": np.log(0.6)}
    h, grad = 1e-5, dlogp(point)
    for i, key in enumerate(point):
        up, down = dict(point), dict(point)
        up[key] += h
        down[key] -= h
        numeric = (logp(up) - logp(down)) / (2 * h)
        assert grad[i] == pytest.approx(numeric, rel=1e-5, abs=1e-6)


def test_far_from_the_release_the_value_is_finite_and_rises_towards_it():
    with pm.Model() as model:
        log_mean = pm.Normal("log_mean", 0.0, 10.0)
        dp.to_pymc(
            "x",
            pm.LogNormal.dist(log_mean, 0.1),
            observed=[(dp.Gaussian(0.01, sensitivity=1.0), np.array([50.0]))],
        )
    logp = model.compile_logp(jacobian=False, sum=False)
    values = [logp({"log_mean": m})[1] for m in (-6.0, -3.0, 0.0, 2.0, np.log(50.0))]
    values = np.concatenate(values)
    assert np.all(np.isfinite(values))
    assert np.all(np.diff(values) > 0)


def test_prior_predictive_draws_the_latent_then_the_noise():
    with pm.Model():
        dp.to_pymc(
            "x", pm.Gamma.dist(4.0, 2.0), observed=[(dp.Laplace(0.1, sensitivity=1.0), [1.0] * 3)]
        )
        draws = pm.sample_prior_predictive(4000, random_seed=3).prior_predictive["x"].values
    assert draws.shape == (1, 4000, 3)
    # mean 2 (the Gamma's), variance 1 + 2 * 0.1^2: 4000 draws put the mean within 0.1 (6 se)
    assert abs(draws.mean() - 2.0) < 0.1


def test_a_continuous_latent_without_a_quantile_function_is_refused():
    with pm.Model(), pytest.raises(ValueError, match="ExGaussian.*no bound on its tail"):
        dp.to_pymc(
            "x",
            pm.ExGaussian.dist(mu=0.0, sigma=1.0, nu=1.0),
            observed=[(dp.Laplace(1.0, sensitivity=1.0), [0.0])],
        )


def test_discrete_or_suppressing_mechanisms_are_refused_for_a_continuous_latent():
    with pm.Model(), pytest.raises(ValueError, match="needs an integer confidential value"):
        dp.to_pymc("x", pm.Gamma.dist(2.0, 1.0), observed=[(dp.DiscreteLaplace(1.0), [3])])
    thresholded = dp.Thresholded(dp.Laplace(1.0, sensitivity=1.0), threshold=2.0)
    with pm.Model(), pytest.raises(ValueError, match="Gaussian or Laplace noise"):
        dp.to_pymc("x", pm.Gamma.dist(2.0, 1.0), observed=[(thresholded, [np.nan, 3.0])])
