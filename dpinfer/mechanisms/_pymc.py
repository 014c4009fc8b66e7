"""``Mechanism.to_pymc``: a release's density as an observed variable of a PyMC model.

With the confidential value a tensor of the model, the family's own PyTensor
log-density terms (:meth:`Mechanism._pymc_log_terms`) summed over the event.
With a latent distribution of it, a handler registered here by
:mod:`dpinfer.marginal`, which sits above the mechanisms and sums it out.
PyMC is imported when a model is built, not with ``dpinfer``.
"""

from __future__ import annotations

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
        observed=observed,
        signature=f"({core})->({core})",
        dtype="int64" if mechanism.discrete else "floatX",
    )
