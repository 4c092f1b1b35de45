"""TensorFlow 1.x's matrix helpers, composed of existing ops (no op types of their own):
`eye`, `matrix_diag`, `matrix_diag_part`, `matrix_set_diag`, `matrix_band_part`,
`matrix_transpose` (`linalg.adjoint`), `diag`, `diag_part`, `trace`, `tensordot`, for
`tf.linalg` `matvec`, and `tf.initializers.identity`; `NAMESPACES` lists the `tf.linalg`
and `tf.initializers` names the package root adds.

They work on the last two axes (batches in front) and build masks from Range comparisons
(position i of a row against position j of a column), selected with SelectV2 or multiplied
in, so values, dtypes, static shapes and gradients follow from the ops used: the gradient of
`matrix_diag_part` is the diagonal of the output gradient, that of `matrix_band_part` the
band, as TensorFlow's.  Diagonals of non-square matrices have min(rows, columns) entries.
"""

from __future__ import annotations

from .. import dtypes as _dtypes
from ..compiler.core.graph import Tensor, get_default_graph
from . import math_ops as mo
from .array_ops import (concat, expand_dims, ones, reshape, squeeze, stack, transpose, zeros,
                        zeros_like)
from .builder import to_tensor
from .conversion import static_value
from .fill_ops import range as range_
from .init_ops import _Initializer, _static_dims
from .matmul_ops import matmul
from .reduction_ops import reduce_prod, reduce_sum
from .shape_ops import shape as shape_of
from .slicing_ops import slice as slice_

__all__ = ["eye", "matrix_diag", "matrix_diag_part", "matrix_set_diag", "matrix_band_part",
           "matrix_transpose", "diag", "diag_part", "trace", "tensordot"]


def _rank_at_least(x: Tensor, rank: int, fn: str) -> int:
    r = x.shape.ndims
    if r is None:
        raise ValueError(f"{fn}: the input's rank must be known, {x.name} has unknown rank.")
    if r < rank:
        raise ValueError(f"{fn}: the input must have rank >= {rank}, {x.name} has shape "
                         f"{x.shape}.")
    return r


def _dim(x: Tensor, axis: int):
    """Dimension `axis` of x: an int when static, else a scalar int32 tensor."""
    d = x.shape.dims[axis]
    return d if d is not None else shape_of(x)[axis]


def _positions(rows, cols):
    """(i, j): int32 [rows, 1] and [1, cols] position grids."""
    return reshape(range_(0, rows), [-1, 1]), reshape(range_(0, cols), [1, -1])


def _diagonal_mask(rows, cols, dtype) -> Tensor:
    i, j = _positions(rows, cols)
    return mo.cast(mo.equal(i, j), dtype)


def eye(num_rows, num_columns=None, batch_shape=None, dtype=_dtypes.float32, name=None):
    """A [*batch_shape, num_rows, num_columns] tensor with ones on the diagonal."""
    dtype = _dtypes.as_dtype(dtype)
    with get_default_graph().name_scope(name or "eye"):
        cols = num_rows if num_columns is None else num_columns
        out = _diagonal_mask(num_rows, cols, dtype)
        if batch_shape:
            out = mo.multiply(out, ones(list(batch_shape) + [1, 1], dtype=dtype))
        return out


def matrix_diag(diagonal, name=None) -> Tensor:
    """[..., n] -> [..., n, n]: a matrix per vector, the vector on its diagonal."""
    d = to_tensor(diagonal, name="diagonal")
    rank = _rank_at_least(d, 1, "matrix_diag")
    with d.graph.name_scope(name or "matrix_diag"):
        n = _dim(d, rank - 1)
        return mo.multiply(expand_dims(d, -1), _diagonal_mask(n, n, d.dtype))


def matrix_diag_part(input, name=None) -> Tensor:  # noqa: A002 - TensorFlow's name
    """[..., m, n] -> [..., min(m, n)]: each matrix's main diagonal."""
    x = to_tensor(input, name="input")
    rank = _rank_at_least(x, 2, "matrix_diag_part")
    with x.graph.name_scope(name or "matrix_diag_part"):
        rows, cols = _dim(x, rank - 2), _dim(x, rank - 1)
        on_diagonal = mo.multiply(x, _diagonal_mask(rows, cols, x.dtype))
        if isinstance(rows, int) and isinstance(cols, int):
            # summing the shorter side's way leaves exactly min(m, n) entries
            return reduce_sum(on_diagonal, axis=-1 if rows <= cols else -2)
        k = mo.minimum(rows, cols)
        by_row = reduce_sum(on_diagonal, axis=-1)   # [..., m]: the first k are the diagonal
        size = concat([to_tensor([-1] * (rank - 2), dtype=_dtypes.int32), reshape(k, [1])], 0)
        return slice_(by_row, [0] * (rank - 1), size)


def matrix_set_diag(input, diagonal, name=None) -> Tensor:  # noqa: A002
    """`input` with the main diagonal of each matrix replaced by `diagonal` [..., min(m, n)]."""
    x = to_tensor(input, name="input")
    rank = _rank_at_least(x, 2, "matrix_set_diag")
    with x.graph.name_scope(name or "matrix_set_diag"):
        d = to_tensor(diagonal, dtype=x.dtype, name="diagonal")
        if d.shape.ndims is not None and d.shape.ndims != rank - 1:
            raise ValueError(f"matrix_set_diag: diagonal must have rank {rank - 1}, got "
                             f"{d.shape}.")
        rows, cols = _dim(x, rank - 2), _dim(x, rank - 1)
        i, j = _positions(rows, cols)
        # entry j of the diagonal for column j (i == j implies j < min(m, n)): padded to n
        missing = mo.subtract(cols, _dim(d, rank - 2))
        if not (isinstance(missing, int) and missing == 0):
            zeros_shape = concat([shape_of(d)[:-1], reshape(missing, [1])], 0)
            d = concat([d, zeros(zeros_shape, dtype=x.dtype)], -1)
        return mo.where_v2(mo.equal(i, j), expand_dims(d, -2), x)


def matrix_band_part(input, num_lower, num_upper, name=None) -> Tensor:  # noqa: A002
    """Each matrix with the entries outside its band set to zero: kept where
    (num_lower < 0 or i - j <= num_lower) and (num_upper < 0 or j - i <= num_upper)."""
    x = to_tensor(input, name="input")
    rank = _rank_at_least(x, 2, "matrix_band_part")
    with x.graph.name_scope(name or "matrix_band_part"):
        i, j = _positions(_dim(x, rank - 2), _dim(x, rank - 1))
        lower = mo.cast(to_tensor(num_lower, name="num_lower"), _dtypes.int32)
        upper = mo.cast(to_tensor(num_upper, name="num_upper"), _dtypes.int32)
        inside = mo.logical_and(
            mo.logical_or(mo.less(lower, 0), mo.less_equal(mo.subtract(i, j), lower)),
            mo.logical_or(mo.less(upper, 0), mo.less_equal(mo.subtract(j, i), upper)))
        return mo.where_v2(inside, x, zeros_like(x))


def matrix_transpose(a, name="matrix_transpose", conjugate=False) -> Tensor:
    """The last two axes swapped (and conjugated with `conjugate`)."""
    a = to_tensor(a, name="a")
    rank = _rank_at_least(a, 2, "matrix_transpose")
    perm = list(range(rank - 2)) + [rank - 1, rank - 2]
    return transpose(a, perm, name=name, conjugate=conjugate)


def adjoint(matrix, name=None) -> Tensor:
    """The conjugate transpose of each matrix (the last two axes)."""
    return matrix_transpose(matrix, name=name or "adjoint", conjugate=True)


def diag(diagonal, name=None) -> Tensor:
    """Rank k -> rank 2k: output[i1..ik, j1..jk] = diagonal[i1..ik] where i == j, else 0."""
    d = to_tensor(diagonal, name="diagonal")
    _rank_at_least(d, 1, "diag")
    with d.graph.name_scope(name or "Diag"):
        flat = reshape(d, [-1])
        square = matrix_diag(flat)
        dims = shape_of(d)
        return reshape(square, concat([dims, dims], 0) if not d.shape.is_fully_defined()
                       else d.shape.as_list() * 2)


def diag_part(input, name=None) -> Tensor:  # noqa: A002
    """Rank 2k -> rank k: the inverse of `diag` (its first k dims must equal its last k)."""
    x = to_tensor(input, name="input")
    rank = _rank_at_least(x, 2, "diag_part")
    if rank % 2:
        raise ValueError(f"diag_part: the input's rank must be even, {x.name} has shape "
                         f"{x.shape}.")
    half = rank // 2
    if not x.shape[:half].is_compatible_with(x.shape[half:]):
        raise ValueError(f"diag_part: the first {half} dims of {x.shape} must equal the last "
                         f"{half}.")
    with x.graph.name_scope(name or "DiagPart"):
        dims = shape_of(x)
        n = reduce_prod(dims[:half])
        square = reshape(x, stack([n, n]))
        out_shape = x.shape[:half].merge_with(x.shape[half:])
        return reshape(matrix_diag_part(square), out_shape.as_list()
                       if out_shape.is_fully_defined() else dims[:half])


def trace(x, name=None) -> Tensor:
    """The sum of each matrix's main diagonal ([..., m, n] -> [...])."""
    x = to_tensor(x, name="x")
    with x.graph.name_scope(name or "Trace"):
        return reduce_sum(matrix_diag_part(x), axis=-1)


def _axes_pair(axes, a_rank, b_rank):
    if isinstance(axes, int) or (static_value(axes) is not None if isinstance(axes, Tensor)
                                 else False):
        n = int(axes if isinstance(axes, int) else static_value(axes))
        if not 0 <= n <= min(a_rank, b_rank):
            raise ValueError(f"tensordot: axes = {n} must be in [0, min(rank a, rank b)].")
        return list(range(a_rank - n, a_rank)), list(range(n))
    a_axes, b_axes = axes
    a_axes = [a_axes] if isinstance(a_axes, int) else list(a_axes)
    b_axes = [b_axes] if isinstance(b_axes, int) else list(b_axes)
    if len(a_axes) != len(b_axes):
        raise ValueError(f"tensordot: axes {a_axes} and {b_axes} must be of one length.")
    return [k % a_rank for k in a_axes], [k % b_rank for k in b_axes]


def tensordot(a, b, axes, name=None) -> Tensor:
    """Sum over a's `axes[0]` and b's `axes[1]` of their product (an int n: a's last n axes
    with b's first n), as a transposed, reshaped matrix product."""
    a, b = to_tensor(a, name="a"), to_tensor(b, name="b")
    ra, rb = _rank_at_least(a, 0, "tensordot"), _rank_at_least(b, 0, "tensordot")
    with a.graph.name_scope(name or "Tensordot"):
        a_axes, b_axes = _axes_pair(axes, ra, rb)
        a_free = [k for k in range(ra) if k not in a_axes]
        b_free = [k for k in range(rb) if k not in b_axes]
        a_mat = reshape(transpose(a, a_free + a_axes), [_prod(a, a_free), _prod(a, a_axes)])
        b_mat = reshape(transpose(b, b_axes + b_free), [_prod(b, b_axes), _prod(b, b_free)])
        out_dims = [_dim(a, k) for k in a_free] + [_dim(b, k) for k in b_free]
        if all(isinstance(d, int) for d in out_dims):
            return reshape(matmul(a_mat, b_mat), out_dims)
        return reshape(matmul(a_mat, b_mat), stack([mo.cast(d, _dtypes.int32)
                                                       for d in out_dims]))


def _prod(x, axes):
    dims = [_dim(x, k) for k in axes]
    if all(isinstance(d, int) for d in dims):
        out = 1
        for d in dims:
            out *= d
        return out
    return reduce_prod(stack([mo.cast(d, _dtypes.int32) for d in dims]))


def matvec(a, b, transpose_a=False, adjoint_a=False, name=None) -> Tensor:
    """a @ b for matrices a [..., m, n] and vectors b [..., n]: [..., m]."""
    b = to_tensor(b, name="b")
    with b.graph.name_scope(name or "MatVec"):
        return squeeze(matmul(a, expand_dims(b, -1), transpose_a=transpose_a,
                              adjoint_a=adjoint_a), axis=[-1])


class identity_initializer(_Initializer):  # noqa: N801 - TensorFlow's name
    """`tf.initializers.identity`: `gain` times the identity matrix (2-D shapes only)."""

    def __init__(self, gain=1.0, dtype=_dtypes.float32):
        super().__init__(dtype)
        self.gain = gain

    def __call__(self, shape, dtype=None, partition_info=None):
        dims = _static_dims(shape)
        if len(dims) != 2:
            raise ValueError(f"The identity initializer needs a 2-D shape, got {dims}.")
        return super().__call__(dims, dtype, partition_info)

    def _build(self, dims, dtype):
        return mo.multiply(eye(dims[0], dims[1], dtype=dtype), mo.cast(self.gain, dtype))


# what the package root adds to its `tf.linalg` and `tf.initializers` namespaces
NAMESPACES = {
    "linalg": {"band_part": matrix_band_part, "diag": matrix_diag,
               "diag_part": matrix_diag_part, "set_diag": matrix_set_diag,
               "matrix_transpose": matrix_transpose, "adjoint": adjoint, "eye": eye,
               "trace": trace, "tensor_diag": diag, "tensor_diag_part": diag_part,
               "tensordot": tensordot, "matvec": matvec},
    "initializers": {"identity": identity_initializer},
}
