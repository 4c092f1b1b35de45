"""`tf.train.Example` records: the message classes (Example, Features, Feature, BytesList,
FloatList, Int64List) with the protobuf wire format TensorFlow writes, so TFRecord files of
Examples move between TensorFlow and flowjit.

The wire format is written and read here (varints, length-delimited fields, packed
repeated numbers), for these six messages only:
  Example  { Features features = 1; }
  Features { map<string, Feature> feature = 1; }   (entries: key = 1, value = 2)
  Feature  { oneof kind { BytesList bytes_list = 1; FloatList float_list = 2;
                          Int64List int64_list = 3; } }
  BytesList { repeated bytes value = 1; }  FloatList { repeated float value = 1; }
  Int64List { repeated int64 value = 1; }
Unknown fields are skipped, as protobuf readers do; a malformed message is a ValueError.
"""

from __future__ import annotations

import struct

import numpy as np


# --- wire format ----------------------------------------------------------------------------

def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _read_varint(data: bytes, pos: int) -> tuple:
    shift = result = 0
    while True:
        if pos >= len(data):
            raise ValueError("truncated varint in a protobuf message")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 70:
            raise ValueError("varint too long in a protobuf message")


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _fields(data: bytes):
    """Yield (field number, wire type, value) of a message: bytes for length-delimited
    fields, ints for varints and fixed-width ones."""
    pos = 0
    while pos < len(data):
        key, pos = _read_varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _read_varint(data, pos)
        elif wire == 2:
            size, pos = _read_varint(data, pos)
            if pos + size > len(data):
                raise ValueError("truncated field in a protobuf message")
            value, pos = data[pos:pos + size], pos + size
        elif wire == 5:
            value, pos = data[pos:pos + 4], pos + 4
        elif wire == 1:
            value, pos = data[pos:pos + 8], pos + 8
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        yield number, wire, value


# --- the messages ------------------------------------------------------------------------------

class BytesList:
    """A list of byte strings."""

    def __init__(self, value=()):
        self.value = [v.encode() if isinstance(v, str) else bytes(v) for v in value]

    def _encode(self) -> bytes:
        return b"".join(_field(1, v) for v in self.value)


class FloatList:
    """A list of float32 values."""

    def __init__(self, value=()):
        self.value = [float(v) for v in value]

    def _encode(self) -> bytes:
        if not self.value:
            return b""
        return _field(1, np.asarray(self.value, "<f4").tobytes())


class Int64List:
    """A list of int64 values."""

    def __init__(self, value=()):
        self.value = [int(v) for v in value]

    def _encode(self) -> bytes:
        if not self.value:
            return b""
        return _field(1, b"".join(_varint(v) for v in self.value))


class Feature:
    """One feature: exactly one of `bytes_list`, `float_list`, `int64_list`."""

    def __init__(self, bytes_list=None, float_list=None, int64_list=None):
        self.bytes_list, self.float_list, self.int64_list = bytes_list, float_list, int64_list

    def kind(self):
        for name in ("bytes_list", "float_list", "int64_list"):
            if getattr(self, name) is not None:
                return name
        return None

    def _encode(self) -> bytes:
        for number, name in ((1, "bytes_list"), (2, "float_list"), (3, "int64_list")):
            value = getattr(self, name)
            if value is not None:
                return _field(number, value._encode())
        return b""

    @classmethod
    def _decode(cls, data: bytes) -> "Feature":
        f = cls()
        for number, wire, value in _fields(data):
            if number == 1:
                f.bytes_list = BytesList([v for n, _, v in _fields(value) if n == 1])
            elif number == 2:
                floats = []
                for n, w, v in _fields(value):
                    if n == 1:
                        floats.extend(np.frombuffer(v, "<f4").tolist() if w == 2
                                      else [struct.unpack("<f", v)[0]])
                f.float_list = FloatList(floats)
            elif number == 3:
                ints = []
                for n, w, v in _fields(value):
                    if n == 1:
                        ints.extend(_unpack_varints(v) if w == 2 else [v])
                f.int64_list = Int64List([i - (1 << 64) if i >= 1 << 63 else i for i in ints])
        return f


def _unpack_varints(data: bytes) -> list:
    out, pos = [], 0
    while pos < len(data):
        v, pos = _read_varint(data, pos)
        out.append(v)
    return out


class Features:
    """Named features: `feature` maps names to Feature."""

    def __init__(self, feature=None):
        self.feature = dict(feature or {})

    def _encode(self) -> bytes:
        return b"".join(_field(1, _field(1, k.encode()) + _field(2, v._encode()))
                        for k, v in sorted(self.feature.items()))


class Example:
    """One record of features (TF1 `tf.train.Example`)."""

    def __init__(self, features=None):
        self.features = features if features is not None else Features()

    def SerializeToString(self) -> bytes:  # noqa: N802 - protobuf's name
        """The protobuf wire bytes (map entries in sorted key order)."""
        return _field(1, self.features._encode())

    def ParseFromString(self, data: bytes) -> None:  # noqa: N802 - protobuf's name
        feature = {}
        for number, _, value in _fields(bytes(data)):
            if number != 1:
                continue
            for n, _, entry in _fields(value):
                if n != 1:
                    continue
                key, feat = "", Feature()
                for m, _, v in _fields(entry):
                    if m == 1:
                        key = v.decode()
                    elif m == 2:
                        feat = Feature._decode(v)
                feature[key] = feat
        self.features = Features(feature)

    @classmethod
    def FromString(cls, data: bytes) -> "Example":  # noqa: N802 - protobuf's name
        ex = cls()
        ex.ParseFromString(data)
        return ex


__all__ = ["Example", "Features", "Feature", "BytesList", "FloatList", "Int64List"]
