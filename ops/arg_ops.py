"""ArgMax and ArgMin: the index of the largest or smallest value along one axis.

Public functions (TensorFlow 1.x signatures): `argmax`, `argmin`.  The `dimension` input is
an int32/int64 scalar (0 when None, as in TensorFlow 1.x); `output_type` is int32 or int64.
As TensorFlow's kernels, they skip NaNs (a NaN is never picked over a number) and reject an
empty reduced dimension or a scalar input (InvalidArgumentError).  Their integer outputs
have no gradient.  Lowered as a reduction with an ARGMAX/ARGMIN combiner (lower_reduce.py).
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core.graph import Tensor
from ..compiler.core.ir import Combiner
from ..compiler.core.shapes import TensorShape, unknown_shape
from ..errors import InvalidArgumentError
from .builder import INDEX_TYPES, REALS, check_dtype, graph_for, make_op, to_tensor
from .conversion import static_value
from .lower_reduce import arg_lowering
from .reduction_ops import _deprecated_alias, _normalize_axis
from .registry import OpDef, Trait

__all__ = ["argmax", "argmin", "arg_max", "arg_min"]


def _arg_infer(op):
    x, dim_t = op.inputs
    check_dtype(x, (*REALS, _dtypes.bool_), "input")
    check_dtype(dim_t, INDEX_TYPES, "dimension")
    out_type = op.get_attr("output_type")
    if out_type not in INDEX_TYPES:
        raise TypeError(f"output_type must be int32 or int64, got {out_type.name}.")
    if dim_t.shape.ndims not in (None, 0):
        raise ValueError(f"dimension must be a scalar, but has shape {dim_t.shape}.")
    rank = x.shape.ndims
    if rank is None:
        return [(out_type, unknown_shape())]
    if rank == 0:
        raise ValueError("Cannot take the arg max/min of a scalar: the input needs at least "
                         "one dimension.")
    dim = static_value(dim_t)
    if dim is None:
        return [(out_type, unknown_shape(rank - 1))]
    axis = _normalize_axis(int(dim), rank, "dimension")
    return [(out_type, TensorShape(x.shape.dims[:axis] + x.shape.dims[axis + 1:]))]


def _arg_kernel(find_max: bool):
    def kernel(ctx, inputs, attrs):
        x, dim = inputs
        op = ctx.op if ctx else None
        if x.ndim == 0:
            raise InvalidArgumentError(None, op, "Expected a dimension in the range [0, 0): "
                                                 "the input is a scalar.")
        d = int(dim)
        if not -x.ndim <= d < x.ndim:
            raise InvalidArgumentError(None, op, f"Expected dimension in the range "
                                                 f"[{-x.ndim}, {x.ndim}), but got {d}.")
        d %= x.ndim
        if x.shape[d] == 0:
            raise InvalidArgumentError(None, op, f"Reduction axis {d} is empty in shape "
                                                 f"{list(x.shape)}.")
        if x.dtype.kind == "f":  # TensorFlow's kernels never pick a NaN over a number
            x = np.where(np.isnan(x), -np.inf if find_max else np.inf, x)
        index = np.argmax(x, axis=d) if find_max else np.argmin(x, axis=d)
        return [np.asarray(index, dtype=attrs["output_type"].np_dtype)]

    return kernel


ARG_MAX = OpDef("ArgMax", _arg_infer, _arg_kernel(True), traits={Trait.REDUCTION},
                lower=arg_lowering(Combiner.ARGMAX),
                doc="Index of the largest value along `dimension`.")
ARG_MIN = OpDef("ArgMin", _arg_infer, _arg_kernel(False), traits={Trait.REDUCTION},
                lower=arg_lowering(Combiner.ARGMIN),
                doc="Index of the smallest value along `dimension`.")


def _arg(op_def, input, axis, name, dimension, output_type):
    axis = _deprecated_alias("axis", axis, "dimension", dimension)
    if axis is None:
        axis = 0  # TensorFlow 1.x's default
    if not (isinstance(axis, Tensor) or hasattr(axis, "_as_graph_tensor")):
        if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
            raise TypeError(f"axis must be an int or a scalar integer tensor, got {axis!r}.")
    graph = graph_for((input, axis))
    with graph.as_default(), graph.name_scope(name or op_def.default_name) as scope:
        x = to_tensor(input, name="input")
        dim = to_tensor(axis, dtype=None if isinstance(axis, Tensor) else _dtypes.int32,
                        name="dimension")
        return make_op(op_def, [x, dim], {"output_type": _dtypes.as_dtype(output_type)},
                       name=scope).outputs[0]


def argmax(input, axis=None, name=None, dimension=None,
           output_type=_dtypes.int64) -> Tensor:
    """Index of the largest value along `axis` (0 when None, as in TensorFlow 1.x)."""
    return _arg(ARG_MAX, input, axis, name, dimension, output_type)


def argmin(input, axis=None, name=None, dimension=None,
           output_type=_dtypes.int64) -> Tensor:
    """Index of the smallest value along `axis` (0 when None, as in TensorFlow 1.x)."""
    return _arg(ARG_MIN, input, axis, name, dimension, output_type)


def arg_max(input, dimension=None, output_type=_dtypes.int64, name=None) -> Tensor:
    """TensorFlow 1.x's older name of `argmax` (`dimension` second, as it takes it)."""
    return _arg(ARG_MAX, input, None, name, dimension, output_type)


def arg_min(input, dimension=None, output_type=_dtypes.int64, name=None) -> Tensor:
    """TensorFlow 1.x's older name of `argmin` (`dimension` second, as it takes it)."""
    return _arg(ARG_MIN, input, None, name, dimension, output_type)


OP_DEFS = (ARG_MAX, ARG_MIN)
