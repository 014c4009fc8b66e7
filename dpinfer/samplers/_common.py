"""Argument checks and metadata shared by the samplers."""

from __future__ import annotations

import math
from concurrent.futures import Executor
from dataclasses import dataclass

import numpy as np

from .. import _validate
from .._rng import check_rng, seed_entropy
from ..mechanisms.base import Mechanism
from ..model import Model
from ..results import to_inference_data
from ._chains import per_chain
from ._precision import warn_if_overflowing_draws


def check_inputs(model, mechanism, released, *, needs_prior: bool = True) -> np.ndarray:
    """Validate the data arguments every sampler takes; return the release as an array.

    Bayesian samplers need the model's prior; likelihood methods pass
    ``needs_prior=False``.
    """
    if not isinstance(model, Model):
        raise TypeError(f"model must be a dpinfer.Model, got {type(model).__name__}: {model!r}")
    if needs_prior:
        model.require_prior("this sampler")
    check_mechanism(mechanism)
    return mechanism.check_released(released)


def check_mechanism(mechanism) -> None:
    """Raise TypeError unless ``mechanism`` is a dpinfer Mechanism."""
    if not isinstance(mechanism, Mechanism):
        raise TypeError(
            f"mechanism must be a dpinfer Mechanism, got {type(mechanism).__name__}: {mechanism!r}"
        )


def check_count(name: str, value) -> int:
    """Return a positive integer size (draws, batch sizes, particles) that can fit in memory."""
    return _validate.size(name, value)


def check_options(*, rng, executor, progressbar) -> None:
    """Check the options every sampler shares, up front, whichever path uses them."""
    check_rng(rng)
    _validate.executor("executor", executor)
    _validate.flag("progressbar", progressbar)


def privacy_attrs(mechanism: Mechanism) -> dict:
    """``epsilon``, ``delta`` and ``rho`` of the mechanism's guarantee, NaN where it has none.

    NaN throughout when no sensitivity was declared; a guarantee stated in zCDP
    only has NaN ``epsilon`` and ``delta`` (``Privacy.to_approx`` gives a pair).
    """
    try:
        privacy = mechanism.privacy
    except ValueError:
        return {"epsilon": math.nan, "delta": math.nan, "rho": math.nan}
    zcdp_only = privacy.epsilon is None
    return {
        "epsilon": math.nan if zcdp_only else privacy.epsilon,
        "delta": math.nan if zcdp_only else privacy.delta,
        "rho": math.nan if privacy.rho is None else privacy.rho,
    }


def mechanism_constants(mechanism: Mechanism, prefix: str = "mechanism") -> dict:
    """Numeric parameters of the mechanism, for the ``constant_data`` group.

    A wrapped mechanism (``Thresholded``) adds its inner one's under ``{prefix}_inner``.
    """
    out: dict[str, object] = {}
    for key, value in vars(mechanism).items():
        if key.startswith("_") or value is None:
            continue
        if isinstance(value, Mechanism):
            out |= mechanism_constants(value, f"{prefix}_inner")
            continue
        arr = np.asarray(value)
        if arr.dtype.kind in "biuf":
            out[f"{prefix}_{key}"] = arr
    return out


def stack_draws(chunks: list[dict], names) -> dict[str, np.ndarray]:
    """Concatenate per-chunk dicts of arrays along the first axis."""
    return {name: np.concatenate([c[name] for c in chunks]) for name in names}


@dataclass(frozen=True)
class AbcCall:
    """One call of a sampler of a DP release: its checked arguments, and its result.

    :meth:`check` validates what every such sampler takes, in the same order
    (model, mechanism, release, then seed, executor, progress bar, then the
    draws or particles over the chains) and keeps the executor and progress
    bar for the run; :meth:`result` records what every result says of the
    call, so that a sampler passes only its own draws and attributes.
    """

    method: str
    reference: str
    mechanism: Mechanism
    released: np.ndarray
    chains: int
    per_chain: int
    executor: Executor | None = None
    progressbar: bool = True

    @classmethod
    def check(
        cls,
        method,
        reference,
        model,
        mechanism,
        released,
        total: tuple[str, object],
        chains,
        *,
        rng,
        executor,
        progressbar,
    ) -> AbcCall:
        """Validate a sampler's common arguments; ``total`` is ``(name, value)``.

        ``total`` counts the draws or particles of all chains together; it is
        split into ``chains`` chains of ``per_chain`` each (rounded up).
        """
        released = check_inputs(model, mechanism, released)
        check_options(rng=rng, executor=executor, progressbar=progressbar)
        chains, per = per_chain(*total, chains)
        return cls(method, reference, mechanism, released, chains, per, executor, progressbar)

    def result(self, posterior, *, root, sample_stats=None, diagnostic_vars=None, **attrs):
        """Build the InferenceData every sampler of a DP release returns.

        ``posterior`` and ``sample_stats`` arrays have a leading axis of
        ``chains * per_chain`` (chain-major), split into the chains here;
        samplers that run chains as independent runs merge them with
        :func:`dpinfer.samplers._chains.combine` first. ``attrs`` carries the
        sampler-specific keys (``n_simulations``, ``ess``, per-chain ``chain_*``
        arrays, ...); the method, reference, mechanism, its privacy and the seed
        of ``root`` are filled here. The ``ess`` given is the sampler's own
        figure: it is kept as ``ess_sampler`` and ``ess`` becomes the
        conservative one (see :mod:`dpinfer.results`). ``diagnostic_vars``
        names the posterior variables those diagnostics cover (default: all).
        """
        warn_if_overflowing_draws(self.method, posterior)
        return to_inference_data(
            posterior,
            chains=self.chains,
            diagnostic_vars=diagnostic_vars,
            sample_stats=sample_stats,
            observed=self.released,
            constant_data=mechanism_constants(self.mechanism),
            attrs={
                "method": self.method,
                "reference": self.reference,
                "mechanism": repr(self.mechanism),
                **privacy_attrs(self.mechanism),
                "seed": seed_entropy(root),
                **attrs,
            },
        )
