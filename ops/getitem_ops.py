"""`Tensor.__getitem__`: `tensor_getitem(tensor, key)` as one StridedSlice (slicing_ops.py).

Index keys are lowered, as TensorFlow does, to ONE StridedSlice whose begin/end/strides are
constants (or a Pack when some index is a scalar Tensor), with the masks NumPy basic
indexing implies.  Keys NumPy reads as advanced indexing (lists, arrays, boolean masks) are
a TypeError: TF 1.x graphs do not support them; use gather / gather_nd / boolean_mask.
"""

from __future__ import annotations

import operator

import numpy as np

from . import join_ops, math_cast, slicing_ops
from .. import dtypes as _dtypes
from ..compiler.core.graph import Tensor
from ..compiler.core.shapes import Dimension
from .builder import INDEX_TYPES, graph_for, make_op, to_tensor

__all__ = ["tensor_getitem"]


def _bad_key(key, why: str) -> TypeError:
    return TypeError(f"Only integers, slices (`:`), ellipsis (`...`), tf.newaxis (`None`) and "
                     f"scalar tf.int32/tf.int64 tensors are valid indices, got {key!r} "
                     f"({why}). For a list or array of indices use tf.gather or "
                     "tf.gather_nd; for a boolean mask use tf.boolean_mask.")


def _as_index(value, key):
    """An int, or a scalar integer Tensor, from one index value; TypeError otherwise."""
    value = value._as_graph_tensor() if hasattr(value, "_as_graph_tensor") else value
    if isinstance(value, Tensor):
        if value.dtype not in INDEX_TYPES:
            raise _bad_key(key, f"a {value.dtype.name} tensor; boolean masks need "
                                "tf.boolean_mask" if value.dtype is _dtypes.bool_
                           else f"a {value.dtype.name} tensor")
        if value.shape.ndims not in (None, 0):
            raise _bad_key(key, f"a tensor of shape {value.shape}, not a scalar")
        return value
    if isinstance(value, (bool, np.bool_)):
        raise _bad_key(key, "a boolean; NumPy would read it as a mask")
    if isinstance(value, (list, tuple, np.ndarray)) and np.ndim(value) > 0:
        raise _bad_key(key, "advanced indexing with a sequence is not supported in TF 1.x")
    if isinstance(value, Dimension):
        if value.value is None:
            raise _bad_key(key, "an unknown Dimension; use a tensor from tf.shape instead")
        value = value.value
    try:
        return operator.index(value)
    except TypeError:
        raise _bad_key(key, f"of type {type(value).__name__}") from None


def _key_spec(key):
    """(begin, end, strides, masks) lists for a getitem key, as TensorFlow lowers it."""
    entries = key if isinstance(key, tuple) else (key,)
    begin, end, strides = [], [], []
    masks = dict.fromkeys(slicing_ops._MASKS, 0)
    for i, s in enumerate(entries):
        bit = 1 << i
        if isinstance(s, slice):
            for bound, values, mask in ((s.start, begin, "begin_mask"),
                                        (s.stop, end, "end_mask")):
                if bound is None:
                    values.append(0)
                    masks[mask] |= bit
                else:
                    values.append(_as_index(bound, key))
            strides.append(1 if s.step is None else _as_index(s.step, key))
        elif s is Ellipsis or s is None:
            begin.append(0)
            end.append(0)
            strides.append(1)
            masks["ellipsis_mask" if s is Ellipsis else "new_axis_mask"] |= bit
        else:
            index = _as_index(s, key)
            # A shrunk axis ignores `end` (it is always begin + 1), so a tensor index needs
            # no arithmetic op here.
            begin.append(index)
            end.append(index + 1 if isinstance(index, int) else index)
            strides.append(1)
            masks["shrink_axis_mask"] |= bit
    return begin, end, strides, masks


def _index_dtype(values):
    """int64 if any index tensor is int64 or any bound needs 64 bits, else int32 (TF's)."""
    for v in values:
        if isinstance(v, Tensor):
            if v.dtype is _dtypes.int64:
                return _dtypes.int64
        elif not -2**31 <= v < 2**31:
            return _dtypes.int64
    return _dtypes.int32


def _pack_indices(values, dtype, graph, name):
    """A 1-D index tensor from ints and scalar integer tensors (a Const, or a Pack)."""
    if not any(isinstance(v, Tensor) for v in values):
        return to_tensor(np.array(values, dtype=dtype.np_dtype), graph=graph, name=name)
    parts = []
    for v in values:
        if not isinstance(v, Tensor):
            v = to_tensor(v, dtype=dtype, graph=graph)
        elif v.dtype is not dtype:
            v = math_cast.cast(v, dtype)
        parts.append(v)
    return join_ops.stack(parts, name=name)


def tensor_getitem(tensor, key) -> Tensor:
    """`tensor[key]` for ints, slices (any step, None bounds), None/tf.newaxis, Ellipsis and
    scalar integer tensors: one StridedSlice, exactly like NumPy basic indexing.

    Lists, arrays and boolean masks are a TypeError (TF 1.x has no advanced indexing): use
    gather, gather_nd or boolean_mask.
    """
    graph = graph_for((tensor,))
    x = to_tensor(tensor, graph=graph)
    begin, end, strides, masks = _key_spec(key)
    dtype = _index_dtype(begin + end + strides)
    with graph.as_default(), graph.name_scope("strided_slice") as scope:
        packed = [_pack_indices(v, dtype, graph, n)
                  for v, n in ((begin, "stack"), (end, "stack_1"), (strides, "stack_2"))]
        return make_op(slicing_ops.STRIDED_SLICE, [x, *packed], masks, scope,
                       graph=graph).outputs[0]
