"""Scalar expressions of the kernel IR as numba-cuda statements, and size expressions as host
Python (docs/architecture.md, "The CUDA target").

`ScalarWriter.value(expr)` appends one assignment per distinct sub-expression (children
first, without recursion) to the writer's lines and returns the variable holding `expr`.
Every operation is wrapped in its dtype's constructor (`f4(a + b)`), so integer arithmetic
wraps in the result's dtype as on the CPU and float32 stays float32.  Where the IR leaves a
choice to the machine, the choice is the reference target's (targets/reference/scalars.py):
NaN-propagating max/min, floor division and modulo by zero give 0 for integers, shift
counts outside [0, bits) give 0 (or -1).  Everything is written inline (expressions, or
statements for an integer power): numba-cuda compiles a called device function only with
a GPU present, and kernels must build to PTX without one.  Transcendental functions and roundings are the
`_fn` aliases of the kernel module's prelude (prelude.py): libdevice on a GPU, NumPy's under
numba-cuda's simulator, whose kernels are plain Python.

Loads read flat buffers: a node's element (i0, i1, ...) lives at the row-major linear index
(`linear_index`), with every size a kernel argument.
"""

from __future__ import annotations

import math

import numpy as np

from ...compiler.core import ir
from ...compiler.core.ir import Scalar
from ...compiler.core.ir_build import NotLowerable

# dtype name -> the constructor's name in the kernel module (codegen's prelude binds them)
CTOR = {"bool": "b1", "int8": "i1", "int16": "i2", "int32": "i4", "int64": "i8",
        "uint8": "u1", "uint16": "u2", "uint32": "u4", "uint64": "u8",
        "float16": "f2", "float32": "f4", "float64": "f8"}

_BINARY = {Scalar.ADD: "+", Scalar.SUB: "-", Scalar.MUL: "*", Scalar.POW: "**",
           Scalar.EQ: "==", Scalar.NE: "!=", Scalar.LT: "<", Scalar.LE: "<=",
           Scalar.GT: ">", Scalar.GE: ">=", Scalar.BITAND: "&", Scalar.BITOR: "|",
           Scalar.BITXOR: "^"}
_FLOAT_FN = {Scalar.SQRT: "_sqrt", Scalar.EXP: "_exp", Scalar.EXPM1: "_expm1",
             Scalar.LOG: "_log", Scalar.LOG1P: "_log1p", Scalar.TANH: "_tanh",
             Scalar.ERF: "_erf", Scalar.SIN: "_sin", Scalar.COS: "_cos", Scalar.TAN: "_tan",
             Scalar.FLOOR: "_floor", Scalar.CEIL: "_ceil", Scalar.ROUND: "_rint"}
_LOGICAL = {Scalar.AND: "({0} and {1})", Scalar.OR: "({0} or {1})", Scalar.NOT: "(not {0})",
            Scalar.SELECT: "({1} if {0} else {2})"}
_COMPARE = frozenset({Scalar.EQ, Scalar.NE, Scalar.LT, Scalar.LE, Scalar.GT, Scalar.GE})


class Unrenderable(NotLowerable):
    """Something in the program the CUDA target does not render: the cluster runs with the
    ops' reference kernels instead, as for any program the compiler cannot lower."""


def ctor(dtype) -> str:
    try:
        return CTOR[dtype.name]
    except KeyError:
        raise Unrenderable(f"{dtype.name} values") from None


def const_text(value, dtype) -> str:
    """A typed constant (NaN and infinities spelled so numba and Python both read them)."""
    if dtype.is_bool:
        return "True" if value else "False"
    if dtype.is_integer:
        return f"{ctor(dtype)}({int(value)})"
    value = float(value)
    if math.isnan(value):
        text = "_NAN"
    elif math.isinf(value):
        text = "_INF" if value > 0 else "-_INF"
    else:
        text = repr(value)
    return f"{ctor(dtype)}({text})"


def fmax(a: str, b: str) -> str:
    """NaN-propagating maximum (np.maximum) of two variables, as an expression."""
    return f"({a} if ({a} > {b} or {a} != {a}) else {b})"


def fmin(a: str, b: str) -> str:
    return f"({a} if ({a} < {b} or {a} != {a}) else {b})"


def arg_take(v1: str, i1: str, v2: str, i2: str, want_max: bool) -> str:
    """Whether (v2 at i2) replaces (v1 at i1) as the first extreme; NaNs never do."""
    better = ">" if want_max else "<"
    return (f"({i2} >= 0 and {v2} == {v2} and ({i1} < 0 or {v2} {better} {v1} or "
            f"({v2} == {v1} and {i2} < {i1})))")


def linear_index(indices, sizes) -> str:
    """The row-major linear index of `indices` (texts) in a buffer of `sizes` (texts)."""
    if not indices:
        return "0"
    text = indices[0]
    for i, s in zip(indices[1:], sizes[1:]):
        text = f"({text}) * {s} + {i}"
    return text


class ScalarWriter:
    """Writes the statements of scalar expressions (module docstring).

    `var_name(attr)` names a loop variable; `load(node, index_texts)` gives the text of a
    load of a materialized node; `dim(position, axis)` the text of an input's size."""

    def __init__(self, lines: list, indent: str, var_name, load, dim, prefix: str = "v"):
        self.lines, self.indent = lines, indent
        self.var_name, self.load_text, self.dim_text = var_name, load, dim
        self.prefix = prefix
        self.names: dict = {}
        self.count = 0

    def value(self, expr) -> str:
        """The variable (or literal) holding `expr`, after the statements computing it."""
        for e in ir.postorder(expr, known=self.names):
            self.names[id(e)] = self._emit(e)
        return self.names[id(expr)]

    def _fresh(self, text: str) -> str:
        name = f"{self.prefix}{self.count}"
        self.count += 1
        self.lines.append(f"{self.indent}{name} = {text}")
        return name

    def _emit(self, e) -> str:
        op, dt = e.op, e.dtype
        if op is Scalar.CONST:
            return const_text(e.attr, dt)
        if op is Scalar.VAR:
            return self.var_name(e.attr)
        if op is Scalar.DIM:
            return self.dim_text(*e.attr)
        a = [self.names[id(x)] for x in e.args]
        if op is Scalar.LOAD:
            return self._fresh(self.load_text(e.attr, a))
        return self._fresh(self._op_text(op, dt, a, e.args))

    def _ipow(self, a: str, b: str) -> str:
        """Integer a ** b (wrapping; a negative exponent: 1, -1 or 0 as on the CPU) by
        repeated squaring, as statements; returns the variable holding the power."""
        base, exp, out = self._fresh(f"i8({a})"), self._fresh(f"i8({b})"), self._fresh("i8(1)")
        i = self.indent
        self.lines += [
            f"{i}if {exp} < 0:",
            f"{i}    {out} = i8(1) if {base} == 1 else (i8(-1 if {exp} % 2 != 0 else 1) "
            f"if {base} == -1 else i8(0))",
            f"{i}while {exp} > 0:",
            f"{i}    if {exp} & 1:",
            f"{i}        {out} = i8({out} * {base})",
            f"{i}    {base} = i8({base} * {base})",
            f"{i}    {exp} = {exp} >> 1"]
        return out

    def _op_text(self, op, dt, a, args) -> str:
        c = ctor(dt)
        adt = args[0].dtype if args else dt
        if op in _COMPARE:
            return f"({a[0]} {_BINARY[op]} {a[1]})"
        if op in _BINARY and not dt.is_bool:
            if op is Scalar.POW and dt.is_integer:
                return f"{c}({self._ipow(a[0], a[1])})"
            return f"{c}({a[0]} {_BINARY[op]} {a[1]})"
        if dt.is_bool and op in (Scalar.ADD, Scalar.BITOR, Scalar.MAX):   # logical
            return f"({a[0]} or {a[1]})"
        if dt.is_bool and op in (Scalar.MUL, Scalar.BITAND, Scalar.MIN):
            return f"({a[0]} and {a[1]})"
        if dt.is_bool and op in (Scalar.BITXOR, Scalar.SUB):
            return f"({a[0]} != {a[1]})"
        if op is Scalar.DIV:
            return f"{c}({a[0]} / {a[1]})"
        if op is Scalar.FLOORDIV:
            if dt.is_integer:
                return f"{c}(0 if {a[1]} == 0 else {a[0]} // {a[1]})"
            return f"{c}(_floor({a[0]} / {a[1]}))"
        if op is Scalar.MOD:
            if dt.is_integer:
                return f"{c}(0 if {a[1]} == 0 else {a[0]} % {a[1]})"
            r = self._fresh(f"_fmod_raw({a[0]}, {a[1]}) if {a[1]} != 0 else {c}(_NAN)")
            return f"{c}({r} + {a[1]} if ({r} != 0 and ({r} < 0) != ({a[1]} < 0)) else {r})"
        if op in (Scalar.MAX, Scalar.MIN):
            if dt.is_floating:
                pick = fmax if op is Scalar.MAX else fmin
                return f"{c}{pick(a[0], a[1])}"
            return f"{c}({'max' if op is Scalar.MAX else 'min'}({a[0]}, {a[1]}))"
        if op is Scalar.NEG:
            return f"{c}(-{a[0]})"
        if op is Scalar.ABS:
            return f"{c}(abs({a[0]}))" if not dt.is_bool else a[0]
        if op is Scalar.SIGN:
            if dt.is_bool:
                return a[0]
            if dt.is_floating:
                x = a[0]
                return f"{c}(1.0 if {x} > 0 else (-1.0 if {x} < 0 else {x}))"
            return f"{c}(i8({a[0]} > 0) - i8({a[0]} < 0))"
        if op in _FLOAT_FN:
            if op in (Scalar.FLOOR, Scalar.CEIL, Scalar.ROUND) and not dt.is_floating:
                return a[0]
            return f"{c}({_FLOAT_FN[op]}({a[0]}))"
        if op is Scalar.SIGMOID:
            x = a[0]
            return (f"{c}(1.0 / (1.0 + _exp(-{x})) if {x} >= 0 else "
                    f"_exp({x}) / (1.0 + _exp({x})))")
        if op is Scalar.ATAN2:
            return f"{c}(_atan2({a[0]}, {a[1]}))"
        if op in _LOGICAL:
            return _LOGICAL[op].format(*a)
        if op is Scalar.BITNOT:
            return f"(not {a[0]})" if dt.is_bool else f"{c}(~{a[0]})"
        if op in (Scalar.SHL, Scalar.SHR):
            bits = 8 * np.dtype(dt.np_dtype).itemsize
            x, n = a
            outside = f"{n} < 0 or {n} >= {bits}"
            if op is Scalar.SHL:
                return f"{c}({x} * 0 if ({outside}) else {x} << {n})"
            return f"{c}(({x} * 0 - 1 if {x} < 0 else {x} * 0) if ({outside}) else {x} >> {n})"
        if op is Scalar.CAST:
            if dt.is_bool:
                return f"({a[0]} != 0)"
            if adt.is_bool:
                return f"{c}(1 if {a[0]} else 0)"
            return f"{c}({a[0]})"
        if op is Scalar.ISNAN:
            return f"_isnan({a[0]})" if adt.is_floating else "False"
        if op is Scalar.ISINF:
            return f"_isinf({a[0]})" if adt.is_floating else "False"
        raise Unrenderable(f"the scalar operation {op.value}")


def host_size(expr, dim, load=None) -> str:
    """A size expression (int64, over constants, input sizes and, with `load(node, index
    texts)`, values computed earlier and copied back) as host Python."""
    names: dict = {}
    for e in ir.postorder(expr):
        op = e.op
        if op is Scalar.CONST:
            text = str(int(e.attr)) if not e.dtype.is_bool else str(bool(e.attr))
        elif op is Scalar.DIM:
            text = dim(*e.attr)
        elif op is Scalar.LOAD and load is not None:
            value = load(e.attr, [names[id(a)] for a in e.args])
            text = f"bool({value})" if e.dtype.is_bool else f"int({value})"
        elif op is Scalar.LOAD or op is Scalar.VAR:
            raise Unrenderable("sizes that depend on computed values")
        else:
            a = [names[id(x)] for x in e.args]
            if op in _BINARY and op is not Scalar.POW:
                text = f"({a[0]} {_BINARY[op]} {a[1]})"
            elif op is Scalar.FLOORDIV:
                text = f"(0 if {a[1]} == 0 else {a[0]} // {a[1]})"
            elif op is Scalar.MOD:
                text = f"(0 if {a[1]} == 0 else {a[0]} % {a[1]})"
            elif op in (Scalar.MAX, Scalar.MIN):
                text = f"{op.value}({a[0]}, {a[1]})"
            elif op is Scalar.SELECT:
                text = f"({a[1]} if {a[0]} else {a[2]})"
            elif op is Scalar.AND:
                text = f"({a[0]} and {a[1]})"
            elif op is Scalar.OR:
                text = f"({a[0]} or {a[1]})"
            elif op is Scalar.NOT:
                text = f"(not {a[0]})"
            elif op is Scalar.CAST:
                text = f"int({a[0]})" if not e.dtype.is_bool else f"({a[0]} != 0)"
            elif op is Scalar.NEG:
                text = f"(-{a[0]})"
            else:
                raise Unrenderable(f"the size operation {op.value}")
        names[id(e)] = text
    return names[id(expr)]
