"""TensorFlow's strided-slice specification, resolved in plain Python (no graph, no NumPy ops).

Owns the arithmetic shared by StridedSlice's shape inference and its reference kernel:
- `dense_spec` expands the *sparse* spec (one begin/end/stride per index entry, plus the
  begin/end/ellipsis/new_axis/shrink_axis bit masks) into one `DimSpec` per input dimension
  and an output layout (which input dimension, or a new axis, each output dimension is);
- `dim_bounds` turns one `DimSpec` and a dimension size into TF's canonical
  (begin, end, stride, size), clamping as TF does;
- `dim_bounds_expr` is the same arithmetic for a runtime dimension size, on kernel-IR index
  Exprs, for the StridedSlice lowering (compiled code).

Precedence of the masks on one index entry (TF's): ellipsis over new axis over everything
else; a shrunk axis uses its begin value even when its begin/end mask bit is set; mask bits
at or past the number of entries are ignored.  Any value may be None (not known while the
graph is built): then the functions return None for what they cannot decide and never guess.
Invalid specs raise ValueError with TF's wording; the kernel re-raises them as
InvalidArgumentError.
"""

from __future__ import annotations

import dataclasses

from . import lower_index as lx

NEW_AXIS = "new_axis"  # a layout entry that is not an input dimension


@dataclasses.dataclass(frozen=True)
class DimSpec:
    """How one input dimension is sliced; begin/end/stride are None when unknown."""

    begin: int | None
    end: int | None
    stride: int | None
    begin_masked: bool = False
    end_masked: bool = False
    shrink: bool = False


_FULL = DimSpec(0, 0, 1, True, True, False)  # what an ellipsis puts on each dimension


def _bit(mask: int, i: int) -> bool:
    return bool((mask >> i) & 1)


def dense_spec(rank: int, begin, end, strides, begin_mask=0, end_mask=0, ellipsis_mask=0,
               new_axis_mask=0, shrink_axis_mask=0):
    """(dims, layout): one DimSpec per input dimension, and per output dimension either the
    input dimension it comes from or NEW_AXIS (shrunk dimensions do not appear)."""
    n = len(begin)
    if ellipsis_mask & (ellipsis_mask - 1):
        raise ValueError("Multiple ellipses in slice spec not allowed")
    kinds = []  # per sparse entry: "ellipsis", "new" or "dim"
    for i in range(n):
        if _bit(ellipsis_mask, i):
            kinds.append("ellipsis")
        elif _bit(new_axis_mask, i):
            kinds.append("new")
        else:
            kinds.append("dim")
    if "ellipsis" not in kinds:
        kinds.append("ellipsis")  # an implicit ellipsis at the end keeps the other dims
    dims, layout = [], []
    for i, kind in enumerate(kinds):
        if kind == "ellipsis":
            real_after = sum(1 for k in kinds[i + 1:] if k == "dim")
            stop = rank - real_after
            while len(dims) < stop:
                layout.append(len(dims))
                dims.append(_FULL)
        elif kind == "new":
            layout.append(NEW_AXIS)
        else:
            if len(dims) == rank:
                raise ValueError(f"Index out of range using input dim {len(dims)}; input has "
                                 f"only {rank} dims (too many indices for a rank-{rank} "
                                 "tensor).")
            shrink = _bit(shrink_axis_mask, i)
            if not shrink:
                layout.append(len(dims))
            dims.append(DimSpec(begin[i], end[i], strides[i], _bit(begin_mask, i),
                                _bit(end_mask, i), shrink))
    return dims, layout


def _canonical(x, masked: bool, is_begin: bool, dim: int, stride: int):
    lo, hi = (0, dim) if stride > 0 else (-1, dim - 1)
    if masked:
        return lo if (stride > 0) == is_begin else hi
    if x is None:
        return None
    if x < 0:
        x += dim
    return min(max(x, lo), hi)


def _interval_size(begin: int, end: int, stride: int) -> int:
    length = end - begin
    if length == 0 or (length < 0) != (stride < 0):
        return 0
    return -(-length // stride)


def dim_bounds(dim, spec: DimSpec, index: int):
    """(begin, end, stride, size) in TF's canonical form for dimension `index` of size `dim`,
    or None when it cannot be known yet.  For a negative stride, end == -1 means "through
    element 0".  Raises ValueError for a zero stride or a shrink index out of bounds."""
    stride = spec.stride
    if stride == 0:
        raise ValueError(f"strides[{index}] must be non-zero")
    if spec.shrink:
        if stride is not None and stride < 0:
            raise ValueError(f"only stride 1 allowed on non-range indexing (dimension {index} "
                             f"is indexed with an integer but has stride {stride}).")
        begin = spec.begin
        if begin is None or dim is None:
            return None
        fwd = begin + dim if begin < 0 else begin
        if not 0 <= fwd < dim:
            raise ValueError(f"slice index {begin} of dimension {index} out of bounds "
                             f"(the dimension has size {dim}).")
        return fwd, fwd + 1, 1, 1
    if stride is None or dim is None:
        return None
    begin = _canonical(spec.begin, spec.begin_masked, True, dim, stride)
    end = _canonical(spec.end, spec.end_masked, False, dim, stride)
    if begin is None or end is None:
        return None
    return begin, end, stride, _interval_size(begin, end, stride)


def output_dims(input_dims, begin, end, strides, masks: dict):
    """The static output dims (int or None each) for known input rank `len(input_dims)`."""
    dims, layout = dense_spec(len(input_dims), begin, end, strides, **masks)
    sizes = []
    for d, (size, spec) in enumerate(zip(input_dims, dims)):
        bounds = dim_bounds(size, spec, d)
        sizes.append(None if bounds is None else bounds[3])
    return [1 if entry is NEW_AXIS else sizes[entry] for entry in layout]


# --- the same arithmetic on kernel-IR index Exprs (runtime sizes), for the lowering ----------


def _canonical_expr(x, masked: bool, is_begin: bool, dim, stride: int):
    """`_canonical` for a static bound `x` and a runtime size `dim` (an int64 Expr)."""
    lo, hi = (0, dim) if stride > 0 else (-1, lx.sub(dim, 1))
    if masked:
        return lx.index(lo if (stride > 0) == is_begin else hi)
    x = _forward(x, dim)
    return lx.minimum(lx.maximum(x, lo), hi)


def _forward(x, dim):
    """Bound `x` (an int, or an int64 Expr computed at run time: a traced index) counted
    from the end when negative."""
    if isinstance(x, int):
        return lx.add(dim, x) if x < 0 else lx.index(x)
    return lx.select(lx.lt(x, 0), lx.add(dim, x), x)


def dim_bounds_expr(dim, spec: DimSpec, index: int):
    """(begin, size, stride, in_bounds) like `dim_bounds` for a static stride, begin and end
    static or run-time values (int64 Exprs), and a runtime size `dim` (Expr): begin and size are Exprs, and `in_bounds` is a bool Expr that
    must hold at run time (a shrink index inside the dimension; True otherwise)."""
    stride = spec.stride
    if stride == 0:
        raise ValueError(f"strides[{index}] must be non-zero")
    if spec.shrink:
        if stride < 0:
            raise ValueError(f"only stride 1 allowed on non-range indexing (dimension {index} "
                             f"is indexed with an integer but has stride {stride}).")
        fwd = _forward(spec.begin, dim)
        return fwd, lx.index(1), 1, lx.all_of([lx.ge(fwd, 0), lx.lt(fwd, dim)])
    begin = _canonical_expr(spec.begin, spec.begin_masked, True, dim, stride)
    end = _canonical_expr(spec.end, spec.end_masked, False, dim, stride)
    length = lx.sub(end, begin) if stride > 0 else lx.sub(begin, end)
    step = abs(stride)
    size = lx.maximum(lx.floordiv(lx.add(length, step - 1), step), 0)
    return begin, size, stride, lx.all_of([])
