"""The byte and text formats of a serialized GraphDef, and the encoding of attr values.

This module owns the on-disk representation only; `compiler/core/graph_def.py` owns the
`GraphDef`/`NodeDef` objects and importing.  Both forms hold the same JSON *document*:

    {"format": "flowjit.GraphDef", "version": 1,
     "versions": {"producer": 1, "min_consumer": 1},
     "node": [{"name": "x", "op": "Placeholder", "input": [], "device": "",
               "attr": {"dtype": {"dtype": "float32"}, "shape": {"shape": [null, 3]}}}, ...]}

Node inputs follow TensorFlow: "op" is output 0 of op, "op:i" output i, "^op" a control
input (control inputs come last).  Attr values are encoded so that decoding gives back the
same Python types:

    None, bool, int, str      -> JSON null / true|false / integer / string
    float                     -> JSON number (repr, exact); {"float": "nan"|"inf"|"-inf"}
    bytes                     -> {"bytes": "<latin-1 text>"} (exact: one char per byte)
    list / tuple              -> JSON list / {"tuple": [...]}
    flowjit DType             -> {"dtype": "float32"}
    TensorShape               -> {"shape": [2, null]} (null dim unknown); {"shape": null}
                                 for unknown rank
    np.ndarray / NumPy scalar -> {"tensor": {"dtype": name, "shape": [...], <data>}} with
                                 "scalar": true for a NumPy scalar.  <data> is, for numeric
                                 and bool arrays, in the text form "values" (a flat C-order
                                 list, floats as numbers or "nan"/"inf"/"-inf", complex as
                                 [re, im]; used for up to 64 elements when bit-exact) or "b64"
                                 (base64 of the C-order little-endian bytes), and in the
                                 binary form "offset"/"nbytes" (a slice of the blob); for
                                 string arrays, "items": a flat list of latin-1 strings
                                 (bytes elements) or {"str": s} elements.

Binary form (`encode_binary`), all integers little-endian:

    offset 0   8 bytes  magic b"FJGRAPH\\0"
           8   uint32   format version (FORMAT_VERSION; a reader refuses newer versions)
           12  uint32   CRC-32 of bytes 8..12 and 16..end (version, lengths, header, blob)
           16  uint64   H: header length      24  uint64  B: blob length
           32  H bytes  the JSON document (UTF-8), tensors referring into the blob
           32+H B bytes blob: raw array bytes, each array starting at a multiple of 8
The file is exactly 32 + H + B bytes, so truncation, trailing garbage and flipped bits are
all detected.  Text form (`encode_text`): the same document as indented JSON (ASCII only),
with arrays in base64.  `decode` accepts either (text starts with "{" after whitespace) and
raises `DecodeError` (a `flowjit.errors.DataLossError`) for anything malformed.  The prefix
layout above is fixed for all future versions so the version can always be read.
"""

from __future__ import annotations

import base64
import json
import math
import struct
import zlib

import numpy as np

from ... import dtypes as _dtypes
from ...errors import DataLossError
from .shapes import TensorShape

MAGIC = b"FJGRAPH\0"
FORMAT_VERSION = 1
FORMAT_NAME = "flowjit.GraphDef"
_PREFIX = struct.Struct("<8sIIQQ")  # magic, version, crc32, header length, blob length
_READABLE_LIMIT = 64  # text form: arrays up to this many elements are written as values


class DecodeError(DataLossError):
    """Serialized GraphDef data is truncated, corrupted, of another format or too new."""

    def __init__(self, message: str):
        DataLossError.__init__(self, None, None, message)


# --- attr values <-> JSON --------------------------------------------------------------------


def _number(x: float):
    """x itself if finite, else "nan", "inf" or "-inf" (JSON has no such numbers)."""
    return x if math.isfinite(x) else ("nan" if math.isnan(x) else ("inf" if x > 0 else "-inf"))


def _encode_tensor(arr: np.ndarray, blob: bytearray | None, scalar: bool = False) -> dict:
    try:
        dtype = _dtypes.as_dtype(arr.dtype)
    except TypeError:
        raise TypeError(f"Cannot serialize a NumPy array of dtype {arr.dtype}: it is not a "
                        "flowjit dtype.") from None
    out = {"dtype": dtype.name, "shape": list(arr.shape)}
    if scalar:
        out["scalar"] = True
    if dtype is _dtypes.string:
        items = []
        for v in arr.reshape(-1):
            if isinstance(v, bytes):
                items.append(v.decode("latin-1"))
            elif isinstance(v, str):
                items.append({"str": v})
            else:
                raise TypeError(f"Cannot serialize a string array holding {v!r} of type "
                                f"{type(v).__name__}: elements must be bytes or str.")
        out["items"] = items
        return out
    raw = np.ascontiguousarray(arr, dtype=dtype.np_dtype.newbyteorder("<")).tobytes()
    if blob is None:
        values = _readable_values(arr, dtype, raw)
        if values is not None:
            out["values"] = values
        else:
            out["b64"] = base64.b64encode(raw).decode("ascii")
    else:
        blob.extend(b"\0" * (-len(blob) % 8))
        out["offset"], out["nbytes"] = len(blob), len(raw)
        blob.extend(raw)
    return out


def _readable_values(arr: np.ndarray, dtype, raw: bytes):
    """Small arrays as a flat JSON list (complex as [re, im]), if that is bit-exact."""
    if arr.size > _READABLE_LIMIT:
        return None
    flat = arr.reshape(-1)
    # float(str(x)): NumPy's shortest repr for x's own precision, so 0.1f is written 0.1
    if dtype.is_complex:
        values = [[_number(float(str(v.real))), _number(float(str(v.imag)))] for v in flat]
    elif dtype.is_floating:
        values = [_number(float(str(v))) for v in flat]
    else:
        values = flat.tolist()
    exact = _values_array(values, dtype, arr.shape).astype(dtype.np_dtype.newbyteorder("<"))
    return values if exact.tobytes() == raw else None  # e.g. NaN payloads need base64


def _values_array(values, dtype, shape) -> np.ndarray:
    if dtype.is_complex:
        values = [complex(float(re), float(im)) for re, im in values]
    elif dtype.is_floating:
        values = [float(v) for v in values]
    elif dtype.is_integer:
        if not all(type(v) is int for v in values):
            raise ValueError(f"{dtype.name} tensor values must be integers")
    elif not all(type(v) is bool for v in values):
        raise ValueError("bool tensor values must be true or false")
    count = math.prod(shape)
    if len(values) != count:
        raise ValueError(f"tensor of shape {list(shape)} has {len(values)} values")
    return np.array(values, dtype=dtype.np_dtype).reshape(shape)


def encode_value(value, blob: bytearray | None = None):
    """The JSON-able form of one attr value; arrays go into `blob` (binary) or base64 (text)."""
    if value is None or isinstance(value, (bool, str)) and not isinstance(value, np.generic):
        return value
    if isinstance(value, np.ndarray):
        return {"tensor": _encode_tensor(value, blob)}
    if isinstance(value, np.generic):
        if isinstance(value, np.bytes_):
            return {"bytes": bytes(value).decode("latin-1")}
        if isinstance(value, np.str_):
            return str(value)
        return {"tensor": _encode_tensor(np.asarray(value), blob, scalar=True)}
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        x = _number(float(value))
        return x if isinstance(x, float) else {"float": x}
    if isinstance(value, bytes):
        return {"bytes": value.decode("latin-1")}
    if isinstance(value, _dtypes.DType):
        return {"dtype": value.name}
    if isinstance(value, TensorShape):
        return {"shape": None if value.dims is None else list(value.dims)}
    if type(value) is list:
        return [encode_value(v, blob) for v in value]
    if type(value) is tuple:
        return {"tuple": [encode_value(v, blob) for v in value]}
    raise TypeError(f"Cannot serialize an attr value of type {type(value).__name__} "
                    f"({value!r:.80}); supported: None, bool, int, float, str, bytes, DType, "
                    "TensorShape, NumPy arrays and scalars, and lists/tuples of these.")


def _decode_tensor(spec: dict, blob: memoryview | None):
    dtype = _dtypes.as_dtype(spec["dtype"])
    shape = tuple(int(d) for d in spec["shape"])
    if any(d < 0 for d in shape):
        raise ValueError(f"negative dimension in tensor shape {list(shape)}")
    count = math.prod(shape)
    if dtype is _dtypes.string:
        items = spec["items"]
        if len(items) != count:
            raise ValueError(f"string tensor of shape {list(shape)} has {len(items)} items")
        arr = np.empty(count, dtype=object)
        for i, v in enumerate(items):
            arr[i] = v["str"] if isinstance(v, dict) else v.encode("latin-1")
        arr = arr.reshape(shape)
    else:
        if "values" in spec:
            raw = _values_array(spec["values"], dtype, shape).astype(
                dtype.np_dtype.newbyteorder("<")).tobytes()
        elif "b64" in spec:
            raw = base64.b64decode(spec["b64"].encode("ascii"), validate=True)
        else:
            if blob is None:
                raise ValueError("tensor refers to a binary blob, but this is the text form")
            offset, nbytes = int(spec["offset"]), int(spec["nbytes"])
            if offset < 0 or nbytes < 0 or offset + nbytes > len(blob):
                raise ValueError(f"tensor bytes [{offset}, {offset + nbytes}) lie outside the "
                                 f"{len(blob)}-byte blob")
            raw = blob[offset:offset + nbytes]
        if len(raw) != count * dtype.size:
            raise ValueError(f"{dtype.name} tensor of shape {list(shape)} needs "
                             f"{count * dtype.size} bytes, found {len(raw)}")
        arr = np.frombuffer(raw, dtype=dtype.np_dtype.newbyteorder("<"))
        arr = arr.astype(dtype.np_dtype, copy=True).reshape(shape)
    if spec.get("scalar"):
        return arr[()]
    arr.flags.writeable = False
    return arr


def decode_value(obj, blob: memoryview | None = None):
    """Inverse of `encode_value`; raises ValueError/KeyError/TypeError on malformed input."""
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, list):
        return [decode_value(v, blob) for v in obj]
    if isinstance(obj, dict) and len(obj) == 1:
        (tag, body), = obj.items()
        if tag == "float":
            if body not in ("nan", "inf", "-inf"):
                raise ValueError(f"bad special float {body!r}")
            return float(body)
        if tag == "bytes":
            return body.encode("latin-1")
        if tag == "tuple":
            return tuple(decode_value(v, blob) for v in body)
        if tag == "dtype":
            return _dtypes.as_dtype(body)
        if tag == "shape":
            return TensorShape(None if body is None else [_check_dim(d) for d in body])
        if tag == "tensor":
            return _decode_tensor(body, blob)
    raise ValueError(f"unrecognized attr value encoding {json.dumps(obj)[:80]}")


def _check_dim(d):
    if d is not None and (type(d) is not int or d < 0):
        raise ValueError(f"bad shape dimension {d!r}")
    return d


# --- documents --------------------------------------------------------------------------------


def build_document(nodes, versions, blob: bytearray | None) -> dict:
    """The JSON document for node dicts {name, op, input, device, attr} and a versions dict."""
    out_nodes = []
    for n in nodes:
        attr = {}
        for key in sorted(n["attr"]):
            try:
                attr[key] = encode_value(n["attr"][key], blob)
            except TypeError as e:
                raise TypeError(f"Node '{n['name']}' (op: '{n['op']}'), attr '{key}': "
                                f"{e}") from None
        out_nodes.append({"name": n["name"], "op": n["op"], "input": list(n["input"]),
                          "device": n["device"], "attr": attr})
    return {"format": FORMAT_NAME, "version": FORMAT_VERSION, "versions": dict(versions),
            "node": out_nodes}


def _parse_document(doc, blob: memoryview | None):
    """(node dicts with decoded attrs, versions dict) from a JSON document."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT_NAME:
        raise DecodeError("Not a flowjit GraphDef document: the 'format' field is missing or "
                          "is not 'flowjit.GraphDef'.")
    version = doc.get("version")
    if type(version) is not int or version < 1:
        raise DecodeError(f"Malformed GraphDef: bad format version {version!r}.")
    _check_version(version)
    try:
        versions = {k: int(v) for k, v in doc.get("versions", {}).items()}
        nodes = []
        for i, n in enumerate(doc["node"]):
            fields = (n["name"], n["op"], n.get("device", ""))
            if not all(isinstance(f, str) for f in fields):
                raise ValueError(f"node #{i}: name, op and device must be strings")
            inputs = n.get("input", [])
            if not isinstance(inputs, list) or not all(isinstance(s, str) for s in inputs):
                raise ValueError(f"node '{n['name']}': input must be a list of strings")
            attrs = n.get("attr", {})
            if not isinstance(attrs, dict):
                raise ValueError(f"node '{n['name']}': attr must be a mapping")
            decoded = {}
            for k, v in attrs.items():
                try:
                    decoded[k] = decode_value(v, blob)
                except (KeyError, ValueError, TypeError, IndexError, AttributeError) as e:
                    raise ValueError(f"node '{n['name']}', attr '{k}': {e}") from None
            nodes.append({"name": fields[0], "op": fields[1], "input": list(inputs),
                          "device": fields[2], "attr": decoded})
    except DecodeError:
        raise
    except (KeyError, ValueError, TypeError, IndexError, AttributeError) as e:
        detail = f"missing field {e}" if isinstance(e, KeyError) else str(e)
        raise DecodeError(f"Malformed GraphDef: {detail}.") from None
    return nodes, versions


def _check_version(version: int):
    if version > FORMAT_VERSION:
        raise DecodeError(f"This GraphDef uses format version {version}, newer than the "
                          f"versions this flowjit can read (up to {FORMAT_VERSION}); upgrade "
                          "flowjit (or the data is corrupted).")


# --- binary and text ----------------------------------------------------------------------------


def encode_binary(nodes, versions) -> bytes:
    """The binary form (see the module docstring)."""
    blob = bytearray()
    doc = build_document(nodes, versions, blob)
    header = json.dumps(doc, separators=(",", ":"), allow_nan=False).encode("utf-8")
    lengths = struct.pack("<QQ", len(header), len(blob))
    version = struct.pack("<I", FORMAT_VERSION)
    crc = zlib.crc32(bytes(blob), zlib.crc32(header, zlib.crc32(lengths, zlib.crc32(version))))
    return b"".join([MAGIC, version, struct.pack("<I", crc), lengths, header, bytes(blob)])


def _node_text(n: dict) -> str:
    head = ", ".join(f"{json.dumps(k)}: {json.dumps(n[k], allow_nan=False)}"
                     for k in ("name", "op", "input", "device"))
    if not n["attr"]:
        return "  {" + head + ', "attr": {}}'
    attrs = ",\n".join(f"    {json.dumps(k)}: {json.dumps(v, allow_nan=False)}"
                       for k, v in n["attr"].items())
    return "  {" + head + ',\n   "attr": {\n' + attrs + "}}"


def encode_text(nodes, versions) -> str:
    """The text form: readable JSON, one node per block, one attr per line."""
    doc = build_document(nodes, versions, None)
    head = (f'{{"format": {json.dumps(doc["format"])}, "version": {doc["version"]},\n'
            f' "versions": {json.dumps(doc["versions"])},\n "node": [')
    if not doc["node"]:
        return head + "]}\n"
    return head + "\n" + ",\n".join(_node_text(n) for n in doc["node"]) + "\n]}\n"


def _decode_binary(data: bytes):
    if len(data) < _PREFIX.size:
        raise DecodeError(f"Truncated GraphDef: {len(data)} bytes, shorter than the "
                          f"{_PREFIX.size}-byte header.")
    _, version, crc, hlen, blen = _PREFIX.unpack_from(data)
    _check_version(version)
    if version < 1:
        raise DecodeError(f"Malformed GraphDef: bad format version {version}.")
    expected = _PREFIX.size + hlen + blen
    if len(data) < expected:
        raise DecodeError(f"Truncated GraphDef: expected {expected} bytes, got {len(data)}.")
    if len(data) > expected:
        raise DecodeError(f"Corrupted GraphDef: {len(data) - expected} unexpected bytes after "
                          f"the expected {expected}.")
    view = memoryview(data)
    actual = zlib.crc32(view[16:], zlib.crc32(view[8:12]))
    if actual != crc:
        raise DecodeError(f"Corrupted GraphDef: CRC-32 checksum mismatch (stored {crc:#010x}, "
                          f"computed {actual:#010x}).")
    header_end = _PREFIX.size + hlen
    try:
        doc = json.loads(bytes(view[_PREFIX.size:header_end]).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise DecodeError(f"Corrupted GraphDef: the header is not valid JSON ({e}).") from None
    return _parse_document(doc, view[header_end:])


def decode_text(text: str):
    """(nodes, versions) from the text form; DecodeError if it is not a valid document."""
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise DecodeError(f"Malformed GraphDef text: not valid JSON ({e}).") from None
    return _parse_document(doc, None)


def decode(data):
    """(nodes, versions) from the binary or the text form (bytes or str)."""
    if isinstance(data, str):
        return decode_text(data)
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"Expected serialized GraphDef bytes, got {type(data).__name__}.")
    data = bytes(data)
    if data.startswith(MAGIC):
        return _decode_binary(data)
    if data.lstrip()[:1] == b"{":
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise DecodeError(f"Malformed GraphDef text: not UTF-8 ({e}).") from None
        return decode_text(text)
    if not data:
        raise DecodeError("Empty data is not a serialized GraphDef.")
    if MAGIC.startswith(data):
        raise DecodeError(f"Truncated GraphDef: only {len(data)} bytes of the magic number.")
    raise DecodeError(f"Not a serialized flowjit GraphDef: it starts with {data[:8]!r}, not the "
                      f"magic number {MAGIC!r} or '{{' of the text form.")
