"""Splitting, closeness tests and matrix powers of traced arrays.

`SPLIT_FUNCTIONS` maps each NumPy function to its traced implementation; np_functions merges
it into `FUNCTIONS` (the table `__array_function__` dispatches on and docs/numpy_support.md
lists). Covered: split/array_split/hsplit/vsplit/dsplit with a static number of sections or
static split points (the pieces are slices of the traced array: views, as NumPy's are),
allclose (a traced boolean scalar: branching on it in Python is a graph break, as for any
value computed from the data) and np.linalg.matrix_power with a static integer exponent
(repeated squaring; negative exponents invert first, as NumPy does).
"""

from __future__ import annotations

import operator

import numpy as np

from . import np_linalg as la
from . import np_reductions as red
from .np_array import GraphBreak


def _pieces(length: int, sections, exact: bool, name: str) -> list:
    """The slice of each piece of an axis of `length`, by NumPy's rules for `sections`
    (a number of pieces, or split points sliced as Python slices them)."""
    try:
        count = operator.index(sections)
    except TypeError:
        count = int(sections) if isinstance(sections, np.ndarray) and sections.ndim == 0 \
            else None
    if count is None:
        try:
            points = [operator.index(p) for p in sections]
        except TypeError:
            raise GraphBreak(f"np.{name} with split points that are not static integers") \
                from None
        edges = [0] + points + [length]
        return [slice(lo, hi) for lo, hi in zip(edges[:-1], edges[1:])]
    if count <= 0:
        raise ValueError("number sections must be larger than 0.")
    if exact and length % count:
        raise ValueError("array split does not result in an equal division")
    each, extra = divmod(length, count)
    stops = np.cumsum([each + 1] * extra + [each] * (count - extra)).tolist()
    return [slice(lo, hi) for lo, hi in zip([0] + stops[:-1], stops)]


_FIXED_AXIS = {"hsplit": (1, 1), "vsplit": (0, 2), "dsplit": (2, 3)}   # (axis, least ndim)


def _splitter(name: str, exact: bool):
    def split(ary, indices_or_sections, axis=0):
        a = red._traced(ary)
        if name in _FIXED_AXIS:
            axis, least = _FIXED_AXIS[name]
            if a.ndim < least:
                raise ValueError(f"{name} only works on arrays of {least} or more dimensions")
            if name == "hsplit" and a.ndim == 1:
                axis = 0
        axis = operator.index(axis)
        if not -a.ndim <= axis < a.ndim:   # NumPy reads ary.shape[axis]
            raise IndexError(f"np.{name}: axis {axis} is out of range for an array of "
                             f"{a.ndim} dimension(s)")
        axis %= a.ndim
        lead = (slice(None),) * axis
        return [a[lead + (piece,)]
                for piece in _pieces(a.shape[axis], indices_or_sections, exact, name)]
    split.__name__ = name
    split.__doc__ = f"np.{name} of a traced array: a list of slices (views)."
    return split


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """np.allclose: every element of np.isclose, as a traced boolean scalar."""
    from .np_functions import isclose

    return red.reduce("all", isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan), None)


def matrix_power(a, n):
    """np.linalg.matrix_power for a static integer `n`, by repeated squaring."""
    from .np_sorting import inv

    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError("exponent must be an integer") from None
    a = red._traced(a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise np.linalg.LinAlgError(
            f"Last 2 dimensions of the array must be square (got shape {a.shape})")
    if n == 0:
        from .np_functions import full_like

        eye = np.eye(a.shape[-1], dtype=a.dtype)
        return full_like(a, 0) + eye
    base = inv(a) if n < 0 else a
    n = abs(n)
    result = None
    while n:
        if n & 1:
            result = base if result is None else la.matmul(result, base)
        n >>= 1
        if n:
            base = la.matmul(base, base)
    return result


SPLIT_FUNCTIONS = {
    np.split: _splitter("split", exact=True), np.array_split: _splitter("array_split", False),
    np.hsplit: _splitter("hsplit", True), np.vsplit: _splitter("vsplit", True),
    np.dsplit: _splitter("dsplit", True),
    np.allclose: allclose, np.linalg.matrix_power: matrix_power,
}
