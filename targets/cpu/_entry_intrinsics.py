"""numba intrinsics used by the C-ABI kernel entry point (build.py); imported only when
compiling an entry, never when loading one."""

from __future__ import annotations

from numba import types
from numba.extending import intrinsic


@intrinsic
def array_at(typingctx, address, shape, dtype):
    """The C-contiguous array of `dtype` (a NumPy scalar type) and `shape` (a tuple of ints,
    empty for a 0-d array) whose data starts at integer `address`; it owns nothing (no NRT
    memory). numba.carray does the same, but its overload is compiled afresh in every
    process for each rank and dtype (~20 ms each on a cold kernel's entry point)."""
    # lazy: numba/LLVM load only when compiling (cached kernels run without them)
    from numba.core import cgutils
    # lazy: numba/LLVM load only when compiling (cached kernels run without them)
    from numba.np.arrayobj import make_array, populate_array

    scalar = dtype.dtype if isinstance(dtype, (types.NumberClass, types.DType)) else None
    if scalar is None or not isinstance(address, types.Integer) or \
            not isinstance(shape, types.BaseTuple) or \
            not all(isinstance(d, types.Integer) for d in shape):
        return None
    ndim = len(shape)
    arrtype = types.Array(scalar, ndim, "C")

    def codegen(context, builder, signature, args):
        intp = context.get_value_type(types.intp)
        dims = [context.cast(builder, builder.extract_value(args[1], k), shape[k],
                             types.intp) for k in range(ndim)]
        itemsize = context.get_abi_sizeof(context.get_data_type(scalar))
        strides, stride = [], intp(itemsize)
        for d in reversed(dims):
            strides.append(stride)
            stride = builder.mul(stride, d)
        data = builder.inttoptr(context.cast(builder, args[0], address, types.intp),
                                context.get_data_type(scalar).as_pointer())
        ary = make_array(arrtype)(context, builder)
        populate_array(ary, data=data,
                       shape=cgutils.pack_array(builder, dims, ty=intp),
                       strides=cgutils.pack_array(builder, list(reversed(strides)), ty=intp),
                       itemsize=intp(itemsize), meminfo=None)
        return ary._getvalue()

    return arrtype(address, shape, dtype), codegen


@intrinsic
def box_outputs(typingctx, outs, consts):
    """Box a tuple of arrays into a Python tuple of NumPy arrays (a new reference, as an
    integer), holding the GIL meanwhile.  `consts` is the address of int64 values: the
    first is the address of `numpy.ndarray`, value 1 + j that of output j's dtype object.
    Each array takes its own reference to its NRT memory (memory not managed by NRT,
    e.g. an input's, is wrapped without an owner: the caller copies such outputs before the
    inputs can go away)."""
    # lazy: numba/LLVM load only when compiling (cached kernels run without them)
    from llvmlite import ir as llir
    # lazy: numba/LLVM load only when compiling (cached kernels run without them)
    from numba.core import cgutils

    def codegen(context, builder, signature, args):
        tupty = signature.args[0]
        tup, address = args
        cptr = builder.inttoptr(address, llir.IntType(64).as_pointer())
        pyapi = context.get_python_api(builder)
        i32 = llir.IntType(32)
        voidptr = llir.IntType(8).as_pointer()
        fnty = llir.FunctionType(pyapi.pyobj, [voidptr, pyapi.pyobj, i32, i32, pyapi.pyobj])
        adapt = cgutils.get_or_insert_function(builder.module, fnty,
                                               "NRT_adapt_ndarray_to_python_acqref")
        gil = pyapi.gil_ensure()
        n = len(tupty.types) if hasattr(tupty, "types") else tupty.count
        result = pyapi.tuple_new(n)
        ndarray = builder.inttoptr(builder.load(cptr), pyapi.pyobj)
        for j in range(n):
            aryty = tupty.types[j] if hasattr(tupty, "types") else tupty.dtype
            ary = builder.extract_value(tup, j)
            slot = cgutils.alloca_once_value(builder, ary)
            dtype = builder.inttoptr(builder.load(cgutils.gep(builder, cptr, 1 + j)),
                                     pyapi.pyobj)
            obj = builder.call(adapt, [builder.bitcast(slot, voidptr), ndarray,
                                       i32(aryty.ndim), i32(1), dtype])
            pyapi.tuple_setitem(result, j, obj)
        pyapi.gil_release(gil)
        return builder.ptrtoint(result, context.get_value_type(types.intp))

    return types.intp(outs, consts), codegen


@intrinsic
def new_none(typingctx):
    """A new reference to None (as an integer), taken with the GIL held."""

    def codegen(context, builder, signature, args):
        pyapi = context.get_python_api(builder)
        gil = pyapi.gil_ensure()
        none = pyapi.make_none()
        pyapi.gil_release(gil)
        return builder.ptrtoint(none, context.get_value_type(types.intp))

    return types.intp(), codegen


@intrinsic
def release_gil(typingctx):
    """PyEval_SaveThread(): let other Python threads run; the thread state, as an integer.
    The entry point is called with the GIL held (it is a builtin function's C code)."""
    # lazy: numba/LLVM load only when compiling (cached kernels run without them)
    from llvmlite import ir as llir
    # lazy: numba/LLVM load only when compiling (cached kernels run without them)
    from numba.core import cgutils

    def codegen(context, builder, signature, args):
        voidptr = llir.IntType(8).as_pointer()
        save = cgutils.get_or_insert_function(builder.module, llir.FunctionType(voidptr, []),
                                              "PyEval_SaveThread")
        return builder.ptrtoint(builder.call(save, []), context.get_value_type(types.intp))

    return types.intp(), codegen


@intrinsic
def acquire_gil(typingctx, state):
    """PyEval_RestoreThread(state): take the GIL back after release_gil()."""
    # lazy: numba/LLVM load only when compiling (cached kernels run without them)
    from llvmlite import ir as llir
    # lazy: numba/LLVM load only when compiling (cached kernels run without them)
    from numba.core import cgutils

    def codegen(context, builder, signature, args):
        voidptr = llir.IntType(8).as_pointer()
        restore = cgutils.get_or_insert_function(
            builder.module, llir.FunctionType(llir.VoidType(), [voidptr]),
            "PyEval_RestoreThread")
        builder.call(restore, [builder.inttoptr(args[0], voidptr)])
        return context.get_dummy_value()

    return types.none(state), codegen


def kernel_caller(symbol: str, argtypes: tuple, restype):
    """An intrinsic `call_kernel((arrays...)) -> (ok, outputs)` that calls the numba-compiled
    function `symbol` (numba's calling convention, `argtypes` -> `restype`) through a
    declaration only: the entry point's module does not contain (and compile again) the
    kernel's code, which stays in the kernel's own object code.  `ok` is False when the
    kernel raised; the outputs are then empty (null) arrays."""
    # lazy: numba/LLVM load only when compiling (cached kernels run without them)
    from numba.core import cgutils

    @intrinsic
    def call_kernel(typingctx, arrays):
        if tuple(getattr(arrays, "types", ())) != tuple(argtypes):
            return None
        result = types.Tuple((types.boolean, restype))

        def codegen(context, builder, signature, args):
            values = [builder.extract_value(args[0], i) for i in range(len(argtypes))]
            fnty = context.call_conv.get_function_type(restype, list(argtypes))
            fn = cgutils.get_or_insert_function(builder.module, fnty, symbol)
            status, value = context.call_conv.call_function(builder, fn, restype,
                                                            list(argtypes), values)
            ok = builder.not_(status.is_error)
            slot = cgutils.alloca_once(builder, context.get_value_type(restype), zfill=True)
            with builder.if_then(ok):
                builder.store(value, slot)
            return context.make_tuple(builder, result, [ok, builder.load(slot)])

        return result(arrays), codegen

    return call_kernel
