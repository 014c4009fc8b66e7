"""``Mechanism.to_pymc``: a release's density as an observed variable of a PyMC model.

With the confidential value a tensor of the model, the family's own PyTensor
log-density terms (:meth:`Mechanism._pymc_log_terms`) summed over the event.
With a latent distribution of it, a handler registered here by
:mod:`dpinfer.marginal`, which sits above the mechanisms and sums it out.
PyMC is imported when a model is built, not with ``dpinfer``.
"""

from __future__ import annotations

import functools

import numpy as np

from .. import _validate

__all__ = ["observe", "register_latent_handler"]

# Handlers of ``to_pymc`` with a latent distribution for ``value``: ``handler(mechanism,
# name, value, observed=, totals=, tol=)`` returns the observed variable, or NotImplemented for a
# value it does not take. dpinfer.marginal, above the mechanisms, registers its own.
_LATENT_HANDLERS: list = []


def register_latent_handler(handler) -> None:
    """Let ``Mechanism.to_pymc`` pass values ``handler`` takes to it (see ``_LATENT_HANDLERS``)."""
    if handler not in _LATENT_HANDLERS:
        _LATENT_HANDLERS.append(handler)


def observe(mechanism, name: str, value, *, observed, totals=None, tol: float):
    """Add ``mechanism``'s density of ``observed`` given ``value`` (see ``Mechanism.to_pymc``)."""
    for handler in _LATENT_HANDLERS:
        variable = handler(mechanism, name, value, observed=observed, totals=totals, tol=tol)
        if variable is not NotImplemented:
            return variable
    import pymc as pm

    if totals is not None:
        raise TypeError(
            "totals are exact sums of latent counts: pass the counts' distribution as value "
            "(an unregistered one such as pm.Poisson.dist(mu=...)), not a model variable"
        )

    if not (isinstance(name, str) and name):
        raise TypeError(f"name must be a non-empty str, got {name!r}")
    checked = mechanism._check_released(observed, "observed")
    observed, log_terms = mechanism._pymc_log_terms(checked)
    value = _checked_value(mechanism, value)
    n_event = len(mechanism.event_shape)

    def logp(x, v):
        terms = log_terms(x, v)
        for _ in range(n_event):
            terms = terms.sum(axis=-1)
        return terms

    core = ",".join(f"e{i}" for i in range(n_event))
    return pm.CustomDist(
        name,
        value,
        logp=logp,
        random=functools.partial(_random_release, mechanism),
        observed=observed,
        signature=f"({core})->({core})",
        dtype="int64" if mechanism.discrete else "floatX",
    )


def _random_release(mechanism, value, rng=None, size=None):
    """Draw a release at ``value`` as PyMC holds it (posterior predictive draws)."""
    value = np.asarray(value)
    if size is not None:
        value = np.broadcast_to(value, (*tuple(size), *mechanism.event_shape))
    draws = mechanism._as_observed(np.asarray(mechanism.release(value, rng=rng)))
    return draws.astype(np.int64) if mechanism.discrete else draws


def _checked_value(mechanism, value):
    """Return the confidential value of ``to_pymc``, of shape ``event_shape`` exactly.

    A tensor whose shape is known only when the model runs is checked then.
    """
    from pytensor.graph.basic import Variable

    from .._tensor_shapes import batch_shape, checked

    if not isinstance(value, Variable):
        arr = _validate.numeric_array("value", value, confidential=True)
        if arr.shape != mechanism.event_shape:
            raise ValueError(
                f"value has shape {arr.shape}, which must equal the mechanism's event_shape "
                f"{mechanism.event_shape}"
            )
        return mechanism._check_value(arr)
    # a model's variables and pm.Data are tensors; the stubs' Variable declares no dtype
    dtype = str(value.dtype)  # type: ignore[attr-defined]
    if dtype.startswith("complex") or dtype == "bool":
        raise TypeError(f"value must be a real tensor, got dtype {dtype}")
    shape, target = batch_shape(value), mechanism.event_shape
    about = "the mechanism's event_shape"
    return checked(value, shape, name="value", target=target, about=about, exact=True)
