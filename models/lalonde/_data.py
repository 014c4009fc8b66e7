"""The NSW data, its confidential statistics, the model and the Laplace release.

The model, the priors and the release are described in :mod:`dpinfer.models.lalonde`.
"""

from __future__ import annotations

import csv
import io
import math
from importlib import resources

import numpy as np
import scipy.stats as st

import dpinfer as dp

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


def _data_lines(text: str):
    return [line + "\n" for line in text.splitlines() if line and not line.startswith("#")]
