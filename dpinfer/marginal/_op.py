"""A PyTensor Op: the per-cell marginal log-likelihood of releases and its gradient."""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import DisconnectedType, disconnected_type, grad_not_implemented
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op

from ._poisson import STATE
from ._sweep import marginal_sweep


class MarginalLogp(Op):
    """``log sum_s p(s | a, b) prod_m eta_m(r_m | s)`` per cell, with its gradient in ``a, b``.

    Inputs are flat float64 vectors of the latent parameters ``a`` and ``b``
    (one entry per cell), then constants: the term kinds ``(m, n)``, the
    releases ``(m, n)``, the coefficients ``(m, n, 8)`` and the log-CDF table
    (:mod:`dpinfer.marginal._cells`). Outputs: the log-likelihood per cell and
    the two scores ``d logp / da``, ``d logp / db`` that its gradient uses. See
    :mod:`dpinfer.marginal._kernels` and :mod:`dpinfer.marginal._poisson`.
    """

    __props__ = ("family", "tol")

    def __init__(self, family: int, tol: float):
        self.family = int(family)
        self.tol = float(tol)
        # each cell's last mode and constants of its releases (_sweep.marginal_sweep): valid
        # for the releases they were computed with, the arrays held in _state_of
        self._state = np.empty((0, STATE))
        self._state_of: tuple[np.ndarray, ...] = ()

    # PyTensor's Ops name their inputs (the base class takes *inputs)
    def make_node(self, a, b, kinds, released, coef, table):  # type: ignore[override]
        a = pt.as_tensor_variable(a).astype("float64")
        b = pt.as_tensor_variable(b).astype("float64")
        kinds = pt.as_tensor_variable(kinds).astype("int64")
        constants = [pt.as_tensor_variable(x).astype("float64") for x in (released, coef, table)]
        outputs = [pt.dvector(), pt.dvector(), pt.dvector()]
        return Apply(self, [a, b, kinds, *constants], outputs)

    def perform(self, node, inputs, output_storage):
        a, b, kinds, released, coef, table = inputs
        n = a.size
        logp, score_a, score_b = np.empty(n), np.empty(n), np.empty(n)
        terms = np.empty(n, dtype=np.int64)
        constants = [np.ascontiguousarray(x) for x in (kinds, released, coef, table)]
        if not self._state_fits(constants):
            self._state = np.full((n, STATE), np.nan)
            self._state_of = tuple(constants)
        marginal_sweep(
            self.family,
            np.ascontiguousarray(a, dtype=float),
            np.ascontiguousarray(b, dtype=float),
            *constants,
            self.tol,
            self._state,
            logp,
            score_a,
            score_b,
            terms,
        )
        if np.isnan(logp).any():
            bad = np.flatnonzero(np.isnan(logp))
            raise FloatingPointError(
                f"the marginal likelihood of {bad.size} cell(s) (first at position "
                f"{bad[:5].tolist()}) needs more than 10^8 terms of the latent sum: the latent "
                "parameters there make the posterior of the confidential count wider than can be "
                "summed; check the model's priors"
            )
        for storage, value in zip(output_storage, (logp, score_a, score_b), strict=True):
            storage[0] = value

    def _state_fits(self, constants):
        """Whether the kept state was left by these releases (the same arrays, or equal copies)."""
        if len(self._state_of) != len(constants):
            return False
        return all(
            x is y or (x.shape == y.shape and np.array_equal(x, y, equal_nan=True))
            for x, y in zip(constants, self._state_of, strict=True)
        )

    def infer_shape(self, fgraph, node, shapes):
        return [shapes[0]] * 3

    def connection_pattern(self, node):
        return [[True, True, True], [True, True, True], *([[False] * 3] * 4)]

    def grad(self, inputs, output_grads):
        # an Op of three outputs returns a list of three, which the stubs leave a union
        _, score_a, score_b = self(*inputs)  # type: ignore[misc]
        constants = [disconnected_type() for _ in inputs[2:]]
        for name, extra in zip(("score_a", "score_b"), output_grads[1:], strict=True):
            if not isinstance(extra.type, DisconnectedType):
                note = f"second derivatives ({name})"
                own = [grad_not_implemented(self, i, x, note) for i, x in enumerate(inputs[:2])]
                return own + constants
        g = output_grads[0]
        return [g * score_a, g * score_b, *constants]
