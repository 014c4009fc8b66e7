r"""Record-level models: the confidential data as ``n`` exchangeable records.

:class:`RecordModel` describes confidential data made of ``n`` records
``x_i ~ f(x | theta)``, independent given ``theta``, and a release of a
statistic that is *additive over records*,

.. math:: s = g\Big(\sum_{i=1}^n t(x_i)\Big), \qquad s_{dp} \sim \eta(\cdot \mid s),

with ``g`` the identity unless ``summary`` is given. It is what
:func:`dpinfer.da_mcmc` needs: the records are imputed, one at a time, and the
running sum of ``t`` makes each record update O(1).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _validate
from ._parameter_space import as_bounds
from ._pymc_bridge import model_parts
from ._user_code import no_writes, outside_domain, read_only
from .model import Prior, _callable_name, pymc_prior

if TYPE_CHECKING:
    import pymc as pm

__all__ = ["RecordModel"]


class RecordModel:
    r"""A prior, a record simulator and a per-record statistic.

    Parameters
    ----------
    prior : Prior or dict
        The prior of ``theta`` (a dict is passed to :class:`dpinfer.Prior`).
    simulate : callable
        ``simulate(params, n, rng) -> records`` with leading axes ``(batch, n)``:
        ``n`` independent records for each of the ``batch`` parameter sets in
        ``params`` (a dict of arrays with leading dimension ``batch``). Any
        trailing shape and dtype (a float vector per record, integer codes).
        Like every function of the model, it gets read-only arrays (the
        sampler's state): it computes new arrays and never changes them in
        place.
    statistic : callable
        ``statistic(records) -> t`` with leading axes ``(batch, n)``: the
        per-record statistic ``t(x_i)``, *not* summed over records. It must act
        record by record (samplers pass it blocks of any number of records), so
        a division by the number of records belongs in it as a constant.
    summary : callable, optional
        ``summary(total) -> s``: maps the sums ``sum_i t(x_i)``, shape
        ``(batch, *t_shape)``, to the released statistic, shape
        ``(batch, *event_shape)``. Default: the identity. Constant factors
        (a division by ``n``) are best put into ``statistic``: with the identity
        the record updates run in a compiled kernel.
    loglik : callable, optional
        ``loglik(records, params) -> (batch,)``: the complete-data
        log-likelihood ``sum_i log f(x_i | theta)`` of each dataset in the
        batch (constants in ``theta`` may be dropped). Needed unless ``update``
        is given.
    update : callable, optional
        ``update(records, rng) -> params``: an exact draw of ``theta`` given
        the complete data (a conjugate update), for a batch of datasets.
    support : dict, optional
        ``{name: (lower, upper)}``: supports of parameters that the prior
        cannot report (a callable prior), used by the Metropolis step of
        ``theta`` when ``update`` is not given.

    Notes
    -----
    Given ``theta`` the records are i.i.d. from ``f``; the joint target of
    :func:`dpinfer.da_mcmc` is

    .. math:: \pi(\theta, x \mid s_{dp}) \propto \pi_0(\theta)
              \prod_i f(x_i \mid \theta)\; \eta\big(s_{dp} \mid g(\textstyle\sum_i t(x_i))\big),

    whose ``theta`` margin is the exact posterior given the release.
    :meth:`from_pymc` builds all of it from one PyMC model of a record.

    Examples
    --------
    ``n`` Bernoulli records whose count is released:

    >>> import scipy.stats as st
    >>> model = RecordModel(
    ...     prior={"p": st.beta(2, 2)},
    ...     simulate=lambda prm, n, rng: rng.random((len(prm["p"]), n)) < prm["p"][:, None],
    ...     statistic=lambda x: x.astype(float),
    ...     update=lambda x, rng: {"p": rng.beta(2 + x.sum(1), 2 + (~x).sum(1))},
    ... )
    >>> records = model.simulate_records({"p": np.array([0.3, 0.6])}, 50, np.random.default_rng(0))
    >>> records.shape, model.statistics(records).shape
    ((2, 50), (2, 50))
    """

    def __init__(
        self,
        prior: Prior | Mapping[str, Any],
        simulate: Callable,
        statistic: Callable,
        *,
        summary: Callable | None = None,
        loglik: Callable | None = None,
        update: Callable | None = None,
        support: Mapping | None = None,
    ) -> None:
        self.prior = prior if isinstance(prior, Prior) else Prior(prior)
        for name, fn in (("simulate", simulate), ("statistic", statistic)):
            if not callable(fn):
                raise TypeError(f"{name} must be callable, got {type(fn).__name__}: {fn!r}")
        for name, option in (("summary", summary), ("loglik", loglik), ("update", update)):
            if option is not None and not callable(option):
                raise TypeError(f"{name} must be callable or None, got {type(option).__name__}")
        if loglik is None and update is None:
            raise ValueError(
                "a RecordModel needs update= (an exact draw of theta given the records) or "
                "loglik= (the complete-data log-likelihood, for a Metropolis step); got neither"
            )
        self.simulate = simulate
        self.statistic = statistic
        self.summary = summary
        self.loglik = loglik
        self.update = update
        self.support = _check_support(support, self.prior.names)
        self.pymc_model = None

    @classmethod
    def from_pymc(
        cls,
        pymc_model: pm.Model,
        *,
        record: str | Sequence[str],
        statistic: Callable,
        summary: Callable | None = None,
        params: Sequence[str] | None = None,
        support: Mapping | None = None,
        update: Callable | None = None,
    ) -> RecordModel:
        """Build prior, record simulator and complete-data likelihood from one PyMC model.

        Parameters
        ----------
        pymc_model : pymc.Model
            Free random variables for the parameters, with their priors, and
            random variable(s) for *one* record.
        record : str or sequence of str
            Name(s) of the record's random variables; several are flattened
            and concatenated, in order, along the record's last axis.
        statistic, summary, update
            As in :class:`RecordModel`; ``statistic`` receives the records
            as simulated from the PyMC model.
        params : sequence of str, optional
            Parameter names; default every other free random variable.
        support : dict, optional
            Overrides of the parameter supports read from PyMC's transforms.

        Returns
        -------
        RecordModel
            With the prior (sampler and density) and ``loglik`` compiled by
            PyTensor from the PyMC model (kept as ``pymc_model``).

        Examples
        --------
        >>> import pymc as pm
        >>> with pm.Model() as one_record:
        ...     rate = pm.Gamma("rate", alpha=2.0, beta=1.0)
        ...     x = pm.Poisson("x", mu=rate)
        >>> model = RecordModel.from_pymc(one_record, record="x", statistic=lambda x: x)
        >>> rng = np.random.default_rng(0)
        >>> x = model.simulate_records(model.prior.sample(3, rng), 20, rng)
        >>> x.shape, model.loglik(x, {"rate": np.ones(3)}).shape
        ((3, 20), (3,))
        """
        sample, logpdf, simulate_one, likelihood, _ = model_parts(
            pymc_model, statistic=record, params=params, support=support
        )
        bounds = {k: likelihood.space.bounds[k] for k in likelihood.space.names}
        model = cls(
            pymc_prior(sample, logpdf, pymc_model, likelihood.space.names),
            _RepeatedRecords(simulate_one),
            statistic,
            summary=summary,
            loglik=_SummedRecordLoglik(likelihood),
            update=update,
            support=bounds,
        )
        model.pymc_model = pymc_model
        return model

    # --- checked calls -----------------------------------------------------------------
    def simulate_records(
        self, params: Mapping[str, np.ndarray], n: int, rng: np.random.Generator
    ) -> np.ndarray:
        """Simulate ``n`` records per parameter set; check the leading axes ``(batch, n)``."""
        batch = _batch_size(params)
        name = f"the record simulator {_callable_name(self.simulate)}"
        with no_writes(name, "params"), outside_domain(name, params):
            records = self.simulate(read_only(params), n, rng)
        records = _validate.numeric_output(records, source=name, allow_bool=True)
        if records.ndim < 2 or records.shape[:2] != (batch, n):
            raise ValueError(
                f"simulate must return records with leading axes (batch, n) = ({batch}, {n}) "
                f"for a batch of {batch} parameter sets and n={n}; got shape {records.shape}"
            )
        return records

    def statistics(self, records: np.ndarray) -> np.ndarray:
        """Per-record statistics ``t(x_i)`` as float64, shape ``(batch, n, *t_shape)``.

        Records may be confidential: messages give shapes, counts and positions, never values.
        """
        try:
            lead = np.shape(records)[:2]
        except ValueError:  # ragged
            raise TypeError(
                f"records must be an array with leading axes (batch, n), got "
                f"{_validate.shown(records, confidential=True)}"
            ) from None
        t = np.asarray(self.statistic(records))
        if t.ndim < 2 or t.shape[:2] != lead:
            raise ValueError(
                "statistic must return one statistic per record, with the records' leading "
                f"axes (batch, n) = {lead}, not summed over records; got shape {t.shape}"
            )
        if t.dtype.kind not in "biuf":
            raise TypeError(f"statistic must return numbers for the records, got dtype {t.dtype}")
        t = t.astype(float, copy=False)
        finite = np.isfinite(t).reshape(*lead, -1).all(axis=-1)
        if not np.all(finite):
            raise ValueError(
                _validate.bad_entries("statistic(records)", ~finite, "be finite for every record")
            )
        return t

    def summarise(self, totals: np.ndarray, event_shape: tuple) -> np.ndarray:
        """Return the released statistic for sums of shape ``(batch, *t_shape)``, checked."""
        batch = len(totals)
        s = totals if self.summary is None else np.asarray(self.summary(totals))
        if s.shape == (batch, *event_shape):
            return s
        if self.summary is None:
            raise ValueError(
                f"the per-record statistic gives released statistics of shape {s.shape[1:]} "
                f"(after summing over records), but the mechanism releases shape {event_shape}; "
                "pass summary= to map the sum to the release"
            )
        raise ValueError(
            f"summary must return shape (batch, *event_shape) = {(batch, *event_shape)} for "
            f"sums of shape {totals.shape}; got {s.shape}"
        )

    def complete_loglik(self, records: np.ndarray, params: Mapping[str, np.ndarray]) -> np.ndarray:
        """``loglik(records, params)``, checked to have shape ``(batch,)``."""
        if self.loglik is None:
            raise ValueError("this RecordModel was given no loglik=")
        batch = len(records)
        with no_writes(f"loglik {_callable_name(self.loglik)}", "records or params"):
            out = np.asarray(self.loglik(read_only(records), read_only(params)), dtype=float)
        if out.shape != (batch,):
            raise ValueError(
                f"loglik must return one value per dataset, shape ({batch},); got {out.shape}"
            )
        return out

    def draw_update(
        self, records: np.ndarray, rng: np.random.Generator, names: Sequence[str]
    ) -> dict[str, np.ndarray]:
        """``update(records, rng)``, checked against the parameter names and batch."""
        if self.update is None:
            raise ValueError("this RecordModel was given no update=")
        batch = len(records)
        with no_writes(f"update {_callable_name(self.update)}", "records"):
            out = self.update(read_only(records), rng)
        if not isinstance(out, Mapping) or set(out) != set(names):
            got = sorted(out) if isinstance(out, Mapping) else type(out).__name__
            raise ValueError(f"update must return a dict with the parameters {names}; got {got}")
        out = {k: np.asarray(out[k], dtype=float) for k in names}
        for k, v in out.items():
            if v.shape[:1] != (batch,) or not np.all(np.isfinite(v)):
                raise ValueError(
                    f"update returned {k!r} of shape {v.shape} for {batch} datasets; expected "
                    "finite values with a leading dimension of the batch"
                )
        return out

    def __repr__(self) -> str:
        """``RecordModel(prior: ...; records: ...; statistic: ...; theta | records: ...)``."""
        if self.pymc_model is not None:
            records = "PyMC model of one record"
        else:
            records = _callable_name(self.simulate)
        parts = [
            f"prior: {self.prior.describe()}",
            f"records: {records}",
            f"statistic: {_callable_name(self.statistic)}",
        ]
        if self.summary is not None:
            parts.append(f"summary: {_callable_name(self.summary)}")
        if self.update is not None:
            parts.append(f"theta | records: update={_callable_name(self.update)}")
        else:
            parts.append("theta | records: Metropolis on loglik")
        return f"RecordModel({'; '.join(parts)})"


def _batch_size(params) -> int:
    if not isinstance(params, Mapping) or not params:
        got = "an empty dict" if isinstance(params, Mapping) else type(params).__name__
        raise TypeError(f"params must be a non-empty dict of arrays, got {got}")
    return len(np.asarray(next(iter(params.values()))))


class _RepeatedRecords:
    """``n`` records per parameter set from a simulator of one record per parameter set."""

    def __init__(self, simulate_one):
        self.simulate_one = simulate_one

    def __call__(self, params, n, rng):
        batch = _batch_size(params)
        repeated = {k: np.repeat(np.asarray(v), n, axis=0) for k, v in params.items()}
        one = np.asarray(self.simulate_one(repeated, rng))
        return one.reshape(batch, n, *one.shape[1:])


class _SummedRecordLoglik:
    """``sum_i log f(x_i | theta)`` from the PyMC record likelihood, batched."""

    def __init__(self, likelihood):
        self.likelihood = likelihood

    def __call__(self, records, params):
        records = np.asarray(records, dtype=float)
        batch, n = records.shape[:2]
        repeated = {k: np.repeat(np.asarray(v, dtype=float), n, axis=0) for k, v in params.items()}
        flat = records.reshape(batch * n, *records.shape[2:])
        return self.likelihood.logp(flat, repeated).reshape(batch, n).sum(axis=1)


def _check_support(support, names) -> dict:
    """``{name: named support or (lower, upper)}`` for parameters of the prior (when named)."""
    support = _validate.mapping("support", support)
    unknown = sorted(set(support) - set(names)) if names is not None else []
    if unknown:
        raise ValueError(f"support names {unknown}, which are not parameters of the prior {names}")
    for name, spec in support.items():
        as_bounds(name, spec)
    return support
