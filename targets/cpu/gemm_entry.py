"""The GEMM as a C-ABI function of its own, compiled once per dtype and shared by kernels.

Kernels do not contain the GEMM's code: numba would link (re-optimize and compile again)
a callee's whole module into every kernel that calls it, ~1-2 s per kernel and ~8 s per
dtype per process.  Instead each dtype's GEMM is one `numba.cfunc`,

    flowjit_gemm_<dtype>(m, n, k, a, a_s0, a_s1, b, b_s0, b_s1, c, c_s0, c_s1, blocks,
                         symmetric, bias, bias_n, bias_s, epilogue)

(addresses and byte strides as integers: c[m, n] = a[m, k] @ b[k, n], in `blocks` parallel
parts, serial when blocks is 1; symmetric = 1 when b is a's transpose, so that only one
triangle is multiplied; `epilogue` (gemm_ukernel.EPILOGUE_* flags, 0 for none) applied
with the bias vector of bias_n elements bias_s bytes apart; returns 0), whose object code
the disk cache keeps
(gemm_library.py), and kernels call it by that symbol name (`call_gemm` below), which LLVM
resolves in this process and in processes that load cached kernels without numba.

This module needs numba; gemm_library.py, which loads and registers the symbols, does not.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic
from numba.np.arrayobj import populate_array

from .gemm import _JIT, _SPLIT, data_address  # noqa: F401 (data_address: re-exported)

SIGNATURE = types.intp(*([types.intp] * 18))   # returns 0 (a C void would be declared ptr)


def symbol_name(dtype_name: str) -> str:
    """The C symbol of the GEMM of `dtype_name` ("float32" or "float64")."""
    return f"flowjit_gemm_{dtype_name}"


def _vector_view(dtype_name: str):
    """An intrinsic view(address, n, stride) -> 1-D array of layout 'A' over memory it does
    not own (stride in bytes)."""
    element = numba.from_dtype(np.dtype(dtype_name))
    arrty = types.Array(element, 1, "A")

    @intrinsic
    def view(typingctx, address, n, stride):
        def codegen(context, builder, signature, args):
            address, n, stride = args
            array = context.make_array(arrty)(context, builder)
            data = builder.inttoptr(address, context.get_data_type(element).as_pointer())
            itemsize = context.get_constant(
                types.intp, context.get_abi_sizeof(context.get_data_type(element)))
            populate_array(array, data=data, shape=cgutils.pack_array(builder, [n]),
                           strides=cgutils.pack_array(builder, [stride]),
                           itemsize=itemsize, meminfo=None)
            return array._getvalue()

        return arrty(types.intp, types.intp, types.intp), codegen

    return view


def _strided_view(dtype_name: str):
    """An intrinsic view(address, rows, cols, s0, s1) -> 2-D array of layout 'A' over
    memory it does not own (strides in bytes)."""
    element = numba.from_dtype(np.dtype(dtype_name))
    arrty = types.Array(element, 2, "A")

    @intrinsic
    def view(typingctx, address, rows, cols, s0, s1):
        def codegen(context, builder, signature, args):
            address, rows, cols, s0, s1 = args
            array = context.make_array(arrty)(context, builder)
            data = builder.inttoptr(address, context.get_data_type(element).as_pointer())
            itemsize = context.get_constant(
                types.intp, context.get_abi_sizeof(context.get_data_type(element)))
            populate_array(array, data=data, shape=cgutils.pack_array(builder, [rows, cols]),
                           strides=cgutils.pack_array(builder, [s0, s1]),
                           itemsize=itemsize, meminfo=None)
            return array._getvalue()

        return arrty(types.intp, types.intp, types.intp, types.intp, types.intp), codegen

    return view


def compile_gemm(dtype_name: str):
    """The `numba.cfunc` of the GEMM of `dtype_name` (compiled now: 5-8 s)."""
    view = _strided_view(dtype_name)
    vector = _vector_view(dtype_name)
    split = _SPLIT[dtype_name]

    def flowjit_gemm(m, n, k, a, a_s0, a_s1, b, b_s0, b_s1, c, c_s0, c_s1, blocks,
                     symmetric, bias, bias_n, bias_s, epilogue):
        split(view(a, m, k, a_s0, a_s1), view(b, k, n, b_s0, b_s1),
              view(c, m, n, c_s0, c_s1), blocks, symmetric, vector(bias, bias_n, bias_s),
              epilogue)
        return 0

    return numba.cfunc(SIGNATURE, **_JIT)(flowjit_gemm)


_CALLERS: dict = {}


def external_gemm(dtype_name: str):
    """A function for jitted code, `gemm(a, b, out, blocks, symmetric, bias, epilogue)`, that
    calls the shared GEMM of `dtype_name` through its symbol (registered in this process
    now, compiled or loaded from the disk cache if needed); bias is a 1-D array of out's
    dtype (of out's column count when `epilogue` has EPILOGUE_BIAS; unread when 0)."""
    from . import gemm_library

    gemm_library.provide(dtype_name)
    if dtype_name in _CALLERS:
        return _CALLERS[dtype_name]
    fn = types.ExternalFunction(symbol_name(dtype_name), SIGNATURE)

    @numba.njit(**_JIT)
    def call_gemm(a, b, out, blocks, symmetric, bias, epilogue):
        m, n = out.shape
        fn(m, n, a.shape[1], data_address(a), a.strides[0], a.strides[1],
           data_address(b), b.strides[0], b.strides[1],
           data_address(out), out.strides[0], out.strides[1], blocks, symmetric,
           data_address(bias), bias.shape[0], bias.strides[0], epilogue)

    _CALLERS[dtype_name] = call_gemm
    return call_gemm
