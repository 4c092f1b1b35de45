"""Helpers shared by the array-manipulation op modules (array, join, fill, pad, shape ops).

Owns: converting shape-like arguments (lists, TensorShapes, Dimensions, tensors) into int32 or
int64 index tensors, reading small static integer values for shape inference, checking axes
against a rank (ValueError at construction), converting a list of op inputs to one dtype the
way TensorFlow's op helper does, and building the InvalidArgumentError a kernel raises.
Nothing here defines an op.
"""

from __future__ import annotations

from .. import dtypes as _dtypes
from ..compiler.core.graph import Tensor
from ..compiler.core.shapes import Dimension, TensorShape
from ..errors import InvalidArgumentError
from .builder import INDEX_TYPES, check_dtype, graph_for, to_tensor
from .conversion import first_tensor_dtype, static_value


def runtime_error(ctx, message: str) -> InvalidArgumentError:
    """The error a kernel raises for bad input values (ctx is None during static folding)."""
    return InvalidArgumentError(None, ctx.op if ctx is not None else None, message)


def plain_shape_value(value):
    """Replace TensorShape/Dimension objects (also inside lists) by plain ints."""
    if isinstance(value, TensorShape):
        if not value.is_fully_defined():
            raise ValueError(f"Cannot convert a partially known TensorShape {value} to a "
                             "Tensor; use flowjit.shape(tensor) for a dynamic shape.")
        return list(value.as_list())
    if isinstance(value, Dimension):
        if value.value is None:
            raise ValueError("Cannot convert an unknown Dimension to a Tensor.")
        return value.value
    if isinstance(value, (list, tuple)):
        return [plain_shape_value(v) for v in value]
    return value


def index_tensor(value, param: str, graph=None, dtype=None) -> Tensor:
    """`value` (shape, axis, perm...) as an int32/int64 tensor; TypeError for other dtypes."""
    value = plain_shape_value(value)
    t = to_tensor(value, dtype=dtype, graph=graph or graph_for([value]), name=param,
                  preferred_dtype=_dtypes.int32)
    check_dtype(t, INDEX_TYPES, param)
    return t


def static_ints(tensor: Tensor):
    """The static value of an integer tensor as a flat list of ints, or None if unknown."""
    value = static_value(tensor)
    if value is None:
        return None
    return [int(v) for v in value.reshape(-1)]


def static_int(tensor: Tensor):
    """The static value of a one-element integer tensor as an int, or None if unknown."""
    values = static_ints(tensor)
    if values is None or len(values) != 1:
        return None
    return values[0]


def check_rank(tensor: Tensor, rank: int, param: str):
    """ValueError unless `tensor`'s static rank is unknown or equals `rank`."""
    ndims = tensor.shape.ndims
    if ndims is not None and ndims != rank:
        raise ValueError(f"Shape must be rank {rank} but is rank {ndims} for '{param}' "
                         f"(shape {tensor.shape}).")


def normalize_axis(axis: int, rank: int, param: str = "axis") -> int:
    """`axis` in [-rank, rank) as a non-negative index; ValueError otherwise."""
    if not -rank <= axis < rank:
        raise ValueError(f"{param} = {axis} is not in the valid range [{-rank}, {rank}) for a "
                         f"tensor of rank {rank}.")
    return axis % rank if rank else axis


def convert_list(values, op_type: str, param: str = "values", graph=None) -> list:
    """Convert a list of op inputs to tensors of one dtype (the first tensor's, if any).

    Python and NumPy values take that dtype; tensors of different dtypes are a TypeError
    naming all the dtypes, as TensorFlow's op helper reports it.
    """
    if isinstance(values, (Tensor, str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"Expected a list of tensors for '{param}' of '{op_type}' Op, got "
                        f"{values!r}.")
    values = list(values)
    graph = graph or graph_for(values)
    dtype = first_tensor_dtype(values)
    tensors = []
    for v in values:
        v = v._as_graph_tensor() if hasattr(v, "_as_graph_tensor") else v
        if isinstance(v, Tensor):
            tensors.append(v)
            continue
        try:
            tensors.append(to_tensor(v, dtype=dtype, graph=graph))
        except (TypeError, ValueError) as e:
            raise TypeError(f"Cannot convert {v!r} to {dtype.name if dtype else 'a tensor'} "
                            f"for '{param}' of '{op_type}' Op: {e}") from None
        if dtype is None:
            dtype = tensors[-1].dtype
    kinds = [t.dtype for t in tensors]
    if any(k is not kinds[0] for k in kinds):
        names = ", ".join(k.name for k in kinds)
        raise TypeError(f"Tensors in list passed to '{param}' of '{op_type}' Op have types "
                        f"[{names}] that don't all match; use flowjit.cast to convert them.")
    return tensors


def describe_dims(dims) -> str:
    """'[2,?,3]' for a list of ints and None."""
    return "[" + ",".join("?" if d is None else str(d) for d in dims) + "]"
