"""Compiled code calling a compiled sum by its address: one machine copy for every caller.

When a numba function calls another, numba links the callee's code into the caller's and
optimises and translates the whole again. The sums of :mod:`._sweep` and :mod:`._groups`
are large (about ten seconds of compiling a family), and every PyTensor graph compiled
for the numba backend (nutpie, ``mode="NUMBA"``) builds a caller of its own: each graph
would compile each family's sums anew, and never from numba's cache. Instead the
callers here call, through its address, the very code that Python's calls compiled and
that numba's cache keeps (:func:`address`, :func:`caller`).

The callee's argument types are fixed by the caller's types when the caller is
compiled; a caller whose arguments are not those the address was compiled for is a
typing error, never a call with the wrong layout.
"""

from __future__ import annotations

from collections.abc import Callable

from numba import types
from numba.core import cgutils
from numba.core.errors import TypingError
from numba.extending import intrinsic

__all__ = ["address", "caller"]


def address(dispatcher, argument_types: tuple) -> int:
    """Return the address of ``dispatcher``'s code for ``argument_types``, compiling it if need be.

    The code is numba's own (the same as a Python call with arguments of these types
    runs, and numba's cache serves); it returns nothing.
    """
    if argument_types not in dispatcher.overloads:
        dispatcher.compile(argument_types)
    compiled = dispatcher.overloads[argument_types]
    if compiled.signature.return_type != types.none:
        raise TypeError(f"{dispatcher.__name__} returns a value; only procedures are called here")
    return int(compiled.library.get_pointer_to_function(compiled.fndesc.llvm_func_name))


def caller(name: str, argument_types: Callable[[types.Type], tuple]):
    """Return an intrinsic ``call(address, arguments)`` for the procedure ``name``.

    ``arguments`` is a tuple of the procedure's arguments; ``argument_types(first)``
    gives the types it must have given its first's (the procedure's specialisation).
    An exception the procedure raises is raised by the caller.
    """

    @intrinsic
    def call(typingctx, address_type, arguments):
        if not isinstance(arguments, types.BaseTuple) or not len(arguments):
            return None
        given = tuple(arguments)
        if given != argument_types(given[0]):
            raise TypingError(f"{name} is called with arguments of other types than compiled")

        def codegen(context, builder, signature, args):
            function_type = context.call_conv.get_function_type(types.none, given)
            callee = builder.inttoptr(args[0], function_type.as_pointer())
            values = cgutils.unpack_tuple(builder, args[1], len(given))
            status, _ = context.call_conv.call_function(builder, callee, types.none, given, values)
            with cgutils.if_unlikely(builder, status.is_error):
                context.call_conv.return_status_propagate(builder, status)
            return context.get_dummy_value()

        return types.none(types.uint64, arguments), codegen

    return call
