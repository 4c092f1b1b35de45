"""Static shapes with unknown dimensions: `Dimension` and `TensorShape`.

A TensorShape is either of unknown rank (`dims is None`) or a tuple of dimensions, each an
int or None (unknown).  Shapes are immutable values; `merge_with` and `broadcast_shape`
combine them and raise ValueError on a proven mismatch (unknowns never cause an error).
`TensorShape[i]` returns a `Dimension` (as TensorFlow 1.x does, so `shape[0].value` works);
`as_list()` gives plain ints and None.
"""

from __future__ import annotations


class Dimension:
    """One dimension of a static shape: an int, or None when unknown."""

    __slots__ = ("_value",)

    def __init__(self, value):
        if isinstance(value, Dimension):
            value = value.value
        if value is not None:
            if hasattr(value, "__index__"):
                value = value.__index__()
            else:
                raise TypeError(f"Dimension value must be an int or None, got {value!r}.")
            if value < 0:
                raise ValueError(f"Dimension {value} must be >= 0.")
        self._value = value

    @property
    def value(self):
        return self._value

    def __int__(self):
        if self._value is None:
            raise TypeError("Cannot convert an unknown Dimension to int.")
        return self._value

    __index__ = __int__

    def __eq__(self, other):
        other = other.value if isinstance(other, Dimension) else other
        if self._value is None or other is None:
            return None
        return self._value == other

    def __ne__(self, other):
        eq = self.__eq__(other)
        return None if eq is None else not eq

    def __hash__(self):
        return hash(self._value)

    def _arith(self, other, fn):
        other = other.value if isinstance(other, Dimension) else other
        if self._value is None or other is None:
            return Dimension(None)
        return Dimension(fn(self._value, other))

    def __add__(self, o):
        return self._arith(o, lambda a, b: a + b)

    __radd__ = __add__

    def __mul__(self, o):
        return self._arith(o, lambda a, b: a * b)

    __rmul__ = __mul__

    def __sub__(self, o):
        return self._arith(o, lambda a, b: a - b)

    def __floordiv__(self, o):
        return self._arith(o, lambda a, b: a // b)

    def is_compatible_with(self, other) -> bool:
        other = other.value if isinstance(other, Dimension) else other
        return self._value is None or other is None or self._value == other

    def merge_with(self, other) -> Dimension:
        other = other.value if isinstance(other, Dimension) else other
        if not self.is_compatible_with(other):
            raise ValueError(f"Dimensions {self._value} and {other} are not compatible")
        return Dimension(self._value if self._value is not None else other)

    def __repr__(self):
        return f"Dimension({self._value})"

    def __str__(self):
        return "?" if self._value is None else str(self._value)


def _dim_value(d):
    if isinstance(d, Dimension):
        return d.value
    if d is None:
        return None
    if hasattr(d, "__index__"):
        v = d.__index__()
        if v < -1:
            raise ValueError(f"Shape dimension {v} must be >= 0 (or -1/None for unknown).")
        return None if v == -1 else v
    raise TypeError(f"A shape dimension must be an int or None, got {d!r}.")


class TensorShape:
    """The static shape of a tensor; `dims` is None for unknown rank."""

    __slots__ = ("_dims",)

    def __init__(self, dims):
        if isinstance(dims, TensorShape):
            self._dims = dims._dims
        elif dims is None:
            self._dims = None
        elif hasattr(dims, "__index__") and not hasattr(dims, "__len__"):
            self._dims = (_dim_value(dims),)
        else:
            self._dims = tuple(_dim_value(d) for d in dims)

    # --- queries ------------------------------------------------------------------------------
    @property
    def dims(self):
        """Tuple of int/None per dimension, or None for unknown rank."""
        return self._dims

    @property
    def ndims(self):
        return None if self._dims is None else len(self._dims)

    rank = ndims

    def as_list(self):
        if self._dims is None:
            raise ValueError("as_list() is not defined on an unknown TensorShape.")
        return list(self._dims)

    def as_tuple(self):
        """Like as_list() but a tuple (None for unknown rank)."""
        return self._dims

    def is_fully_defined(self) -> bool:
        return self._dims is not None and all(d is not None for d in self._dims)

    def num_elements(self):
        if not self.is_fully_defined():
            return None
        n = 1
        for d in self._dims:
            n *= d
        return n

    def __len__(self):
        if self._dims is None:
            raise ValueError("Cannot take the length of a shape with unknown rank.")
        return len(self._dims)

    def __iter__(self):
        if self._dims is None:
            raise ValueError("Cannot iterate over a shape with unknown rank.")
        return iter(Dimension(d) for d in self._dims)

    def __getitem__(self, key):
        if self._dims is None:
            if isinstance(key, slice):
                return unknown_shape()
            return Dimension(None)
        if isinstance(key, slice):
            return TensorShape(self._dims[key])
        return Dimension(self._dims[key])

    def __bool__(self):
        return self._dims is not None

    # --- combination --------------------------------------------------------------------------
    def is_compatible_with(self, other) -> bool:
        other = as_shape(other)
        if self._dims is None or other._dims is None:
            return True
        if len(self._dims) != len(other._dims):
            return False
        return all(a is None or b is None or a == b for a, b in zip(self._dims, other._dims))

    def merge_with(self, other) -> TensorShape:
        other = as_shape(other)
        if self._dims is None:
            return other
        if other._dims is None:
            return self
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {other} are not compatible")
        return TensorShape([a if a is not None else b for a, b in zip(self._dims, other._dims)])

    def concatenate(self, other) -> TensorShape:
        other = as_shape(other)
        if self._dims is None or other._dims is None:
            return unknown_shape()
        return TensorShape(self._dims + other._dims)

    def with_rank(self, rank: int) -> TensorShape:
        return self.merge_with(unknown_shape(rank))

    def assert_is_compatible_with(self, other):
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {as_shape(other)} are incompatible")

    # --- identity -----------------------------------------------------------------------------
    def __eq__(self, other):
        try:
            other = as_shape(other)
        except (TypeError, ValueError):
            return NotImplemented
        return self._dims == other._dims

    def __hash__(self):
        return hash(self._dims)

    def __repr__(self):
        return f"TensorShape({None if self._dims is None else list(self._dims)})"

    def __str__(self):
        if self._dims is None:
            return "<unknown>"
        inner = ", ".join("?" if d is None else str(d) for d in self._dims)
        return f"({inner},)" if len(self._dims) == 1 else f"({inner})"


def as_shape(shape) -> TensorShape:
    """Convert a list/tuple of ints and None (or a TensorShape) to a TensorShape."""
    return shape if isinstance(shape, TensorShape) else TensorShape(shape)


def unknown_shape(rank=None) -> TensorShape:
    """A shape of unknown rank, or of the given rank with all dimensions unknown."""
    return TensorShape(None if rank is None else [None] * rank)


def scalar() -> TensorShape:
    return TensorShape(())


def broadcast_shape(a: TensorShape, b: TensorShape) -> TensorShape:
    """NumPy broadcasting on static shapes; ValueError if two known dims differ and neither is 1."""
    a, b = as_shape(a), as_shape(b)
    if a.dims is None or b.dims is None:
        return unknown_shape()
    da, db = list(a.dims), list(b.dims)
    n = max(len(da), len(db))
    da = [1] * (n - len(da)) + da
    db = [1] * (n - len(db)) + db
    out = []
    for x, y in zip(da, db):
        if x == 1:
            out.append(y)
        elif y == 1:
            out.append(x)
        elif x is None or y is None:
            # An unknown dim against a known one: the known one wins unless the unknown is 1,
            # which is only discovered at run time; keep the known value (TensorFlow does too).
            out.append(x if y is None else y)
        elif x == y:
            out.append(x)
        else:
            raise ValueError(f"Incompatible shapes for broadcasting: {a} and {b} "
                             f"(dimension {x} vs {y})")
    return TensorShape(out)
