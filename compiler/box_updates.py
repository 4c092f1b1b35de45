"""In-place box updates: `a[lo:hi, ...] = f(a)` runs over the box only, writing into `a`.

NumPy code updates parts of arrays in place (`q[i] -= (q[j] @ q[i]) * q[j]`, `u[1:-1] = ...`).
Traced functionally, each update is a node over the WHOLE array,
`new[idx] = select(idx inside the box, value(idx), old[idx])`, and compiled naively that is a
pass over the whole array per update: a Gram-Schmidt on 8 rows of 100,000 made 36 passes
over all 8 rows where NumPy touches one row each time.

`find_box_update(node, body, ...)` recognizes that form and says when the update may instead
write into `old`'s buffer over the box alone (the rest of `old` is already what `new` holds
there):
- the body is `select(cond, value, old[own index])` and `cond` is a box: a conjunction of
  comparisons of single loop indices (plus constants) with constants (`select(c, True,
  False)` wrappers allowed);
- inside `value`, `old` is read only at the iteration's own element (its own index, or a
  constant on an axis the box pins to that constant) or at indices outside the box on some
  axis (a constant row outside the box's rows): iterations inside the box never read what
  another iteration writes.
The caller (schedule.plan_memory) checks the buffer rules (shape, dtype, no reader after this
node, not an input or output); the target then loops over `range(lo, min(hi, n))` per boxed
axis.
"""

from __future__ import annotations

from .core import ir
from .core.ir import Scalar

_FLIP = {Scalar.GE: Scalar.LE, Scalar.GT: Scalar.LT, Scalar.LE: Scalar.GE, Scalar.LT: Scalar.GT}


def _affine_axis(e):
    """(axis, offset) when e is axis_k + offset with a constant integer offset, else None."""
    if e.op is Scalar.VAR and isinstance(e.attr, tuple) and e.attr[0] == "a":
        return e.attr[1], 0
    if e.op is Scalar.CAST and len(e.args) == 1:
        return _affine_axis(e.args[0])
    if e.op in (Scalar.ADD, Scalar.SUB) and len(e.args) == 2:
        a, b = e.args
        if ir.is_const(b) and isinstance(b.attr, int) and not isinstance(b.attr, bool):
            inner = _affine_axis(a)
            if inner is not None:
                return inner[0], inner[1] + (b.attr if e.op is Scalar.ADD else -b.attr)
        if e.op is Scalar.ADD and ir.is_const(a) and isinstance(a.attr, int) \
                and not isinstance(a.attr, bool):
            inner = _affine_axis(b)
            if inner is not None:
                return inner[0], inner[1] + a.attr
    return None


def _strip_bool_select(c):
    while (c.op is Scalar.SELECT and ir.is_const(c.args[1], True)
           and ir.is_const(c.args[2], False)):
        c = c.args[0]
    return c


def box_of(cond) -> dict | None:
    """{axis: (lo, hi)} when `cond` is true exactly for lo <= index < hi on those axes."""
    cond = _strip_bool_select(cond)
    if cond.op is Scalar.AND:
        box: dict = {}
        for part in cond.args:
            sub = box_of(part)
            if sub is None:
                return None
            for axis, (lo, hi) in sub.items():
                old = box.get(axis, (None, None))
                lo = lo if old[0] is None else (old[0] if lo is None else max(lo, old[0]))
                hi = hi if old[1] is None else (old[1] if hi is None else min(hi, old[1]))
                box[axis] = (lo, hi)
        return box
    op = cond.op
    if op not in _FLIP or len(cond.args) != 2:
        return None
    a, b = cond.args
    if ir.is_const(a):
        a, b, op = b, a, _FLIP[op]
    side = _affine_axis(a)
    if side is None or not ir.is_const(b) or not isinstance(b.attr, int) \
            or isinstance(b.attr, bool):
        return None
    axis, offset = side
    bound = b.attr - offset          # compare the bare index with `bound`
    return {axis: {Scalar.GE: (bound, None), Scalar.GT: (bound + 1, None),
                   Scalar.LT: (None, bound), Scalar.LE: (None, bound + 1)}[op]}


def _same_element(index: tuple, own: tuple, box: dict) -> bool:
    """Whether the load index is the iteration's own element for every iteration inside
    `box`: each axis is the own index, or a constant on an axis the box pins to it."""
    for axis, (e, var) in enumerate(zip(index, own)):
        if e is var:
            continue
        lo, hi = box.get(axis, (None, None))
        if not (ir.is_const(e) and lo is not None and hi == lo + 1 and e.attr == lo):
            return False
    return True


def _outside(index: tuple, box: dict) -> bool:
    """Whether the load index lies outside `box` for every iteration (a constant index
    outside the box's range on some boxed axis)."""
    for axis, (lo, hi) in box.items():
        if axis < len(index) and ir.is_const(index[axis]):
            k = index[axis].attr
            if (lo is not None and k < lo) or (hi is not None and k >= hi):
                return True
    return False


def find_box_update(node, body):
    """(old node, {axis: (lo, hi)}) when COMPUTE `node` with resolved `body` is an in-place
    box update of `old` (see the module docstring), else None."""
    if body.op is not Scalar.SELECT:
        return None
    cond, value, keep = body.args
    own = tuple(ir.axis_vars(len(node.shape)))
    if keep.op is not Scalar.LOAD or tuple(keep.args) != own:
        return None
    old = keep.attr
    box = box_of(cond)
    if not box or any(lo is None and hi is None for lo, hi in box.values()):
        return None
    if any(axis >= len(node.shape) for axis in box):
        return None
    for e in ir.walk(value):
        if e.op is Scalar.LOAD and e.attr is old:
            index = tuple(e.args)
            if not _same_element(index, own, box) and not _outside(index, box):
                return None
    for e in ir.walk(cond):
        if e.op is Scalar.LOAD and e.attr is old:
            return None
    return old, {axis: (max(lo, 0) if lo is not None else 0, hi)
                 for axis, (lo, hi) in box.items()}
