"""The kernels of loop nests (schedule groups) as numba-cuda source (docs/architecture.md,
"The CUDA target").

Each group of the schedule gets up to three kernels and the host picks one per call from
the sizes (codegen.py):
- `flat`: one thread per index of the group's outer space (a grid-stride loop); each thread
  computes every member there, looping over a member's own inner axes and reduction axes
  in order.  Elementwise chains are this kernel with one member or several of one shape
  (multi-output fusion).
- `row`: one block per outer index (a block-stride loop over the outer space): the block's
  threads share each member's inner axes; a reduction combines its threads' partial
  results in a shared-memory tree (finished by warp shuffles on a GPU) and thread 0
  writes it; the block synchronizes between members, so later members read what earlier
  ones wrote for the same row.  Softmax and layernorm are one such kernel.
- `split`: a group that is one reduction with few outputs and many inputs each (a full
  sum) runs in two kernels: blocks reduce slices into partial results, then one block per
  output combines them.

Members read earlier results from their buffers; every buffer is flat (row-major).
"""

from __future__ import annotations

from ... import dtypes as _dtypes
from ...compiler.core.ir import Combiner, NodeKind
from ...compiler.core.ir_build import identity_value
from .scalar_text import (ScalarWriter, Unrenderable, arg_take, const_text, ctor, fmax,
                          fmin, linear_index)

_SHUFFLE_DTYPES = frozenset({"int32", "int64", "uint32", "uint64", "float32", "float64"})
NUMBA_TYPE = {"bool": "boolean", "int8": "int8", "int16": "int16", "int32": "int32",
               "int64": "int64", "uint8": "uint8", "uint16": "uint16", "uint32": "uint32",
               "uint64": "uint64", "float16": "float16", "float32": "float32",
               "float64": "float64"}


class KernelText:
    """One kernel's lines and the names (buffers, sizes) it takes as arguments."""

    def __init__(self, module, name: str):
        self.module, self.name = module, name
        self.args: list = []
        self.lines: list = []

    def use(self, name: str) -> str:
        if not name[0].isdigit() and name not in self.args:
            self.args.append(name)
        return name

    def size(self, expr) -> str:
        return self.use(self.module.size(expr))

    def sizes(self, exprs) -> list:
        return [self.size(e) for e in exprs]

    def writer(self, indent: str, var_name=None) -> ScalarWriter:
        def load(node, idx):
            # clamped into the buffer: both arms of a select are computed, and the arm not
            # taken may index past a node's end (its value is discarded; on the CPU such a
            # read is harmless, on a GPU it may fault)
            buf = self.use(self.module.buffer(node))
            at = linear_index(idx, self.sizes(node.shape))
            return f"{buf}[max(min({at}, {buf}.size - 1), 0)]"

        return ScalarWriter(self.lines, indent, var_name or _var_name, load,
                            lambda p, a: self.use(f"d{p}_{a}"),
                            prefix=f"v{len(self.lines)}_")

    def decompose(self, flat: str, names, sizes, indent: str) -> None:
        """Lines setting `names` (row-major) from the linear index `flat`."""
        if not names:
            return
        self.lines.append(f"{indent}q = {flat}")
        for k in range(len(names) - 1, 0, -1):
            self.lines.append(f"{indent}{names[k]} = q % {sizes[k]}")
            self.lines.append(f"{indent}q = q // {sizes[k]}")
        self.lines.append(f"{indent}{names[0]} = q")

    def text(self) -> str:
        head = f"@cuda.jit\ndef {self.name}({', '.join(self.args)}):"
        return "\n".join([head] + self.lines) + "\n"


def _var_name(attr) -> str:
    kind, k = attr
    return f"{kind}{k}"


def product(texts) -> str:
    return " * ".join(texts) if texts else "1"


def _combine(comb: Combiner, dtype, acc: str, v: str) -> str:
    c = ctor(dtype)
    if dtype.is_bool:
        return {Combiner.ADD: f"({acc} or {v})", Combiner.OR: f"({acc} or {v})",
                Combiner.MAX: f"({acc} or {v})", Combiner.MUL: f"({acc} and {v})",
                Combiner.AND: f"({acc} and {v})", Combiner.MIN: f"({acc} and {v})"}[comb]
    if comb is Combiner.ADD:
        return f"{c}({acc} + {v})"
    if comb is Combiner.MUL:
        return f"{c}({acc} * {v})"
    if comb in (Combiner.MAX, Combiner.MIN):
        if dtype.is_floating:
            return f"{c}{(fmax if comb is Combiner.MAX else fmin)(acc, v)}"
        return f"{c}({'max' if comb is Combiner.MAX else 'min'}({acc}, {v}))"
    if comb is Combiner.AND:
        return f"({acc} != 0 and {v} != 0)"
    if comb is Combiner.OR:
        return f"({acc} != 0 or {v} != 0)"
    raise Unrenderable(f"{comb.value} reductions")


def _is_arg(comb) -> bool:
    return comb in (Combiner.ARGMAX, Combiner.ARGMIN)


def _arg_dtype(node):
    return _dtypes.int8 if node.body.dtype.is_bool else node.body.dtype


class Reduction:
    """The accumulator lines of one REDUCE member: init, step, block combine, result."""

    def __init__(self, node, kt: KernelText, tag: str):
        self.node, self.kt, self.tag = node, kt, tag
        self.comb = node.attr
        self.dtype = _arg_dtype(node) if _is_arg(self.comb) else node.body.dtype
        self.acc, self.idx = f"acc{tag}", f"best{tag}"

    def init(self, indent: str) -> None:
        lines = self.kt.lines
        if _is_arg(self.comb):
            lines.append(f"{indent}{self.acc} = {const_text(0, self.dtype)}")
            lines.append(f"{indent}{self.idx} = i8(-1)")
        else:
            value = identity_value(self.comb, self.dtype)
            lines.append(f"{indent}{self.acc} = {const_text(value, self.dtype)}")

    def step(self, indent: str, value: str, position: str) -> None:
        lines = self.kt.lines
        if _is_arg(self.comb):
            v = f"i1({value})" if self.node.body.dtype.is_bool else value
            want = self.comb is Combiner.ARGMAX
            lines.append(f"{indent}w = {v}")
            lines.append(f"{indent}if {arg_take(self.acc, self.idx, 'w', f'i8({position})', want)}:")
            lines.append(f"{indent}    {self.acc} = w")
            lines.append(f"{indent}    {self.idx} = i8({position})")
        else:
            lines.append(f"{indent}{self.acc} = {_combine(self.comb, self.dtype, self.acc, value)}")

    def merge(self, indent: str, acc2: str, idx2: str) -> None:
        """acc = combine(acc, acc2) (and the index of an arg reduction)."""
        lines = self.kt.lines
        if _is_arg(self.comb):
            want = self.comb is Combiner.ARGMAX
            lines.append(f"{indent}if {arg_take(self.acc, self.idx, acc2, idx2, want)}:")
            lines.append(f"{indent}    {self.acc} = {acc2}")
            lines.append(f"{indent}    {self.idx} = {idx2}")
        else:
            lines.append(f"{indent}{self.acc} = {_combine(self.comb, self.dtype, self.acc, acc2)}")

    def result(self) -> str:
        """The value to store, in the node's dtype."""
        if _is_arg(self.comb):
            last = self.kt.size(self.node.rshape[-1]) if self.node.rshape else "1"
            return f"(i8({self.idx} % {last}) if {self.idx} >= 0 else i8(0))"
        return f"{ctor(self.node.dtype)}({self.acc})"

    def block_combine(self, indent: str, shuffles: bool) -> None:
        """Combine the block's accumulators: afterwards thread 0's are the block's."""
        lines, numba_t = self.kt.lines, NUMBA_TYPE[self.dtype.name]
        arg = _is_arg(self.comb)
        sh, shi = f"sh{self.tag}", f"shi{self.tag}"
        lines.append(f"{indent}{sh} = cuda.shared.array(TPB, numba.{numba_t})")
        lines.append(f"{indent}{sh}[t] = {self.acc}")
        if arg:
            lines.append(f"{indent}{shi} = cuda.shared.array(TPB, numba.int64)")
            lines.append(f"{indent}{shi}[t] = {self.idx}")
        warp = shuffles and not arg and self.dtype.name in _SHUFFLE_DTYPES
        lines.append(f"{indent}cuda.syncthreads()")
        lines.append(f"{indent}s = TPB // 2")
        lines.append(f"{indent}while s > {16 if warp else 0}:")
        lines.append(f"{indent}    if t < s:")
        lines.append(f"{indent}        {self.acc} = {sh}[t]")
        if arg:
            lines.append(f"{indent}        {self.idx} = {shi}[t]")
        self.merge(indent + "        ", f"{sh}[t + s]", f"{shi}[t + s]")
        lines.append(f"{indent}        {sh}[t] = {self.acc}")
        if arg:
            lines.append(f"{indent}        {shi}[t] = {self.idx}")
        lines.append(f"{indent}    cuda.syncthreads()")
        lines.append(f"{indent}    s = s // 2")
        if warp:
            lines.append(f"{indent}if t < 32:")
            lines.append(f"{indent}    {self.acc} = {sh}[t]")
            for offset in (16, 8, 4, 2, 1):
                other = f"cuda.shfl_down_sync(0xFFFFFFFF, {self.acc}, {offset})"
                lines.append(f"{indent}    {self.acc} = "
                             f"{_combine(self.comb, self.dtype, self.acc, other)}")
        else:
            lines.append(f"{indent}{self.acc} = {sh}[0]")
            if arg:
                lines.append(f"{indent}{self.idx} = {shi}[0]")


def _store(kt: KernelText, node, indices, value: str, indent: str) -> None:
    buf = kt.use(kt.module.buffer(node))
    kt.lines.append(f"{indent}{buf}[{linear_index(indices, kt.sizes(node.shape))}] = {value}")


def _outer_names(p: int) -> list:
    return [f"a{k}" for k in range(p)]


def _member_body(kt: KernelText, node):
    return kt.module.schedule.resolved[id(node)]


def _outer_loop(kt: KernelText, group, head: list) -> int:
    """The kernel's first lines `head` (setting `f`), then `while f < n_outer:` and the outer
    indices of `f`; returns the number of outer axes."""
    p = len(group.outer)
    outer = kt.sizes(group.outer)
    kt.lines += head + [f"    while f < {kt.use('n_outer')}:"]
    kt.decompose("f", _outer_names(p), outer, " " * 8)
    return p


def flat_kernel(module, name: str, group) -> KernelText:
    """One thread per outer index (module docstring)."""
    kt = KernelText(module, name)
    p = _outer_loop(kt, group, ["    f = cuda.grid(1)", "    step = cuda.gridsize(1)"])
    for k, m in enumerate(group.members):
        indent = " " * 8
        if m.kind is NodeKind.COMPUTE:
            for j in range(p, len(m.shape)):
                kt.lines.append(f"{indent}for a{j} in range({kt.size(m.shape[j])}):")
                indent += "    "
            value = kt.writer(indent).value(_member_body(kt, m))
            _store(kt, m, _outer_names(len(m.shape)), value, indent)
            continue
        red = Reduction(m, kt, str(k))
        red.init(indent)
        for j in range(p, len(m.shape)):   # the kept (size-1) axes of the reduction
            kt.lines.append(f"{indent}a{j} = 0")
        inner = indent
        for j in range(len(m.rshape)):
            kt.lines.append(f"{inner}for r{j} in range({kt.size(m.rshape[j])}):")
            inner += "    "
        value = kt.writer(inner).value(_member_body(kt, m))
        position = linear_index([f"r{j}" for j in range(len(m.rshape))], kt.sizes(m.rshape))
        red.step(inner, value, position)
        idx = _outer_names(p) + ["0"] * (len(m.shape) - p)
        _store(kt, m, idx, red.result(), indent)
    kt.lines.append("        f += step")
    return kt


def row_kernel(module, name: str, group, shuffles: bool) -> KernelText:
    """One block per outer index (module docstring)."""
    kt = KernelText(module, name)
    p = _outer_loop(kt, group, ["    t = cuda.threadIdx.x", "    f = cuda.blockIdx.x"])
    for k, m in enumerate(group.members):
        if m.kind is NodeKind.COMPUTE:
            rest = kt.sizes(m.shape[p:])
            kt.lines.append(f"        j = t")
            kt.lines.append(f"        while j < {product(rest)}:")
            kt.decompose("j", [f"a{q}" for q in range(p, len(m.shape))], rest, " " * 12)
            value = kt.writer(" " * 12).value(_member_body(kt, m))
            _store(kt, m, _outer_names(len(m.shape)), value, " " * 12)
            kt.lines.append("            j += TPB")
        else:
            red = Reduction(m, kt, str(k))
            red.init(" " * 8)
            for j in range(p, len(m.shape)):   # the kept (size-1) axes
                kt.lines.append(f"        a{j} = 0")
            rsizes = kt.sizes(m.rshape)
            kt.lines.append("        j = t")
            kt.lines.append(f"        while j < {product(rsizes)}:")
            kt.decompose("j", [f"r{q}" for q in range(len(m.rshape))], rsizes, " " * 12)
            value = kt.writer(" " * 12).value(_member_body(kt, m))
            red.step(" " * 12, value, "j")
            kt.lines.append("            j += TPB")
            red.block_combine(" " * 8, shuffles)
            kt.lines.append("        if t == 0:")
            idx = _outer_names(p) + ["0"] * (len(m.shape) - p)
            _store(kt, m, idx, red.result(), " " * 12)
        kt.lines.append("        cuda.syncthreads()")
    kt.lines.append("        f += cuda.gridDim.x")
    return kt


def split_kernels(module, name: str, node, shuffles: bool) -> tuple:
    """The two kernels of a split reduction (module docstring): `name`_part writes
    partial results (and positions) of `nsplit` slices per output, `name`_fin combines them."""
    p = len(node.shape)
    part = KernelText(module, f"{name}_part")
    outer = part.sizes(node.shape)
    n, nsplit = part.use("n_outer"), part.use("nsplit")
    vals, poss = part.use(f"pv_{name}"), part.use(f"pi_{name}")
    part.lines += ["    t = cuda.threadIdx.x", "    b = cuda.blockIdx.x",
                   f"    while b < {n} * {nsplit}:",
                   f"        f = b // {nsplit}", f"        s0 = b % {nsplit}"]
    part.decompose("f", _outer_names(p), outer, " " * 8)
    red = Reduction(node, part, "0")
    red.init(" " * 8)
    rsizes = part.sizes(node.rshape)
    part.lines.append("        j = s0 * TPB + t")
    part.lines.append(f"        while j < {product(rsizes)}:")
    part.decompose("j", [f"r{q}" for q in range(len(node.rshape))], rsizes, " " * 12)
    value = part.writer(" " * 12).value(_member_body(part, node))
    red.step(" " * 12, value, "j")
    part.lines.append(f"            j += {nsplit} * TPB")
    red.block_combine(" " * 8, shuffles)
    part.lines.append("        if t == 0:")
    part.lines.append(f"            {vals}[b] = {red.acc}")
    if _is_arg(node.attr):
        part.lines.append(f"            {poss}[b] = {red.idx}")
    part.lines.append("        cuda.syncthreads()")
    part.lines.append("        b += cuda.gridDim.x")

    fin = KernelText(module, f"{name}_fin")
    outer = fin.sizes(node.shape)
    n, nsplit = fin.use("n_outer"), fin.use("nsplit")
    vals, poss = fin.use(f"pv_{name}"), fin.use(f"pi_{name}")
    fin.lines += ["    t = cuda.threadIdx.x", "    f = cuda.blockIdx.x", f"    while f < {n}:"]
    fin.decompose("f", _outer_names(p), outer, " " * 8)
    red = Reduction(node, fin, "0")
    red.init(" " * 8)
    fin.lines.append("        j = t")
    fin.lines.append(f"        while j < {nsplit}:")
    red.merge(" " * 12, f"{vals}[f * {nsplit} + j]", f"{poss}[f * {nsplit} + j]")
    fin.lines.append("            j += TPB")
    red.block_combine(" " * 8, shuffles)
    fin.lines.append("        if t == 0:")
    _store(fin, node, _outer_names(p), red.result(), " " * 12)
    fin.lines.append("        cuda.syncthreads()")
    fin.lines.append("        f += cuda.gridDim.x")
    return part, fin, red.dtype
