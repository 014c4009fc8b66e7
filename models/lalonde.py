r"""Earnings of the NSW job-training experiment from DP summary statistics (Gong 2022, 5.2).

The Lalonde NSW data, Dehejia-Wahba sample (185 treated, 260 control; 1978
earnings ``y`` in $1k). The model (Gong 2022, Appendix F) is

.. math:: y_i \mid z_i, \theta \sim N(\mu + \tau z_i,\ \sigma_t^2 z_i + \sigma_c^2 (1 - z_i)),

with the sufficient statistic :math:`s = (\bar y_t, \bar y_c, s_t^2, s_c^2)`
(group means and unbiased sample variances), generated as

.. math:: \bar y_t \sim N(\mu + \tau, \sigma_t^2 / n_t),\quad
          \bar y_c \sim N(\mu, \sigma_c^2 / n_c),\quad
          s_g^2 \sim \frac{\sigma_g^2}{n_g - 1} \chi^2_{n_g - 1}.

**Priors, and our reading of them.** Gong writes :math:`\tau \sim N(0, 5)`,
:math:`\mu \sim N(4, 5)` and :math:`\sigma_t, \sigma_c \sim Gamma(2, 0.2)`
and fitted the model in RStan. We read them in Stan's conventions: the second
argument of a normal is the *standard deviation* (5, not a variance of 5), and
``Gamma(2, 0.2)`` is shape 2 and *rate* 0.2 (mean 10, sd about 7.1 in $1k),
a prior on the standard deviations :math:`\sigma_t, \sigma_c` (not on the
variances).

**The release.** Income is clamped to [0, 100] $1k and both groups are public
and larger than 100 people, so replacing one person's income moves a group
mean by at most 1 and a group variance by at most 100 ($1k squared):
sensitivities (1, 1, 100, 100). Laplace noise of scales (3, 3, 6, 6) (Gong's
inverse bandwidths 1/3, 1/3, 1/6, 1/6) spends epsilon = 1/3 on each mean and
100/6 on each variance. Under Gong's neighbouring relation (one person's income
changes, group membership is public) only one group's two statistics move,
so the release is (1/3 + 100/6) = 17-DP; :meth:`Laplace.privacy` of
:func:`mechanism` reports the conservative sum over all four coordinates,
34, which also covers a change in both groups. Gong notes this is a
deliberately inefficient budget; the clamping range exceeds every observed
income (max $60.3k) so the clamp does not change the statistics and no
truncation correction is needed.

Examples
--------
>>> from dpinfer.models import lalonde
>>> [round(float(v), 3) for v in lalonde.confidential_statistics()]
[6.349, 4.555, 61.896, 30.072]
"""

from __future__ import annotations

import csv
import functools
import io
import math
import warnings
from importlib import resources

import numpy as np
import scipy.stats as st

import dpinfer as dp
from dpinfer import _validate
from dpinfer._rng import as_seed_sequence

from ._budget import plan_sampler
from ._example import Example, Option, between, integer, vector
from ._report import (
    Report,
    Result,
    draw_rows,
    idata_draws,
    mle_interval_notes,
    mle_rows,
    nuts_note,
    save_run,
    smc_note,
)

__all__ = [
    "MLE_SCHEDULE",
    "N_CONTROL",
    "N_TREATED",
    "PARAMETERS",
    "SCALES",
    "SENSITIVITIES",
    "STATISTICS",
    "confidential_statistics",
    "exact_log_likelihood",
    "exact_mle",
    "likelihood",
    "load_data",
    "mechanism",
    "mle",
    "model",
    "naive_mle",
    "naive_posterior",
    "naive_statistics",
    "prior",
    "pymc_reference",
    "release",
    "run",
    "run_example",
    "simulate_statistics",
    "statistics_posterior",
]

#: Group sizes of the Dehejia-Wahba NSW sample.
N_TREATED, N_CONTROL = 185, 260
#: Names of the released statistics, in order.
STATISTICS = ("ybar_t", "ybar_c", "s2_t", "s2_c")
#: Model parameters (standard deviations, not variances).
PARAMETERS = ("tau", "mu", "sigma_t", "sigma_c")
#: Laplace scales of the four statistics (Gong's bandwidths h).
SCALES = (3.0, 3.0, 6.0, 6.0)
#: Sensitivities under clamping to [0, 100] $1k with groups of more than 100 people.
SENSITIVITIES = (1.0, 1.0, 100.0, 100.0)

REFERENCE = (
    "Gong, R. (2022). Exact inference with approximate computation for differentially "
    "private data via perturbations. Journal of Privacy and Confidentiality 12(2), "
    "Section 5.2 and Appendix F."
)
_DATA_FILE = "nsw_mixtape.csv"

#: Documented ranges of the released means and variances ($1k and $1k squared): incomes
#: are clamped to [0, 100], so a mean lies in [0, 100] and a variance in [0, 2514];
#: the ranges add about 15 noise scales (Laplace 3 and 6) on each side.
MEAN_RANGE, VARIANCE_RANGE = (-50.0, 150.0), (-100.0, 2600.0)
_CLAMPED = "incomes are clamped to [0, 100] $1k, so the release cannot be this far out"

EXAMPLE = Example(
    name="lalonde",
    title="NSW job-training earnings from Laplace-noised group means and variances",
    paper="Gong (2022), Section 5.2",
    seconds=60,
    module=__name__,
    smallest={"draws": 100, "nuts_draws": 100, "mle_simulations": 10**5},
    options=(
        Option(
            "released",
            None,
            "the release ybar_t ybar_c s2_t s2_c (default: a new release of the data)",
            vector(
                4,
                [between(*MEAN_RANGE, hint=_CLAMPED)] * 2
                + [between(*VARIANCE_RANGE, hint=_CLAMPED)] * 2,
            ),
            flag="--release",
        ),
        Option(
            "draws",
            4000,
            "rejection ABC draws (about 2 million simulations per 1000; smc_abc particles "
            "when rejection would exceed its budget)",
            integer(100, 10_000),
        ),
        Option(
            "nuts_draws",
            1000,
            "draws and tuning steps per chain of each NUTS fit",
            integer(100, 10_000),
        ),
        Option(
            "mle_simulations",
            10**6,
            "largest MCEM sample (Gong's stages 10^3, 10^5, 10^6 up to this size)",
            integer(1000, 10**7),
        ),
    ),
)


def load_data() -> tuple[np.ndarray, np.ndarray]:
    """Load the NSW sample shipped with dpinfer: treatment and 1978 earnings in $1k.

    Returns
    -------
    treat : numpy.ndarray of int
        1 for the 185 treated, 0 for the 260 controls.
    re78 : numpy.ndarray of float
        1978 earnings in thousands of dollars.

    Notes
    -----
    From ``nsw_mixtape`` of the PyPI package ``causaldata`` 0.1.5 (MIT
    licence): the Dehejia and Wahba (1999) subset of LaLonde (1986). See
    ``models/data/README.md`` for provenance.

    References
    ----------
    .. [1] LaLonde, R. (1986). Evaluating the econometric evaluations of training
       programs with experimental data. American Economic Review 76(4), 604-620.
    .. [2] Dehejia, R. and Wahba, S. (1999). Causal effects in nonexperimental
       studies. JASA 94(448), 1053-1062.

    Examples
    --------
    >>> treat, y = load_data()
    >>> int(treat.sum()), int((1 - treat).sum()), round(float(y.max()), 1)
    (185, 260, 60.3)
    """
    text = resources.files("dpinfer.models").joinpath("data", _DATA_FILE).read_text("utf-8")
    rows = csv.DictReader(io.StringIO("".join(_data_lines(text))))
    treat, re78 = [], []
    for row in rows:
        treat.append(int(row["treat"]))
        re78.append(float(row["re78"]) / 1000.0)
    return np.asarray(treat, dtype=int), np.asarray(re78, dtype=float)


def confidential_statistics() -> np.ndarray:
    """Compute the confidential ``(ybar_t, ybar_c, s2_t, s2_c)`` in $1k and $1k squared.

    Examples
    --------
    >>> confidential_statistics().shape
    (4,)
    """
    treat, y = load_data()
    yt, yc = y[treat == 1], y[treat == 0]
    return np.array([yt.mean(), yc.mean(), yt.var(ddof=1), yc.var(ddof=1)])


def prior() -> dict:
    """Independent priors (Stan's conventions; see the module docstring).

    Returns
    -------
    dict
        ``tau ~ N(0, sd 5)``, ``mu ~ N(4, sd 5)``, ``sigma_t, sigma_c ~ Gamma(shape 2,
        rate 0.2)``, as frozen ``scipy.stats`` distributions.
    """
    return {
        "tau": st.norm(0.0, 5.0),
        "mu": st.norm(4.0, 5.0),
        "sigma_t": st.gamma(2.0, scale=1.0 / 0.2),
        "sigma_c": st.gamma(2.0, scale=1.0 / 0.2),
    }


def simulate_statistics(params, rng) -> np.ndarray:
    """Draw the four statistics for a batch of parameters (Gong 2022, Appendix F).

    Parameters
    ----------
    params : dict
        Arrays ``tau``, ``mu``, ``sigma_t``, ``sigma_c`` of length ``n``.
    rng : numpy.random.Generator
        Source of randomness.

    Returns
    -------
    numpy.ndarray
        Shape ``(n, 4)``: ``ybar_t, ybar_c, s2_t, s2_c``.
    """
    tau, mu = np.asarray(params["tau"]), np.asarray(params["mu"])
    sig_t, sig_c = np.asarray(params["sigma_t"]), np.asarray(params["sigma_c"])
    n = tau.shape[0]
    out = np.empty((n, 4))
    out[:, 0] = mu + tau + sig_t / math.sqrt(N_TREATED) * rng.standard_normal(n)
    out[:, 1] = mu + sig_c / math.sqrt(N_CONTROL) * rng.standard_normal(n)
    out[:, 2] = sig_t**2 * rng.chisquare(N_TREATED - 1, n) / (N_TREATED - 1)
    out[:, 3] = sig_c**2 * rng.chisquare(N_CONTROL - 1, n) / (N_CONTROL - 1)
    return out


def model() -> dp.Model:
    """Prior and batched simulator of the statistics, for the dpinfer samplers.

    Examples
    --------
    >>> import numpy as np
    >>> m = model()
    >>> m.simulate(m.prior.sample(5, np.random.default_rng(0)), np.random.default_rng(1)).shape
    (5, 4)
    """
    return dp.Model(prior=prior(), simulate=simulate_statistics)


def mechanism() -> dp.Laplace:
    """Return the Laplace release: scales (3, 3, 6, 6), sensitivities (1, 1, 100, 100).

    Examples
    --------
    >>> mechanism().privacy.epsilon  # all four coordinates; see the module docstring
    34.0
    """
    return dp.Laplace(list(SCALES), sensitivity=list(SENSITIVITIES))


def release(*, rng=None) -> np.ndarray:
    """Release the confidential statistics through :func:`mechanism` (the curator's side).

    Parameters
    ----------
    rng : None, int, SeedSequence or Generator, optional
        Privacy noise; None (the default) draws OS entropy, as a real release must.

    Returns
    -------
    numpy.ndarray
        A new release, shape ``(4,)``. Floating-point Laplace releases carry
        Mironov's (2012) caveat; see :class:`dpinfer.Laplace`.
    """
    return mechanism().release(confidential_statistics(), rng=rng)


def pymc_reference(
    released,
    *,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 2,
    rng=None,
    progressbar: bool = False,
    target_accept: float = 0.9,
    **nuts_kwargs,
):
    r"""NUTS reference posterior given a release, with the statistics latent.

    The latent statistics are written non-centred, which suits NUTS here
    because the release says little about them beyond what the parameters do:
    :math:`\bar y_t = \mu + \tau + \sigma_t z_t / \sqrt{n_t}` with
    :math:`z_t \sim N(0, 1)`, and :math:`s_t^2 = \sigma_t^2 g_t` with
    :math:`g_t \sim Gamma((n_t - 1)/2, \text{rate } (n_t - 1)/2)`, i.e.
    :math:`\chi^2_{n_t - 1} / (n_t - 1)`; likewise for the control group.
    The release is attached by ``mechanism().to_pymc``, via
    :func:`dpinfer.reference.sample_reference`.

    Parameters
    ----------
    released : array_like
        The release, shape ``(4,)``.
    draws, tune, chains, rng, progressbar, **nuts_kwargs
        As in :func:`dpinfer.reference.sample_reference`.
    target_accept : float, default 0.9
        NUTS target acceptance (the Laplace kinks favour small steps).

    Returns
    -------
    arviz.InferenceData
        Posterior of ``tau, mu, sigma_t, sigma_c`` and the latent statistics ``s``.
    """
    from dpinfer.reference import sample_reference

    def build():
        params = _pymc_priors()
        return _latent_statistics(*params)

    return sample_reference(
        build,
        mechanism(),
        released,
        draws=draws,
        tune=tune,
        chains=chains,
        rng=rng,
        progressbar=progressbar,
        var_names=[*PARAMETERS, "s"],
        target_accept=target_accept,
        **nuts_kwargs,
    )


def statistics_posterior(
    statistics,
    *,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 2,
    rng=None,
    progressbar: bool = False,
    **nuts_kwargs,
):
    r"""Posterior given the statistics observed exactly (no privacy mechanism).

    With the confidential statistics this is the original analysis (top row of
    Gong's Figure 2). :math:`\bar y_g` enter as normal observations and
    :math:`s_g^2` as :math:`Gamma((n_g - 1)/2, \text{rate } (n_g - 1) / (2\sigma_g^2))`.

    Parameters
    ----------
    statistics : array_like
        ``(ybar_t, ybar_c, s2_t, s2_c)``; the variances must be positive.
    draws, tune, chains, rng, progressbar, **nuts_kwargs
        As in :func:`dpinfer.reference.sample_nuts`.

    Returns
    -------
    arviz.InferenceData
    """
    import pymc as pm

    from dpinfer.reference import sample_nuts

    stats = np.asarray(statistics, dtype=float)
    if stats.shape != (4,) or not np.all(np.isfinite(stats)):
        raise ValueError(f"statistics must be 4 finite numbers, got {statistics!r}")
    if not np.all(stats[2:] > 0):
        raise ValueError(f"the sample variances must be positive, got {stats[2:].tolist()}")
    with pm.Model() as pymc_model:
        tau, mu, sig_t, sig_c = _pymc_priors()
        pm.Normal("ybar_t", mu + tau, sig_t / math.sqrt(N_TREATED), observed=stats[0])
        pm.Normal("ybar_c", mu, sig_c / math.sqrt(N_CONTROL), observed=stats[1])
        for name, sig, n, value in (
            ("s2_t", sig_t, N_TREATED, stats[2]),
            ("s2_c", sig_c, N_CONTROL, stats[3]),
        ):
            pm.Gamma(name, alpha=(n - 1) / 2, beta=(n - 1) / (2 * sig**2), observed=value)
    return sample_nuts(
        pymc_model,
        draws=draws,
        tune=tune,
        chains=chains,
        rng=rng,
        progressbar=progressbar,
        var_names=list(PARAMETERS),
        observed=stats,
        attrs={"model": "statistics observed exactly", "reference": REFERENCE},
        **nuts_kwargs,
    )


def naive_posterior(released, *, min_variance: float = 0.01, **kwargs):
    """Fit the naive analysis, which takes the release as the exact statistics.

    Parameters
    ----------
    released : array_like
        The release, shape ``(4,)``.
    min_variance : float, default 0.01
        A released variance below this (the Laplace noise can make it
        negative, with probability about 2e-5 for these data) leaves the
        naive model undefined; it is then replaced by ``min_variance`` ($1k
        squared, a standard deviation of $100) with a ``UserWarning``. The
        correct analysis (:func:`pymc_reference`, rejection ABC) needs no
        such patch: it models the noise.
    **kwargs
        Passed to :func:`statistics_posterior`.

    Returns
    -------
    arviz.InferenceData
        The naive posterior; ``attrs['clamped']`` counts replaced variances.
    """
    stats, clamped = naive_statistics(released, min_variance=min_variance)
    idata = statistics_posterior(stats, **kwargs)
    for group in idata.groups():
        idata[group].attrs["clamped"] = clamped
        idata[group].attrs["model"] = "naive: release taken as the statistics"
    return idata


def naive_statistics(released, *, min_variance: float = 0.01) -> tuple[np.ndarray, int]:
    """Return the release as statistics for the naive analysis, variances floored.

    Parameters
    ----------
    released : array_like
        The release, shape ``(4,)``.
    min_variance : float, default 0.01
        Floor for the released variances (see :func:`naive_posterior`).

    Returns
    -------
    statistics : numpy.ndarray
        The release with variances below ``min_variance`` replaced by it.
    clamped : int
        How many variances were replaced (a ``UserWarning`` says so too).

    Examples
    --------
    >>> naive_statistics([6.0, 4.0, 50.0, 30.0])
    (array([ 6.,  4., 50., 30.]), 0)
    """
    stats = np.array(released, dtype=float)
    if stats.shape != (4,) or not np.all(np.isfinite(stats)):
        raise ValueError(f"released must be 4 finite numbers, got {released!r}")
    if not (min_variance > 0 and math.isfinite(min_variance)):
        raise ValueError(f"min_variance must be a positive finite number, got {min_variance!r}")
    low = stats[2:] < min_variance
    if np.any(low):
        warnings.warn(
            f"released variances {stats[2:][low].tolist()} are below {min_variance}: the naive "
            f"analysis is undefined there and uses {min_variance} instead",
            UserWarning,
            stacklevel=3,
        )
        stats[2:][low] = min_variance
    return stats, int(np.count_nonzero(low))


def run(
    *,
    released=None,
    draws: int = 4000,
    nuts_draws: int = 1000,
    mle_simulations: int = 10**6,
    rng=None,
    progressbar: bool = True,
    verbose: bool = False,
) -> Result:
    """Reproduce one column of Gong's Figure 2: original, naive and exact posteriors, and MLEs.

    Draws one release of the confidential statistics (unless ``released`` is
    given), then fits the original analysis (confidential statistics), the
    naive analysis (release as statistics), exact rejection ABC and the PyMC
    reference, and the maximum likelihood estimate by Monte Carlo EM with the
    Louis information next to the exact (numerical integration) and naive ones.

    Parameters
    ----------
    released : array_like, optional
        The release ``(ybar_t, ybar_c, s2_t, s2_c)``; default a new release of
        the confidential statistics drawn from ``rng`` (a demonstration: a
        real curator draws its noise from OS entropy, see :func:`release`).
    draws : int, default 4000
        Rejection ABC draws (about 2 million simulations per 1000 draws). A
        pilot of :data:`PILOT_SIMULATIONS` prior simulations predicts the
        cost first; past :data:`~dpinfer.models._budget.REJECTION_BUDGET`
        simulations (a release far from the data), exact ``smc_abc`` with
        ``draws`` particles runs instead, and the notes say so.
    nuts_draws : int, default 1000
        Draws and tuning steps per chain (2 chains) of the three NUTS fits.
    mle_simulations : int, default 10**6
        Largest sample of the MCEM fit: :data:`MLE_SCHEDULE` with its stages
        up to this size (a smaller one gives a quicker, rougher fit), each
        stage at most :data:`MLE_MAX_ITERATIONS` iterations; a fit that has
        not converged is flagged in its table rows.
    rng : None, int, SeedSequence or Generator
        Root seed of the release, the sampler, the NUTS runs and MCEM.
    progressbar : bool, default True
        Show dpinfer's progress bars.
    verbose : bool, default False
        Show PyMC's progress bars too.

    Returns
    -------
    Result
        ``posterior`` is the rejection ABC (or ``smc_abc``) result;
        ``extra["reference"]`` the PyMC reference.
    """
    seeds = as_seed_sequence(rng).spawn(7)
    truth = confidential_statistics()
    demo = released is None
    released = (
        release(rng=seeds[0]) if demo else _validate.finite_array("released", released, shape=(4,))
    )
    nuts = {
        "draws": nuts_draws,
        "tune": nuts_draws,
        "chains": 2,
        "progressbar": progressbar and verbose,
    }
    abc, label, abc_notes, abc_numbers = _exact_sampler(
        released, draws, seeds[6], seeds[1], progressbar
    )
    reference = pymc_reference(released, rng=seeds[4], **nuts)
    fit = mle(
        released,
        schedule=_schedule_up_to(mle_simulations),
        rng=seeds[5],
        progressbar=progressbar,
    )
    # a fit that ran out of iterations is flagged in its own rows, not only in the notes
    flag = "" if fit.converged else "not converged"
    rows = [
        *draw_rows(
            "original (confidential)",
            "confidential",
            _draws(statistics_posterior(truth, rng=seeds[2], **nuts)),
        ),
        *draw_rows("naive", "naive", _draws(naive_posterior(released, rng=seeds[3], **nuts))),
        *draw_rows(label, "exact", _draws(abc)),
        *draw_rows("PyMC reference", "reference", _draws(reference)),
        *mle_rows(
            "MLE: Monte Carlo EM + Louis", "exact", fit.estimate, fit.standard_error, flag=flag
        ),
        *_mle_rows("MLE: exact (integration)", "reference", exact_mle(released)),
        *_mle_rows("MLE: naive (release as data)", "naive", naive_mle(released)),
    ]
    nuts_text, nuts_numbers = nuts_note("PyMC reference", reference, "reference")
    notes = [
        *abc_notes,
        nuts_text,
        f"MCEM: {fit.iterations} iterations, {fit.n_simulations:,} simulations, "
        f"converged: {fit.converged}"
        + ("" if fit.converged else f" (at most {MLE_MAX_ITERATIONS} iterations per stage)"),
    ]
    interval_notes, interval_numbers = mle_interval_notes(
        fit, simulations=min(mle_simulations, 100_000), progressbar=progressbar
    )
    notes += interval_notes
    diagnostics = {
        **abc_numbers,
        **interval_numbers,
        **nuts_numbers,
        "mcem_iterations": fit.iterations,
        "mcem_simulations": fit.n_simulations,
        "mcem_converged": bool(fit.converged),
        "released": released,
    }
    setting = [
        f"{'':<26}" + "".join(f"{n:>10}" for n in STATISTICS),
        f"{'confidential statistics':<26}" + "".join(f"{v:10.3f}" for v in truth),
        f"{'release (Laplace 3,3,6,6)':<26}"
        + "".join(f"{v:10.3f}" for v in released)
        + ("  (drawn from the seed: a demonstration)" if demo else ""),
    ]
    report = Report(
        "Lalonde NSW earnings from a DP release of group means and variances "
        "(Gong 2022, Section 5.2)",
        setting,
        rows,
        notes,
        diagnostics,
    )
    return Result(report, abc, extra={"reference": reference})


def run_example(out_dir, *, seed=None, progressbar: bool = True, **options) -> str:
    """Run :func:`run` (keyword ``options``) into ``out_dir`` and return the console summary.

    Writes ``posterior.nc`` (the ABC result), ``reference.nc`` (NUTS),
    ``summary.csv``, ``summary.json``, ``lalonde.png`` and ``manifest.json``
    (last). This is ``dpinfer run lalonde``.
    """
    result, manifest = save_run(
        EXAMPLE, out_dir, {**EXAMPLE.defaults(), **options}, seed=seed, progressbar=progressbar
    )
    return result.report.table() + f"\nwrote {', '.join(manifest['files'])} to {out_dir}"


def _schedule_up_to(size: int) -> dp.StagedSchedule:
    stages = [stage for stage in MLE_SCHEDULE.stages if stage[0] < size]
    return dp.StagedSchedule(
        stages=(*stages, (size, MLE_SCHEDULE.stages[-1][1])), max_iterations=MLE_MAX_ITERATIONS
    )


def _exact_sampler(released, draws, pilot_seed, seed, progressbar):
    """Exact rejection ABC when its predicted cost fits the budget, else ``smc_abc``.

    The cost comes from a pilot estimate of the acceptance rate
    (:func:`dpinfer.estimate_acceptance_rate`, :data:`PILOT_SIMULATIONS`
    prior simulations, a fraction of a second). Returns the result, its label, notes
    and diagnostics.
    """
    model_, mech = model(), mechanism()
    estimate = dp.estimate_acceptance_rate(
        model_, mech, released, simulations=PILOT_SIMULATIONS, rng=pilot_seed
    )
    log_rate = estimate.log_rate
    source = f"pilot of {PILOT_SIMULATIONS:,} prior simulations"
    plan = plan_sampler(log_rate, draws, fallback="smc_abc", source=source)
    notes = [plan.note]
    if not plan.switched:
        try:
            abc = dp.rejection_abc(
                model_,
                mech,
                released,
                draws=draws,
                max_simulations=plan.max_simulations,
                rng=seed,
                progressbar=progressbar,
            )
        except dp.SimulationBudgetExceeded as err:  # the pilot was too optimistic
            notes.append(f"rejection ABC stopped ({err}); smc_abc is used instead")
        else:
            attrs = abc.posterior.attrs
            rate, n_sim = float(attrs["acceptance_rate"]), int(attrs["n_simulations"])
            notes.append(
                f"rejection ABC: {draws} draws, acceptance rate {rate:.3e} ({n_sim} simulations)"
            )
            return abc, "rejection ABC", notes, {"acceptance_rate": rate, "n_simulations": n_sim}
    abc = dp.smc_abc(model_, mech, released, particles=draws, rng=seed, progressbar=progressbar)
    text, numbers = smc_note("smc_abc", abc, "smc")
    return (
        abc,
        "smc_abc",
        [*notes, text],
        {"predicted_acceptance_rate": math.exp(log_rate), **numbers},
    )


def _draws(idata) -> dict:
    return idata_draws(idata, PARAMETERS)


def _mle_rows(label: str, role: str, fit: dict) -> list:
    return mle_rows(label, role, fit["estimate"], fit["standard_error"])


# --- maximum likelihood (Gong 2022, Section 4) -----------------------------------------

#: Gong's Appendix E stages, with the last one at 10^6 (EM here is accelerated).
MLE_SCHEDULE = dp.StagedSchedule(stages=((10**3, 1e-3), (10**5, 1e-4), (10**6, 1e-5)))
#: :func:`run` stops a stage of its MCEM fit after this many iterations (the fit is then
#: flagged as not converged), so that a release far from the data cannot stall it.
MLE_MAX_ITERATIONS = 100
#: Prior simulations of the pilot that predicts rejection ABC's cost in :func:`run`.
PILOT_SIMULATIONS = 10**5


def likelihood() -> dp.Likelihood:
    r"""Return the likelihood of the four statistics, from PyMC with autodiff derivatives.

    The statistics are independent given the parameters:
    :math:`\bar y_g \sim N(\cdot, \sigma_g^2 / n_g)` and
    :math:`s_g^2 \sim Gamma((n_g - 1)/2, \text{rate } (n_g - 1) / (2 \sigma_g^2))`.
    The family is exponential with sufficient statistic
    :math:`b(s) = (\bar y_t, \bar y_t^2, \bar y_c, \bar y_c^2, s_t^2, s_c^2)`, and
    the M-step given :math:`E b` is in closed form: :math:`\mu + \tau = E \bar y_t`,
    :math:`\mu = E \bar y_c` and
    :math:`\sigma_g^2 = (n_g \mathrm{Var}(\bar y_g) + (n_g - 1) E s_g^2) / n_g`.

    Examples
    --------
    >>> lik = likelihood()
    >>> lik.space.labels
    ('tau', 'mu', 'sigma_t', 'sigma_c')
    """
    import pymc as pm

    nt, nc = N_TREATED, N_CONTROL

    def factory(p):
        return [
            pm.Normal.dist(p["mu"] + p["tau"], p["sigma_t"] / math.sqrt(nt)),
            pm.Normal.dist(p["mu"], p["sigma_c"] / math.sqrt(nc)),
            pm.Gamma.dist(alpha=(nt - 1) / 2, beta=(nt - 1) / (2 * p["sigma_t"] ** 2)),
            pm.Gamma.dist(alpha=(nc - 1) / 2, beta=(nc - 1) / (2 * p["sigma_c"] ** 2)),
        ]

    return dp.Likelihood.from_pymc(
        factory,
        params=PARAMETERS,
        support={"sigma_t": "positive", "sigma_c": "positive"},
        exponential_family=dp.ExponentialFamily(
            statistic=_sufficient_statistic, maximize=_complete_data_mle
        ),
    )


def mle(
    released,
    *,
    start: dict | None = None,
    schedule=MLE_SCHEDULE,
    accelerate: bool = True,
    rng=None,
    progressbar: bool = False,
    **kwargs,
) -> dp.MCEMResult:
    """Maximum likelihood estimate of ``(tau, mu, sigma_t, sigma_c)`` by Monte Carlo EM.

    Parameters
    ----------
    released : array_like
        The release, shape ``(4,)``.
    start : dict, optional
        Starting value; default the naive estimate (:func:`naive_mle`), with
        released variances below 1 raised to 1.
    schedule : schedule, default :data:`MLE_SCHEDULE`
        Sample sizes ``10^3, 10^5, 10^6`` with tolerances ``10^-3, 10^-4, 10^-5``.
    accelerate : bool, default True
        Louis-Newton steps (see :func:`dpinfer.mcem`): the noise on the means
        swamps them (fraction of missing information about 0.93), so plain EM
        creeps.
    rng, progressbar, **kwargs
        Passed to :func:`dpinfer.mcem`.

    Returns
    -------
    dpinfer.MCEMResult

    Examples
    --------
    >>> fit = mle([6.9, 4.1, 55.0, 33.0], rng=1)  # doctest: +SKIP
    >>> round(fit.estimate["tau"], 1), round(fit.standard_error["tau"], 1)  # doctest: +SKIP
    (2.8, 1.9)
    """
    released = np.asarray(released, dtype=float)
    if start is None:
        floored = released.copy()
        floored[2:] = np.maximum(floored[2:], 1.0)
        start = _complete_data_mle(_sufficient_statistic(floored[np.newaxis])[0])
    model_ = dp.Model(prior=prior(), simulate=simulate_statistics, likelihood=_shared_likelihood())
    return dp.mcem(
        model_,
        mechanism(),
        released,
        start=start,
        schedule=schedule,
        accelerate=accelerate,
        rng=rng,
        progressbar=progressbar,
        **kwargs,
    )


def naive_mle(released) -> dict:
    """Return the naive MLE, which takes the release for the confidential statistics.

    Returns
    -------
    dict
        ``estimate`` (dict; NaN where a released variance is not positive),
        ``information`` (4 x 4, ``-d^2 log pi(s_dp | theta)``) and
        ``standard_error`` (dict).

    Examples
    --------
    >>> naive = naive_mle([6.9, 4.1, 55.0, 33.0])
    >>> round(naive["estimate"]["tau"], 3), round(naive["standard_error"]["tau"], 3)
    (2.8, 0.65)
    """
    released = np.asarray(released, dtype=float)
    nan = {k: math.nan for k in PARAMETERS}
    if released.shape != (4,) or not np.all(np.isfinite(released)) or np.any(released[2:] <= 0):
        return {"estimate": nan, "information": np.full((4, 4), np.nan), "standard_error": nan}
    est = _complete_data_mle(_sufficient_statistic(released[np.newaxis])[0])
    theta = np.array([est[k] for k in PARAMETERS])
    info = -_shared_likelihood().derivatives(released[np.newaxis], theta, order=2)[2][0]
    se = np.sqrt(np.diag(np.linalg.inv(info)))
    return {
        "estimate": {k: float(v) for k, v in est.items()},
        "information": info,
        "standard_error": dict(zip(PARAMETERS, se.tolist(), strict=True)),
    }


def exact_log_likelihood(theta, released) -> float:
    r"""Log-likelihood of the release, ``log pi(s_dp | theta)``, by one-dimensional integrals.

    The release's coordinates are independent given ``theta``; each density is
    the convolution of a statistic's density with its Laplace noise: in
    closed form for the means (normal * Laplace), by adaptive quadrature for
    the variances (gamma * Laplace). The reference for :func:`mle`.

    Parameters
    ----------
    theta : dict or array_like
        ``tau, mu, sigma_t, sigma_c``.
    released : array_like
        The release, shape ``(4,)``.

    Examples
    --------
    >>> round(exact_log_likelihood([2.0, 4.0, 7.0, 5.0], [6.9, 4.1, 55.0, 33.0]), 4)
    -11.0963
    """
    tau, mu, sig_t, sig_c = (
        [float(theta[k]) for k in PARAMETERS] if isinstance(theta, dict) else map(float, theta)
    )
    x = np.asarray(released, dtype=float)
    return (
        _normal_laplace(x[0] - mu - tau, sig_t**2 / N_TREATED, SCALES[0])
        + _normal_laplace(x[1] - mu, sig_c**2 / N_CONTROL, SCALES[1])
        + _gamma_laplace(x[2], sig_t, N_TREATED, SCALES[2])
        + _gamma_laplace(x[3], sig_c, N_CONTROL, SCALES[3])
    )


def exact_mle(released) -> dict:
    """Return the MLE and observed information of :func:`exact_log_likelihood`.

    The density of each released mean is symmetric and unimodal about its
    expectation, so ``mu + tau`` and ``mu`` equal the released means; each
    ``sigma_g`` then maximises a one-dimensional function (scipy). The
    information is the negative Hessian by central differences.

    Returns
    -------
    dict
        ``estimate`` (dict), ``information`` (4 x 4), ``standard_error`` (dict).
    """
    from scipy.optimize import minimize_scalar

    x = np.asarray(released, dtype=float)
    sig = []
    for mean_scale, j, n in ((SCALES[0], 2, N_TREATED), (SCALES[1], 3, N_CONTROL)):
        res = minimize_scalar(
            lambda s, j=j, n=n, b=mean_scale: (
                -(_normal_laplace(0.0, s**2 / n, b) + _gamma_laplace(x[j], s, n, SCALES[j]))
            ),
            bounds=(1e-3, 200.0),
            method="bounded",
            options={"xatol": 1e-10},
        )
        sig.append(float(res.x))
    theta = np.array([x[0] - x[1], x[1], *sig])
    step = 1e-3 * np.maximum(1.0, np.abs(theta))
    info = np.zeros((4, 4))
    eye = np.eye(4)
    for i in range(4):
        for k in range(i, 4):
            di, dk = eye[i] * step[i], eye[k] * step[k]
            val = (
                exact_log_likelihood(theta + di + dk, x)
                - exact_log_likelihood(theta + di - dk, x)
                - exact_log_likelihood(theta - di + dk, x)
                + exact_log_likelihood(theta - di - dk, x)
            ) / (4 * step[i] * step[k])
            info[i, k] = info[k, i] = -val
    se = np.sqrt(np.diag(np.linalg.inv(info)))
    return {
        "estimate": dict(zip(PARAMETERS, theta.tolist(), strict=True)),
        "information": info,
        "standard_error": dict(zip(PARAMETERS, se.tolist(), strict=True)),
    }


# --- internals ---------------------------------------------------------------------


def _data_lines(text: str):
    return [line + "\n" for line in text.splitlines() if line and not line.startswith("#")]


def _pymc_priors():
    import pymc as pm

    tau = pm.Normal("tau", 0.0, 5.0)
    mu = pm.Normal("mu", 4.0, 5.0)
    sig_t = pm.Gamma("sigma_t", alpha=2.0, beta=0.2)
    sig_c = pm.Gamma("sigma_c", alpha=2.0, beta=0.2)
    return tau, mu, sig_t, sig_c


def _latent_statistics(tau, mu, sig_t, sig_c):
    import pymc as pm
    import pytensor.tensor as pt

    z = pm.Normal("z_mean", 0.0, 1.0, shape=2)
    half = np.array([N_TREATED - 1, N_CONTROL - 1]) / 2.0
    g = pm.Gamma("g_var", alpha=half, beta=half, shape=2)
    s = pt.stack(
        [
            mu + tau + sig_t / math.sqrt(N_TREATED) * z[0],
            mu + sig_c / math.sqrt(N_CONTROL) * z[1],
            sig_t**2 * g[0],
            sig_c**2 * g[1],
        ]
    )
    return pm.Deterministic("s", s)


@functools.cache
def _shared_likelihood() -> dp.Likelihood:
    # one instance, so its compiled PyTensor functions are reused across fits
    return likelihood()


def _sufficient_statistic(s):
    s = np.asarray(s, dtype=float)
    return np.column_stack([s[:, 0], s[:, 0] ** 2, s[:, 1], s[:, 1] ** 2, s[:, 2], s[:, 3]])


def _complete_data_mle(mean):
    var_t, var_c = mean[1] - mean[0] ** 2, mean[3] - mean[2] ** 2
    nt, nc = N_TREATED, N_CONTROL
    return {
        "tau": float(mean[0] - mean[2]),
        "mu": float(mean[2]),
        "sigma_t": float(np.sqrt((nt * var_t + (nt - 1) * mean[4]) / nt)),
        "sigma_c": float(np.sqrt((nc * var_c + (nc - 1) * mean[5]) / nc)),
    }


def _normal_laplace(d: float, var: float, b: float) -> float:
    """``log`` density at ``d`` of ``N(0, var) + Laplace(b)``."""
    from scipy.special import log_ndtr

    sd = math.sqrt(var)
    a = var / (2 * b * b) - d / b + log_ndtr(d / sd - sd / b)
    c = var / (2 * b * b) + d / b + log_ndtr(-d / sd - sd / b)
    return float(np.logaddexp(a, c) - math.log(2 * b))


def _gamma_laplace(x: float, sigma: float, n: int, b: float) -> float:
    """``log`` density at ``x`` of ``sigma^2 chi2_{n-1} / (n-1) + Laplace(b)``."""
    from scipy.integrate import quad

    dist = st.gamma((n - 1) / 2, scale=2 * sigma**2 / (n - 1))
    lo, hi = dist.ppf(1e-15), dist.isf(1e-15)
    if x > hi:  # the Laplace tail carries the mass beyond the gamma's bulk
        hi = x + 40 * b
    grid = np.append(np.linspace(lo, hi, 2001), x if lo < x < hi else lo)
    shift = float(np.max(dist.logpdf(grid) - np.abs(x - grid) / b))
    points = [p for p in (x, dist.mean()) if lo < p < hi]
    value = quad(
        lambda s: math.exp(dist.logpdf(s) - abs(x - s) / b - shift),
        lo,
        hi,
        points=points,
        limit=200,
        epsabs=0.0,
        epsrel=1e-12,
    )[0]
    return float(math.log(value) + shift - math.log(2 * b))
