"""In-place box updates whose box is known only at run time: `a[k+1:, k] /= a[k, k]` with
a traced `k` inside a compiled loop (box_updates.py does the boxes of constant bounds).

The update is `new[idx] = select(cond, value, old[own index])` as there, with `cond` a
conjunction of comparisons of single loop indices with *loop-invariant* index expressions
(no loop variable: loads of rank-0 values, sizes, constants).  Expressions are read as
linear forms (`linear`: a coefficient per atom, an atom being a loop variable or any
expression that is not a sum, such as a clamp, compared by identity since the IR interns
them), so `i0 - b >= 0` and `i0 - b < s` give the rows [b, b + s).

Reads of `old` inside `value` must not see another iteration's write.  Each one is the
iteration's own element (its index on every axis is the own index, or the box's one
index on an axis the box pins to one element), or lies outside the box on some boxed
axis where its index is loop-invariant: `a[k, k]` against the rows [k+1, n).  Whether
that holds is often clear only at run time (clamps), so the analysis returns a `guard`, a
bool expression free of loop variables that says it, and the target runs the box in place
when the guard holds and otherwise reads a copy of `old` taken first (targets/cpu/
nest_code.py), which is right either way.
"""

from __future__ import annotations

from .box_updates import _FLIP, _strip_bool_select
from .core import ir
from .core.ir import Scalar

_INDEX = ir.INDEX


def _free(e) -> bool:
    """Whether `e` reads no loop variable."""
    return not any(x.op is Scalar.VAR for x in ir.walk(e))


def linear(e):
    """(terms, constant): e == sum(c * atom) + constant, terms = {id(atom): (atom, c)}; an
    atom is a loop variable or any non-sum expression.  None for non-integers."""
    if not e.dtype.is_integer:
        return None
    if ir.is_const(e):
        return {}, int(e.attr)
    if e.op is Scalar.CAST and e.args[0].dtype.is_integer:
        return linear(e.args[0])
    if e.op in (Scalar.ADD, Scalar.SUB):
        a, b = linear(e.args[0]), linear(e.args[1])
        if a is None or b is None:
            return None
        return _combine(a, b, 1 if e.op is Scalar.ADD else -1)
    if e.op is Scalar.NEG:
        a = linear(e.args[0])
        return None if a is None else _combine(({}, 0), a, -1)
    if e.op is Scalar.MUL and (ir.is_const(e.args[0]) or ir.is_const(e.args[1])):
        c, x = (e.args[0], e.args[1]) if ir.is_const(e.args[0]) else (e.args[1], e.args[0])
        a = linear(x)
        return None if a is None else _scale(a, int(c.attr))
    return {id(e): (e, 1)}, 0


def _scale(form, k: int):
    terms, const = form
    return {i: (atom, c * k) for i, (atom, c) in terms.items() if c * k}, const * k


def _combine(a, b, sign: int):
    terms = dict(a[0])
    for i, (atom, c) in b[0].items():
        old = terms.get(i, (atom, 0))[1] + sign * c
        if old:
            terms[i] = (atom, old)
        else:
            terms.pop(i, None)
    return terms, a[1] + sign * b[1]


def _expr(form):
    """The int64 expression of a linear form."""
    terms, const = form
    out = ir.index(const)
    for atom, c in terms.values():
        atom = atom if atom.dtype is _INDEX else ir.make(Scalar.CAST, _INDEX, (atom,))
        term = atom if c == 1 else ir.make(Scalar.MUL, _INDEX, (ir.index(c), atom))
        out = term if ir.is_const(out, 0) else ir.make(Scalar.ADD, _INDEX, (out, term))
    return out


def _difference(a, b):
    """a - b as an int when it is a constant, else None."""
    fa, fb = linear(a), linear(b)
    if fa is None or fb is None:
        return None
    terms, const = _combine(fa, fb, -1)
    return None if terms else const


def _axis_of(atom):
    if atom.op is Scalar.VAR and isinstance(atom.attr, tuple) and atom.attr[0] == "a":
        return atom.attr[1]
    return None


_LOWER = {Scalar.GE: 0, Scalar.GT: 1}
_UPPER = {Scalar.LT: 0, Scalar.LE: 1}


def box_of(cond) -> dict | None:
    """{axis: (lo, hi)} (int64 expressions free of loop variables; hi may be None) when
    `cond` holds exactly for lo <= index < hi on those axes, else None."""
    cond = _strip_bool_select(cond)
    if cond.op is Scalar.AND:
        box: dict = {}
        for part in cond.args:
            sub = box_of(part)
            if sub is None:
                return None
            for axis, (lo, hi) in sub.items():
                old_lo, old_hi = box.get(axis, (None, None))
                box[axis] = (_tighter(Scalar.MAX, old_lo, lo), _tighter(Scalar.MIN, old_hi, hi))
        return box
    op = cond.op
    if op not in _FLIP or len(cond.args) != 2:
        return None
    fa, fb = linear(cond.args[0]), linear(cond.args[1])
    if fa is None or fb is None:
        return None
    terms, const = _combine(fa, fb, -1)         # cond: terms + const OP 0
    axes = [(i, _axis_of(atom), c) for i, (atom, c) in terms.items() if _axis_of(atom) is not None]
    if len(axes) != 1 or abs(axes[0][2]) != 1:
        return None
    key, axis, c = axes[0]
    rest = ({i: t for i, t in terms.items() if i != key}, const)
    if not all(_free(atom) for atom, _ in rest[0].values()):
        return None
    if c == 1:                                   # axis OP -rest
        bound = _scale(rest, -1)
    else:                                        # -axis + rest OP 0: axis FLIP(OP) rest
        bound, op = rest, _FLIP[op]
    if op in _LOWER:
        return {axis: (_expr(_combine(bound, ({}, _LOWER[op]), 1)), None)}
    return {axis: (None, _expr(_combine(bound, ({}, _UPPER[op]), 1)))}


def _tighter(kind, a, b):
    if a is None:
        return b
    if b is None or a is b:
        return a
    d = _difference(a, b)
    if d is not None:
        return (a if d >= 0 else b) if kind is Scalar.MAX else (a if d <= 0 else b)
    return ir.make(kind, _INDEX, (a, b))


def find(node, body):
    """(old node, box, guard) when COMPUTE `node` with resolved `body` may update `old`'s
    buffer over `box` in place whenever the bool expression `guard` holds (module
    docstring), else None."""
    if body.op is not Scalar.SELECT:
        return None
    cond, value, keep = body.args
    own = tuple(ir.axis_vars(len(node.shape)))
    if keep.op is not Scalar.LOAD or tuple(keep.args) != own:
        return None
    old = keep.attr
    box = box_of(cond)
    if not box or any(lo is None and hi is None for lo, hi in box.values()) or \
            any(axis >= len(node.shape) for axis in box):
        return None
    if any(e.op is Scalar.LOAD and e.attr is old for e in ir.walk(cond)):
        return None
    loops = {axis: (ir.make(Scalar.MAX, _INDEX, (lo, ir.index(0))) if lo is not None
                    else ir.index(0), hi) for axis, (lo, hi) in box.items()}
    guards = []
    for e in ir.walk(value):
        if e.op is not Scalar.LOAD or e.attr is not old:
            continue
        e = ir.load(old, [in_box(a, box) for a in e.args])
        if _own_element(e.args, own, box):
            continue
        outside = []
        for axis, (lo, hi) in box.items():
            x = e.args[axis]
            if not _free(x):
                continue
            parts = [ir.make(Scalar.LT, "bool", (x, lo))] if lo is not None else []
            if hi is not None:
                parts.append(ir.make(Scalar.GE, "bool", (x, hi)))
            outside.append(parts[0] if len(parts) == 1 else
                           ir.make(Scalar.OR, "bool", tuple(parts)))
        outside = [o for o in outside if not ir.is_const(o, False)]
        if not outside:
            return None
        guard = outside[0]
        for part in outside[1:]:
            guard = ir.make(Scalar.OR, "bool", (guard, part))
        guards.append(guard)
    guard = None
    for g in guards:
        guard = g if guard is None else ir.make(Scalar.AND, "bool", (guard, g))
    return old, loops, guard


def _range(e, box):
    """(low, high) linear forms bounding int64 `e` inside `box` when e is one boxed loop
    index (coefficient 1) plus loop-invariant terms, else None."""
    form = linear(e)
    if form is None:
        return None
    axes = [(i, _axis_of(atom), c) for i, (atom, c) in form[0].items()
            if _axis_of(atom) is not None]
    if len(axes) != 1 or axes[0][2] != 1 or axes[0][1] not in box:
        return None
    key, axis, _ = axes[0]
    rest = ({i: t for i, t in form[0].items() if i != key}, form[1])
    if not all(_free(atom) for atom, _ in rest[0].values()):
        return None
    lo, hi = box[axis]
    if lo is None or hi is None:
        return None
    return (_combine(linear(lo), rest, 1),
            _combine(_combine(linear(hi), rest, 1), ({}, 1), -1))


def _at_least(form, e) -> bool:
    fe = linear(e)
    if fe is None:
        return False
    terms, const = _combine(form, fe, -1)
    return not terms and const >= 0


def _at_most(form, e) -> bool:
    fe = linear(e)
    if fe is None:
        return False
    terms, const = _combine(fe, form, -1)
    return not terms and const >= 0


def in_box(e, box):
    """Index expression `e` simplified for iterations inside `box`: a clamp `max(min(x, u),
    l)` of an x that the box keeps in [l, u] is x, and a broadcast `select(s == 1, 0, x)`
    of an x the box keeps in [0, s - 1] is x (lowerings clamp the loads whose values a
    select discards; inside the box they are the plain index)."""
    memo: dict = {}
    for x in ir.walk(e):
        args = tuple(memo.get(id(a), a) for a in x.args)
        y = x if all(a is b for a, b in zip(args, x.args)) else ir.make(x.op, x.dtype, args,
                                                                        x.attr)
        memo[id(x)] = _unclamped(y, box)
    return memo.get(id(e), e)


def _unclamped(y, box):
    if y.op is Scalar.MAX and len(y.args) == 2 and y.args[0].op is Scalar.MIN:
        x, u = y.args[0].args
        r = _range(x, box)
        if r is not None and _at_least(r[0], y.args[1]) and _at_most(r[1], u):
            return x
    if y.op is Scalar.SELECT and ir.is_const(y.args[1], 0) and y.args[0].op is Scalar.EQ \
            and ir.is_const(y.args[0].args[1], 1):
        x, size = y.args[2], y.args[0].args[0]
        r = _range(x, box)
        if r is not None and _at_least(r[0], ir.index(0)) and \
                _at_most(r[1], ir.make(Scalar.SUB, _INDEX, (size, ir.index(1)))):
            return x
    return y


def _own_element(index, own, box) -> bool:
    for axis, (e, var) in enumerate(zip(index, own)):
        if e is var or _difference(e, var) == 0:
            continue
        lo, hi = box.get(axis, (None, None))
        if lo is None or hi is None or _difference(hi, lo) != 1 or _difference(e, lo) != 0:
            return False
    return True
