r"""Daily pageviews of one article by country, as Wikimedia publishes them (zCDP, thresholds).

Since 2023-02-06 Wikimedia publishes the daily pageviews of each article in
each country with discrete Gaussian noise, and leaves out every cell whose
noisy count falls below a threshold. Both depend on the country's risk tier:

=============  ============  ===========================  =================
tier           rho (zCDP)    sigma = sqrt(10 / (2 rho))   published when
=============  ============  ===========================  =================
lower risk     0.015         18.3                         noisy count >= 90
medium risk    6.166e-4      90.0                         >= 550
higher risk    1.546e-4      179.8                        >= 1000
=============  ============  ===========================  =================

A device-day counts its first 10 pageviews: l2 sensitivity ``sqrt(10)``
(:data:`SENSITIVITY`; ``sensitivity=1`` would give 3.2 times less noise than
Wikimedia adds). Its documentation publishes a cell "above" the threshold,
its files "at least" it: ``publish`` chooses.

The analyst models the true views of country ``c`` on day ``t`` as

.. math::

    v_{ct} \sim \text{Poisson}(\lambda_{ct}), \quad
    \log \lambda_{ct} = \log \text{views}_c + \text{weekly}_{t \bmod 7}
        + \text{trend}\,(t / (D - 1) - 1/2),

``log views_c ~ N(log 500, 2.5^2)``, ``weekly ~ ZeroSumNormal(0.2)`` (day 0 a
Monday, as 2023-02-06 was), ``trend ~ N(0, 1)`` (the log of the ratio of the
last day's rate to the first's), and fits it three ways: **naive, published
cells only** (noise and suppression ignored), **naive, suppressed cells as
zero**, and **exact**: ``mech.to_pymc("views", pm.Poisson.dist(mu=lam),
observed=released)``, which sums each true count out against the noise of a
published cell, and against the probability of suppression of a suppressed one
(the cell censored: ``log P(v + noise below the threshold | v)``).

NUTS samples the parameters **standardised** by a rough fit of the release
(:func:`rough_fit`): ``log views = centre + scale * z`` and so on, ``z``
starting at 0. The data pin a popular country's log views to a few tenths of
a percent, the prior allows 2.5, and NUTS begins with steps of about one on
every axis: on the raw parameters (at 2,520 cells) its first leapfrog step
took rates beyond ``e^100``, where one evaluation of the exact likelihood ran
for minutes. The change of variables is affine with constant coefficients, so
the posterior (and the mode) is the same.

The data are **synthetic**, generated with Wikimedia's tiers, noise and
thresholds: nine countries, three per tier, with true mean daily views chosen
from well above to below their tier's threshold (:data:`COUNTRIES`), a weekly
pattern with a weekend dip and a 25% rise over the period, all drawn from a
fixed seed (:data:`DATA_SEED`).

References
----------
.. [1] Wikimedia Foundation (2023). Differentially private daily pageviews by
   country (the per-tier rho, noise and release thresholds).
.. [2] Canonne, C. L., Kamath, G. and Steinke, T. (2020). The discrete
   Gaussian for differential privacy. NeurIPS 33.

Examples
--------
>>> from dpinfer.models import pageviews as pv
>>> table = pv.simulate(days=28)
>>> table["released"].shape, int(pv.suppressed_share(table)["lower"] * 100)
((9, 28), 26)
>>> mech = pv.mechanism(days=28)
>>> mech.mechanism.sigma[:, 0].round(1)
array([ 18.3,  18.3,  18.3,  90. ,  90. ,  90. , 179.8, 179.8, 179.8])
"""

from __future__ import annotations

import functools
import math

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
    choice,
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
    "COUNTRIES",
    "DATA_SEED",
    "SENSITIVITY",
    "TIERS",
    "mechanism",
    "pymc_model",
    "rough_fit",
    "run",
    "sample",
    "simulate",
    "suppressed_share",
]

#: Wikimedia's country risk tiers: (rho, release threshold).
TIERS = {"lower": (0.015, 90.0), "medium": (6.166e-4, 550.0), "higher": (1.546e-4, 1000.0)}
#: l2 sensitivity of a device-day (its first 10 pageviews).
SENSITIVITY = math.sqrt(10)
#: The synthetic countries: (risk tier, true mean daily views).
COUNTRIES = tuple(
    (tier, views)
    for tier, row in zip(TIERS, [(1500, 120, 70), (2500, 650, 400), (6000, 1200, 800)])
    for views in map(float, row)
)
#: The weekly effect that generated the data, Monday first (sums to 0), and the trend.
TRUE_WEEKLY = np.array([0.05, 0.06, 0.05, 0.03, -0.02, -0.10, -0.07])
TRUE_TREND = math.log(1.25)
#: Prior of log views: Normal(mean, sd); of the weekly effect: ZeroSumNormal(sd); of the trend:
#: Normal(0, sd).
PRIOR_VIEWS = (math.log(500.0), 2.5)
PRIOR_WEEKLY, PRIOR_TREND = 0.2, 1.0
#: Seed of the synthetic table (true views and noise).
DATA_SEED = 20_230_206
ANALYSES = {
    "published": "naive, published cells only",
    "zero": "naive, suppressed as 0",
    "exact": "exact, suppressed censored",
}

EXAMPLE = Example(
    name="pageviews",
    title="Wikimedia pageviews by country (zCDP, thresholds): naive vs exact censored model",
    paper="synthetic; Wikimedia (2023) tiers and thresholds",
    seconds=45,
    module=__name__,
    options=(
        Option("days", 91, "days of the article's series (from a Monday)", integer(14, 366)),
        Option(
            "publish",
            "at_least",
            "a cell is published when its noisy count is at_least / above its threshold",
            choice("at_least", "above"),
        ),
        Option("sensitivity", SENSITIVITY, "l2 sensitivity of a device-day", between(0.01, 100)),
        *NUTS_OPTIONS,
    ),
)


def mechanism(
    *, days: int = 91, publish: str = "at_least", sensitivity: float = SENSITIVITY
) -> dp.Thresholded:
    """Return the release of the table (countries x days): Wikimedia's noise and thresholds.

    Examples
    --------
    >>> mech = mechanism(days=7, publish="above")
    >>> mech.threshold[:, 0], str(mech.privacy)
    (array([  90.,   90.,   90.,  550.,  550.,  550., 1000., 1000., 1000.]), '0.015-zCDP')
    """
    shape = (len(COUNTRIES), days)
    rho, threshold = (
        np.broadcast_to(np.array([[TIERS[tier][k]] for tier, _ in COUNTRIES]), shape)
        for k in (0, 1)
    )
    noise = dp.DiscreteGaussian.from_zcdp(rho=rho, sensitivity=sensitivity, event_shape=shape)
    return dp.Thresholded(noise, threshold=threshold, publish=publish)


def _log_rate(log_views, weekly, trend, days: int):
    t = np.arange(days)
    return log_views[:, None] + weekly[t % 7][None, :] + trend * (t / (days - 1) - 0.5)


def simulate(
    *, days: int = 91, publish: str = "at_least", sensitivity: float = SENSITIVITY
) -> dict:
    """Return the synthetic table: true rates and views, and the release (NaN: suppressed).

    The true views do not depend on the mechanism's options; only the release does.
    """
    days = integer(14, 366)("days", days)
    rate = np.exp(_log_rate(np.log([v for _, v in COUNTRIES]), TRUE_WEEKLY, TRUE_TREND, days))
    seeds = np.random.SeedSequence(DATA_SEED).spawn(2)
    views = np.random.default_rng(seeds[0]).poisson(rate)
    mech = mechanism(days=days, publish=publish, sensitivity=sensitivity)
    released = mech.release(views, rng=seeds[1])
    return {"rate": rate, "views": views, "released": released, "days": days}


def suppressed_share(table: dict) -> dict:
    """Return the share of suppressed cells of each tier."""
    tiers, hidden = np.array([t for t, _ in COUNTRIES]), np.isnan(table["released"])
    return {tier: float(hidden[tiers == tier].mean()) for tier in TIERS}


def pymc_model(released, mech: dp.Thresholded, *, analysis: str = "exact"):
    """Return the time-series model of the release, fitted as ``analysis`` says.

    Parameters
    ----------
    released : array_like
        The release, countries x days, NaN at suppressed cells.
    mech : Thresholded
        The mechanism that released it.
    analysis : {"exact", "published", "zero"}
        Sum the true views out (suppressed cells censored); or take the
        published cells as the views and drop the suppressed ones; or set
        them to 0.

    Returns
    -------
    pymc.Model
        Free variables ``log_views_z``, ``weekly_z``, ``trend_z``, each
        parameter standardised by :func:`rough_fit` (initial value 0: the rough
        fit); deterministic ``log_views``, ``weekly``, ``trend`` (the model's
        parameters, priors as in the module's docstring) and ``views``.

    Examples
    --------
    >>> mech = mechanism(days=14)
    >>> released = mech.release(np.full((9, 14), 600), rng=0)
    >>> sorted(pymc_model(released, mech).free_RVs, key=str)
    [log_views_z, trend_z, weekly_z]
    """
    import pymc as pm

    analysis = validate.choice("analysis", analysis, ANALYSES)
    released = mech.check_released(released)
    hidden = np.isnan(released)
    days = released.shape[-1]
    rough = rough_fit(released, mech)
    with pm.Model() as model:
        log_views = _standardised(
            "log_views", rough["log_views"], rough["log_views_sd"], *PRIOR_VIEWS
        )
        weekly_sd = rough["weekly_sd"]
        weekly_z = pm.ZeroSumNormal("weekly_z", sigma=PRIOR_WEEKLY / weekly_sd, shape=7)
        weekly = pm.Deterministic("weekly", weekly_sd * weekly_z)
        trend = _standardised("trend", 0.0, rough["trend_sd"], 0.0, PRIOR_TREND)
        pm.Deterministic("views", pm.math.exp(log_views))
        lam = pm.math.exp(_log_rate(log_views, weekly, trend, days))
        if analysis == "exact":
            mech.to_pymc("y", pm.Poisson.dist(mu=lam), observed=released)
        elif analysis == "zero":
            pm.Poisson("y", lam, observed=np.where(hidden, 0, released).astype(np.int64))
        else:
            shown = np.flatnonzero(~hidden)
            pm.Poisson("y", lam.ravel()[shown], observed=released.ravel()[shown].astype(np.int64))
    return model


def _standardised(name: str, centre, scale, mu: float, sigma: float):
    """Return ``name ~ Normal(mu, sigma)`` written as ``centre + scale * z``, ``z`` free from 0."""
    import pymc as pm

    centre, scale = np.asarray(centre, dtype=float), np.asarray(scale, dtype=float)
    z = pm.Normal(
        f"{name}_z", (mu - centre) / scale, sigma / scale, shape=centre.shape, initval=0 * centre
    )
    return pm.Deterministic(name, centre + scale * z)


def rough_fit(released, mech: dp.Thresholded) -> dict:
    """Return a rough posterior of the model: each country's log views, and the scales.

    Each country is fitted alone with the weekly effect and the trend left out,
    and each cell's true views plus noise taken as normal: a published cell
    contributes the density ``N(y; lam, lam + sigma^2)``, a suppressed one the
    probability ``Phi((cut + 1/2 - lam) / sqrt(lam + sigma^2))`` (a Tobit
    model). The mode of ``log lam`` under the prior, and the curvature there,
    give each country's centre and sd. With ``I`` the sum of the countries'
    curvatures (their information), the weekly effect's sd is about
    ``sqrt(7 / I)`` (each day of the week has a seventh of the cells) and the
    trend's about ``sqrt(12 / I)`` (its covariate has variance 1/12).

    These only standardise the parameters NUTS samples (:func:`pymc_model`):
    any positive scales give the same posterior, and scales near the posterior
    sds give NUTS steps of about one on every axis.

    Returns
    -------
    dict
        ``log_views`` and ``log_views_sd`` (one per country), ``weekly_sd``
        and ``trend_sd``.

    Examples
    --------
    >>> table = simulate(days=91)
    >>> rough = rough_fit(table["released"], mechanism(days=91))
    >>> np.exp(rough["log_views"]).round(-1)  # the true views: 1500, 120, 70, 2500, ...
    array([1510.,  120.,   60., 2500.,  660.,  400., 6010., 1200.,  800.])
    """
    from scipy import optimize, special, stats

    released = mech.check_released(released)
    variance = np.broadcast_to(mech.mechanism.sigma, released.shape) ** 2
    cut = np.broadcast_to(mech.cut, released.shape) + 0.5
    mu, sd = PRIOR_VIEWS
    centre, information = np.empty(len(released)), np.empty(len(released))
    for c, row in enumerate(released):
        hidden = np.isnan(row)

        def minus_log_post(u, c=c, row=row, hidden=hidden):
            lam = math.exp(u)
            spread = np.sqrt(lam + variance[c])
            shown = stats.norm.logpdf(row[~hidden], lam, spread[~hidden]).sum()
            below = special.log_ndtr((cut[c][hidden] - lam) / spread[hidden]).sum()
            return 0.5 * ((u - mu) / sd) ** 2 - shown - below

        bounds = (mu - 5 * sd, mu + 5 * sd)
        u = optimize.minimize_scalar(minus_log_post, bounds=bounds, method="bounded").x
        h = 1e-3  # the curvature by a central difference: the sd needs a digit or two
        curvature = (minus_log_post(u + h) - 2 * minus_log_post(u) + minus_log_post(u - h)) / h**2
        centre[c], information[c] = u, max(curvature, sd**-2)
    total = information.sum()
    return {
        "log_views": centre,
        "log_views_sd": information**-0.5,
        "weekly_sd": math.sqrt(7 / total),
        "trend_sd": math.sqrt(12 / total),
    }


def sample(table: dict, mech, *, analysis: str = "exact", rng: RNGLike = None, **nuts):
    """Sample :func:`pymc_model` of ``table["released"]`` with NUTS.

    ``rng`` and ``**nuts`` (``draws``, ``tune``, ``chains``, ``progressbar``)
    are as in :func:`dpinfer.reference.sample_nuts`.
    """
    from dpinfer.reference import sample_nuts

    return sample_nuts(
        pymc_model(table["released"], mech, analysis=analysis),
        rng=rng,
        var_names=["views", "weekly", "trend"],
        observed=table["released"],
        constant_data={"sigma": mech.mechanism.sigma, "threshold": mech.threshold},
        attrs={"mechanism": repr(mech), "rho": mech.privacy.rho, "likelihood": ANALYSES[analysis]},
        **nuts,
    )


def run(
    *,
    days: int = 91,
    publish: str = "at_least",
    sensitivity: float = SENSITIVITY,
    rng: RNGLike = None,
    progressbar: bool = True,
    verbose: bool = False,
    **nuts: int,
) -> Result:
    """Fit the three analyses to the synthetic release and compare them with the truth.

    :func:`sample` fits the table of :func:`simulate` once per analysis, in the
    order of ``ANALYSES`` (published cells only, suppressed as zero, exact).

    Parameters
    ----------
    days : int
        Length of the series (from a Monday), 14 to 366.
    publish : {"at_least", "above"}
        When a cell is published (see :class:`dpinfer.Thresholded`).
    sensitivity : float
        l2 sensitivity of a device-day (Wikimedia: ``sqrt(10)``).
    rng : None, int, SeedSequence or Generator
        Root seed of the three fits; the table is drawn from :data:`DATA_SEED`.
    progressbar, verbose : bool
        With both true, PyMC shows its progress bars.
    **nuts : int
        The NUTS settings ``draws``, ``tune`` and ``chains``
        (:data:`~dpinfer.example.NUTS_OPTIONS`).

    Returns
    -------
    Result
        ``posterior`` is the exact fit; ``extra`` holds the two naive ones.
    """
    mech = mechanism(days=days, publish=publish, sensitivity=sensitivity)
    table = simulate(days=days, publish=publish, sensitivity=sensitivity)
    nuts = nuts_options(progressbar=progressbar, verbose=verbose, **nuts)
    fits = fit_each(
        lambda key, **kw: sample(table, mech, analysis=key, **kw), ANALYSES, rng=rng, **nuts
    )
    rows, notes, diagnostics = _compare(fits)
    shares = suppressed_share(table)
    setting = [
        f"views[c, t] ~ Poisson(lam), log lam = log views[c] + weekly[t mod 7] + trend "
        f"(t/{days - 1} - 1/2); {len(COUNTRIES)} synthetic countries x {days} days "
        "(day 0 a Monday)",
        "release: discrete Gaussian, sigma "
        + ", ".join(f"{s:.1f}" for s in mech.mechanism.sigma[::3, 0])
        + f" by tier (rho {', '.join(f'{TIERS[t][0]:g}' for t in TIERS)}, l2 sensitivity "
        f"{sensitivity:.4g}); published when {publish.replace('_', ' ')} "
        + ", ".join(f"{TIERS[t][1]:g}" for t in TIERS),
        "suppressed cells: "
        + ", ".join(f"{t} risk {100 * s:.0f}%" for t, s in shares.items())
        + "; views[c]: country c's mean daily views mid-period (weekly geometric mean)",
        "countries: " + ", ".join(f"{c} {tier} ({v:g})" for c, (tier, v) in enumerate(COUNTRIES)),
    ]
    notes.append(
        f"privacy: {mech.privacy} for the whole release (the lower-risk tier's rho; a device-day "
        "counted in a medium or higher risk country has its tier's rho); suppression below the "
        "threshold is post-processing"
    )
    diagnostics |= {f"suppressed_{t}": s for t, s in shares.items()}
    diagnostics["suppressed_cells"] = int(np.isnan(table["released"]).sum())
    report = Report("Pageviews by country under Wikimedia's zCDP release", setting, rows, notes)
    report.diagnostics = diagnostics
    figure = functools.partial(_figure, fits=fits, table=table, mech=mech)
    return Result(report, fits["exact"], figure, extra={k: fits[k] for k in ("published", "zero")})


def _compare(fits) -> tuple[list, list[str], dict]:
    rows, notes, diagnostics = [], [], {}
    for key, fit in fits.items():
        rows += draw_rows(ANALYSES[key], key if key == "exact" else "naive", idata_draws(fit))
        text, numbers = nuts_note(ANALYSES[key], fit, key)
        diagnostics |= numbers
        post = fit.posterior
        x = np.concatenate(
            [np.asarray(post[n]).reshape(*post["trend"].shape, -1) for n in post], -1
        )
        worst = (max(rhat(v.T) for v in x.T), min(effective_sample_size(v.T) for v in x.T))
        diagnostics |= {f"{key}_rhat_params": worst[0], f"{key}_ess_params": worst[1]}
        notes.append(
            f"{text}; over views, weekly, trend: max R-hat {worst[0]:.3f}, min ESS {worst[1]:.0f}"
        )
    truth = {"views": [v for _, v in COUNTRIES], "weekly": TRUE_WEEKLY, "trend": TRUE_TREND}
    rows += value_rows("truth", "truth", truth)
    for key, fit in fits.items():
        error = np.log(idata_draws(fit, ["views"])["views"].mean(axis=0) / truth["views"])
        diagnostics[f"{key}_views_log_error"] = float(np.abs(error).mean())
    notes.append(
        "mean |log(posterior mean views / true views)| over the countries: "
        + ", ".join(f"{ANALYSES[k]} {diagnostics[f'{k}_views_log_error']:.3f}" for k in fits)
    )
    return rows, notes, diagnostics


def _figure(path, *, fits, table, mech) -> None:
    """Draw views by country (three analyses, truth) and one censored series over time."""
    styles = {"published": "tab:orange", "zero": "tab:red", "exact": "tab:green"}
    fig = new_figure(10.0, 4.2)
    left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1.3]})
    for k, (key, fit) in enumerate(fits.items()):
        views = idata_draws(fit, ["views"])["views"]
        lo, hi = np.quantile(views, [0.05, 0.95], axis=0)
        y = np.arange(len(COUNTRIES)) + 0.25 * (k - 1)
        left.hlines(y, lo, hi, color=styles[key], lw=2.5, label=ANALYSES[key])
        left.plot(views.mean(axis=0), y, "o", color=styles[key], ms=3)
    left.plot([v for _, v in COUNTRIES], range(len(COUNTRIES)), "k|", ms=12, label="truth")
    left.set_xscale("log")
    left.set_yticks(range(len(COUNTRIES)), [f"{c}: {t}" for c, (t, _) in enumerate(COUNTRIES)])
    left.invert_yaxis()
    left.set_xlabel("mean daily views: 90% intervals")
    left.legend(frameon=False, fontsize=7)
    share = np.isnan(table["released"]).mean(axis=1)
    c = int(np.argmax(np.where(share < 1, share, -1)))  # the most censored with a published day
    days = np.arange(table["days"])
    shown = ~np.isnan(table["released"][c])
    right.plot(days, table["views"][c], color="0.6", lw=1, label="true views")
    right.plot(days[shown], table["released"][c][shown], "k.", ms=4, label="published")
    right.plot(days[~shown], np.zeros((~shown).sum()), "kx", ms=4, label="suppressed")
    right.axhline(mech.threshold[c, 0], color="k", ls=":", lw=1, label="threshold")
    for key, fit in fits.items():
        mean = {name: v.mean(axis=0) for name, v in idata_draws(fit).items()}
        lam = np.exp(_log_rate(np.log(mean["views"]), mean["weekly"], mean["trend"], len(days)))
        right.plot(days, lam[c], color=styles[key], lw=1.5, label=f"rate: {ANALYSES[key]}")
    right.set_title(f"country {c} ({COUNTRIES[c][0]} risk) by day", fontsize=9)
    right.legend(frameon=False, fontsize=6, ncol=2)
    fig.suptitle("Pageviews by country: naive and exact posteriors", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, format="png")
