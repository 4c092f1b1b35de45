"""Dense linear algebra: MatrixInverse, MatrixDeterminant, MatrixSolve, Cholesky.

Each op works on the last two axes of float32/float64 tensors, for every index of the
leading (batch) axes, as TensorFlow's ops of these names do:

- `MatrixInverse(input)`: the inverse of each square matrix;
- `MatrixDeterminant(input)`: its determinant (the output drops the last two axes);
- `MatrixSolve(matrix, rhs)`: X with `matrix @ X = rhs`, rhs of shape [..., n, k], the
  batch axes of both equal;
- `Cholesky(input)`: the lower-triangular L with `L @ L^T = input`; only the lower triangle
  of the input is read (NumPy's and LAPACK's convention).

A singular matrix (inverse, solve) or one that is not positive definite (Cholesky) is an
InvalidArgumentError naming the op; the determinant of a singular matrix is 0.  Reference
kernels are NumPy's `np.linalg`; the lowering is the kernel IR's LIBCALL node (LAPACK
through numba, targets/cpu/library_code.py).  Gradients (TensorFlow's formulas, on the
adjoint of the last two axes):

- inverse:      dA = -A^-T G A^-T
- determinant:  dA = g det(A) A^-T
- solve:        dB = A^-T G,  dA = -dB X^T
- Cholesky:     Phi = tril(L^T G) with its diagonal halved, S = L^-T Phi L^-1,
                dA = (S + S^T) / 2  (Murray, "Differentiation of the Cholesky decomposition")
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core import ir
from ..compiler.core.graph import Tensor
from ..compiler.core.ir_build import NotLowerable
from ..compiler.core.shapes import TensorShape, unknown_shape
from ..errors import InvalidArgumentError
from . import basic_ops, fill_ops, math_compare, math_ops, shape_ops
from .array_ops import expand_dims, transpose
from .builder import check_dtype, graph_for, make_op, to_tensor
from .matmul_ops import matmul
from .registry import OpDef

__all__ = ["matrix_inverse", "matrix_determinant", "matrix_solve", "cholesky"]


def _float_types():
    """The dtypes these ops take (TensorFlow's also take half and complex)."""
    return (_dtypes.float32, _dtypes.float64)


def _square(t: Tensor, what: str) -> TensorShape:
    shape = t.shape
    if shape.ndims is not None:
        if shape.ndims < 2:
            raise ValueError(f"{what} must have rank >= 2, but {t.name} has shape {shape}.")
        n, m = shape.dims[-2:]
        if n is not None and m is not None and n != m:
            raise ValueError(f"{what} must be square matrices, but {t.name} has shape {shape}.")
    return shape


def _unary_infer(drop: bool):
    def infer(op):
        (x,) = op.inputs
        check_dtype(x, _float_types(), "input")
        shape = _square(x, "input")
        if shape.ndims is None:
            return [(x.dtype, unknown_shape())]
        return [(x.dtype, TensorShape(shape.dims[:-2]) if drop else shape)]

    return infer


def _solve_infer(op):
    a, b = op.inputs
    check_dtype(a, _float_types(), "matrix")
    if b.dtype is not a.dtype:
        raise TypeError(f"rhs ({b.dtype.name}) must have the dtype of matrix ({a.dtype.name}).")
    sa, sb = _square(a, "matrix"), b.shape
    if sa.ndims is None or sb.ndims is None:
        return [(a.dtype, unknown_shape())]
    if sb.ndims != sa.ndims or not TensorShape(sa.dims[:-1]).is_compatible_with(
            TensorShape(sb.dims[:-1])):
        raise ValueError(f"matrix {sa} and rhs {sb} must have the same batch axes and rows.")
    return [(a.dtype, sb)]


def _per_matrix(ctx, fn, message, *arrays):
    try:
        with np.errstate(all="ignore"):
            return fn(*arrays)
    except np.linalg.LinAlgError:
        raise InvalidArgumentError(None, ctx.op if ctx else None, message) from None


def _inverse_kernel(ctx, inputs, attrs):
    (x,) = inputs
    return [np.asarray(_per_matrix(ctx, np.linalg.inv, "Input is not invertible.", x),
                       x.dtype)]


def _det_kernel(ctx, inputs, attrs):
    (x,) = inputs
    return [np.asarray(np.linalg.det(x), x.dtype)]


def _solve_kernel(ctx, inputs, attrs):
    a, b = inputs
    if a.shape[:-2] != b.shape[:-2] or a.shape[-1] != b.shape[-2] or a.shape[-1] != a.shape[-2]:
        raise InvalidArgumentError(None, ctx.op if ctx else None,
                                   f"matrix {list(a.shape)} and rhs {list(b.shape)}: incompatible")
    return [np.asarray(_per_matrix(ctx, np.linalg.solve, "Input matrix is not invertible.",
                                   a, b), a.dtype)]


def _cholesky_kernel(ctx, inputs, attrs):
    (x,) = inputs
    return [np.asarray(_per_matrix(ctx, np.linalg.cholesky, "Cholesky decomposition was not "
                                   "successful. The input might not be valid.", x), x.dtype)]


# --- gradients ---------------------------------------------------------------------------------
def _matmul(a, b, ta=False, tb=False):
    return matmul(a, b, transpose_a=ta, transpose_b=tb)


def _inverse_grad(op, grad):
    inv = op.outputs[0]
    return [-_matmul(inv, _matmul(grad, inv, tb=True), ta=True)]


def _det_grad(op, grad):
    x, det = op.inputs[0], op.outputs[0]
    scale = expand_dims(expand_dims(grad * det, -1), -1)
    return [scale * _adjoint(matrix_inverse(x))]


def _solve_grad(op, grad):
    a = op.inputs[0]
    x = op.outputs[0]
    grad_b = matrix_solve(a, grad, adjoint=True)
    return [-_matmul(grad_b, x, tb=True), grad_b]


def _lower_half_diagonal(x: Tensor) -> Tensor:
    """x's strict lower triangle, plus half its diagonal (zeros above), per matrix."""
    n = shape_ops.shape(x)[-1]
    rows = expand_dims(fill_ops.range(n), -1)
    cols = expand_dims(fill_ops.range(n), 0)
    one, half, zero = (basic_ops.constant(v, x.dtype) for v in (1.0, 0.5, 0.0))
    weight = math_ops.where_v2(math_compare.greater(rows, cols), one,
                               math_ops.where_v2(math_compare.equal(rows, cols), half, zero))
    return x * weight


def _cholesky_grad(op, grad):
    lower = op.outputs[0]
    l_inv = matrix_inverse(lower)
    middle = _lower_half_diagonal(_matmul(lower, grad, ta=True))
    s = _matmul(_matmul(l_inv, middle, ta=True), l_inv)
    return [(s + _adjoint(s)) * np.asarray(0.5, lower.dtype.np_dtype)]


# --- lowerings to kernel IR --------------------------------------------------------------------
def _lowering(routine_name: str):
    def lower(ctx, op, inputs):
        routine = ir.Routine[routine_name]
        out = op.outputs[0]
        if out.dtype.name not in ("float32", "float64"):
            raise NotLowerable(f"{op.type} on {out.dtype.name} is not compiled")
        first = inputs[0]
        n = first.shape[-1]
        ctx.check_equal(first.shape[-2], n, f"{op.type}: the input must be square matrices")
        if routine is ir.Routine.DET:
            shape = first.shape[:-2]
        elif routine is ir.Routine.SOLVE:
            rhs = inputs[1]
            for da, db in zip(first.shape[:-1], rhs.shape[:-1]):
                ctx.check_equal(da, db, f"{op.type}: matrix and rhs batch axes or rows differ")
            shape = rhs.shape
        else:
            shape = first.shape
        return [ir.libcall(routine, inputs, out.dtype, shape)]

    return lower


MATRIX_INVERSE = OpDef("MatrixInverse", _unary_infer(False), _inverse_kernel,
                       gradient=_inverse_grad, lower=_lowering("INV"),
                       doc="inverse of each matrix in the last two axes")
MATRIX_DETERMINANT = OpDef("MatrixDeterminant", _unary_infer(True), _det_kernel,
                           gradient=_det_grad, lower=_lowering("DET"),
                           doc="determinant of each matrix in the last two axes")
MATRIX_SOLVE = OpDef("MatrixSolve", _solve_infer, _solve_kernel,
                     gradient=_solve_grad, lower=_lowering("SOLVE"),
                     doc="X with matrix @ X = rhs, per matrix in the last two axes")
CHOLESKY = OpDef("Cholesky", _unary_infer(False), _cholesky_kernel,
                 gradient=_cholesky_grad, lower=_lowering("CHOLESKY"),
                 doc="lower-triangular L with L @ L^T = input (its lower triangle)")


def _unary(op_def, x, name):
    graph = graph_for((x,))
    x = to_tensor(x, graph=graph, name="input")
    return make_op(op_def, [x], {}, name, graph=graph).outputs[0]


def matrix_inverse(input, adjoint=False, name=None) -> Tensor:  # noqa: A002 - TF's name
    """The inverse of each matrix in the last two axes (of its adjoint when `adjoint`)."""
    if adjoint:
        input = _adjoint(to_tensor(input))
    return _unary(MATRIX_INVERSE, input, name)


def matrix_determinant(input, name=None) -> Tensor:  # noqa: A002
    """The determinant of each matrix in the last two axes."""
    return _unary(MATRIX_DETERMINANT, input, name)


def matrix_solve(matrix, rhs, adjoint=False, name=None) -> Tensor:
    """X with `matrix @ X = rhs` (`adjoint(matrix) @ X = rhs` when `adjoint`), per matrix."""
    graph = graph_for((matrix, rhs))
    matrix = to_tensor(matrix, graph=graph, name="matrix")
    rhs = to_tensor(rhs, dtype=matrix.dtype, graph=graph, name="rhs")
    if adjoint:
        matrix = _adjoint(matrix)
    return make_op(MATRIX_SOLVE, [matrix, rhs], {}, name, graph=graph).outputs[0]


def cholesky(input, name=None) -> Tensor:  # noqa: A002
    """The lower-triangular Cholesky factor of each matrix in the last two axes."""
    return _unary(CHOLESKY, input, name)


def _adjoint(x: Tensor) -> Tensor:
    rank = x.shape.ndims
    if rank is None:
        raise ValueError(f"adjoint of {x.name} needs a known rank.")
    return transpose(x, list(range(rank - 2)) + [rank - 1, rank - 2])


OP_DEFS = (MATRIX_INVERSE, MATRIX_DETERMINANT, MATRIX_SOLVE, CHOLESKY)
