"""CPU code generation: a `Schedule` becomes the source of ONE numba function.

The generated module is plain, readable Python: typed constants at the top, then
`def kernel(in0, in1, ...)` that reads sizes, checks them, allocates outputs and runs each
loop group.  Each group is emitted twice, under `if work >= PARALLEL_MIN_WORK:` with a
`prange` outer loop and otherwise with `range`, so small inputs never pay for the thread
pool (the choice is made at run time from the sizes).  Scalar code is emitted one
operation per statement, each hoisted to the outermost loop it depends on. Float
reductions accumulate with `radd`/`rmax`/`rmin` (reduce_steps.py), so their loops vectorize
without fastmath on anything else; every buffer is allocated with `empty_buffer`
(large_buffers.py), which recycles large blocks through the buffer pool. Statements come
from emitter.py, the choice of parallel nests from parallel_budget.py, and the kernel and
every prange body start with `wide_vectors()` (vector_width.py).

This module sees only kernel IR (`compiler.ir`) and the schedule; it knows no graph ops.
"""

from __future__ import annotations

import numpy as np

from ...compiler.core import ir
from ...compiler.core.ir import NodeKind, Scalar
from ...compiler.schedule import Schedule, resolve
from . import (library_code, matmul_code, parallel_budget, reduce_nests, row_jam, scalar_code,
               scatter_code, vector_width)
from .emitter import Emitter, Names
from .parallel_budget import MAX_PARALLEL_NESTS

PARALLEL_MIN_WORK = 1 << 16  # elements: below this a loop nest runs on one thread


class Generator:
    """State of generating one kernel module."""

    def __init__(self, schedule: Schedule, name: str = "kernel", parallel_choice=None):
        self.schedule = schedule
        self.parallel_choice = parallel_choice  # indices of branch() calls made parallel
        self.parallel_requests: list = []       # (work estimate, surely large) per branch()
        self.program = schedule.program
        self.name = name
        self.names = Names()
        self.parallel_budget = MAX_PARALLEL_NESTS
        self.constants: dict = {}
        self.const_lines: list = []
        self.helpers: set = set()
        self.buffers: dict = {}      # id(node) -> array variable name
        self.locals: dict = {}       # id(node) -> scalar variable name (current group)
        self.dims: dict = {}
        self.scratch_p: dict = {}    # id(node) -> outer rank, for per-row scratch buffers
        self.squeezed: dict = {}     # id(node) -> (view without its size-1 axes, axes kept)

    # --- naming ---------------------------------------------------------------------------
    def constant(self, value, dtype) -> str:
        key = (repr(value), dtype.name)
        name = self.constants.get(key)
        if name is None:
            name = f"C{len(self.constants)}"
            self.constants[key] = name
            self.const_lines.append(f"{name} = {scalar_code.literal(value, dtype)}")
        return name

    def dim_name(self, e) -> str:
        position, axis = e.attr
        return f"in{position}.shape[{axis}]"

    def load_text(self, node, args) -> str:
        name = self.locals.get(id(node))
        if name is not None:
            return name
        p = self.scratch_p.get(id(node))
        if p is not None:
            args = args[p:]
        buf = self.buffers[id(node)]
        if not args:
            return f"{buf}[()]"
        return self.indexed(node, args)

    def indexed(self, node, args) -> str:
        """`node`'s buffer at `args` (one index per axis), through its squeezed view (see
        `allocate`) when it has one."""
        view = self.squeezed.get(id(node))
        if view is not None:
            name, kept = view
            return f"{name}[{', '.join(args[k] for k in kept)}]"
        return f"{self.buffers[id(node)]}[{', '.join(args)}]"

    def emitter(self, loop_vars, unsigned_index: bool = False) -> Emitter:
        """A statement emitter for a loop nest over `loop_vars` (outermost first); with
        `unsigned_index`, every load indexes with unsigned indices (`scalar_code.unsigned`)."""
        return Emitter(self, loop_vars, unsigned_index)

    def size_text(self, e) -> str:
        em = Emitter(self, ())
        text = em.value(e)
        self._prologue.extend(em.take(0))
        return text

    # --- module ---------------------------------------------------------------------------
    def generate(self) -> str:
        p = self.program
        params = [f"in{n.attr[0]}" for n in p.inputs]
        for n in p.inputs:
            self.buffers[id(n)] = f"in{n.attr[0]}"
        self._prologue: list = []
        body: list = []
        data_checks = []
        for cond, message in p.checks:
            if any(e.op is Scalar.LOAD for e in ir.walk(cond)):
                data_checks.append((cond, message))
                continue
            text = self.size_text(cond)
            self._prologue.append(f"if not {text}:")
            self._prologue.append(f"    raise ValueError({message!r})")
        body.extend(self.ready_checks(data_checks))
        self.absorbed: dict = {}   # id(node) -> where its nest went (another group's code)
        for gi, group in enumerate(self.schedule.groups):
            if id(group.members[0]) in self.absorbed:
                body.append(f"# loop nest {gi}: {group.members[0].name}, "
                            f"{self.absorbed[id(group.members[0])]}")
                continue
            body.append(f"# loop nest {gi}: {', '.join(m.name for m in group.members)}")
            body.extend(self.group_code(group))
            body.extend(self.ready_checks(data_checks))
        if data_checks:
            raise NotImplementedError(f"check {data_checks[0][1]!r} reads values no loop "
                                      "nest stores")
        outs, seen = [], set()
        for o in p.outputs:
            name = self.buffers[id(o)]
            aliases_input = o.kind is NodeKind.RESHAPE and o.inputs[0].kind is NodeKind.INPUT
            if o.kind is NodeKind.INPUT or aliases_input or id(o) in seen:
                name = f"{name}.copy()"  # never hand back the caller's array or an alias
            seen.add(id(o))
            outs.append(name)
        ret = f"return ({', '.join(outs)},)" if outs else "return ()"
        lines = [f"def {self.name}({', '.join(params)}):"]
        lines += ["    " + ln for ln in vector_width.widen(self._prologue + body + [ret])]
        head = ["import numpy as np", "from numba import prange",
                "from flowjit.targets.cpu.scalar_code import *  # noqa: F401,F403", ""]
        return "\n".join(head + self.const_lines + [""] + lines) + "\n"

    def ready_checks(self, pending: list) -> list:
        """Code for the data-dependent checks (conditions that load computed values) whose
        values exist now; they are removed from `pending`."""
        lines = []
        for item in list(pending):
            cond = resolve(item[0], self.schedule.inline, {})
            loaded = [e.attr for e in ir.walk(cond) if e.op is Scalar.LOAD]
            if all((id(n) in self.locals and not n.shape) or  # a rank-0 local: no loop
                   (id(n) in self.buffers and id(n) not in self.scratch_p) for n in loaded):
                em = Emitter(self, ())
                text = em.value(cond)
                lines += em.take(0) + [f"if not {text}:", f"    raise ValueError({item[1]!r})"]
                pending.remove(item)
        return lines

    def allocate(self, node) -> list:
        donor = self.schedule.reuse.get(id(node))
        if donor is not None:
            self.buffers[id(node)] = self.buffers[id(donor)]
            return []
        name = self.names.fresh("buf")
        self.buffers[id(node)] = name
        dims = [self.size_text(d) for d in node.shape]
        shape = "(" + "".join(f"{d}, " for d in dims) + ")"
        lines = [f"{name} = empty_buffer({shape}, np.{node.dtype.np_dtype.name})"]
        kept = [k for k, d in enumerate(node.shape) if not ir.is_const(d, 1)]
        if kept and len(kept) < len(node.shape):
            # Loops read and write it through a view without its size-1 axes: inside a
            # parallel loop (numba's outlined function) a size is no constant, so `buf[r,
            # 0]` of an (n, 1) buffer has a stride LLVM cannot see.  (No speed change
            # was measured from this on the power iteration; its slowness had another
            # cause, the parallel-region budget.)
            view = f"{name}v"
            self.squeezed[id(node)] = (view, kept)
            lines.append(f"{view} = {name}.reshape(({''.join(dims[k] + ', ' for k in kept)}))")
        return lines

    # --- groups ---------------------------------------------------------------------------
    def absorb(self, node, where: str, emit: bool = True) -> list:
        """The one-member nest computing `node` in place of the product whose buffer it
        takes, absorbed into that product's code (a GEMM epilogue, `where` says how): its
        code now when `emit` (for the branch where BLAS computed the product), and nothing
        at its own place in the group order."""
        group = next(g for g in self.schedule.groups if g.members == [node])
        self.absorbed[id(node)] = where
        lines = self.group_code(group) if emit else []
        self.buffers[id(node)] = self.buffers[id(self.schedule.reuse[id(node)])]
        return lines

    def group_code(self, group) -> list:
        node = group.members[0]
        if group.kind == "matmul":
            return self.matmul_code(node)
        if group.kind == "scatter":
            return scatter_code.scatter_lines(self, node)
        if group.kind == "libcall":
            return library_code.libcall_lines(self, node)
        if group.kind == "reshape":
            src = self.buffers[id(node.inputs[0])]
            name = self.names.fresh("buf")
            self.buffers[id(node)] = name
            dims = [self.size_text(d) for d in node.shape]
            shape = "".join(d + ", " for d in dims)
            return [f"{name} = np.ascontiguousarray({src}).reshape(({shape}))"]
        if reduce_nests.is_column_group(self.schedule, group):
            return reduce_nests.column_reduce_code(self, group)
        if reduce_nests.is_full_group(self.schedule, group):
            return reduce_nests.full_reduce_code(self, group)
        lines = []
        self.locals = {}
        p = len(group.outer)
        self.row_allocs = []
        for m in group.members:
            if id(m) in self.schedule.local:
                self.locals[id(m)] = self.names.fresh("s")
            elif id(m) in self.schedule.scratch:
                name = self.names.fresh("row")
                self.buffers[id(m)] = name
                self.scratch_p[id(m)] = p
                dims = "".join(self.size_text(d) + ", " for d in m.shape[p:])
                # empty_buffer, not np.empty: numba compiles np.empty's overload afresh in
                # every process (~0.15 s of a cold softmax), the intrinsic costs nothing
                self.row_allocs.append(
                    f"{name} = empty_buffer(({dims}), np.{m.dtype.np_dtype.name})")
            else:
                lines += self.allocate(m)
        outer = [self.size_text(d) for d in group.outer]
        widest = max(group.members, key=lambda m: len(m.shape) + len(m.rshape))
        inner = list(widest.shape[p:]) + list(widest.rshape)
        work = " * ".join(outer + [self.size_text(d) for d in inner]) or "1"
        if not outer:
            return lines + self.nest(group, outer, parallel=False)
        # rows of a reduction over a run-time extent (a matrix-vector product): their
        # work grows with the product of two run-time sizes
        rows_of_sums = widest.kind is NodeKind.REDUCE and \
            any(not ir.is_const(d) for d in widest.rshape) and \
            any(not ir.is_const(d) for d in group.outer)
        return lines + self.branch(list(group.outer) + inner, work,
                                   lambda: self.nest(group, outer, parallel=True),
                                   lambda: self.nest(group, outer, parallel=False),
                                   rows_of_sums)

    def branch(self, dims, work: str, parallel, serial, rows_of_sums: bool = False) -> list:
        """The parallel and the serial version of a loop nest under a run-time test of the
        work; only one of them when the sizes are static (shape-specialized NumPy code), which
        also spares numba compiling a parallel region that would never run. At most
        MAX_PARALLEL_NESTS loop nests per kernel get a parallel version: the first ones, or
        those in `parallel_choice` (see generate_source); `rows_of_sums` marks a nest of
        row reductions over run-time sizes, counted as large."""
        if all(ir.is_const(d) for d in dims):
            total = int(np.prod([d.attr for d in dims], dtype=np.int64))
            if total < PARALLEL_MIN_WORK:
                return serial()
        request = len(self.parallel_requests)
        self.parallel_requests.append((parallel_budget.work_estimate(dims),
                                       rows_of_sums or parallel_budget.surely_large(dims)))
        if self.parallel_choice is not None:
            if request not in self.parallel_choice:
                return serial()
        elif self.parallel_budget <= 0:
            return serial()
        self.parallel_budget -= 1
        if all(ir.is_const(d) for d in dims):
            return parallel()
        return ([f"if {work} >= {PARALLEL_MIN_WORK}:"] + ["    " + ln for ln in parallel()]
                + ["else:"] + ["    " + ln for ln in serial()])

    def nest(self, group, outer, parallel: bool) -> list:
        """The loops of one group: outer loops, then each member in order inside them."""
        p = len(outer)
        names: dict = {}
        hoisted: dict = {lvl: [] for lvl in range(p)}
        member_lines: list = []
        members = list(group.members)
        k = 0
        while k < len(members):
            m = members[k]
            code = self.member_code(m, p, names, hoisted)
            if k + 1 < len(members) and self.reduces_row_of(members[k + 1], m, p):
                code = self.with_fused_reduction(members[k + 1], m, p, code)
                k += 1
            member_lines += code
            k += 1
        lines = list(hoisted.get(0, [])) if p else []
        indent = ""
        box = self.schedule.boxes.get(id(members[0]), {}) if len(members) == 1 else {}
        for k in range(p):
            rng = "prange" if (parallel and k == 0) else "range"
            header = f"{indent}for i{k} in {rng}({_bounds(box.get(k), outer[k])}):"
            jam = parallel and k == p - 1 and row_jam.jammable(self, group, p) and row_jam.jammed(
                header, f"i{k}", outer[k], hoisted.get(k + 1, []), member_lines)
            if jam:
                return lines + jam
            lines.append(header)
            indent += "    "
            lines += [indent + s for s in hoisted.get(k + 1, [])]
        lines += [indent + s for s in self.row_allocs]
        lines += [indent + s for s in member_lines]
        return lines

    def reduces_row_of(self, n, m, p: int) -> bool:
        """Whether member `n` reduces exactly the row member `m` just computed (softmax's sum
        of exp): a one-axis REDUCE of a one-inner-axis COMPUTE whose body loads m at
        [outer index..., reduction index], so it can accumulate inside m's own loop."""
        if (n.kind is not NodeKind.REDUCE or m.kind is not NodeKind.COMPUTE
                or len(n.rshape) != 1 or len(m.shape) != p + 1 or len(n.shape) < p
                or n.rshape[0] is not m.shape[p] or id(m) in self.locals
                or any(not ir.is_const(d, 1) for d in n.shape[p:])):  # keepdims: size 1
            return False
        body = self.schedule.resolved[id(n)]
        if body.op is not Scalar.LOAD or body.attr is not m or len(body.args) != p + 1:
            return False
        want = list(ir.axis_vars(p)) + [n.raxes[0]]
        return all(a is b for a, b in zip(body.args, want))

    def with_fused_reduction(self, n, m, p: int, code: list) -> list:
        """`code` of row member m with member n's reduction accumulated in m's loop (one
        pass over the row instead of two): init before the loop, a step after m's store,
        the result after the loop."""
        store = code[-1]
        indent = store[:len(store) - len(store.lstrip())]
        value = store.split(" = ", 1)[1]
        loop_at = max(i for i, line in enumerate(code) if line.lstrip().startswith("for "))
        outer_indent = code[loop_at][:len(code[loop_at]) - len(code[loop_at].lstrip())]
        acc = self.names.fresh("acc")
        dtype = m.dtype
        init = [outer_indent + s for s in scalar_code.reduce_init(n.attr, acc, dtype, self)]
        step = [indent + s for s in scalar_code.reduce_step(n.attr, acc, value, f"i{p}",
                                                            dtype)]
        result = scalar_code.reduce_result(n.attr, acc, n.dtype)
        return (code[:loop_at] + init + code[loop_at:] + step
                + [outer_indent + self.store(n, p, result).lstrip()])

    def member_code(self, m, p: int, names: dict, hoisted: dict) -> list:
        """Statements (inside the outer loops) computing member m.

        Statements that depend only on outer loops above the innermost are hoisted there;
        the rest stay in member order, so a member may use an earlier member's value."""
        body = self.schedule.resolved[id(m)]
        if m.kind is NodeKind.COMPUTE:
            inner_vars = [ir.axis_var(p + k) for k in range(len(m.shape) - p)]
            extents = list(m.shape[p:])
        else:
            inner_vars, extents = list(m.raxes), list(m.rshape)
        em = Emitter(self, list(ir.axis_vars(p)) + inner_vars)
        em.names = names
        value = em.value(body)
        for lvl in range(p):
            hoisted.setdefault(lvl, []).extend(em.take(lvl))
        out = em.take(p)
        acc = None
        if m.kind is NodeKind.REDUCE:
            acc = self.names.fresh("acc")
            dtype = body.dtype
            out += scalar_code.reduce_init(m.attr, acc, dtype, self)
        indent = ""
        box = self.schedule.boxes.get(id(m), {}) if m.kind is NodeKind.COMPUTE else {}
        for k, d in enumerate(extents):
            var = f"i{p + k}" if m.kind is NodeKind.COMPUTE else f"r{k}"
            out.append(f"{indent}for {var} in range({_bounds(box.get(p + k), self.size_text(d))}):")
            indent += "    "
            out += [indent + s for s in em.take(p + k + 1)]
        for key in [k for k, v in names.items() if v[1] > p]:
            del names[key]  # inner-loop temporaries go out of scope
        if m.kind is NodeKind.REDUCE:
            last = f"r{len(extents) - 1}" if extents else "0"
            out += [indent + s for s in scalar_code.reduce_step(m.attr, acc, value, last,
                                                                   body.dtype)]
            value, indent = scalar_code.reduce_result(m.attr, acc, m.dtype), ""
            idx = ", ".join([f"i{k}" for k in range(p)] + ["0"] * (len(m.shape) - p))
        else:
            idx = ", ".join(f"i{k}" for k in range(len(m.shape)))
        if id(m) in self.scratch_p:
            idx = ", ".join(idx.split(", ")[p:]) or "()"
        if id(m) in self.locals:
            out.append(f"{indent}{self.locals[id(m)]} = {value}")
        elif id(m) in self.scratch_p or not m.shape:
            out.append(f"{indent}{self.buffers[id(m)]}[{idx if m.shape else '()'}] = {value}")
        else:
            out.append(f"{indent}{self.indexed(m, idx.split(', '))} = {value}")
        return out

    def store(self, m, p: int, value: str, indent: str = "") -> str:
        """The statement storing member m's value at the current outer index."""
        if id(m) in self.locals:
            return f"{indent}{self.locals[id(m)]} = {value}"
        idx = [f"i{k}" for k in range(p)] + ["0"] * (len(m.shape) - p)
        if id(m) in self.scratch_p:
            idx = idx[p:]
        elif idx:
            return f"{indent}{self.indexed(m, idx)} = {value}"
        return f"{indent}{self.buffers[id(m)]}[{', '.join(idx) or '()'}] = {value}"

    def matmul_code(self, node) -> list:
        return matmul_code.matmul_lines(self, node)


def _bounds(box_range, extent: str) -> str:
    """range() arguments of a loop over `extent`, restricted to an in-place update's box."""
    if box_range is None:
        return extent
    lo, hi = box_range
    stop = extent if hi is None else f"min({hi}, {extent})"
    return stop if lo == 0 else f"{lo}, {stop}"


def generate_source(schedule: Schedule, name: str = "kernel") -> str:
    """The Python source of the kernel module for `schedule`.  When more loop nests could
    run in parallel than MAX_PARALLEL_NESTS, the source is generated again with the ones
    of the most work parallel, and beyond those up to MAX_LARGE_NESTS surely of at least
    LARGE_WORK elements or of row reductions over run-time sizes (parallel_budget.py).  The
    first ones, as the first pass has it, left 20 matrix-vector products of an unrolled
    power iteration on one thread after the fourth."""
    first = Generator(schedule, name)
    source = first.generate()
    requests = first.parallel_requests
    if len(requests) <= MAX_PARALLEL_NESTS:
        return source
    again = Generator(schedule, name, parallel_budget.choose(requests))
    second = again.generate()
    return second if len(again.parallel_requests) == len(requests) else source


def numpy_dtype_name(dtype) -> str:
    return np.dtype(dtype.np_dtype).name
