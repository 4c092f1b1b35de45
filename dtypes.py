"""Tensor element types with TensorFlow's names.

Owns the closed set of `DType`s a flowjit tensor may have, their mapping to NumPy dtypes,
and `as_dtype`, which turns anything dtype-like (a DType, a NumPy dtype or scalar type, a
name such as "float32", a Python type) into a DType.  Invariant: there is exactly one DType
object per type, so identity and equality agree.

Strings are byte strings, stored in NumPy object arrays (as TensorFlow's Python API returns
them).
"""

from __future__ import annotations

import enum

import numpy as np


class DataType(enum.IntEnum):
    """TensorFlow's numeric codes for types (`DType.as_datatype_enum`), kept for familiarity."""

    FLOAT = 1
    DOUBLE = 2
    INT32 = 3
    UINT8 = 4
    INT16 = 5
    INT8 = 6
    STRING = 7
    COMPLEX64 = 8
    INT64 = 9
    BOOL = 10
    UINT16 = 17
    COMPLEX128 = 18
    HALF = 19
    UINT32 = 22
    UINT64 = 23


class DType:
    """The element type of a tensor, e.g. `flowjit.float32`."""

    __slots__ = ("name", "_np", "_enum")

    def __init__(self, name: str, np_type, code: DataType):
        self.name = name
        self._np = np.dtype(np_type)
        self._enum = code

    # --- NumPy and TensorFlow views of the type -------------------------------------------
    @property
    def as_numpy_dtype(self):
        """The NumPy scalar type (object for strings)."""
        return self._np.type

    @property
    def np_dtype(self) -> np.dtype:
        """The NumPy dtype object used for arrays of this type."""
        return self._np

    @property
    def as_datatype_enum(self) -> int:
        return int(self._enum)

    @property
    def base_dtype(self) -> DType:
        return self

    @property
    def real_dtype(self) -> DType:
        if self is complex64:
            return float32
        if self is complex128:
            return float64
        return self

    # --- classification ---------------------------------------------------------------------
    @property
    def is_floating(self) -> bool:
        return self in (float16, float32, float64)

    @property
    def is_integer(self) -> bool:
        return self in _INTEGERS

    @property
    def is_unsigned(self) -> bool:
        return self in (uint8, uint16, uint32, uint64)

    @property
    def is_complex(self) -> bool:
        return self in (complex64, complex128)

    @property
    def is_bool(self) -> bool:
        return self is bool_

    @property
    def is_numeric(self) -> bool:
        return self is not string and self is not bool_

    @property
    def size(self) -> int:
        return self._np.itemsize

    @property
    def min(self):
        if self.is_floating:
            return float(np.finfo(self._np).min)
        if self.is_integer:
            return int(np.iinfo(self._np).min)
        if self.is_bool:
            return False
        raise TypeError(f"Cannot find minimum value of {self.name}.")

    @property
    def max(self):
        if self.is_floating:
            return float(np.finfo(self._np).max)
        if self.is_integer:
            return int(np.iinfo(self._np).max)
        if self.is_bool:
            return True
        raise TypeError(f"Cannot find maximum value of {self.name}.")

    def is_compatible_with(self, other) -> bool:
        return self is as_dtype(other)

    # --- identity ---------------------------------------------------------------------------
    def __eq__(self, other):
        if other is None:
            return False
        if isinstance(other, DType):
            return self is other
        try:
            return self is as_dtype(other)
        except TypeError:
            return False

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return hash(self._enum)

    def __repr__(self):
        return f"tf.{self.name}"

    def __str__(self):
        return f"<dtype: '{self.name}'>"

    def __reduce__(self):
        return as_dtype, (self.name,)


bool_ = DType("bool", np.bool_, DataType.BOOL)
int8 = DType("int8", np.int8, DataType.INT8)
int16 = DType("int16", np.int16, DataType.INT16)
int32 = DType("int32", np.int32, DataType.INT32)
int64 = DType("int64", np.int64, DataType.INT64)
uint8 = DType("uint8", np.uint8, DataType.UINT8)
uint16 = DType("uint16", np.uint16, DataType.UINT16)
uint32 = DType("uint32", np.uint32, DataType.UINT32)
uint64 = DType("uint64", np.uint64, DataType.UINT64)
float16 = DType("float16", np.float16, DataType.HALF)
float32 = DType("float32", np.float32, DataType.FLOAT)
float64 = DType("float64", np.float64, DataType.DOUBLE)
complex64 = DType("complex64", np.complex64, DataType.COMPLEX64)
complex128 = DType("complex128", np.complex128, DataType.COMPLEX128)
string = DType("string", object, DataType.STRING)

half = float16
double = float64

_INTEGERS = (int8, int16, int32, int64, uint8, uint16, uint32, uint64)
ALL_DTYPES = (bool_, *_INTEGERS, float16, float32, float64, complex64, complex128, string)
NUMERIC_DTYPES = tuple(d for d in ALL_DTYPES if d.is_numeric)
FLOATING_DTYPES = (float16, float32, float64)
INTEGER_DTYPES = _INTEGERS
COMPLEX_DTYPES = (complex64, complex128)
REAL_DTYPES = (*_INTEGERS, *FLOATING_DTYPES)

_BY_NAME = {d.name: d for d in ALL_DTYPES}
_BY_NAME.update({"half": float16, "float": float32, "double": float64})
_BY_ENUM = {d.as_datatype_enum: d for d in ALL_DTYPES}
_BY_NUMPY = {d.np_dtype: d for d in ALL_DTYPES if d is not string}


def as_dtype(type_value) -> DType:
    """Convert a DType, NumPy dtype/type, Python type, enum code or name to a `DType`.

    Raises TypeError for anything that names no flowjit type.
    """
    if isinstance(type_value, DType):
        return type_value
    if isinstance(type_value, str):
        if type_value in _BY_NAME:
            return _BY_NAME[type_value]
        raise TypeError(f"Cannot convert {type_value!r} to a flowjit DType: unknown type name. "
                        f"Known names: {', '.join(sorted(_BY_NAME))}.")
    if isinstance(type_value, (int, np.integer)) and not isinstance(type_value, bool):
        if int(type_value) in _BY_ENUM:
            return _BY_ENUM[int(type_value)]
        raise TypeError(f"Cannot convert enum value {type_value} to a flowjit DType.")
    if type_value in (bytes, str, np.bytes_, np.str_, object):
        return string
    if type_value is bool:
        return bool_
    try:
        npd = np.dtype(type_value)
    except TypeError:
        raise TypeError(f"Cannot convert {type_value!r} to a flowjit DType.") from None
    if npd.kind in "OSU":
        return string
    if npd in _BY_NUMPY:
        return _BY_NUMPY[npd]
    raise TypeError(f"NumPy dtype {npd} has no flowjit DType.")
