"""A PyTensor Op: the marginal log-likelihood of groups of cells with exact totals."""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import DisconnectedType, disconnected_type, grad_not_implemented
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op

from ._families import LatentFamily
from ._forms import joined_form, packed, parameters, read_only
from ._groups import BEYOND, OK, UNREACHABLE, WIDE, group_sweep
from ._recent import recent_of
from ._totals import Groups

__all__ = ["GroupTotalsLogp", "group_logp"]


class GroupTotalsLogp(Op):
    """Each group's ``log sum over the splits of its total of prod_i f_i(k_i)``, with gradient.

    ``f_i(k) = p(k | a_i, b_i) prod_m eta_m(r_im | k)``, ``p`` the pmf of
    ``family`` (see :mod:`dpinfer.marginal._groups`).

    Inputs: ``a``, ``b``, the latent parameters of the grouped cells, group after
    group; ``form`` and ``table``, their releases' joined per-cell form, grouped, and
    its log-CDF tables as the two vectors of :func:`dpinfer.marginal._forms.packed`
    (as for :class:`~dpinfer.marginal._op.MarginalLogp`);
    ``starts`` (``(G + 1,)`` int64: group ``g`` is cells ``starts[g]:starts[g + 1]``)
    and ``totals`` (``(G,)``), constants.

    Outputs: the log-likelihood of each group, and each cell's scores
    ``d logp / da`` and ``d logp / db`` (of its group's log-likelihood), which the
    gradient uses.
    """

    __props__ = ("family", "tol")

    def __init__(self, family: LatentFamily, tol: float):
        self.family = family
        self.tol = float(tol)

    # PyTensor's Ops name their inputs (the base class takes *inputs)
    def make_node(self, a, b, form, table, starts, totals):  # type: ignore[override]
        a = pt.as_tensor_variable(a).astype("float64")
        b = pt.as_tensor_variable(b).astype("float64")
        rest = [pt.as_tensor_variable(x) for x in (form, table, starts, totals)]
        return Apply(self, [a, b, *rest], [pt.dvector(), pt.dvector(), pt.dvector()])

    def perform(self, node, inputs, output_storage):
        a, b, form, table, starts, totals = inputs
        a, b = parameters(a), parameters(b)
        recent = recent_of(node, form, table, starts, totals)
        found = recent.find(a, b)
        if found is not None:
            for storage, value in zip(output_storage, found, strict=True):
                storage[0] = value
            return
        logp, status = np.empty(totals.size), np.empty(totals.size, dtype=np.int64)
        score_a, score_b = np.empty(a.size), np.empty(a.size)
        group_sweep(
            self.family,
            a,
            b,
            *recent.unpacked,
            self.tol,
            read_only(starts, np.int64),
            read_only(totals),
            logp,
            score_a,
            score_b,
            status,
        )
        if np.any(status != OK):
            _refuse(status)
        recent.keep(a, b, (logp, score_a, score_b))
        for storage, value in zip(output_storage, (logp, score_a, score_b), strict=True):
            storage[0] = value

    def infer_shape(self, fgraph, node, shapes):
        return [shapes[5], shapes[0], shapes[0]]

    def connection_pattern(self, node):
        return [[True, True, True]] * 2 + [[False] * 3] * 4

    def grad(self, inputs, output_grads):
        # an Op's outputs are a list, which the stubs leave a union
        _, score_a, score_b = self(*inputs)  # type: ignore[misc]
        constants = [disconnected_type() for _ in inputs[2:]]
        for name, extra in zip(("score_a", "score_b"), output_grads[1:], strict=True):
            if not isinstance(extra.type, DisconnectedType):
                note = f"second derivatives ({name})"
                own = [grad_not_implemented(self, i, x, note) for i, x in enumerate(inputs[:2])]
                return own + constants
        starts = inputs[4]
        per_cell = pt.repeat(output_grads[0], starts[1:] - starts[:-1])
        return [per_cell * score_a, per_cell * score_b, *constants]


def group_logp(family: LatentFamily, a, b, forms: list[np.ndarray], groups: Groups, tol: float):
    """Return the graph of each group's log-likelihood (``(G,)``).

    ``a, b`` are flat tensors of every cell's latent parameters and ``forms`` the
    per-cell forms of the cells' releases (flat, C order).
    """
    order = groups.order
    released, shared = packed(*joined_form([f[order] for f in forms]))
    op = GroupTotalsLogp(family, tol)
    # an Op's outputs are a list, which the stubs leave a union
    return op(  # type: ignore[index]
        a[order],
        b[order],
        pt.constant(released),
        pt.constant(shared),
        pt.constant(groups.starts),
        pt.constant(groups.totals),
    )[0]


def _refuse(status: np.ndarray) -> None:
    """Raise for the groups whose sums could not be completed, naming the groups."""
    for code, problem in _PROBLEMS.items():
        failed = np.flatnonzero(status == code)
        if failed.size:
            raise FloatingPointError(
                f"the marginal likelihood of {failed.size} group(s) with exact totals (first "
                f"groups {failed[:5].tolist()}) {problem}"
            )
    failed = np.flatnonzero(status != OK)
    raise FloatingPointError(
        f"the marginal likelihood of {failed.size} group(s) with exact totals (first groups "
        f"{failed[:5].tolist()}) could not be summed to the tolerance: the cells' counts are "
        "too concentrated for the windows to bound; check the model's priors"
    )


_PROBLEMS = {
    UNREACHABLE: (
        "cannot be summed: no split of the total among the windows of the cells' counts "
        "meets it, as the latent parameters there give it (almost) no probability; check "
        "the model's priors"
    ),
    BEYOND: (
        "would sum a confidential count beyond 2**53 in magnitude, where float64 cannot "
        "count in steps of one; check the model's priors"
    ),
    WIDE: (
        "needs more than 4e9 operations: the group's cells are too many, or the latent "
        "parameters there make their counts too spread, for an exact convolution; check "
        "the model's priors"
    ),
}
