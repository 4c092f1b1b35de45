"""Ops that describe a tensor's shape: Shape, ShapeN, Size and Rank.

Public functions: `shape`, `shape_n`, `size`, `rank`.  These ops always appear in the graph
(TensorFlow 1.x replaces them by constants when the shape is fully known; flowjit keeps the
op so a traced graph stays shape-generic).  They carry Trait.SHAPE_ONLY, so `static_value`
folds them while the graph is being built whenever their input shapes are fully known; their
kernels look only at the shapes of their inputs.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core import ir
from . import lower_index as lx
from .lower_util import require_real
from .builder import INDEX_TYPES, graph_for, make_op, to_tensor
from .registry import OpDef, Trait, not_differentiable


# --- lowerings to kernel IR ---------------------------------------------------------------------
# COMPUTE nodes over the input's size Exprs (constants or runtime DIMs): no data is read.


def _size_vector(node, dtype):
    dims = [ir.make(ir.Scalar.CAST, dtype, (lx.index(d),)) for d in node.shape]
    body = lx.choose(ir.axis_var(0), dims) if dims else ir.const(0, dtype)
    return ir.compute(dtype, [ir.index(len(dims))], ir.axis_vars(1), body)


def _lower_shape(ctx, op, inputs):
    require_real(op)
    return [_size_vector(x, t.dtype) for x, t in zip(inputs, op.outputs)]


def _lower_size(ctx, op, inputs):
    require_real(op)
    dtype = op.outputs[0].dtype
    return [ir.compute(dtype, [], [], ir.make(ir.Scalar.CAST, dtype,
                                              (lx.product(inputs[0].shape),)))]


def _lower_rank(ctx, op, inputs):
    require_real(op)
    return [ir.compute(_dtypes.int32, [], [], ir.const(len(inputs[0].shape), _dtypes.int32))]


def _out_type(out_type):
    dtype = _dtypes.as_dtype(out_type)
    if dtype not in INDEX_TYPES:
        raise TypeError(f"Value passed to parameter 'out_type' has DataType {dtype.name} not in "
                        "list of allowed values: int32, int64")
    return dtype


def _shape_infer(op):
    return [(op.get_attr("out_type"), [t.shape.ndims]) for t in op.inputs]


def _shape_kernel(ctx, inputs, attrs):
    dtype = attrs["out_type"].np_dtype
    return [np.array(x.shape, dtype=dtype) for x in inputs]


SHAPE = OpDef("Shape", _shape_infer, _shape_kernel, traits={Trait.SHAPE_ONLY},
              gradient=not_differentiable, lower=_lower_shape)
SHAPE_N = OpDef("ShapeN", _shape_infer, _shape_kernel, traits={Trait.SHAPE_ONLY},
                gradient=not_differentiable, lower=_lower_shape)


def shape(input, name=None, out_type=_dtypes.int32):
    """The shape of `input` as a 1-D int32 (or `out_type`) tensor."""
    x = to_tensor(input)
    return make_op(SHAPE, [x], {"out_type": _out_type(out_type)}, name or "Shape").outputs[0]


def shape_n(input, out_type=_dtypes.int32, name=None) -> list:
    """The shapes of the tensors in `input`, one 1-D tensor each."""
    values = list(input)
    graph = graph_for(values)
    tensors = [to_tensor(v, graph=graph) for v in values]
    if not tensors:
        return []
    op = make_op(SHAPE_N, tensors, {"out_type": _out_type(out_type), "N": len(tensors)},
                 name or "ShapeN")
    return list(op.outputs)


def _size_infer(op):
    return [(op.get_attr("out_type"), [])]


def _size_kernel(ctx, inputs, attrs):
    return [np.array(inputs[0].size, dtype=attrs["out_type"].np_dtype)]


SIZE = OpDef("Size", _size_infer, _size_kernel, traits={Trait.SHAPE_ONLY},
             gradient=not_differentiable, lower=_lower_size)


def size(input, name=None, out_type=_dtypes.int32):
    """The number of elements of `input` as a scalar int32 (or `out_type`) tensor."""
    x = to_tensor(input)
    return make_op(SIZE, [x], {"out_type": _out_type(out_type)}, name or "Size").outputs[0]


def _rank_infer(op):
    return [(_dtypes.int32, [])]


def _rank_kernel(ctx, inputs, attrs):
    return [np.array(inputs[0].ndim, dtype=np.int32)]


RANK = OpDef("Rank", _rank_infer, _rank_kernel, traits={Trait.SHAPE_ONLY},
             gradient=not_differentiable, lower=_lower_rank)


def rank(input, name=None):
    """The number of dimensions of `input` as a scalar int32 tensor."""
    x = to_tensor(input)
    return make_op(RANK, [x], {}, name or "Rank").outputs[0]


OP_DEFS = (SHAPE, SHAPE_N, SIZE, RANK)
__all__ = ["shape", "shape_n", "size", "rank"]
