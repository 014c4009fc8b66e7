"""Public parameter draws and their distances to the confidential data (ABCDP inputs)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ... import _validate, parallel
from ..._progress import progress_bar
from ..._rng import RNGLike, as_seed_sequence, seed_entropy
from ..._user_code import no_writes, outside_domain, read_only
from ...distances.base import Distance
from ...model import Model, _callable_name
from .._common import check_options, stack_draws


@dataclass(frozen=True)
class PublicDraws:
    """Parameters ``theta_t`` (public) and distances ``rho_t`` (confidential until noised).

    Attributes
    ----------
    params : dict of str to numpy.ndarray
        ``T`` draws of each parameter, in proposal order.
    distances : numpy.ndarray
        ``(T,)`` distances from the confidential data to each pseudo-dataset.
    seed : str
        The entropy of the root seed (``"given"`` for given pseudo-data).
    root : numpy.random.SeedSequence or None
        The root the chunks were spawned from (None for given pseudo-data).
    """

    params: dict[str, np.ndarray]
    distances: np.ndarray
    seed: str
    root: np.random.SeedSequence | None = None
    chunks: int = 0  # children spawned from ``root``, one per chunk


def public_distances(
    observed: ArrayLike,
    distance: Distance,
    *,
    params: Mapping[str, ArrayLike] | None = None,
    pseudo_data: Sequence[Any] | np.ndarray | None = None,
    model: Model | None = None,
    n_proposals: int | None = None,
    rng: RNGLike = None,
    batch_size: int = 500,
    executor: Executor | None = None,
    progressbar: bool = True,
) -> PublicDraws:
    """Distances from the confidential ``observed`` to public pseudo-datasets, in proposal order.

    The first, public half of ABCDP (Park et al. 2021, Algorithm 2): computed
    once, the distances can serve several ABCDP runs with fresh privacy noise
    (:class:`dpinfer.distances.PrecomputedDistances`). The distances are
    confidential until noised: release only what :func:`dpinfer.abcdp` makes
    of them.

    Parameters
    ----------
    observed : array_like
        The confidential data.
    distance : Distance
        A distance with declared sensitivity (:mod:`dpinfer.distances`).
    params, pseudo_data : dict and array_like, optional
        ``T`` given parameter draws and their ``T`` pseudo-datasets.
    model : Model, optional
        Otherwise: its prior is drawn ``n_proposals`` times and its simulator
        makes one pseudo-dataset per draw, in chunks of ``batch_size`` (chunk
        ``i`` from the ``i``-th child of ``rng``, so any ``executor`` gives the
        same draws); only parameters and distances are kept.
    n_proposals : int, optional
        ``T``, with ``model``.
    rng : None, int, SeedSequence or Generator, optional
        Public randomness of the draws and pseudo-datasets.
    batch_size : int, default 500
    executor : concurrent.futures.Executor, optional
    progressbar : bool, default True

    Returns
    -------
    PublicDraws

    Examples
    --------
    >>> import numpy as np, scipy.stats as st, dpinfer as dp
    >>> from dpinfer.distances import ClippedL2, PrecomputedDistances
    >>> from dpinfer.samplers import public_distances
    >>> observed = np.full((20, 1), 0.3)
    >>> model = dp.Model(prior={"mu": st.norm(0, 1)},
    ...                  simulate=lambda p, rng: rng.normal(p["mu"][:, None, None], 1.0,
    ...                                                     size=(len(p["mu"]), 20, 1)))
    >>> draws = public_distances(observed, ClippedL2(2.0), model=model, n_proposals=50,
    ...                          rng=1, progressbar=False)
    >>> draws.params["mu"].shape, draws.distances.shape
    ((50,), (50,))
    >>> shared = PrecomputedDistances(ClippedL2(2.0), observed, draws.distances)
    """
    if not isinstance(distance, Distance):
        raise TypeError(f"distance must be a dpinfer Distance, got {type(distance).__name__}")
    observed = check_observed(observed)
    check_options(rng=rng, executor=executor, progressbar=progressbar)
    _validate.size("batch_size", batch_size)
    if model is not None:
        if params is not None or pseudo_data is not None:
            raise ValueError("give either model (with n_proposals) or params and pseudo_data")
        return _simulated(
            observed, distance, model, n_proposals, rng, batch_size, executor, progressbar
        )
    if params is None or pseudo_data is None:
        raise ValueError("give either model and n_proposals, or params and pseudo_data")
    if not isinstance(params, dict) or not params:
        raise TypeError(f"params must be a non-empty dict of parameter draws, got {params!r:.80}")
    draws = {k: _validate.finite_array(f"params[{k!r}]", v) for k, v in params.items()}
    if not hasattr(pseudo_data, "__len__"):
        raise TypeError(
            f"pseudo_data must be an array of pseudo-datasets, got {pseudo_data!r:.80}"
        )
    t = len(pseudo_data)
    for name, value in draws.items():
        if len(value) != t:
            raise ValueError(f"params[{name!r}] has {len(value)} draws, pseudo_data has {t}")
    return PublicDraws(draws, _finite(distance(observed, pseudo_data)), "given")


def check_observed(observed: ArrayLike) -> np.ndarray:
    """Return the confidential observations as a non-empty float array of finite numbers.

    Messages name the shape, count and positions of bad entries, never their values.
    """
    return _validate.confidential_data("observed", observed)


def _simulated(observed, distance, model, n_proposals, rng, batch_size, executor, progressbar):
    if not isinstance(model, Model):
        raise TypeError(f"model must be a dpinfer.Model, got {type(model).__name__}")
    prior = model.require_prior("public_distances")
    total = _validate.size("n_proposals", n_proposals)
    batch_size = _validate.size("batch_size", batch_size)
    sizes = [min(batch_size, total - start) for start in range(0, total, batch_size)]
    root = as_seed_sequence(rng)
    name = f"the simulator of pseudo-datasets {_callable_name(model.simulate)}"

    def task(index, chunk_rng):
        params = prior.sample(sizes[index], chunk_rng)
        with no_writes(name, "params"), outside_domain(name, params):
            pseudo = model.simulate(read_only(params), chunk_rng)
        pseudo = _validate.numeric_output(pseudo, source=name)
        return {**params, "_distance": distance(observed, pseudo)}

    with progress_bar("distances", total=total, enabled=progressbar) as bar:
        chunks = parallel.map_chunks(
            task,
            root,
            len(sizes),
            executor=executor,
            on_result=lambda c: bar.advance(len(c["_distance"])),
        )
    names = [k for k in chunks[0] if k != "_distance"]
    dists = np.concatenate([c["_distance"] for c in chunks])
    draws = stack_draws(chunks, names)
    return PublicDraws(draws, _finite(dists), seed_entropy(root), root, len(sizes))


def _finite(distances) -> np.ndarray:
    d = np.asarray(distances, dtype=float)
    if d.ndim != 1:
        raise ValueError(f"the distance must return one value per pseudo-dataset, got {d.shape}")
    if not np.all(np.isfinite(d)):
        raise ValueError(
            f"{np.count_nonzero(~np.isfinite(d))} distances are not finite; use a clipped "
            "distance (ClippedL2 maps non-finite values to its bound) or fix the simulator"
        )
    return d
