"""Samples for ops/matmul_ops.py: MatMul and BatchMatMulV2.

Operands are stored already transposed when a transpose/adjoint flag is drawn, sizes
include 0 and 1, batch dims broadcast, and the oracle is `np.einsum` on the untransposed
(conjugated for adjoints) matrices.
"""

import numpy as np
from hypothesis import strategies as st

import flowjit as tf

from . import OpCase
from .strategies import arrays, broadcast_pair

_DTYPES = (np.float32, np.float64, np.int32, np.int64, np.complex128)
_COMPLEX = st.complex_numbers(max_magnitude=5, allow_nan=False, allow_infinity=False)


def _operand(draw, dtype, shape):
    return draw(arrays(dtype, shape, _COMPLEX if np.dtype(dtype).kind == "c" else None))


def _tol(dtype):
    return 1e-4 if dtype == np.float32 else 1e-9


@st.composite
def _matmul(draw):
    dtype = draw(st.sampled_from(_DTYPES))
    m, k, n = (draw(st.integers(0, 5)) for _ in range(3))
    ta, tb = draw(st.booleans()), draw(st.booleans())
    adjoint = draw(st.booleans()) and np.dtype(dtype).kind != "c"  # real: same as transpose
    a = _operand(draw, dtype, (k, m) if ta else (m, k))
    b = _operand(draw, dtype, (n, k) if tb else (k, n))
    fed = draw(st.booleans())
    tf_dtype = tf.as_dtype(dtype)

    def build():
        x = tf.placeholder(tf_dtype, [None, None], name="a") if fed else tf.constant(a)
        y = tf.placeholder(tf_dtype, [None, None], name="b") if fed else tf.constant(b)
        if adjoint:
            return [tf.matmul(x, y, adjoint_a=ta, adjoint_b=tb)]
        return [tf.matmul(x, y, transpose_a=ta, transpose_b=tb)]

    def expected(f):
        lhs = a.T if ta else a
        rhs = b.T if tb else b
        return [np.einsum("ik,kj->ij", lhs, rhs).astype(dtype)]

    return OpCase(build, {"a": a, "b": b} if fed else {}, expected, rtol=_tol(dtype),
                  atol=_tol(dtype))


@st.composite
def _batch_matmul(draw):
    dtype = draw(st.sampled_from(_DTYPES))
    batch_a, batch_b = draw(broadcast_pair(max_dims=2, max_side=3))
    if len(batch_a) == 0 and len(batch_b) == 0:
        batch_a = (draw(st.integers(0, 3)),)  # at least one operand of rank 3
    m, k, n = (draw(st.integers(0, 4)) for _ in range(3))
    adj_a, adj_b = draw(st.booleans()), draw(st.booleans())
    a = _operand(draw, dtype, tuple(batch_a) + ((k, m) if adj_a else (m, k)))
    b = _operand(draw, dtype, tuple(batch_b) + ((n, k) if adj_b else (k, n)))
    fed = draw(st.booleans())
    tf_dtype = tf.as_dtype(dtype)

    def build():
        x = tf.placeholder(tf_dtype, name="a") if fed else tf.constant(a)
        y = tf.placeholder(tf_dtype, name="b") if fed else tf.constant(b)
        return [tf.matmul(x, y, adjoint_a=adj_a, adjoint_b=adj_b)]

    def expected(f):
        lhs = np.conj(np.swapaxes(a, -1, -2)) if adj_a else a
        rhs = np.conj(np.swapaxes(b, -1, -2)) if adj_b else b
        return [np.einsum("...ik,...kj->...ij", lhs, rhs).astype(dtype)]

    return OpCase(build, {"a": a, "b": b} if fed else {}, expected, rtol=_tol(dtype),
                  atol=_tol(dtype))


SAMPLES = {"MatMul": _matmul(), "BatchMatMulV2": _batch_matmul()}
