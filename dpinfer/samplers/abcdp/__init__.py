"""ABCDP: differentially private rejection ABC with the sparse vector technique."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from ... import _validate
from ..._rng import RNGLike, as_generator
from ...accounting import Privacy, compose
from ...distances.provenance import leaked_settings
from ...mechanisms.svt import SparseVector
from ...results import to_inference_data
from ._privacy_seed import check_privacy_rng, privacy_noise_label
from ._public import check_observed, public_distances

if TYPE_CHECKING:
    from ...distances.base import Distance
    from ...model import Model
    from ...results import InferenceData

__all__ = ["abcdp"]

REFERENCE = (
    "Park, M., Vinaroz, M. and Jitkrittum, W. (2021). ABCDP: Approximate Bayesian "
    "computation with differential privacy. Entropy 23(8), 961, Algorithm 1."
)


def abcdp(
    observed: ArrayLike,
    distance: Distance,
    *,
    epsilon_total: float,
    epsilon_abc: float,
    c: int,
    resample: bool = False,
    params: Mapping[str, ArrayLike] | None = None,
    pseudo_data: Sequence[Any] | np.ndarray | None = None,
    model: Model | None = None,
    n_proposals: int | None = None,
    rng: RNGLike = None,
    privacy_rng: RNGLike = None,
    charged: Privacy | None = None,
    batch_size: int = 500,
    executor: Executor | None = None,
    progressbar: bool = True,
) -> InferenceData:
    r"""Release ``c`` differentially private posterior draws (ABCDP, Algorithm 1).

    The modeller's proposals ``theta_t`` and pseudo-datasets ``Y_t`` are public.
    The data owner runs the sparse vector technique over the distances
    ``rho(Y*, Y_t)`` in order: accept when ``rho_t + Lap(2b)`` falls below
    ``epsilon_abc + Lap(b)``, halting after ``c`` acceptances.

    Parameters
    ----------
    observed : array_like
        The confidential observations ``Y*`` (``N`` rows).
    distance : Distance
        Declares its sensitivity for ``N`` observations (e.g. :class:`MMD`:
        ``2 sqrt(B_k) / N``; :class:`ClippedL2`: its clip bound).
    epsilon_total : float
        Budget of the run; ``inf`` runs non-private rejection ABC (no noise).
    epsilon_abc : float
        The ABC threshold.
    c : int
        Number of accepted draws, after which the run halts.
    resample : bool, default False
        Redraw the threshold noise after each acceptance.
    params, pseudo_data : optional
        The public proposals: a dict of ``T`` parameter draws and the ``T``
        pseudo-datasets.
    model, n_proposals : optional
        Instead, a :class:`Model` whose simulator returns pseudo-datasets,
        and ``T``; the draws are generated with ``rng`` and recorded as public
        (the ``prior`` group of the result).
    rng : seed, optional
        Public simulation randomness; its entropy is published in
        ``attrs["seed"]``.
    privacy_rng : seed, optional
        The privacy noise; None (default) draws OS entropy, which is what a
        real release must use. A seed is for tests only: anyone who learns or
        guesses it rebuilds the noise, and the run is not private. A seed
        equal to, or derived from, ``rng`` or the published seed (the same
        entropy, a spawned child, a Generator made from it) is refused; the
        privacy seed itself is never written to the results.
    charged : Privacy, optional
        Budget spent on releasing settings computed from ``observed`` with a
        DP mechanism (see Notes); composed into the reported guarantee.
    batch_size, executor, progressbar
        Chunking of the simulation when ``model`` is given.

    Returns
    -------
    arviz.InferenceData
        ``posterior``: the accepted ``theta_t`` (at most ``c``); ``prior``: all
        public proposals; ``sample_stats``: ``query_index`` of each accepted
        draw (a function of the published indicators). ``attrs``:
        ``epsilon_total``, ``c``, ``b``, ``resample``, ``sensitivity``,
        ``n_queries``, and ``privacy_noise`` ('os-entropy' or 'seeded').

    Notes
    -----
    Theorem 1 gives :math:`\varepsilon = (c+1)\Delta/b` without resampling and
    :math:`2c\Delta/b` with it, so :math:`b` is set from ``epsilon_total``.
    Distances are never published; neither are the noisy threshold or noisy
    distances. :func:`dpinfer.audit.svt_privacy_loss` verifies the run's
    epsilon exactly on a stream of distances.

    *Settings from the data.* Every setting that depends on the confidential
    observations (a bandwidth, a clip bound, weights, ``epsilon_abc``, ``c``)
    must be released by a DP mechanism and its budget passed as ``charged``.
    A setting computed from ``observed`` without that is refused: a
    :class:`~dpinfer.distances.DataDerived` from any confidential record, a
    plain-number copy of one (``float(h)``, ``h * 1.0``, float32), or a value
    equal to the median heuristic of ``observed``. The guard cannot see
    transformed values, other statistics of the data, values computed in
    another session, or settings a custom distance does not list; see
    :mod:`dpinfer.distances.provenance`.

    The posterior is one chain, unlike the analyst's samplers: the accepted
    draws are the data owner's release, at most ``c`` of them in query order,
    and splitting them into chains of equal length would drop some. Independent
    runs for R-hat would each spend ``epsilon_total`` on the same data.

    Examples
    --------
    >>> import numpy as np, dpinfer as dp
    >>> rng = np.random.default_rng(0)
    >>> y = rng.normal(1.0, 1.0, size=(200, 1))
    >>> theta = {"mu": rng.normal(0, 2, size=2000)}
    >>> pseudo = theta["mu"][:, None, None] + rng.normal(size=(2000, 200, 1))
    >>> out = dp.abcdp(y, dp.distances.RandomFeatureMMD(50, 1.0, rng=1),
    ...                params=theta, pseudo_data=pseudo, epsilon_total=10.0,
    ...                epsilon_abc=0.1, c=20, privacy_rng=2, progressbar=False)
    >>> out.posterior["mu"].shape[1] <= 20
    True
    """
    eps_total = _validate.positive_or_inf("epsilon_total", epsilon_total)
    eps_abc = _validate.finite("epsilon_abc", epsilon_abc)
    c = _validate.positive_int("c", c)
    resample = _validate.flag("resample", resample)
    observed = check_observed(observed)
    _check_settings(distance, observed, charged, epsilon_abc=eps_abc)
    check_privacy_rng(privacy_rng, public=[rng])
    public = public_distances(
        observed,
        distance,
        params=params,
        pseudo_data=pseudo_data,
        model=model,
        n_proposals=n_proposals,
        rng=rng,
        batch_size=batch_size,
        executor=executor,
        progressbar=progressbar,
    )
    check_privacy_rng(privacy_rng, public=[rng, public.root], children=public.chunks)
    sensitivity = distance.sensitivity(len(observed))
    if math.isinf(eps_total):
        indicators, b = _noiseless(public.distances, eps_abc, c), 0.0
    else:
        svt = SparseVector.from_privacy(
            epsilon=eps_total,
            threshold=eps_abc,
            c=c,
            sensitivity=sensitivity,
            resample=resample,
        )
        indicators, b = (
            svt.run(
                public.distances, rng=as_generator(privacy_rng, name="privacy_rng")
            ).indicators,
            svt.scale,
        )
    accepted = np.flatnonzero(indicators)
    guarantee = (
        Privacy(epsilon=eps_total)
        if charged is None
        else compose(Privacy(epsilon=eps_total), charged)
    )
    return to_inference_data(
        {k: v[accepted] for k, v in public.params.items()},
        prior=public.params,
        sample_stats={"query_index": accepted},
        attrs={
            "method": "abcdp",
            "reference": REFERENCE,
            "mechanism": "sparse vector technique (threshold Lap(b), distances Lap(2b))",
            "epsilon": guarantee.epsilon,
            "delta": guarantee.delta,
            "epsilon_total": eps_total,
            "epsilon_abc": eps_abc,
            "c": c,
            "b": b,
            "resample": bool(resample),
            "sensitivity": sensitivity,
            "distance": repr(distance),
            "n_queries": int(indicators.size),
            "n_simulations": int(public.distances.size),
            "acceptance_rate": accepted.size / max(1, indicators.size),
            "ess": float(accepted.size),
            "log_evidence": math.nan,
            "seed": public.seed,
            "privacy_noise": privacy_noise_label(privacy_rng),
        },
    )


def _noiseless(distances: np.ndarray, threshold: float, c: int) -> np.ndarray:
    """Non-private rejection ABC with the same halting rule: the first ``c`` below threshold."""
    hits = np.flatnonzero(distances <= threshold)
    if hits.size < c:
        return distances <= threshold
    stop = hits[c - 1] + 1
    return distances[:stop] <= threshold


def _check_settings(
    distance, observed, charged, *, epsilon_abc: float, can_charge: bool = True
) -> None:
    settings = distance.settings() if hasattr(distance, "settings") else {}
    leaked = leaked_settings({**settings, "epsilon_abc": epsilon_abc}, observed)
    if leaked and charged is None:
        remedy = (
            " or, if it was computed with a DP mechanism, pass charged=Privacy(...) for "
            "the budget that spent"
            if can_charge
            else ""
        )
        raise ValueError(
            f"{', '.join(leaked)} was computed from the confidential observations (or equals, "
            "to 1e-6, a value computed from them), which leaks them outside the privacy "
            "budget; compute it from simulated data (e.g. median_heuristic on a "
            f"pseudo-dataset){remedy}"
        )
    if charged is not None and not isinstance(charged, Privacy):
        raise TypeError(f"charged must be a Privacy, got {type(charged).__name__}")
