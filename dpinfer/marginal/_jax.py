"""The marginal Ops in PyTensor's JAX backend: host callbacks into the compiled kernels.

Importing this module registers, with ``pytensor.link.jax.dispatch.jax_funcify``,
a JAX implementation of :class:`._op.MarginalLogp`, of
:class:`._group_op.GroupTotalsLogp` (cells with exact group totals: the same callback
into :func:`._groups.group_sweep`, without state) and of the quadrature's
``HeldFixed`` and ``NoiseTerms`` (:mod:`._quadrature`), so that a model built with
``to_pymc`` compiles with ``mode="JAX"`` and samples with
``pm.sample(nuts_sampler="numpyro")`` or ``"blackjax"``.
:func:`dpinfer.marginal._pymc.observe` has it imported when PyTensor's JAX dispatch is
(:mod:`dpinfer._backend_hooks`), so that a model alone never imports JAX.

**What the callback does.** :class:`MarginalLogp`'s JAX function is a
``jax.pure_callback`` into :func:`._op.sweep`, the numba kernel the
default backend runs: JAX hands the callback the latent parameters ``a, b``, the
kernel sums every cell on the host, and the log-likelihood and both scores come
back. The releases' form and log-CDF tables are constants of the model, read once
when the graph is converted and kept by the callback, so only ``a, b`` cross per
evaluation. On CPU the arrays are shared with XLA; **on an accelerator the callback
still runs on the host**: each evaluation copies ``a, b`` from the device to the
host and the three outputs back (``5 n`` float64 numbers for ``n`` cells), and the
device waits for the host's sum.

**State.** The kernel keeps each cell's last mode and the constants of its releases
(:data:`._poisson.STATE` columns), which make the next evaluation cheaper and never
change its result. A JAX function cannot update the state input (JAX arrays are
immutable), and a fresh state per call would redo each cell's
constants and mode search at every evaluation. The callback keeps the states on the
host instead, one per batch row (a chain under ``vmap``), in a pool: a call takes the
states the last finished call put back, and calls that overlap (chains on threads of
their own, ``pmap``'s devices) take different states. Such chains do not keep a state
each: a call takes the last state put back, whichever chain left it, so two chains that
alternate may hand each other their states (warm, but at the other chain's position:
more mode searches, the same sums). Not one state per thread: XLA runs
a computation's callbacks on any thread of its pool (36 threads in one numpyro chain),
and a state kept per thread was tens of steps old when its thread came round again
(3.8 ms of the host's CPU a call at 10,000 cells, against 0.37 ms with the last call's
state). The callback returns the state input unchanged as the Op's fourth output; its
result is a function of its inputs alone, as ``pure_callback`` requires.

**Gradient.** The Op's gradient in PyTensor reads its outputs 1 and 2, which is
enough for a graph differentiated by PyTensor (``pytensor.grad`` compiled with
``mode="JAX"``). The JAX samplers differentiate the JAX log-density themselves
(``jax.grad``), and JAX cannot differentiate a callback: the function is a
``jax.custom_vjp`` whose backward pass multiplies the output's cotangent by the
scores that the forward pass returned. A cotangent on the scores themselves (a
second derivative) raises NotImplementedError when traced, as the Op's ``grad`` does.

**Batches.** Under ``jax.vmap`` (numpyro's ``chain_method="vectorized"``, PyMC's
posterior-predictive post-processing) the callback is called once with every batch
row (``vmap_method="expand_dims"``), not once per row: the sweep then runs over the
rows in one host call, each row with its own state.

**Failures.** A cell the kernel cannot sum (a count beyond 2**53, more than 10^8
terms) gets a NaN log-likelihood and NaN scores, with a RuntimeWarning that carries
the default backend's message (the default backend raises FloatingPointError there).
The JAX samplers take a NaN log-density as a divergence and reject the proposal
(numpyro's step-size search at the start of warm-up tries steps that reach such
rates, and an exception inside the callback would end the run); the log-density of
a model is NaN, never a wrong number.
"""

from __future__ import annotations

import threading
import warnings

import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_derivatives import SymbolicZero
from pytensor.graph.basic import Constant
from pytensor.link.jax.dispatch import jax_funcify

from ..mechanisms import _jax as _mechanisms_jax  # noqa: F401 (registers the mechanisms' Ops)
from ..noise.terms import log_terms
from ._forms import read_only, unpacked
from ._group_op import GroupTotalsLogp
from ._group_op import _refuse as _refuse_groups
from ._groups import OK, group_sweep
from ._kernels import BEYOND
from ._op import STATE, MarginalLogp, _refuse, sweep
from ._quadrature import _held_fixed_op, _noise_terms_op

__all__ = ["HostGroups", "HostSweep", "marginal_logp_jax"]


class HostSweep:
    """:func:`._op.sweep` over the rows of ``a, b``, with host-side states.

    ``HostSweep(op, form, table)(a, b)`` returns ``(logp, score_a, score_b)`` of
    the shape of ``a`` and ``b`` broadcast (``(..., n)``), each row of cells summed
    with its own state (taken from a pool per number of rows, the one the last finished
    call put back first; any state gives the same sums). A cell that cannot be summed is
    NaN, with a RuntimeWarning.
    """

    def __init__(self, op: MarginalLogp, form: np.ndarray, table: np.ndarray):
        self.family, self.tol = op.family, op.tol
        self.form, self.table = unpacked(form, table)
        self._lock = threading.Lock()
        self._pool: dict[int, list[list[np.ndarray]]] = {}

    def __call__(self, a, b):
        a, b = np.broadcast_arrays(np.asarray(a, dtype=float), np.asarray(b, dtype=float))
        n = a.shape[-1]
        # C-ordered copies: JAX hands read-only arrays, and a broadcast parameter copied in its
        # own order has strided rows: the kernel is compiled for neither
        rows_a, rows_b = (np.array(x.reshape(-1, n), order="C") for x in (a, b))
        logp, score_a, score_b = (np.empty(rows_a.shape) for _ in range(3))
        terms = np.empty(n, dtype=np.int64)
        states = self._take(rows_a.shape[0], n)
        try:
            for row, state in enumerate(states):
                outputs = logp[row], score_a[row], score_b[row], terms
                args = (self.family, rows_a[row], rows_b[row], self.form, self.table, self.tol)
                sweep(*args, state, *outputs)
                failed = np.isnan(logp[row])
                if failed.any():
                    _warn_unsummed(failed, terms == BEYOND)
        finally:
            self._put_back(states)
        return tuple(x.reshape(a.shape) for x in (logp, score_a, score_b))

    def _take(self, rows: int, n: int) -> list[np.ndarray]:
        """Take states for ``rows`` rows of ``n`` cells: the last put back, or new (all NaN)."""
        with self._lock:
            free = self._pool.setdefault(rows, [])
            if free:
                return free.pop()
        return [np.full((n, STATE), np.nan) for _ in range(rows)]

    def _put_back(self, states: list[np.ndarray]) -> None:
        with self._lock:
            self._pool[len(states)].append(states)


def _warn_unsummed(failed: np.ndarray, beyond: np.ndarray) -> None:
    """Warn that the cells ``failed`` could not be summed: their log-likelihood is NaN."""
    try:
        _refuse(failed, beyond)
    except FloatingPointError as error:
        message = f"{error}. Their log-likelihood is NaN, which NUTS rejects as a divergence."
        warnings.warn(message, RuntimeWarning, stacklevel=2)


def marginal_logp_jax(sweep: HostSweep):
    """Return the differentiable JAX function ``(a, b) -> (logp, score_a, score_b)``."""
    return _with_scores(sweep, lambda n: n, lambda g: g)


def _with_scores(host, logp_size, spread):
    """Return the ``custom_vjp`` function of a host ``(a, b) -> (logp, score_a, score_b)``.

    ``logp_size(n)`` is the length of ``logp`` for ``n`` cells; ``spread(g)`` takes its
    cotangent to the cells (each cell's share of the gradient is ``spread(g)`` times
    its scores).
    """

    def call(a, b):
        n = jnp.broadcast_shapes(a.shape, b.shape)[-1]
        logp, scores = (jax.ShapeDtypeStruct((size,), jnp.float64) for size in (logp_size(n), n))
        return jax.pure_callback(host, (logp, scores, scores), a, b, vmap_method="expand_dims")

    @jax.custom_vjp
    def marginal(a, b):
        return call(a, b)

    def forward(a, b):
        out = call(a.value, b.value)
        return out, out[1:]

    def backward(scores, cotangents):
        g, *on_scores = cotangents
        if not all(isinstance(c, SymbolicZero) for c in on_scores):
            raise NotImplementedError(
                "the second derivatives of the marginal log-likelihood (a gradient of its "
                "scores) are not implemented"
            )
        if isinstance(g, SymbolicZero):
            return tuple(jnp.zeros_like(s) for s in scores)
        return tuple(spread(g) * s for s in scores)

    marginal.defvjp(forward, backward, symbolic_zeros=True)
    return marginal


class HostGroups:
    """:func:`._groups.group_sweep` over the rows of ``a, b``: the host side of the group Op.

    ``HostGroups(op, form, table, starts, totals)(a, b)`` returns each group's
    log-likelihood (``(..., G)``) and each cell's scores (``(..., n)``). A group that
    cannot be summed is NaN (its cells' scores too), with a RuntimeWarning.
    """

    def __init__(self, op: GroupTotalsLogp, form, table, starts, totals):
        self.family, self.tol = op.family, op.tol
        self.form, self.table = unpacked(form, table)
        self.starts, self.totals = read_only(starts, np.int64), read_only(totals)

    def __call__(self, a, b):
        a, b = np.broadcast_arrays(np.asarray(a, dtype=float), np.asarray(b, dtype=float))
        n, groups = a.shape[-1], self.totals.size
        rows_a, rows_b = (np.array(x.reshape(-1, n), order="C") for x in (a, b))  # as above
        logp = np.empty((rows_a.shape[0], groups))
        score_a, score_b = np.empty(rows_a.shape), np.empty(rows_a.shape)
        status = np.empty(groups, dtype=np.int64)
        for row in range(rows_a.shape[0]):
            args = (self.family, rows_a[row], rows_b[row], self.form, self.table, self.tol)
            outputs = logp[row], score_a[row], score_b[row], status
            group_sweep(*args, self.starts, self.totals, *outputs)
            if np.any(status != OK):
                self._fail(status, logp[row], score_a[row], score_b[row])
        batch = a.shape[:-1]
        return logp.reshape(*batch, groups), score_a.reshape(a.shape), score_b.reshape(a.shape)

    def _fail(self, status, logp, score_a, score_b):
        failed = status != OK
        logp[failed] = np.nan
        cells = np.repeat(failed, np.diff(self.starts))
        score_a[cells] = score_b[cells] = np.nan
        try:
            _refuse_groups(status)
        except FloatingPointError as error:
            message = f"{error}. Their log-likelihood is NaN, which NUTS rejects as a divergence."
            warnings.warn(message, RuntimeWarning, stacklevel=2)


@jax_funcify.register(GroupTotalsLogp)
def _jax_group_totals_logp(op, node=None, **kwargs):
    names = ((2, "form"), (3, "table"), (4, "starts"), (5, "totals"))
    form, table, starts, totals = (_constant(node, i, name) for i, name in names)
    sizes = np.diff(starts)
    marginal = _with_scores(
        HostGroups(op, form, table, starts, totals),
        lambda n: totals.size,
        lambda g: jnp.repeat(g, sizes, axis=-1, total_repeat_length=int(sizes.sum())),
    )

    def group_totals_logp(a, b, form, table, starts, totals):
        return marginal(jnp.asarray(a, dtype=jnp.float64), jnp.asarray(b, dtype=jnp.float64))

    return group_totals_logp


@jax_funcify.register(MarginalLogp)
def _jax_marginal_logp(op, node=None, **kwargs):
    form, table = (_constant(node, i, name) for i, name in ((2, "form"), (3, "table")))
    marginal = marginal_logp_jax(HostSweep(op, form, table))

    def marginal_logp(a, b, form, table, state):
        a, b = jnp.asarray(a, dtype=jnp.float64), jnp.asarray(b, dtype=jnp.float64)
        return (*marginal(a, b), state)

    return marginal_logp


def _constant(node, i: int, name: str) -> np.ndarray:
    """Return input ``i`` of ``node``, which the JAX implementation needs as a constant."""
    if node is None or not isinstance(node.inputs[i], Constant):
        raise NotImplementedError(
            f"the JAX implementation of MarginalLogp needs its {name} input to be a constant "
            "of the graph (as to_pymc builds it)"
        )
    return np.asarray(node.inputs[i].data)


@jax_funcify.register(type(_held_fixed_op()))
def _jax_held_fixed(op, **kwargs):
    return jax.lax.stop_gradient


@jax_funcify.register(type(_noise_terms_op()))
def _jax_noise_terms(op, node=None, **kwargs):
    cells, table = unpacked(_constant(node, 1, "form"), _constant(node, 2, "table"))

    def terms(s):
        s = np.array(s, dtype=float)  # a writable copy: the compiled terms take one
        rows = s.reshape(-1, *s.shape[-2:])
        out = [log_terms(cells, table, r) for r in rows]
        return np.stack(out).reshape(s.shape)

    def noise_terms(s, form, table):
        # no derivative rule: the quadrature's nodes are held fixed (HeldFixed above),
        # so JAX never differentiates this callback; if it did, it would raise
        shape = jax.ShapeDtypeStruct(jnp.shape(s), jnp.float64)
        return jax.pure_callback(terms, shape, s, vmap_method="expand_dims")

    return noise_terms
