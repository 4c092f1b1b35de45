"""Fetch and feed handling for `Session.run`.

Owns `FetchStructure`, which flattens a nested fetch argument (tensors, operations, names,
variables in lists, tuples, namedtuples and dicts) into unique graph elements and rebuilds
the same structure from their values (an IndexedSlices is fetched as its three tensors and
comes back as an `IndexedSlicesValue`, as in TensorFlow), and `convert_feed`, which checks a
fed value against the tensor it replaces (dtype kind and static shape) and converts it.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core.graph import Operation, Tensor
from ..ops.indexed_slices import IndexedSlices, IndexedSlicesValue


class FetchStructure:
    """A nested fetch argument, flattened to unique Tensors/Operations."""

    def __init__(self, fetches, graph):
        self.graph = graph
        self.elements: list = []   # unique Tensors / Operations, first-seen order
        self._index: dict = {}
        self._template = self._flatten(fetches)

    def _leaf(self, x):
        try:
            element = self.graph.as_graph_element(x)
        except KeyError as e:
            raise KeyError(f"Fetch argument {x!r} cannot be interpreted as a Tensor: "
                           f"{e.args[0]}") from None
        except (TypeError, ValueError) as e:
            raise TypeError(f"Fetch argument {x!r} has invalid type {type(x).__name__}: must be "
                            f"a Tensor, Operation, Variable or name string ({e}).") from None
        if element not in self._index:
            self._index[element] = len(self.elements)
            self.elements.append(element)
        return ("leaf", self._index[element])

    def _flatten(self, x):
        if x is None:
            raise TypeError("Fetch argument None has invalid type NoneType.")
        if isinstance(x, IndexedSlices):   # before _leaf, which would make it dense
            parts = [x.values, x.indices] + ([] if x.dense_shape is None else [x.dense_shape])
            return ("slices", None, [self._flatten(p) for p in parts])
        if isinstance(x, dict):
            return ("dict", type(x), [(k, self._flatten(v)) for k, v in x.items()])
        if isinstance(x, tuple) and hasattr(x, "_fields"):
            return ("namedtuple", type(x), [self._flatten(v) for v in x])
        if isinstance(x, (list, tuple)):
            return ("seq", type(x), [self._flatten(v) for v in x])
        return self._leaf(x)

    @property
    def tensors(self):
        return [e for e in self.elements if isinstance(e, Tensor)]

    @property
    def operations(self):
        return [e for e in self.elements if isinstance(e, Operation)]

    def build(self, values_by_element: dict):
        return self._build(self._template, values_by_element)

    def _build(self, node, values):
        kind = node[0]
        if kind == "leaf":
            return values[self.elements[node[1]]]
        if kind == "dict":
            out = node[1]() if node[1] is not dict else {}
            for k, v in node[2]:
                out[k] = self._build(v, values)
            return out
        if kind == "namedtuple":
            return node[1](*[self._build(v, values) for v in node[2]])
        if kind == "slices":
            parts = [self._build(v, values) for v in node[2]]
            return IndexedSlicesValue(*parts, *([None] * (3 - len(parts))))
        return node[1](self._build(v, values) for v in node[2])


def fits_exactly(tensor: Tensor, value: np.ndarray) -> bool:
    """Whether array `value` has `tensor`'s dtype and a shape its static shape allows (then
    `convert_feed` would return it unchanged)."""
    dtype = tensor._dtype      # the attributes behind the properties: called every step
    if dtype is _dtypes.string or value.dtype != dtype.np_dtype:
        return False
    dims = tensor._shape._dims
    if dims is None:
        return True
    shape = value.shape
    if len(dims) != len(shape):
        return False
    for d, n in zip(dims, shape):
        if d is not None and d != n:
            return False
    return True


def convert_feed(tensor: Tensor, value) -> np.ndarray:
    """`value` as an array for `tensor`; ValueError/TypeError naming both when it cannot be."""
    dtype = tensor.dtype
    if dtype is _dtypes.string:
        arr = np.asarray(value, dtype=object)
        flat = [v.encode() if isinstance(v, str) else v for v in arr.reshape(-1)]
        if not all(isinstance(v, bytes) for v in flat):
            raise TypeError(f"Cannot feed a non-string value to string tensor '{tensor.name}'.")
        out = np.empty(arr.shape, dtype=object)
        out.reshape(-1)[:] = flat if flat else []
        arr = out
    else:
        if isinstance(value, (Tensor, Operation)):
            raise TypeError(f"The value of a feed cannot be a flowjit Tensor ({value.name}); "
                            "acceptable feed values include Python scalars, strings, lists, "
                            "NumPy arrays.")
        try:
            raw = np.asarray(value)
        except ValueError as e:
            raise ValueError(f"Cannot feed {value!r} to tensor '{tensor.name}': {e}") from None
        target = dtype.np_dtype
        ok = raw.dtype == target or np.can_cast(raw.dtype, target, casting="same_kind")
        if raw.dtype.kind in "iub" and dtype.is_integer:
            ok = True  # Python ints arrive as int64; range is checked below
        if raw.dtype.kind == "b" and not dtype.is_bool:
            ok = False
        if not ok or raw.dtype.kind in "OSU":
            raise TypeError(f"Cannot feed value of dtype {raw.dtype} to tensor '{tensor.name}' "
                            f"of dtype {dtype.name}: the conversion would lose information.")
        if dtype.is_integer and raw.dtype.kind in "iu" and raw.size and raw.dtype != target:
            info = np.iinfo(target)
            if raw.min() < info.min or raw.max() > info.max:
                raise ValueError(f"Feed value for tensor '{tensor.name}' is out of range for "
                                 f"{dtype.name}.")
        arr = raw if raw.dtype == target else raw.astype(target)
    if not tensor.shape.is_compatible_with(arr.shape):
        raise ValueError(f"Cannot feed value of shape {arr.shape} for Tensor '{tensor.name}', "
                         f"which has shape '{tensor.shape}'")
    return arr
