"""A hint to the processor to fetch an array row into the cache, for the compiled moves."""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["prefetch_row"]


@intrinsic
def prefetch_row(typingctx, array, row):
    """Fetch the start of ``array[row]`` into the cache, without waiting (``llvm.prefetch``).

    Only a hint: it reads nothing the program sees and never faults.
    """
    signature = types.void(array, row)

    def codegen(context, builder, sig, args):
        kind = sig.args[0]
        ary = context.make_array(kind)(context, builder, args[0])
        zero = context.get_constant(types.intp, 0)
        first = context.cast(builder, args[1], sig.args[1], types.intp)
        index = [first] + [zero] * (kind.ndim - 1)
        pointer = cgutils.get_item_pointer(context, builder, kind, ary, index, wraparound=False)
        i32, byte = ir.IntType(32), ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(ir.VoidType(), [byte, i32, i32, i32])
        fetch = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        address = builder.bitcast(pointer, byte)
        builder.call(fetch, [address, i32(0), i32(3), i32(1)])  # read, keep, data cache
        return context.get_dummy_value()

    return signature, codegen
