"""Shape checks of PyTensor inputs at the boundary of ``to_pymc`` (imported only by it).

A shape known when the model is built is checked then, and a mismatch raises
:class:`ValueError` naming the parameter and both shapes. A shape known only
when the model runs (a dimension of ``pm.Data``, a symbolic ``shape=``) is
checked by :class:`ShapeCheck`, an identity on the tensor that raises the same
message, with the shape it met, before any operation that reads the tensor.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import disconnected_type
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.tensor.basic import get_scalar_constant_value
from pytensor.tensor.exceptions import NotScalarConstantError

__all__ = ["ShapeCheck", "batch_shape", "checked", "fits", "refuse_known"]


def fits(shape, target: tuple[int, ...], *, exact: bool) -> bool:
    """Whether ``shape`` (None where unknown) equals ``target``, or broadcasts to it.

    Broadcasting (unless ``exact``) follows NumPy's rules without changing ``target``.
    """
    if len(shape) != len(target) if exact else len(shape) > len(target):
        return False
    aligned = target[len(target) - len(shape) :]
    return all(
        d is None or d == t or (d == 1 and not exact) for d, t in zip(shape, aligned, strict=True)
    )


def checked(tensor, shape_of, *, name: str, target: tuple[int, ...], about: str, exact: bool):
    """Return ``tensor``, refusing now or when the model runs unless ``shape_of`` fits ``target``.

    Parameters
    ----------
    tensor : TensorVariable
        What the caller passes on; the run-time check is attached to it.
    shape_of : TensorVariable or sequence
        The shape to check: :func:`batch_shape` of ``tensor``, or another shape
        (a distribution's ``size``), as a vector or a sequence of ints and
        symbolic scalars.
    name : str
        The parameter, as the message names it.
    target : tuple of int
        The shape required.
    about : str
        What ``target`` is, as in "the released cells' shape".
    exact : bool
        Require ``shape_of == target``; otherwise it must broadcast to ``target``.

    Returns
    -------
    TensorVariable
        ``tensor`` itself when every entry of ``shape_of`` is known now, else
        ``tensor`` through a :class:`ShapeCheck`.
    """
    target = tuple(int(t) for t in target)
    static = _static_shape(shape_of)
    if static is not None:
        refuse_known(static, name=name, target=target, about=about, exact=exact)
        if None not in static:
            return tensor
    if isinstance(shape_of, list | tuple):
        shape_of = pt.stack([pt.cast(d, "int64") for d in shape_of])
    return ShapeCheck(name, target, about, exact)(tensor, pt.cast(shape_of, "int64"))


def refuse_known(shape, *, name: str, target: tuple[int, ...], about: str, exact: bool) -> None:
    """Raise ValueError unless ``shape`` (None where unknown until the model runs) fits."""
    if not fits(shape, target, exact=exact):
        raise ValueError(_message(name, shape, target, about, exact))


def batch_shape(tensor, core_ndim: int = 0) -> list:
    """Return the leading ``ndim - core_ndim`` entries of ``tensor``'s shape, ints where known."""
    static = tensor.type.shape
    return [
        static[i] if static[i] is not None else tensor.shape[i]
        for i in range(tensor.ndim - core_ndim)
    ]


class ShapeCheck(Op):
    """Identity on a tensor that raises ValueError unless a shape vector fits a target.

    Inputs: the tensor passed through, and the shape vector checked when the
    model runs. The message is the one :func:`checked` gives at build time,
    with the shape met.
    """

    __props__ = ("name", "target", "about", "exact")
    view_map = {0: [0]}

    def __init__(self, name: str, target: tuple[int, ...], about: str, exact: bool):
        self.name, self.target, self.about, self.exact = name, target, about, exact

    # PyTensor's Ops name their inputs (the base class takes *inputs)
    def make_node(self, x, shape_of):  # type: ignore[override]
        x = pt.as_tensor_variable(x)
        return Apply(self, [x, pt.as_tensor_variable(shape_of)], [x.type()])

    def perform(self, node, inputs, output_storage):
        x, shape_of = inputs
        shape = tuple(int(d) for d in np.asarray(shape_of))
        if not fits(shape, self.target, exact=self.exact):
            raise ValueError(_message(self.name, shape, self.target, self.about, self.exact))
        output_storage[0][0] = x

    def infer_shape(self, fgraph, node, shapes):
        return [shapes[0]]

    def connection_pattern(self, node):
        return [[True], [False]]

    def grad(self, inputs, output_grads):
        return [output_grads[0], disconnected_type()]


def _static_shape(shape_of) -> tuple | None:
    """Return a shape's entries: ints where known now, else None (all None: length unknown)."""
    if not isinstance(shape_of, list | tuple):
        if shape_of.type.shape[0] is None:
            return None
        shape_of = [shape_of[i] for i in range(shape_of.type.shape[0])]
    return tuple(_static_entry(d) for d in shape_of)


def _static_entry(d) -> int | None:
    if isinstance(d, int | np.integer):
        return int(d)
    try:
        return int(get_scalar_constant_value(d))
    except NotScalarConstantError:
        return None


def _message(name, shape, target, about, exact) -> str:
    shown = "(" + ", ".join("?" if d is None else str(d) for d in shape)
    shown += ",)" if len(shape) == 1 else ")"
    need = "must equal" if exact else "must broadcast to"
    return f"{name} has shape {shown}, which {need} {about} {target}"
