"""Tuberculosis outbreaks as a birth-death process, released by ABCDP (Park et al. 2021, 6.3).

The third ABCDP example, after Lintusaari et al. (2019): a continuous-time
Markov jump process (time in years) of active tuberculosis cases, each in
the *cluster* of its pathogen strain.

* **Burden** ``beta``: a new strain appears, a cluster of one case, which
  complies with therapy with probability ``p_c = 0.95``.
* **Transmission** at rate ``alpha_c n_c`` from the compliant cases and
  ``alpha_nc n_nc`` from the non-compliant ones: the new host joins its
  source's cluster, with compliance drawn afresh (``p_c``).
* **Removal** (recovery or death) at rates ``delta_c n_c`` and
  ``delta_nc n_nc``, observed with probability ``p_obs = 0.80`` once past the
  warm-up.

The parameters are ``theta = (R1, t1, R2, beta)``, index 1 non-compliant and
2 compliant: ``delta_2 = 5.95`` is fixed, ``alpha_2 = R2 delta_2``,
``delta_1 = t1 / |R1 - 1|`` and ``alpha_1 = t1 R1 / (R1 - 1)``. The process
starts empty and runs year by year until both case counts have reached their
deterministic equilibrium means (:func:`equilibrium`) or for 150 years;
with ``y`` those years, the warm-up ends at ``t_warm = max(2y, 15)`` and the
removals are observed over ``t_obs = 2`` years. A run is summarised by the
eight statistics :data:`STATISTICS` (:func:`summary_statistics`).

Priors (:func:`prior`): ``R1 ~ U(1.01, 20)``, ``t1 ~ U(0.01, 30)``,
``R2 | R1 ~ U(0.01 B, B)`` with ``B = (1 - 0.05 R1) / 0.95``,
``beta ~ N(200, sd)``, jointly truncated to ``0 < p_obs S < 350`` expected
observations a year and ``alpha_1 < 40``. The two public codes disagree on
``sd``: Lintusaari et al.'s uses 30, the ABCDP code ``sqrt(30)``; the default
here is 30 (``beta_sd`` changes it).

The data of Lintusaari et al. are the San Francisco clusters of 1991-92
(Small et al. 1994; :data:`SF_CLUSTER_SIZES`, :data:`SF_LARGEST_MONTHS`).

ABCDP record setup
------------------
The confidential data are ``n`` independent outbreak records (``n = 100``
and 1000), simulated here at :data:`TRUTH`, each kept as its eight
statistics. A public parameter draw simulates ``n`` pseudo-records, pairs
them with the confidential ones by index and averages the weighted distance
clipped at ``C = 200`` (:func:`distance`), so that replacing one
confidential record moves the average by at most the sensitivity ``C / n``.
The paper's settings: ``c = 10``, ``T = 1000`` prior draws,
``epsilon_abc = 150``, ``epsilon_total = 1``, with and without threshold
resampling; the error is the mean absolute error of the mean of the
accepted draws (:func:`error_table`). That is up to ``T n = 10^6``
simulator runs for ``n = 1000``, which :func:`public_draws` spreads over any
executor in chunks, keeping only the parameters and their distances.

``dpinfer run tuberculosis`` runs :func:`run`: one ABCDP posterior next to
the same rejection ABC without privacy noise and the truth, and the error
table over repetitions of the privacy noise. By default a REDUCED setting
(``n = 100`` records, ``T = 300`` proposals: 30 000 simulator runs); with
``full=True`` the paper's (``n`` = 100 and 1000, ``T = 1000``: 1.1 million
runs, about 8 minutes of one core). The public seed draws the confidential
records and the proposals; the privacy noise always comes from OS entropy.

**The package.** :mod:`._prior` holds the parameters and their prior;
:mod:`._simulator` the birth-death simulator over the compiled loop of
:mod:`._compiled` and the San Francisco statistics; :mod:`._abcdp` the records,
the distance, the public draws and one ABCDP run; :mod:`._errors` the error
table over repetitions; :mod:`._run` the command-line example and its report.
Every public name is imported here.

References
----------
.. [1] Park, M., Vinaroz, M. and Jitkrittum, W. (2021). ABCDP: Approximate
   Bayesian computation with differential privacy. Entropy 23(8), 961.
.. [2] Lintusaari, J., Blomstedt, P., Rose, B., Sivula, T., Gutmann, M. U.,
   Kaski, S. and Corander, J. (2019). Resolving outbreak dynamics using
   approximate Bayesian computation for stochastic birth-death models.
   Wellcome Open Research 4:14.
.. [3] Small, P. M. et al. (1994). The epidemiology of tuberculosis in San
   Francisco. New England Journal of Medicine 330(24), 1703-1709.

Examples
--------
>>> import numpy as np
>>> from dpinfer.models import tuberculosis as tb
>>> tb.sf_statistics()[:3]
array([473., 326.,  30.])
>>> stats = tb.simulate(tb.TRUTH, rng=1)
>>> stats.shape
(8,)
"""

from __future__ import annotations

from ._abcdp import (
    CLIP,
    EPSILON_ABC,
    EPSILON_TOTAL,
    N_PROPOSALS,
    N_RECORDS,
    RELATIVE,
    TRUTH,
    WEIGHTS,
    C,
    confidential_records,
    distance,
    model,
    prior,
    public_draws,
)
from ._errors import (
    PAPER_ERRORS,
    QUANTILES,
    SETTINGS,
    error_table,
    single_run_errors,
    summarise_errors,
)
from ._prior import (
    ALPHA1_BOUND,
    BETA_MEAN,
    BETA_SD,
    BETA_SD_ABCDP_CODE,
    MEAN_OBS_BOUNDS,
    P_COMPLIANCE,
    P_OBSERVED,
    PARAMETERS,
    R1_BOUNDS,
    R2_FRACTION_BOUNDS,
    T1_BOUNDS,
    JointPrior,
)
from ._run import EXAMPLE, MAX_SIMULATOR_RUNS, REDUCED_PROPOSALS, check_options, run
from ._simulator import (
    DELTA_2,
    MAX_CASES,
    MAX_WARMUP_YEARS,
    MIN_WARMUP,
    SF_CLUSTER_SIZES,
    SF_LARGEST_MONTHS,
    STATISTICS,
    T_OBS,
    Outbreak,
    equilibrium,
    rates,
    sf_statistics,
    simulate,
    simulate_outbreak,
    summary_statistics,
)

__all__ = [
    "ALPHA1_BOUND",
    "BETA_MEAN",
    "BETA_SD",
    "BETA_SD_ABCDP_CODE",
    "C",
    "CLIP",
    "DELTA_2",
    "EPSILON_ABC",
    "EPSILON_TOTAL",
    "EXAMPLE",
    "JointPrior",
    "MAX_CASES",
    "MAX_SIMULATOR_RUNS",
    "MAX_WARMUP_YEARS",
    "MEAN_OBS_BOUNDS",
    "MIN_WARMUP",
    "N_PROPOSALS",
    "N_RECORDS",
    "Outbreak",
    "PAPER_ERRORS",
    "QUANTILES",
    "PARAMETERS",
    "P_COMPLIANCE",
    "P_OBSERVED",
    "R1_BOUNDS",
    "R2_FRACTION_BOUNDS",
    "REDUCED_PROPOSALS",
    "RELATIVE",
    "SETTINGS",
    "SF_CLUSTER_SIZES",
    "SF_LARGEST_MONTHS",
    "STATISTICS",
    "T1_BOUNDS",
    "TRUTH",
    "T_OBS",
    "WEIGHTS",
    "check_options",
    "confidential_records",
    "distance",
    "equilibrium",
    "error_table",
    "model",
    "prior",
    "public_draws",
    "rates",
    "run",
    "sf_statistics",
    "simulate",
    "simulate_outbreak",
    "single_run_errors",
    "summarise_errors",
    "summary_statistics",
]
