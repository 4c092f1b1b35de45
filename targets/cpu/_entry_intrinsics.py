"""numba intrinsics used by the C-ABI kernel entry point (build.py); imported only when
compiling an entry, never when loading one."""

from __future__ import annotations

from numba import types
from numba.extending import intrinsic


@intrinsic
def take_meminfo(typingctx, arr):
    """The NRT meminfo pointer of `arr` as an integer, with one reference taken for the
    caller (0 when the array's memory is not NRT-managed, e.g. an input)."""

    def codegen(context, builder, signature, args):
        [aryty], [ary] = signature.args, args
        context.nrt.incref(builder, aryty, ary)
        struct = context.make_array(aryty)(context, builder, ary)
        return builder.ptrtoint(struct.meminfo, context.get_value_type(types.intp))

    return types.intp(arr), codegen


@intrinsic
def as_voidptr(typingctx, address):
    """An integer address as a void pointer."""

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], context.get_value_type(types.voidptr))

    return types.voidptr(address), codegen
