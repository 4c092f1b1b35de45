"""`empty_buffer(shape, dtype)`: how generated kernels allocate their buffers.

Called in numba code like `np.empty(shape, dtype)` and returning the same C-contiguous array.
Below buffer_pool.POOL_MIN_BYTES the memory comes from NRT's usual aligned allocation; from
there on it comes from the buffer pool (buffer_pool.py), which recycles the blocks of freed
arrays, so a kernel called in a loop with the same sizes stops paying the page faults of a
fresh large allocation each time. The array is an ordinary NRT-managed array either way: it
can be returned, reshaped, kept or dropped as usual, and its block goes back to the pool when
the last reference dies. Where the pool is off (buffer_pool.private_layouts(): numba outside
the versions it was written for), every buffer comes from NRT's aligned allocation.
"""

from __future__ import annotations

from llvmlite import ir as llir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic
from numba.np.arrayobj import make_array, populate_array

from .buffer_pool import _ALLOC_SYMBOL, POOL_MIN_BYTES, pool_enabled

_POOLED = pool_enabled()   # kernels compiled in this process link flowjit_pool_new
_ALIGN = 64


def _dtype_of(dtype_arg):
    if isinstance(dtype_arg, (types.NumberClass, types.DType)):
        return dtype_arg.dtype
    return None


@intrinsic
def empty_buffer(typingctx, shape, dtype):
    """A new uninitialized C-contiguous array of `shape` (a tuple of ints) and `dtype` (a NumPy
    scalar type such as np.float32); large ones come from the buffer pool."""
    scalar = _dtype_of(dtype)
    if scalar is None or not isinstance(shape, types.BaseTuple) or not all(
            isinstance(d, types.Integer) for d in shape):
        return None
    ndim = len(shape)
    arrtype = types.Array(scalar, ndim, "C")

    def codegen(context, builder, signature, args):
        shape_value = args[0]
        intp = context.get_value_type(types.intp)
        dims = [context.cast(builder, builder.extract_value(shape_value, k), shape[k],
                             types.intp) for k in range(ndim)]
        itemsize = context.get_abi_sizeof(context.get_data_type(scalar))
        nbytes = intp(itemsize)
        overflow = cgutils.false_bit
        for d in dims:
            negative = builder.icmp_signed("<", d, intp(0))
            overflow = builder.or_(overflow, negative)
            product = builder.smul_with_overflow(nbytes, d)
            nbytes = builder.extract_value(product, 0)
            overflow = builder.or_(overflow, builder.extract_value(product, 1))
        with builder.if_then(overflow, likely=False):
            context.call_conv.return_user_exc(
                builder, ValueError,
                ("negative dimensions, or an array too big to allocate",))
        if not _POOLED:
            meminfo = context.nrt.meminfo_alloc_aligned_unchecked(builder, nbytes, _ALIGN)
            return _finish(context, builder, arrtype, scalar, meminfo, dims, itemsize)
        big = builder.icmp_signed(">=", nbytes, intp(POOL_MIN_BYTES))
        fnty = llir.FunctionType(cgutils.voidptr_t, [intp])
        pool_new = cgutils.get_or_insert_function(builder.module, fnty, _ALLOC_SYMBOL)
        with builder.if_else(big) as (pooled, plain):
            with pooled:
                bb_pooled = builder.basic_block
                mi_pooled = builder.call(pool_new, [nbytes])
            with plain:
                bb_plain = builder.basic_block
                mi_plain = context.nrt.meminfo_alloc_aligned_unchecked(builder, nbytes, _ALIGN)
        meminfo = builder.phi(cgutils.voidptr_t)
        meminfo.add_incoming(mi_pooled, bb_pooled)
        meminfo.add_incoming(mi_plain, bb_plain)
        return _finish(context, builder, arrtype, scalar, meminfo, dims, itemsize)

    return arrtype(shape, dtype), codegen


def _finish(context, builder, arrtype, scalar, meminfo, dims, itemsize):
    """The array of `meminfo`'s block (or a MemoryError when it is null)."""
    intp = context.get_value_type(types.intp)
    with builder.if_then(cgutils.is_null(builder, meminfo), likely=False):
        context.call_conv.return_user_exc(
            builder, MemoryError, ("cannot allocate a kernel buffer",))
    data = context.nrt.meminfo_data(builder, meminfo)
    strides, stride = [], intp(itemsize)
    for d in reversed(dims):
        strides.append(stride)
        stride = builder.mul(stride, d)
    ary = make_array(arrtype)(context, builder)
    populate_array(ary,
                   data=builder.bitcast(data, context.get_data_type(scalar).as_pointer()),
                   shape=cgutils.pack_array(builder, dims, ty=intp),
                   strides=cgutils.pack_array(builder, list(reversed(strides)), ty=intp),
                   itemsize=intp(itemsize), meminfo=meminfo)
    return ary._getvalue()
