"""A PyTensor Op: the per-cell marginal log-likelihood of releases and its gradient."""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import DisconnectedType, disconnected_type, grad_not_implemented
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op

from ..noise.form import from_matrix
from ._families import LatentFamily
from ._kernels import BEYOND
from ._poisson import STATE
from ._sweep import marginal_sweep

__all__ = ["STATE", "MarginalLogp"]


class MarginalLogp(Op):
    """``log sum_s p(s | a, b) prod_m eta_m(r_m | s)`` per cell, with its gradient in ``a, b``.

    ``p`` is the pmf of ``family`` (a :class:`~dpinfer.marginal._families.LatentFamily`).

    Inputs:

    - ``a``, ``b``: flat float64 vectors of the latent parameters, one entry per cell;
    - ``form``: the releases' joined per-cell form as a float64 matrix
      (:func:`dpinfer.noise.form.as_matrix`; release ``m`` of cell ``j`` in row
      ``m n + j``) and ``table``, its log-CDF tables (constants);
    - ``state``: ``(n, STATE)``, each cell's last mode and the constants of its
      releases (:mod:`dpinfer.marginal._poisson`): hints that make the next
      evaluation cheaper and never change its result (all NaN: none yet).

    Outputs: the log-likelihood per cell, the two scores ``d logp / da`` and
    ``d logp / db`` that its gradient uses, and the state after the evaluation
    (the input's array, updated in place: a view of it). A state must come with
    the form that left it; a new form starts from an all-NaN state.

    A compiled implementation of this Op (PyTensor's numba backend) calls
    :func:`dpinfer.marginal._sweep.marginal_sweep` with the same arrays, the form
    viewed as records (``form.view(dpinfer.noise.form.CELL)``). The numba one
    (:mod:`dpinfer.marginal._numba_op`) keeps a state per thread in place of
    ``state``, which nutpie shares read-only between chains running at once.
    """

    __props__ = ("family", "tol")
    view_map = {3: [4]}

    def __init__(self, family: LatentFamily, tol: float):
        self.family = family
        self.tol = float(tol)

    # PyTensor's Ops name their inputs (the base class takes *inputs)
    def make_node(self, a, b, form, table, state):  # type: ignore[override]
        a = pt.as_tensor_variable(a).astype("float64")
        b = pt.as_tensor_variable(b).astype("float64")
        form, table, state = (pt.as_tensor_variable(x) for x in (form, table, state))
        outputs = [pt.dvector(), pt.dvector(), pt.dvector(), state.type()]
        return Apply(self, [a, b, form, table, state], outputs)

    def perform(self, node, inputs, output_storage):
        a, b, form, table, state = inputs
        n = a.size
        logp, score_a, score_b = np.empty(n), np.empty(n), np.empty(n)
        terms = np.empty(n, dtype=np.int64)
        marginal_sweep(
            self.family,
            np.ascontiguousarray(a, dtype=float),
            np.ascontiguousarray(b, dtype=float),
            from_matrix(form),
            np.ascontiguousarray(table, dtype=float),
            self.tol,
            state,
            logp,
            score_a,
            score_b,
            terms,
        )
        if np.isnan(logp).any():
            _refuse(np.isnan(logp), terms == BEYOND)
        for storage, value in zip(output_storage, (logp, score_a, score_b, state), strict=True):
            storage[0] = value

    def infer_shape(self, fgraph, node, shapes):
        return [shapes[0]] * 3 + [shapes[4]]

    def connection_pattern(self, node):
        return [[True, True, True, False]] * 2 + [[False] * 4] * 3

    def grad(self, inputs, output_grads):
        # an Op's outputs are a list, which the stubs leave a union
        _, score_a, score_b, _ = self(*inputs)  # type: ignore[misc]
        constants = [disconnected_type() for _ in inputs[2:]]
        for name, extra in zip(("score_a", "score_b"), output_grads[1:3], strict=True):
            if not isinstance(extra.type, DisconnectedType):
                note = f"second derivatives ({name})"
                own = [grad_not_implemented(self, i, x, note) for i, x in enumerate(inputs[:2])]
                return own + constants
        g = output_grads[0]
        return [g * score_a, g * score_b, *constants]


def _refuse(failed: np.ndarray, beyond: np.ndarray) -> None:
    """Raise for the cells whose sums could not be completed, naming their positions."""
    far = np.flatnonzero(failed & beyond)
    if far.size:
        raise FloatingPointError(
            f"the marginal likelihood of {far.size} cell(s) (first at position "
            f"{far[:5].tolist()}) would sum the confidential count beyond 2**53 in magnitude, "
            "where float64 cannot count in steps of one: the latent parameters there put the "
            "count that far; check the model's priors"
        )
    wide = np.flatnonzero(failed)
    raise FloatingPointError(
        f"the marginal likelihood of {wide.size} cell(s) (first at position "
        f"{wide[:5].tolist()}) needs more than 10^8 terms of the latent sum: the latent "
        "parameters there make the posterior of the confidential count wider than can be "
        "summed; check the model's priors"
    )
