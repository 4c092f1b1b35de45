"""Op attrs as TensorFlow's `AttrValue` messages, and arrays as `TensorProto`s.

An op's attrs are Python values (docs/architecture.md, "Graphs"); a GraphDef holds them as
`AttrValue` protobuf messages (protos/).  This module converts both ways:

    bool -> b        int -> i        float -> f (32-bit, as TensorFlow stores it)
    str / bytes -> s (UTF-8)         DType -> type          TensorShape -> shape
    np.ndarray / NumPy scalar -> tensor (a TensorProto)      None -> an empty AttrValue
    list / tuple -> list, of one kind; a list of lists of sizes (queue shapes) -> shapes

Decoding gives: s -> str when it is UTF-8 (else bytes), shape -> TensorShape, a list of
shapes -> lists of sizes (None for unknown; None for an unknown rank), tensor -> a read-only
array.  `expected` (TensorFlow's declared attr type, compiler/core/tf_signatures.py) turns
dtype names into `type`s where TensorFlow wants types.  Anything else (a function object, a
dict) raises TypeError naming the node and the attr.
"""

from __future__ import annotations

import numpy as np

from ... import dtypes as _dtypes
from ...protos import AttrValue, TensorProto, TensorShapeProto
from .shapes import TensorShape

# --- arrays <-> TensorProto --------------------------------------------------------------------

_TYPED_FIELDS = {   # DataType code -> the repeated field TensorFlow uses for short values
    _dtypes.float32: "float_val", _dtypes.float64: "double_val",
    _dtypes.int32: "int_val", _dtypes.int16: "int_val", _dtypes.int8: "int_val",
    _dtypes.uint8: "int_val", _dtypes.uint16: "int_val", _dtypes.int64: "int64_val",
    _dtypes.bool_: "bool_val", _dtypes.uint32: "uint32_val", _dtypes.uint64: "uint64_val",
    _dtypes.complex64: "scomplex_val", _dtypes.complex128: "dcomplex_val",
    _dtypes.float16: "half_val",
}


def shape_proto(shape) -> TensorShapeProto:
    """A TensorShapeProto for a TensorShape, a list of sizes (None: unknown) or None."""
    proto = TensorShapeProto()
    dims = shape.dims if isinstance(shape, TensorShape) else shape
    if dims is None:
        proto.unknown_rank = True
        return proto
    for d in dims:
        proto.dim.add(size=-1 if d is None else int(d))
    return proto


def shape_dims(proto: TensorShapeProto):
    """The sizes of a TensorShapeProto (None for unknown sizes), or None for unknown rank."""
    if proto.unknown_rank:
        return None
    return [None if d.size < 0 else int(d.size) for d in proto.dim]


def tensor_proto(value) -> TensorProto:
    """A TensorProto holding `value` (an array or NumPy scalar) exactly."""
    array = np.asarray(value)
    dtype = _dtypes.as_dtype(array.dtype) if array.dtype != object else _dtypes.string
    proto = TensorProto(dtype=dtype.as_datatype_enum, tensor_shape=shape_proto(list(array.shape)))
    if dtype is _dtypes.string:
        proto.string_val.extend(s.encode("utf-8") if isinstance(s, str) else bytes(s)
                                for s in array.ravel())
    else:
        proto.tensor_content = np.ascontiguousarray(array, array.dtype.newbyteorder("<")) \
            .tobytes()
    return proto


def tensor_array(proto: TensorProto) -> np.ndarray:
    """The read-only array a TensorProto holds: from `tensor_content`, or from the typed
    value field, where fewer values than elements repeat the last one (TensorFlow's
    convention for constants such as `zeros`)."""
    try:
        dtype = _dtypes.as_dtype(int(proto.dtype))
    except TypeError:
        raise TypeError(f"a tensor of DataType {proto.dtype}, which flowjit has no dtype "
                        "for") from None
    dims = shape_dims(proto.tensor_shape)
    if dims is None or any(d is None for d in dims):
        raise ValueError(f"a constant tensor must have a fully known shape, got {dims}.")
    count = int(np.prod(dims, dtype=np.int64))
    if dtype is _dtypes.string:
        items = list(proto.string_val)
        values = np.empty(count, dtype=object)
        values[:] = [items[min(i, len(items) - 1)] for i in range(count)] if items else b""
    elif proto.tensor_content:
        raw = np.frombuffer(proto.tensor_content, dtype.np_dtype.newbyteorder("<"))
        if raw.size != count:
            raise ValueError(f"tensor_content holds {raw.size} values for shape {dims}.")
        values = raw.astype(dtype.np_dtype)
    else:
        values = _typed_values(proto, dtype, count)
    out = values.reshape(dims)
    out.flags.writeable = False
    return out


def _typed_values(proto, dtype, count: int) -> np.ndarray:
    field = _TYPED_FIELDS[dtype]
    raw = list(getattr(proto, field))
    if dtype is _dtypes.float16:
        raw = np.array(raw, np.uint16).view(np.float16)
    elif dtype.is_complex:
        parts = np.array(raw, dtype.real_dtype.np_dtype)
        raw = parts[0::2] + 1j * parts[1::2]
    raw = np.asarray(raw).astype(dtype.np_dtype)
    if raw.size == 0:
        return np.zeros(count, dtype.np_dtype)
    if raw.size >= count:
        return raw[:count]
    return np.concatenate([raw, np.full(count - raw.size, raw[-1], dtype.np_dtype)])


# --- Python values <-> AttrValue ---------------------------------------------------------------


def _is_size_list(value) -> bool:
    return isinstance(value, (list, tuple)) and all(
        d is None or (isinstance(d, (int, np.integer)) and not isinstance(d, bool))
        for d in value)


def _kind(value, expected_type: bool):
    if isinstance(value, (bool, np.bool_)):
        return "b"
    if isinstance(value, (int, np.integer)):
        return "i"
    if isinstance(value, (float, np.floating)) and not isinstance(value, np.ndarray):
        return "f"
    if isinstance(value, _dtypes.DType) or (expected_type and isinstance(value, str)):
        return "type"
    if isinstance(value, (str, bytes)):
        return "s"
    if isinstance(value, TensorShape):
        return "shape"
    if isinstance(value, np.ndarray) or isinstance(value, np.generic):
        return "tensor"
    if _is_size_list(value):
        return "shape"
    raise TypeError(f"a {type(value).__name__} ({value!r:.60}) has no AttrValue form")


def _scalar(value, kind: str):
    if kind == "type":
        return _dtypes.as_dtype(value).as_datatype_enum
    if kind == "s":
        return value.encode("utf-8") if isinstance(value, str) else bytes(value)
    if kind == "b":
        return bool(value)
    if kind == "i":
        return int(value)
    return float(value)


def to_attr_value(value, expected: str | None = None) -> AttrValue:
    """The AttrValue of one attr value; `expected` is TensorFlow's attr type ("type",
    "list(type)", ...) when known.  Raises TypeError for a value with no AttrValue form."""
    av = AttrValue()
    if value is None:
        return av
    wants_type = expected in ("type", "list(type)")
    if isinstance(value, (list, tuple)):
        av.list.SetInParent()
        if not value:
            return av
        kinds = {_kind(v, wants_type) for v in value}
        if len(kinds) != 1:
            raise TypeError(f"a list mixing kinds {sorted(kinds)} has no AttrValue form")
        kind = kinds.pop()
        if kind == "shape":
            av.list.shape.extend(shape_proto(v) for v in value)
        elif kind == "tensor":
            av.list.tensor.extend(tensor_proto(v) for v in value)
        else:
            getattr(av.list, kind).extend(_scalar(v, kind) for v in value)
        return av
    kind = _kind(value, wants_type)
    if kind == "shape":
        av.shape.CopyFrom(shape_proto(value))
    elif kind == "tensor":
        av.tensor.CopyFrom(tensor_proto(value))
    else:
        setattr(av, kind, _scalar(value, kind))
    return av


def _text(raw: bytes):
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return bytes(raw)


def _dtype(code: int):
    try:
        return _dtypes.as_dtype(int(code))
    except TypeError:
        raise TypeError(f"DataType {code} has no flowjit dtype") from None


def from_attr_value(av: AttrValue):
    """The Python value of an AttrValue (see the module docstring for the mapping)."""
    which = av.WhichOneof("value")
    if which is None:
        return None
    if which == "list":
        lv = av.list
        for field in ("s", "i", "f", "b", "type", "shape", "tensor"):
            items = getattr(lv, field)
            if len(items):
                return [_single(field, x) for x in items]
        if len(lv.func):
            raise TypeError("function-valued attrs (`func`) are not supported by flowjit")
        return []
    if which in ("func", "placeholder"):
        raise TypeError(f"{which}-valued attrs are not supported by flowjit")
    value = _single(which, getattr(av, which))
    return TensorShape(value) if which == "shape" else value


def _single(field: str, x):
    if field == "s":
        return _text(x)
    if field == "type":
        return _dtype(x)
    if field == "shape":
        return shape_dims(x)
    if field == "tensor":
        return tensor_array(x)
    if field == "f":
        return float(x)
    return bool(x) if field == "b" else int(x)
