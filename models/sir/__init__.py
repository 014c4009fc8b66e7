"""A stochastic SIR epidemic released through the binomial mechanism (Xiong et al. 2023).

Section 4.1 and S3.1 of Xiong, Ju and Zhang (2023): a closed population of
``K`` people moves through the compartments susceptible, infected and
recovered as a Markov jump process with infection rate ``beta S I / K`` and
recovery rate ``gamma I``, from ``(S, I, R) = (K - 1, 1, 0)``. The number
infected ``I(t)`` at ``L`` observation times is the confidential statistic;
the curator publishes ``s_i ~ Binomial(n, (I(t_i) + m) / (K + 2m))``, which is
``epsilon = nL/m``-DP (Proposition 4; :class:`dpinfer.BinomialRelease`).

The example's settings: ``K = 10**6``; times ``t = 0, 17, ..., 153`` (``L =
10``, horizon 160); ``n = m = 1000``, so ``epsilon = 10``; parameters
``(log beta, log gamma)`` with independent normal priors of means
``(log 0.4, log 0.125)`` and *variances* ``(0.5, 0.2)``; truth ``(log beta,
log gamma) = (-0.5, -3)`` (``R0 = beta / gamma`` about 12, a measles-like
outbreak). Xiong et al. report the release as fractions ``s_i / n``
(:data:`RELEASED_FRACTIONS`); dpinfer's mechanism works with the integer
counts (:data:`RELEASED`).

Two simulators of the curve, both compiled with numba and drawing from the
numpy ``Generator`` passed as ``rng``:

* :func:`simulate_exact`, Gillespie's direct method (exact; about 2 million
  events per full epidemic at ``K = 10**6``);
* :func:`simulate_approx`, exact events while few are infected and
  tau-leaps above (approximate; its measured error is in its docstring).

**The package.** :mod:`._setting` holds the settings, the release, the
prior and the mechanism; :mod:`._simulate` the two simulators over the numba
loops of :mod:`._compiled`; :mod:`._model` the model, the naive analysis and
``R0``; :mod:`._run` the command-line example and its report. Every public
name is imported here.

Examples
--------
>>> import numpy as np
>>> from dpinfer.models import sir
>>> sir.RELEASED
array([  1,  31, 614, 263, 123,  47,  18,   9,   5,   3])
>>> sir.mechanism().privacy.epsilon
10.0
>>> curves = sir.simulate_exact([0.6, 0.6], [0.05, 0.05], population=1000, rng=1)
>>> curves.shape
(2, 10)
"""

from __future__ import annotations

from ._model import NoiselessFraction, model, naive_abc, naive_mechanism, r0, simulate_release
from ._run import EXAMPLE, REFERENCE, run
from ._setting import (
    EPSILON,
    N_TRIALS,
    POPULATION,
    PRIOR_MEAN,
    PRIOR_VARIANCE,
    RELEASED,
    RELEASED_FRACTIONS,
    TIMES,
    TRUTH,
    M,
    mechanism,
    prior,
)
from ._simulate import simulate_approx, simulate_exact

__all__ = [
    "EPSILON",
    "EXAMPLE",
    "M",
    "N_TRIALS",
    "NoiselessFraction",
    "POPULATION",
    "PRIOR_MEAN",
    "PRIOR_VARIANCE",
    "REFERENCE",
    "RELEASED",
    "RELEASED_FRACTIONS",
    "TIMES",
    "TRUTH",
    "mechanism",
    "model",
    "naive_abc",
    "naive_mechanism",
    "prior",
    "r0",
    "run",
    "simulate_approx",
    "simulate_exact",
    "simulate_release",
]
