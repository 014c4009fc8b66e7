r"""Disease rates of 3,143 counties from a table of discrete Gaussian counts (zCDP).

A health department releases the new-case count of every county, each plus
discrete Gaussian noise at ``rho``-zCDP (sensitivity 1), with the counties'
populations, which are public. The analyst fits the standard hierarchical
Poisson model, non-centred,

.. math::

    \text{cases}_i \sim \text{Poisson}(\text{pop}_i\, r_i), \quad
    \log r_i = \mu + \tau z_i, \quad z_i \sim N(0, 1), \quad
    \mu \sim N(-9, 2^2), \quad \tau \sim \text{HalfNormal}(1),

once **naively** (the releases taken as the counts, the negative ones set to
0 since a count cannot be negative) and once **exactly**: each county's true
count summed out against the noise,
``mech.to_pymc("cases", pm.Poisson.dist(mu=pop * r), observed=released)``
(:mod:`dpinfer.marginal`), so that NUTS samples the posterior given the release.

The data are **synthetic**: 3,143 counties (the number of US counties and county
equivalents) with made-up populations, log-normal with median 26,000 and log-sd 1.5, close
to the spread of US county populations (median about 26,000, from under 100 to about 10
million); true rates drawn from the model at ``mu = -8.5`` (about 20 cases per 100,000) and
``tau = 0.5``; counts drawn from the Poisson and released through the mechanism, all from a
fixed seed (:data:`DATA_SEED`), so that every run analyses the same table. The example seeds
the noise to be repeatable; a real curator draws it from OS entropy (``rng=None``).

References
----------
.. [1] Canonne, C. L., Kamath, G. and Steinke, T. (2020). The discrete
   Gaussian for differential privacy. NeurIPS 33.
.. [2] Bun, M. and Steinke, T. (2016). Concentrated differential privacy:
   simplifications, extensions, and lower bounds. TCC 2016, Proposition 1.3.

Examples
--------
>>> from dpinfer.models import county_rates as cr
>>> table = cr.simulate()
>>> population = table["population"]
>>> population.size, int(np.median(population)), int(population.min()), int(population.max())
(3143, 27558, 106, 8849466)
>>> guarantee = cr.privacy(cr.mechanism(0.5))  # per count, and for the whole table
>>> guarantee["rho"], round(guarantee["epsilon"], 3), guarantee["delta"]
(0.5, 5.757, 1e-06)
"""

from __future__ import annotations

import functools
import time

import numpy as np

import dpinfer as dp
from dpinfer import validate
from dpinfer.example import (
    NUTS_OPTIONS,
    Example,
    Option,
    Report,
    Result,
    between,
    draw_rows,
    fit_each,
    idata_draws,
    integer,
    new_figure,
    nuts_note,
    nuts_options,
    value_rows,
)
from dpinfer.random import RNGLike
from dpinfer.results import effective_sample_size, rhat

__all__ = [
    "COUNTIES",
    "DATA_SEED",
    "DELTA",
    "RHO",
    "TRUE_MU",
    "TRUE_TAU",
    "differences",
    "mechanism",
    "privacy",
    "pymc_model",
    "run",
    "sample",
    "simulate",
]

#: The number of US counties and county equivalents.
COUNTIES = 3143
#: zCDP budget of each released count (sigma = 1 / sqrt(2 rho) = 1).
RHO = 0.5
#: The delta at which the (epsilon, delta) guarantee is reported.
DELTA = 1e-6
#: The hyperparameters that generated the synthetic rates.
TRUE_MU, TRUE_TAU = -8.5, 0.5
#: Priors: mu ~ Normal(mean, sd), tau ~ HalfNormal(sd).
PRIOR_MU, PRIOR_TAU = (-9.0, 2.0), 1.0
#: Seed of the synthetic table (populations, rates, counts, release).
DATA_SEED = 20_200_401
#: Counties shown in the report: those where the naive and exact posteriors differ most.
SHOWN = 5
PER = 1e5  # the report gives rates per 100,000 persons
LABELS = {"naive": "naive (release as counts)", "exact": "exact (counts summed out)"}


#: The check of a zCDP budget: from 1e-4 (sigma about 71) to 100 (sigma about 0.07).
_RHO = between(1e-4, 100, hint="a positive zCDP budget; the noise sd is 1 / sqrt(2 rho)")

EXAMPLE = Example(
    name="county-rates",
    title="County disease rates from a zCDP table of counts: naive vs exact hierarchical model",
    paper="synthetic US counties; Canonne, Kamath & Steinke (2020) noise",
    seconds=150,
    module=__name__,
    options=(
        Option("rho", RHO, "zCDP budget of each count", _RHO),
        Option("counties", COUNTIES, "number of synthetic counties", integer(10, 50_000)),
        *NUTS_OPTIONS,
    ),
)


def mechanism(rho: float = RHO) -> dp.DiscreteGaussian:
    """Return the discrete Gaussian mechanism of one count at ``rho``-zCDP (sensitivity 1).

    Examples
    --------
    >>> float(mechanism(0.5).sigma), str(mechanism(0.5).privacy)
    (1.0, '0.5-zCDP')
    """
    rho = _RHO("rho", rho)
    return dp.DiscreteGaussian.from_zcdp(rho=rho, sensitivity=1)


def privacy(mech, *, delta: float = DELTA) -> dict:
    """Return the guarantee of each count, and so of the table: rho-zCDP and (epsilon, delta).

    A person is one case in one county, so adding or removing a person changes
    one count by at most 1 (the l2 norm of the change of the table is 1): the
    whole table has the guarantee of one count. ``mech.privacy`` states it in
    zCDP; ``.to_approx(delta)`` converts it by Bun and Steinke's (2016)
    ``rho + 2 sqrt(rho log(1/delta))``.
    """
    zcdp, approx = mech.privacy, mech.privacy.to_approx(delta)
    sigma = float(np.max(mech.sigma))
    return {"rho": zcdp.rho, "sigma": sigma, "epsilon": approx.epsilon, "delta": approx.delta}


def simulate(*, counties: int = COUNTIES, rho: float = RHO) -> dict:
    """Return the synthetic table: populations, true rates and counts, and the release.

    Everything is drawn from :data:`DATA_SEED`: the counts are the same for
    every ``rho`` (only the noise changes), and the populations and rates of
    the first ``counties`` counties do not depend on how many are drawn.

    Returns
    -------
    dict
        ``population``, ``rate`` (true, per person), ``count`` (confidential)
        and ``released`` (integers, some negative), each of length ``counties``.
    """
    counties = validate.size("counties", counties)
    seeds = np.random.SeedSequence(DATA_SEED).spawn(4)
    log_size = np.random.default_rng(seeds[0]).standard_normal(counties)
    population = np.round(26_000 * np.exp(1.5 * log_size)).astype(np.int64)
    rate = np.exp(TRUE_MU + TRUE_TAU * np.random.default_rng(seeds[1]).standard_normal(counties))
    count = np.random.default_rng(seeds[2]).poisson(population * rate)
    released = mechanism(rho).release(count, rng=seeds[3])
    return {"population": population, "rate": rate, "count": count, "released": released}


def pymc_model(population, released, mech, *, naive: bool = False):
    """Return the hierarchical Poisson model of the release (exact, or naive).

    Parameters
    ----------
    population : array_like of int
        The counties' populations (public, positive).
    released : array_like of int
        The released counts, one per county.
    mech : DiscreteGaussian
        The mechanism that released them.
    naive : bool, default False
        Take the releases as the counts (negative ones set to 0) instead of
        summing the counts out.

    Returns
    -------
    pymc.Model
        Free variables ``mu``, ``tau``, ``z``; deterministic ``rate`` (per person).

    Examples
    --------
    >>> model = pymc_model([900, 30_000], [-1, 7], mechanism(0.5))
    >>> sorted(model.named_vars)
    ['cases', 'mu', 'rate', 'tau', 'z']
    """
    import pymc as pm

    population = validate.finite_vector("population", population)
    released = validate.integer_array("released", released)
    if not np.all(population > 0) or released.shape != population.shape:
        raise ValueError(
            f"population must hold one positive number per release ({released.size}), got "
            f"{population.size} values, {int(np.sum(~(population > 0)))} not positive"
        )
    with pm.Model() as model:
        mu = pm.Normal("mu", *PRIOR_MU)
        tau = pm.HalfNormal("tau", PRIOR_TAU)
        z = pm.Normal("z", 0.0, 1.0, shape=population.size)
        rate = pm.Deterministic("rate", pm.math.exp(mu + tau * z))
        if naive:
            pm.Poisson("cases", population * rate, observed=np.maximum(released, 0))
        else:
            mech.to_pymc("cases", pm.Poisson.dist(mu=population * rate), observed=released)
    return model


def sample(table: dict, mech, *, naive: bool = False, rng: RNGLike = None, **nuts):
    """Sample :func:`pymc_model` of ``table`` with NUTS and time it.

    ``table`` holds ``population`` and ``released`` (as from :func:`simulate`);
    ``naive`` is as in :func:`pymc_model`; ``rng`` and ``**nuts`` (``draws``,
    ``tune``, ``chains``, ``progressbar``) are as in :func:`dpinfer.reference.sample_nuts`.

    Returns
    -------
    arviz.InferenceData
        ``mu``, ``tau`` and ``rate`` (per person); ``attrs`` carry the privacy,
        and the ``wall_seconds`` and ``cpu_seconds`` (this process's) of the fit.
    """
    from dpinfer.reference import sample_nuts

    wall, cpu = time.perf_counter(), time.process_time()
    guarantee = privacy(mech)
    idata = sample_nuts(
        pymc_model(table["population"], table["released"], mech, naive=naive),
        rng=rng,
        var_names=["mu", "tau", "rate"],
        observed=table["released"],
        constant_data={"population": table["population"], "mechanism_sigma": mech.sigma},
        attrs={
            "mechanism": repr(mech),
            **{k: guarantee[k] for k in ("rho", "epsilon", "delta")},
            "likelihood": "releases as counts (naive)" if naive else "counts summed out",
        },
        **nuts,
    )
    spent = {"wall_seconds": time.perf_counter() - wall, "cpu_seconds": time.process_time() - cpu}
    for attrs in (idata.attrs, idata.posterior.attrs):
        attrs.update(spent)
    return idata


def run(
    *,
    rho: float = RHO,
    counties: int = COUNTIES,
    rng: RNGLike = None,
    progressbar: bool = True,
    verbose: bool = False,
    **nuts: int,
) -> Result:
    """Fit the naive and the exact model to the release and compare them.

    The table of :func:`simulate` is fitted twice by :func:`sample`, the naive
    model first; the report shows ``mu``, ``tau`` and the rates of the
    :data:`SHOWN` counties whose two posteriors differ most (:func:`differences`).

    Parameters
    ----------
    rho : float
        zCDP budget of each count (from 1e-4 to 100).
    counties : int
        Number of synthetic counties (default 3,143).
    rng : None, int, SeedSequence or Generator
        Seed of the two NUTS runs (the table has its own, :data:`DATA_SEED`).
    progressbar, verbose : bool
        PyMC's progress bars are shown when both are true.
    **nuts : int
        ``draws`` and ``tune`` per chain, and ``chains`` (one after the
        other), of NUTS: 300, 300 and 2 unless given.

    Returns
    -------
    Result
        ``posterior`` is the exact posterior, ``extra["naive"]`` the naive one.
    """
    mech = mechanism(rho)
    table = simulate(counties=counties, rho=rho)
    nuts = nuts_options(progressbar=progressbar, verbose=verbose, **nuts)
    fits = fit_each(
        lambda key, **kw: sample(table, mech, naive=key == "naive", **kw), LABELS, rng=rng, **nuts
    )
    rates = {k: idata_draws(fit, ["rate"])["rate"] for k, fit in fits.items()}
    gaps = differences(rates["naive"], rates["exact"])
    shown = np.argsort(-gaps, kind="stable")[:SHOWN]
    rows, notes, diagnostics = _compare(fits, table, shown, gaps)
    guarantee = privacy(mech)
    notes.append(
        f"privacy: each count is rho = {guarantee['rho']:g} zCDP (discrete Gaussian, sigma "
        f"{guarantee['sigma']:.4g}, sensitivity 1), (epsilon, delta) = "
        f"({guarantee['epsilon']:.4g}, {guarantee['delta']:g}); a person is counted in one "
        "county, so the whole table has the same guarantee"
    )
    diagnostics |= {f"privacy_{k}": v for k, v in guarantee.items()}
    setting = [
        f"cases_i ~ Poisson(pop_i r_i), log r_i = mu + tau z_i, {counties:,} synthetic counties "
        f"(made-up populations); mu ~ N({PRIOR_MU[0]:g}, {PRIOR_MU[1]:g}^2), "
        f"tau ~ HalfNormal({PRIOR_TAU:g})",
        f"release: counts + discrete Gaussian noise of sigma {guarantee['sigma']:.4g} (rho = "
        f"{guarantee['rho']:g}); {int(np.sum(table['released'] < 0))} releases are negative",
        "rate[i]: the rate of county i per 100,000 persons",
    ]
    report = Report("County disease rates from a zCDP table of counts", setting, rows, notes)
    report.diagnostics = diagnostics
    figure = functools.partial(_figure, rates=rates, shown=shown, truth=table["rate"])
    return Result(report, fits["exact"], figure, extra={"naive": fits["naive"]})


def differences(naive, exact) -> np.ndarray:
    """Return ``|E_exact r_i - E_naive r_i| / sd_exact(r_i)`` from draws ``(draws, counties)``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> naive, exact = rng.normal(0.0, 1.0, (4000, 2)), rng.normal([0.0, 3.0], 2.0, (4000, 2))
    >>> differences(naive, exact).round(1)
    array([0. , 1.5])
    """
    naive, exact = np.asarray(naive), np.asarray(exact)
    return np.abs(exact.mean(axis=0) - naive.mean(axis=0)) / exact.std(axis=0, ddof=1)


def _compare(fits, table, shown, gaps) -> tuple[list, list[str], dict]:
    rows, notes, diagnostics = [], [], {}
    for key, fit in fits.items():
        draws = idata_draws(fit, ["mu", "tau", "rate"])
        draws |= {f"rate[{i}]": draws["rate"][:, i] * PER for i in shown}
        del draws["rate"]
        rows += draw_rows(LABELS[key], key, draws)
        text, numbers = nuts_note(LABELS[key], fit, key)
        spent = {f"{key}_{k}": fit.attrs[k] for k in ("wall_seconds", "cpu_seconds")}
        wall, cpu = spent.values()
        notes.append(f"{text}; {wall:.1f} s ({cpu:.1f} s CPU)")
        diagnostics |= numbers | spent
    truth = {f"rate[{i}]": table["rate"][i] * PER for i in shown}
    rows += value_rows("truth", "truth", {"mu": TRUE_MU, "tau": TRUE_TAU} | truth)
    for name in ("mu", "tau"):
        for key, fit in fits.items():
            x = np.asarray(fit.posterior[name])
            lo, hi = np.quantile(x, [0.025, 0.975])
            found = {"rhat": rhat(x), "ess": effective_sample_size(x)}
            found["ess_per_second"] = found["ess"] / fit.attrs["wall_seconds"]
            diagnostics |= {f"{key}_{name}_{k}": v for k, v in found.items()}
            notes.append(
                f"{name}, {key}: 95% interval [{lo:.3f}, {hi:.3f}], R-hat {found['rhat']:.3f}, "
                f"bulk ESS {found['ess']:.0f} ({found['ess_per_second']:.2f} per second)"
            )
    ratio = {
        k: diagnostics[f"exact_{k}_seconds"] / diagnostics[f"naive_{k}_seconds"]
        for k in ("wall", "cpu")
    }
    notes.append(
        f"the exact fit took {ratio['wall']:.2f} times the naive one's wall time "
        f"({ratio['cpu']:.2f} times its CPU time)"
    )
    diagnostics |= {f"exact_over_naive_{k}": v for k, v in ratio.items()}
    notes += [
        f"rate[{i}]: population {table['population'][i]:,}, released {table['released'][i]}; "
        f"the posterior means are {gaps[i]:.2f} exact posterior sds apart"
        for i in shown
    ]
    return rows, notes, diagnostics


def _figure(path, *, rates, shown, truth) -> None:
    """Naive against exact posterior means of every rate; the most different with intervals."""
    rates = {k: r * PER for k, r in rates.items()}
    means = {k: r.mean(axis=0) for k, r in rates.items()}
    fig = new_figure(9.0, 4.0)
    left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.2, 1]})
    left.loglog(means["naive"], means["exact"], ".", color="0.6", ms=2, label="a county")
    style = {"color": "tab:orange", "ms": 4, "label": f"the {len(shown)} most different"}
    left.loglog(means["naive"][shown], means["exact"][shown], "o", **style)
    limits = np.array([left.get_xlim(), left.get_ylim()])
    left.plot(*[[limits[:, 0].min(), limits[:, 1].max()]] * 2, "k:", lw=1)
    left.set_xlabel("naive posterior mean, per 100,000")
    left.set_ylabel("exact posterior mean, per 100,000")
    left.legend(frameon=False, fontsize=7)
    for y, i in enumerate(shown):
        for dy, key, color in ((-0.15, "naive", "tab:red"), (0.15, "exact", "tab:green")):
            lo, hi = np.quantile(rates[key][:, i], [0.05, 0.95])
            right.plot([lo, hi], [y + dy] * 2, color=color, lw=2.5, solid_capstyle="butt")
            right.plot([means[key][i]], [y + dy], "o", color=color, ms=3)
        right.plot([truth[i] * PER], [y], "k|", ms=10)
    right.set_yticks(range(len(shown)), [f"rate[{i}]" for i in shown], fontsize=7)
    right.set_xscale("log")
    right.set_xlabel("90% intervals: naive (red), exact (green); truth |", fontsize=8)
    right.invert_yaxis()
    fig.suptitle("County rates: naive and exact posteriors", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, format="png")
