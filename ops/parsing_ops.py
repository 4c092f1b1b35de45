"""Parsing records into tensors: `decode_csv` and `decode_raw` (TF1's input-pipeline ops).

DecodeCSV parses each string of `records` (any shape) into one value per column; the
column's dtype and default come from `record_defaults` (a one-element list gives the
default of an optional column, an empty list makes the column required).  Quotes follow
RFC 4180 (`"a,b"` is one field, `""` a quote inside it).  A record with the wrong number of
fields, a missing required field or a field that does not parse is an InvalidArgumentError
naming the record and the column.  DecodeRaw reinterprets each string's bytes as a vector
of `out_type` (all strings the same length).  Neither has a gradient (string inputs).
"""

from __future__ import annotations

import csv

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core.shapes import TensorShape
from ..errors import InvalidArgumentError
from .builder import make_op, to_tensor
from .registry import OpDef, not_differentiable

_PARSERS = {"float32": float, "float64": float, "int32": int, "int64": int,
            "string": lambda s: s.encode()}


def _csv_infer(op):
    records = op.inputs[0]
    if records.dtype is not _dtypes.string:
        raise TypeError(f"decode_csv: records must be strings, got {records.dtype.name}.")
    return [(t.dtype, records.shape) for t in op.inputs[1:]]


def _csv_kernel(ctx, inputs, attrs):
    records, defaults = inputs[0], inputs[1:]
    types = [t.dtype for t in ctx.op.inputs[1:]]
    delim = attrs["field_delim"]
    outs = [np.empty(records.shape, t.np_dtype) for t in types]
    for index in np.ndindex(records.shape):
        raw = records[index]
        line = raw.decode() if isinstance(raw, bytes) else str(raw)
        fields = next(csv.reader([line], delimiter=delim)) if line else [""]
        if len(fields) != len(types):
            raise InvalidArgumentError(None, ctx.op, f"Expect {len(types)} fields but have "
                                                     f"{len(fields)} in record {index}: {line!r}")
        for col, (field, default, t, out) in enumerate(zip(fields, defaults, types, outs)):
            if field == "" or field == attrs["na_value"]:
                if default.size == 0:
                    raise InvalidArgumentError(None, ctx.op, f"Field {col} is required but "
                                                             f"missing in record {index}: "
                                                             f"{line!r}")
                out[index] = default.reshape(-1)[0]
                continue
            try:
                out[index] = _PARSERS[t.name](field)
            except ValueError:
                raise InvalidArgumentError(None, ctx.op, f"Field {col} of record {index} is "
                                                         f"{field!r}, not a valid {t.name}.") \
                    from None
    return outs


DECODE_CSV = OpDef("DecodeCSV", _csv_infer, _csv_kernel,
                   doc="Parses CSV records into one tensor per column.")


def decode_csv(records, record_defaults, field_delim=",", use_quote_delim=True, name=None,
               na_value="", select_cols=None):
    """One tensor per column of the CSV strings `records` (TF1 `tf.decode_csv`)."""
    if select_cols is not None or not use_quote_delim:
        raise NotImplementedError("decode_csv: select_cols and use_quote_delim=False are not "
                                  "supported by flowjit.")
    records = to_tensor(records, dtype=_dtypes.string)
    defaults = []
    for d in record_defaults:
        if isinstance(d, (list, tuple)) and len(d) == 0:
            raise TypeError("decode_csv: an empty default needs a dtype; pass "
                            "tf.constant([], dtype) for a required column.")
        defaults.append(to_tensor(d))
    op = make_op(DECODE_CSV, [records] + defaults,
                 {"field_delim": field_delim, "na_value": na_value}, name or "DecodeCSV")
    return list(op.outputs)


def _raw_infer(op):
    out = _dtypes.as_dtype(op.get_attr("out_type"))
    return [(out, op.inputs[0].shape.concatenate(TensorShape([None])))]


def _raw_kernel(ctx, inputs, attrs):
    out = _dtypes.as_dtype(attrs["out_type"]).np_dtype
    dtype = np.dtype(out).newbyteorder("<" if attrs["little_endian"] else ">")
    strings = inputs[0]
    flat = [s if isinstance(s, bytes) else str(s).encode() for s in strings.reshape(-1)]
    lengths = {len(s) for s in flat}
    if len(lengths) > 1:
        raise InvalidArgumentError(None, ctx.op, f"DecodeRaw requires input strings to all be "
                                                 f"the same size; got sizes {sorted(lengths)}.")
    width = lengths.pop() if lengths else 0
    if width % dtype.itemsize:
        raise InvalidArgumentError(None, ctx.op, f"DecodeRaw: {width} bytes is not a multiple "
                                                 f"of {out.__name__}'s {dtype.itemsize}.")
    n = width // dtype.itemsize
    values = np.frombuffer(b"".join(flat), dtype=dtype).astype(out)
    return [values.reshape(strings.shape + (n,))]


DECODE_RAW = OpDef("DecodeRaw", _raw_infer, _raw_kernel, gradient=not_differentiable,
                   doc="Reinterprets the bytes of strings as vectors of numbers.")


def decode_raw(bytes, out_type, little_endian=True, name=None):  # noqa: A002 - TF's name
    """The bytes of each string as a vector of `out_type` (TF1 `tf.decode_raw`)."""
    t = to_tensor(bytes, dtype=_dtypes.string)
    return make_op(DECODE_RAW, [t], {"out_type": _dtypes.as_dtype(out_type).name,
                                     "little_endian": bool(little_endian)},
                   name or "DecodeRaw").outputs[0]


OP_DEFS = [DECODE_CSV, DECODE_RAW]
__all__ = ["decode_csv", "decode_raw"]


# --- tf.train.Example records ------------------------------------------------------------------

class FixedLenFeature:
    """A feature of fixed `shape` and `dtype` (int64, float32 or string), with an optional
    `default_value` for records that lack it (TF1 `tf.FixedLenFeature`)."""

    def __init__(self, shape, dtype, default_value=None):
        self.shape = list(shape) if isinstance(shape, (list, tuple)) else [shape]
        self.dtype = _dtypes.as_dtype(dtype)
        self.default_value = default_value
        if self.dtype.name not in ("int64", "float32", "string"):
            raise TypeError(f"FixedLenFeature: dtype must be int64, float32 or string, got "
                            f"{self.dtype.name}.")


def VarLenFeature(dtype):  # noqa: N802 - TensorFlow's name
    """Variable-length features parse into SparseTensors, which flowjit does not have."""
    raise NotImplementedError("VarLenFeature needs SparseTensor, which flowjit does not "
                              "support; use FixedLenFeature with a known shape.")


_KINDS = {"int64": "int64_list", "float32": "float_list", "string": "bytes_list"}


def _example_infer(op):
    batch = op.inputs[0].shape
    return [(_dtypes.as_dtype(t), batch.concatenate(TensorShape(s)))
            for t, s in zip(op.get_attr("dense_types"), op.get_attr("dense_shapes"))]


def _example_kernel(ctx, inputs, attrs):
    from .example_proto import Example
    serialized, defaults = inputs[0], inputs[1:]
    keys, types, shapes = attrs["dense_keys"], attrs["dense_types"], attrs["dense_shapes"]
    outs = [np.empty(serialized.shape + tuple(s), _dtypes.as_dtype(t).np_dtype)
            for t, s in zip(types, shapes)]
    for index in np.ndindex(serialized.shape):
        record = serialized[index]
        try:
            example = Example.FromString(record if isinstance(record, bytes)
                                         else str(record).encode())
        except ValueError as e:
            raise InvalidArgumentError(None, ctx.op, f"Could not parse example {index}: "
                                                     f"{e}") from None
        for key, t, shape, default, out in zip(keys, types, shapes, defaults, outs):
            feature = example.features.feature.get(key)
            if feature is None:
                if default.size == 0:
                    raise InvalidArgumentError(None, ctx.op, f"Feature: {key} (data type: "
                                                             f"{t}) is required but could not "
                                                             f"be found (example {index}).")
                out[index] = np.broadcast_to(default, shape)
                continue
            if feature.kind() != _KINDS[t]:
                raise InvalidArgumentError(None, ctx.op, f"Feature {key} of example {index} "
                                                         f"holds {feature.kind()}, expected "
                                                         f"{_KINDS[t]} ({t}).")
            values = getattr(feature, _KINDS[t]).value
            if len(values) != int(np.prod(shape)):
                raise InvalidArgumentError(None, ctx.op, f"Key: {key}. Can't parse serialized "
                                                         f"Example {index}: {len(values)} "
                                                         f"values for shape {list(shape)}.")
            arr = np.empty(len(values), object) if t == "string" else \
                np.asarray(values, _dtypes.as_dtype(t).np_dtype)
            if t == "string":
                arr[:] = values
            out[index] = arr.reshape(shape)
    return outs


PARSE_EXAMPLE = OpDef("ParseExample", _example_infer, _example_kernel,
                      doc="Parses serialized tf.train.Example records into dense features.")


def parse_example(serialized, features, name=None, example_names=None):
    """{key: tensor} of the FixedLenFeatures in `features`, for a vector of serialized
    Examples (TF1 `tf.parse_example`); a leading batch dimension on each tensor."""
    del example_names
    serialized = to_tensor(serialized, dtype=_dtypes.string)
    keys = sorted(features)
    defaults = []
    for k in keys:
        f = features[k]
        if not isinstance(f, FixedLenFeature):
            raise TypeError(f"parse_example: feature {k!r} must be a FixedLenFeature.")
        if f.default_value is None:
            defaults.append(to_tensor(np.zeros((0,), f.dtype.np_dtype)
                                      if f.dtype is not _dtypes.string
                                      else np.array([], object), dtype=f.dtype))
        else:
            defaults.append(to_tensor(f.default_value, dtype=f.dtype))
    op = make_op(PARSE_EXAMPLE, [serialized] + defaults,
                 {"dense_keys": keys, "dense_types": [features[k].dtype.name for k in keys],
                  "dense_shapes": [features[k].shape for k in keys]}, name or "ParseExample")
    return dict(zip(keys, op.outputs))


def parse_single_example(serialized, features, name=None, example_names=None):
    """{key: tensor} of one serialized Example (TF1 `tf.parse_single_example`)."""
    return parse_example(serialized, features, name or "ParseSingleExample", example_names)


OP_DEFS.append(PARSE_EXAMPLE)
__all__ += ["FixedLenFeature", "VarLenFeature", "parse_example", "parse_single_example"]
