"""`IndexedSlices`: a sparse representation of a tensor's rows (TensorFlow's `tf.IndexedSlices`).

`IndexedSlices(values, indices, dense_shape)` stands for the tensor of shape `dense_shape`
whose row `indices[i]` is `values[i]` (rows named twice add up) and whose other rows are
zero.  It is what the gradient of a gather along the leading axis is
(ops/gather_ops.py), so the gradient of an embedding lookup holds only the looked-up rows
and a large table's gradient is never materialized: `tf.gradients` (compiler/gradients.py)
passes such gradients on, aggregates several by concatenating their values and indices, and
the optimizers (optimizers/) apply them with scatter updates (ops/variable_scatter_ops.py,
ops/sparse_training_ops.py).

Wherever a Tensor is needed, an IndexedSlices converts to its dense value (`dense`: an
UnsortedSegmentSum of the values into `dense_shape[0]` rows), as TensorFlow's registered
conversion does; like TensorFlow it warns when that tensor has an unknown shape or at least
`LARGE_DENSE_ELEMENTS` elements.  The conversion is built once per control-flow context and
set of control dependencies in effect (its `_as_graph_tensor`, the conversion protocol of
flowjit's Variables), so asking twice in one place adds one op.  Fetching an IndexedSlices
in `Session.run` gives an `IndexedSlicesValue` (runtime/fetches.py).
"""

from __future__ import annotations

import collections
import warnings

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core.graph import Tensor
from ..compiler.core.shapes import TensorShape, unknown_shape
from . import getitem_ops, join_ops, math_cast, reshape_ops, segment_ops, shape_ops, unique_ops
from .builder import INDEX_TYPES, graph_for, to_tensor
from .conversion import static_shape_from_tensor

__all__ = ["IndexedSlices", "IndexedSlicesValue", "convert_to_tensor_or_indexed_slices"]

# TensorFlow's threshold for its "may consume a large amount of memory" warning
LARGE_DENSE_ELEMENTS = 100_000_000

IndexedSlicesValue = collections.namedtuple("IndexedSlicesValue",
                                            ["values", "indices", "dense_shape"])
IndexedSlicesValue.__doc__ = ("The value of a fetched IndexedSlices: NumPy `values`, "
                              "`indices` and `dense_shape` (None when it had none).")


class IndexedSlices:
    """Rows `values[i]` at row positions `indices[i]` of a tensor of shape `dense_shape`.

    `values`: a tensor of shape [n] + dense_shape[1:]; `indices`: an int32/int64 vector of
    n row positions (they may repeat: repeated rows add up); `dense_shape`: an int32/int64
    vector, or None when unknown (then the slices cannot be made dense).  `dtype`, `name`,
    `op`, `graph` and `device` are those of `values`, as in TensorFlow.
    """

    __array_priority__ = 100

    def __init__(self, values, indices, dense_shape=None):
        graph = graph_for((values, indices, dense_shape))
        self._values = to_tensor(values, graph=graph, name="values")
        self._indices = to_tensor(indices, graph=graph, name="indices")
        if self._indices.dtype not in INDEX_TYPES:
            raise TypeError(f"IndexedSlices: indices must be int32 or int64, got "
                            f"{self._indices.dtype.name} ({self._indices.name}).")
        if self._indices.shape.ndims not in (None, 1):
            raise ValueError(f"IndexedSlices: indices must be a vector, got shape "
                             f"{self._indices.shape} ({self._indices.name}).")
        if not self._values.shape[:1].is_compatible_with(self._indices.shape):
            raise ValueError(f"IndexedSlices: values {self._values.shape} need one row per "
                             f"index (indices {self._indices.shape}).")
        self._dense_shape = None
        if dense_shape is not None:
            self._dense_shape = to_tensor(dense_shape, graph=graph, name="dense_shape",
                                          preferred_dtype=_dtypes.int32)
            if self._dense_shape.dtype not in INDEX_TYPES:
                raise TypeError(f"IndexedSlices: dense_shape must be int32 or int64, got "
                                f"{self._dense_shape.dtype.name}.")
        self._dense = {}   # (control-flow context, control inputs) -> the dense tensor

    # --- TensorFlow's attributes ---------------------------------------------------------------
    @property
    def values(self) -> Tensor:
        """The rows, shape [n] + dense_shape[1:]."""
        return self._values

    @property
    def indices(self) -> Tensor:
        """The row position of each row of `values`."""
        return self._indices

    @property
    def dense_shape(self):
        """The shape of the dense tensor (a 1-D integer tensor), or None."""
        return self._dense_shape

    @property
    def dtype(self):
        return self._values.dtype

    @property
    def name(self) -> str:
        return self._values.name

    @property
    def op(self):
        return self._values.op

    @property
    def graph(self):
        return self._values.graph

    @property
    def device(self) -> str:
        return self._values.device

    @property
    def shape(self) -> TensorShape:
        """The dense tensor's static shape, as far as `dense_shape` and `values` tell it."""
        if self._dense_shape is None:
            return unknown_shape()
        shape = static_shape_from_tensor(self._dense_shape)
        if shape.ndims is not None and self._values.shape.ndims == shape.ndims:
            rows = TensorShape([shape.dims[0]])
            shape = rows.concatenate(shape[1:].merge_with(self._values.shape[1:]))
        return shape

    def get_shape(self) -> TensorShape:
        """The same as `shape`."""
        return self.shape

    def __neg__(self):
        """The slices of the negated tensor (TensorFlow's IndexedSlices.__neg__)."""
        return IndexedSlices(-self._values, self._indices, self._dense_shape)

    def __repr__(self):
        shape = "None" if self._dense_shape is None else self._dense_shape.name
        return (f"IndexedSlices(indices={self._indices.name}, values={self._values.name}, "
                f"dense_shape={shape})")

    # --- conversion ----------------------------------------------------------------------------
    def _as_graph_tensor(self) -> Tensor:
        """The dense tensor, built once per control-flow context and control inputs."""
        graph = self.graph
        key = (id(graph._get_control_flow_context()),
               tuple(op._id for op in graph._current_control_inputs()))
        if key not in self._dense:
            self._dense[key] = _densify(self)
        return self._dense[key]


def _densify(slices: IndexedSlices) -> Tensor:
    if slices.dense_shape is None:
        raise ValueError(f"Tensor conversion requested for IndexedSlices without "
                         f"dense_shape: {slices!r}")
    shape = slices.shape
    if not shape.is_fully_defined():
        warnings.warn("Converting sparse IndexedSlices to a dense Tensor of unknown shape. "
                      "This may consume a large amount of memory.", stacklevel=4)
    elif shape.num_elements() >= LARGE_DENSE_ELEMENTS:
        warnings.warn(f"Converting sparse IndexedSlices to a dense Tensor with "
                      f"{shape.num_elements()} elements. This may consume a large amount of "
                      f"memory.", stacklevel=4)
    with slices.graph.as_default():
        rows = shape.dims[0] if shape.ndims and shape.dims[0] is not None else \
            slices.dense_shape[0]
        dense = segment_ops.unsorted_segment_sum(slices.values, slices.indices, rows)
    if shape.ndims is not None and dense.shape.is_compatible_with(shape):
        dense.set_shape(shape)
    return dense


def is_indexed_slices(value) -> bool:
    """Whether `value` is an IndexedSlices."""
    return isinstance(value, IndexedSlices)


def dense(value):
    """`value` as a Tensor: IndexedSlices made dense, anything else as it is (None too)."""
    return value._as_graph_tensor() if isinstance(value, IndexedSlices) else value


def convert_to_tensor_or_indexed_slices(value, dtype=None, name=None):
    """An IndexedSlices as it is (checked against `dtype`), anything else as a Tensor
    (TensorFlow's function of that name)."""
    if isinstance(value, IndexedSlices):
        if dtype is not None and value.dtype is not _dtypes.as_dtype(dtype):
            raise ValueError(f"Tensor conversion requested dtype {_dtypes.as_dtype(dtype).name} "
                             f"for IndexedSlices with dtype {value.dtype.name}: {value!r}")
        return value
    return to_tensor(value, dtype=dtype, name=name)


def concat(slices_list) -> IndexedSlices:
    """One IndexedSlices holding every row of `slices_list` (the sum of their dense values):
    values and indices concatenated, indices as int64 when their dtypes differ."""
    slices_list = list(slices_list)
    if len(slices_list) == 1:
        return slices_list[0]
    dtypes = {s.indices.dtype for s in slices_list}
    index_dtype = dtypes.pop() if len(dtypes) == 1 else _dtypes.int64
    indices = [s.indices if s.indices.dtype is index_dtype else
               math_cast.cast(s.indices, index_dtype) for s in slices_list]
    dense_shape = next((s.dense_shape for s in slices_list if s.dense_shape is not None), None)
    return IndexedSlices(join_ops.concat([s.values for s in slices_list], 0),
                         join_ops.concat(indices, 0), dense_shape)


def deduplicate(slices: IndexedSlices) -> IndexedSlices:
    """The same dense value with each index once: the rows of a repeated index summed
    (Unique + UnsortedSegmentSum, as TensorFlow's optimizers do before a sparse update)."""
    unique_indices, positions = unique_ops.unique(slices.indices)
    summed = segment_ops.unsorted_segment_sum(slices.values, positions,
                                              shape_ops.shape(unique_indices)[0])
    return IndexedSlices(summed, unique_indices, slices.dense_shape)


def rows_gradient(params, indices, grad) -> IndexedSlices:
    """The gradient of a leading-axis gather of `params` at `indices` whose output gradient
    is `grad`: grad's rows, one per index, at the gathered rows (as TensorFlow's GatherV2
    gradient)."""
    if params.shape.is_fully_defined():
        dense_shape = to_tensor(params.shape.as_list(), dtype=_dtypes.int32)
    else:
        dense_shape = shape_ops.shape(params)
    count = indices.shape.num_elements()
    if count is not None and params.shape[1:].is_fully_defined():
        rows, flat = [count] + params.shape.as_list()[1:], [count]
    else:
        flat = reshape_ops.reshape(shape_ops.size(indices), [1])
        rows = join_ops.concat([flat, getitem_ops.tensor_getitem(dense_shape, slice(1, None))], 0)
    return IndexedSlices(reshape_ops.reshape(grad, rows), reshape_ops.reshape(indices, flat),
                         dense_shape)


def value_to_dense(value: IndexedSlicesValue) -> np.ndarray:
    """The dense NumPy array an IndexedSlicesValue stands for (rows added up)."""
    out = np.zeros(tuple(int(d) for d in value.dense_shape), dtype=value.values.dtype)
    np.add.at(out, np.asarray(value.indices, dtype=np.intp), value.values)
    return out
