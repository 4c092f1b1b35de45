"""CPU code generation: a `Schedule` becomes a loop program, then the source of ONE numba
function.

`Generator.generate()` builds the loop program (compiler/loop_ir.py) of the kernel: typed
constants, then `def kernel(in0, in1, ...)` that reads sizes, checks them, allocates outputs
and runs each loop group.  Each group is built twice, under `if work >= PARALLEL_MIN_WORK:`
with a PARALLEL outer loop and otherwise with SERIAL ones, so small inputs never pay for the
thread pool (the choice is made at run time from the sizes).  Scalar code is one operation
per statement, each hoisted to the outermost loop it depends on. Float reductions accumulate
with `radd`/`rmax`/`rmin` (reduce_steps.py), so their loops vectorize without fastmath on
anything else; every buffer is allocated with `empty_buffer` (large_buffers.py), which
recycles large blocks through the buffer pool. Statements come from emitter.py, the choice
of parallel nests from parallel_budget.py.

The CPU passes of `LOOP_PASSES` then transform the loop program (`tile`: nests that read an
array across rows, such as `a + a.T`, in tiles: compiler/loop_tile.py; row_jam.jam_rows:
unroll-and-jam of row reductions; vector_width.widen: `wide_vectors()` first in the kernel
and in every parallel loop body; outline.outline: a long program cut into functions of a
few loop nests) and render.py prints it; nothing edits the text afterwards
(docs/architecture.md: target-specific transformations are passes over the loop IR).

This module sees only kernel IR (`compiler.core.ir`) and the schedule; it knows no graph ops.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ...compiler.core import ir
from ...compiler.core.ir import NodeKind, Scalar
from ...compiler.loop_ir import (Alloc, Call, Check, Comment, If, IndexOpKind, Int, Load,
                                 LoopKind, LoopProgram, Return, Source, StmtKind, Var,
                                 index_op)
from ...compiler.loop_text import loop_program_text
from ...compiler.loop_tile import tile_nests
from ...compiler.loop_verify import run_passes
from ...compiler.loop_walk import map_body
from ...compiler.schedule import Schedule, resolve
from ...compiler.tiers import Tier
from . import (library_code, matmul_code, parallel_budget, reduce_nests, render, row_jam,
               scalar_code, scatter_code, vector_width, while_code)
from .emitter import Emitter, Names
from .nest_code import nest_code
from .outline import outline
from .parallel_budget import MAX_PARALLEL_NESTS

PARALLEL_MIN_WORK = 1 << 16  # elements: below this a loop nest runs on one thread
# In a while loop's condition and body a parallel region is launched at every iteration,
# and each launch waits for every thread of the pool: on a busy machine one that is not
# running costs a scheduler slice (milliseconds), at every iteration.  Loop nests of a
# per-iteration function go parallel from this much work only (products: matmul_code.py).
PER_ITERATION_PARALLEL_MIN_WORK = 1 << 20

TILE = 64   # iterations per side of a tile of a nest that reads across rows (loop_tile.py)


def tile(program: LoopProgram) -> LoopProgram:
    """compiler/loop_tile.tile_nests with the CPU's tile: TILE x TILE iterations keep the
    rows of a transposed read in cache (the L2 holds them) while a tile of columns runs."""
    return tile_nests(program, TILE)


LOOP_PASSES = (("tile", tile), ("jam_rows", row_jam.jam_rows), ("widen", vector_width.widen),
               ("outline", outline))


class Generator:
    """State of generating one kernel's loop program."""

    def __init__(self, schedule: Schedule, name: str = "kernel", parallel_choice=None,
                 quick: bool = False, per_iteration: bool = False):
        self.schedule = schedule
        # a while loop's condition or body (while_code.py): run once per iteration
        self.per_iteration = per_iteration
        self.parallel_min_work = (PER_ITERATION_PARALLEL_MIN_WORK if per_iteration
                                  else PARALLEL_MIN_WORK)
        self.quick = quick   # Tier.QUICK: serial nests only, products through BLAS
        self.parallel_choice = frozenset() if quick else parallel_choice  # indices of
        # branch() calls made parallel
        self.parallel_requests: list = []       # (work estimate, surely large) per branch()
        self.program = schedule.program
        self.name = name
        self.names = Names()
        self.parallel_budget = MAX_PARALLEL_NESTS
        self.constants: dict = {}
        self.const_lines: list = []  # (name, literal) pairs
        self.buffers: dict = {}      # id(node) -> array variable name
        self.locals: dict = {}       # id(node) -> scalar variable name (current group)
        self.scratch_p: dict = {}    # id(node) -> outer rank, for per-row scratch buffers
        self.squeezed: dict = {}     # id(node) -> (view without its size-1 axes, axes kept)
        self.row_allocs: list = []
        self.functions: list = []    # LoopPrograms the kernel calls (while_code.py)
        self.while_vars: dict = {}   # id(WHILE node) -> its loop variables' names
        self.tier = Tier.QUICK if quick else Tier.OPTIMIZED
        # constants of a loop's condition and body live in the kernel's module too
        self.const_prefix = "C" if name == "kernel" else f"{name}_C"

    # --- naming ---------------------------------------------------------------------------
    def constant(self, value, dtype) -> str:
        key = (repr(value), dtype.name)
        name = self.constants.get(key)
        if name is None:
            name = f"{self.const_prefix}{len(self.constants)}"
            self.constants[key] = name
            self.const_lines.append((name, scalar_code.literal(value, dtype)))
        return name

    def load_expr(self, node, args):
        """The loop-IR value of `node` at indices `args` (a local's variable, a scratch
        row's element, a buffer's element)."""
        name = self.locals.get(id(node))
        if name is not None:
            return Var(name)
        p = self.scratch_p.get(id(node))
        if p is not None:
            args = args[p:]
        if not args:
            return Load(self.buffers[id(node)], ())
        return self.indexed(node, args)

    def indexed(self, node, args):
        """A load of `node`'s buffer at `args` (one index per axis), through its squeezed
        view (see `allocate`) when it has one."""
        view = self.squeezed.get(id(node))
        if view is not None:
            name, kept = view
            return Load(name, tuple(args[k] for k in kept))
        return Load(self.buffers[id(node)], tuple(args))

    def emitter(self, loop_vars, unsigned_index: bool = False) -> Emitter:
        """A statement emitter for a loop nest over `loop_vars` (outermost first); with
        `unsigned_index`, every load indexes with unsigned indices (`emitter.unsigned`)."""
        return Emitter(self, loop_vars, unsigned_index)

    def size(self, e):
        """The loop-IR value of size expression `e`: its statements go to the prologue, or,
        when it loads a value the kernel computes (a Fill's dims built in the cluster),
        before the code of the loop nest being generated."""
        em = Emitter(self, ())
        value = em.value(e)
        computed = any(x.op is Scalar.LOAD and x.attr.kind is not NodeKind.INPUT
                       for x in ir.walk(e))
        sink = getattr(self, "_size_sink", None)
        (sink if computed and sink is not None else self._prologue).extend(em.take(0))
        return value

    def size_text(self, e) -> str:
        """`size(e)` as source text, for the emitters that still write text (Verbatim)."""
        return render.expr(self.size(e))

    def text(self, value) -> str:
        """Loop-IR expression `value` as source text (for Source and Verbatim parts)."""
        return render.expr(value)

    def work(self, dims):
        """The product of sizes `dims` (1 without any)."""
        sizes = [self.size(d) for d in dims]
        if not sizes:
            return Int(1)
        return sizes[0] if len(sizes) == 1 else index_op(IndexOpKind.MUL, *sizes)

    # --- module ---------------------------------------------------------------------------
    def generate(self) -> LoopProgram:
        """The kernel's loop program (before the CPU passes)."""
        p = self.program
        params = tuple(f"in{n.attr[0]}" for n in p.inputs)
        for n in p.inputs:
            self.buffers[id(n)] = f"in{n.attr[0]}"
        self._prologue: list = []
        body: list = []
        data_checks = []
        for cond, message in p.checks:
            if any(e.op is Scalar.LOAD for e in ir.walk(cond)):
                data_checks.append((cond, message))
                continue
            self._prologue.append(Check(self.size(cond), message))
        body.extend(self.ready_checks(data_checks))
        self.absorbed: dict = {}   # id(node) -> where its nest went (another group's code)
        for gi, group in enumerate(self.schedule.groups):
            if id(group.members[0]) in self.absorbed:
                body.append(Comment(f"loop nest {gi}: {group.members[0].name}, "
                                    f"{self.absorbed[id(group.members[0])]}"))
                continue
            body.append(Comment(f"loop nest {gi}: {', '.join(m.name for m in group.members)}"))
            self._size_sink = []
            code = self.group_code(group)
            body.extend(self._size_sink + code)
            self._size_sink = None
            body.extend(self.ready_checks(data_checks))
        if data_checks:
            raise NotImplementedError(f"check {data_checks[0][1]!r} reads values no loop "
                                      "nest stores")
        outs, seen = [], set()
        for o in p.outputs:
            value = Var(self.buffers[id(o)])
            aliases_input = o.kind is NodeKind.RESHAPE and o.inputs[0].kind is NodeKind.INPUT
            if o.kind is NodeKind.INPUT or aliases_input or id(o) in seen:
                value = Call(f"{value.name}.copy")  # never hand back an input or an alias
            seen.add(id(o))
            outs.append(value)
        return LoopProgram(self.name, params, tuple(self.const_lines),
                           tuple(self._prologue + body + [Return(tuple(outs))]),
                           tuple(self.functions))

    def ready_checks(self, pending: list) -> list:
        """Checks for the data-dependent conditions (that load computed values) whose
        values exist now; they are removed from `pending`."""
        stmts = []
        for item in list(pending):
            cond = resolve(item[0], self.schedule.inline, {})
            loaded = [e.attr for e in ir.walk(cond) if e.op is Scalar.LOAD]
            if all((id(n) in self.locals and not n.shape) or  # a rank-0 local: no loop
                   (id(n) in self.buffers and id(n) not in self.scratch_p) for n in loaded):
                em = Emitter(self, ())
                value = em.value(cond)
                stmts += em.take(0) + [Check(value, item[1])]
                pending.remove(item)
        return stmts

    def allocate(self, node) -> list:
        """Statements allocating `node`'s buffer (none when it takes a donor's)."""
        donor = self.schedule.reuse.get(id(node))
        if donor is not None:
            self.buffers[id(node)] = self.buffers[id(donor)]
            return []
        name = self.names.fresh("buf")
        self.buffers[id(node)] = name
        dims = [self.size_text(d) for d in node.shape]
        shape = "(" + "".join(f"{d}, " for d in dims) + ")"
        stmts = [Alloc(name, Call("empty_buffer", (Source(shape),
                                                   Source(f"np.{node.dtype.np_dtype.name}"))))]
        kept = [k for k, d in enumerate(node.shape) if not ir.is_const(d, 1)]
        if kept and len(kept) < len(node.shape):
            # Loops read and write it through a view without its size-1 axes: inside a
            # parallel loop (numba's outlined function) a size is no constant, so `buf[r,
            # 0]` of an (n, 1) buffer has a stride LLVM cannot see.  (No speed change
            # was measured from this on the power iteration; its slowness had another
            # cause, the parallel-region budget.)
            view = f"{name}v"
            self.squeezed[id(node)] = (view, kept)
            stmts.append(Alloc(view, Call(f"{name}.reshape", (
                Source(f"({''.join(dims[k] + ', ' for k in kept)})"),))))
        return stmts

    # --- groups ---------------------------------------------------------------------------
    def absorb(self, node, where: str, emit: bool = True) -> list:
        """The one-member nest computing `node` in place of the product whose buffer it
        takes, absorbed into that product's code (a GEMM epilogue, `where` says how): its
        code now when `emit` (for the branch where BLAS computed the product), and nothing
        at its own place in the group order."""
        group = next(g for g in self.schedule.groups if g.members == [node])
        self.absorbed[id(node)] = where
        stmts = self.group_code(group) if emit else []
        self.buffers[id(node)] = self.buffers[id(self.schedule.reuse[id(node)])]
        return stmts

    def group_code(self, group) -> list:
        """Statements of one loop group."""
        node = group.members[0]
        if group.kind == "matmul":
            return matmul_code.matmul_lines(self, node)
        if group.kind == "scatter":
            return scatter_code.scatter_lines(self, node)
        if group.kind == "libcall":
            return library_code.libcall_lines(self, node)
        if group.kind == "while":
            return while_code.while_lines(self, node)
        if group.kind == "while_out":
            return while_code.while_out_lines(self, node)
        if group.kind == "reshape":
            src = self.buffers[id(node.inputs[0])]
            name = self.names.fresh("buf")
            self.buffers[id(node)] = name
            shape = "".join(self.size_text(d) + ", " for d in node.shape)
            return [Alloc(name, Source(f"np.ascontiguousarray({src}).reshape(({shape}))"))]
        if reduce_nests.is_column_group(self.schedule, group):
            return reduce_nests.column_reduce_code(self, group)
        if reduce_nests.is_full_group(self.schedule, group):
            return reduce_nests.full_reduce_code(self, group)
        return nest_code(self, group)

    def branch(self, dims, work, parallel, serial, rows_of_sums: bool = False,
               dims_decide: bool = True) -> list:
        """The parallel and the serial version of a loop nest under a run-time test of the
        work; only one of them when the sizes are static (shape-specialized NumPy code), which
        also spares numba compiling a parallel region that would never run. At most
        MAX_PARALLEL_NESTS loop nests per kernel get a parallel version: the first ones, or
        those in `parallel_choice` (see generate_source); `rows_of_sums` marks a nest of
        row reductions over run-time sizes, counted as large.  `dims_decide=False`: `work`
        is not the product of `dims` (an update of a box known at run time), so static dims
        never decide."""
        static = dims_decide and all(ir.is_const(d) for d in dims)
        if static:
            total = int(np.prod([d.attr for d in dims], dtype=np.int64))
            if total < self.parallel_min_work:
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
        if static:
            return parallel()
        large = index_op(IndexOpKind.GE, work, Int(self.parallel_min_work))
        return [If(large, tuple(parallel()), tuple(serial()))]


def quick_loop_program(schedule: Schedule, name: str = "kernel") -> LoopProgram:
    """The loop program of the quick tier (compiler/tiers.py): one serial version of every
    nest, matrix products through one BLAS call each, and the loops that other code paths
    (sorts, scatters, batched products) mark parallel made serial, so numba compiles no
    parallel region at all (its parallel lowering is a third of a cold compile)."""
    program = Generator(schedule, name, quick=True).generate()
    return dataclasses.replace(program, body=map_body(program.body, _serial))


def _serial(stmt) -> tuple:
    if stmt.kind is StmtKind.LOOP and stmt.loop_kind is LoopKind.PARALLEL:
        return (dataclasses.replace(stmt, loop_kind=LoopKind.SERIAL),)
    return (stmt,)


def loop_program(schedule: Schedule, name: str = "kernel",
                 per_iteration: bool = False) -> LoopProgram:
    """The kernel's loop program, before the CPU passes.  When more loop nests could run in
    parallel than MAX_PARALLEL_NESTS, it is generated again with the ones of the most work
    parallel, and beyond those up to MAX_LARGE_NESTS surely of at least LARGE_WORK elements
    or of row reductions over run-time sizes (parallel_budget.py).  The first ones, as the
    first pass has it, left 20 matrix-vector products of an unrolled power iteration on one
    thread after the fourth."""
    first = Generator(schedule, name, per_iteration=per_iteration)
    program = first.generate()
    requests = first.parallel_requests
    if len(requests) <= MAX_PARALLEL_NESTS:
        return program
    again = Generator(schedule, name, parallel_budget.choose(requests),
                      per_iteration=per_iteration)
    second = again.generate()
    return second if len(again.parallel_requests) == len(requests) else program


def lowered_loop_program(schedule: Schedule, name: str = "kernel",
                         tier: Tier = Tier.OPTIMIZED, per_iteration: bool = False) -> LoopProgram:
    """The kernel's loop program at `tier` after the CPU passes of LOOP_PASSES (verified
    after each one when FLOWJIT_VERIFY_LOOP_IR is set: compiler/loop_verify.py);
    `per_iteration`: a while loop's condition or body (PER_ITERATION_PARALLEL_MIN_WORK)."""
    if tier is Tier.QUICK:
        return run_passes(quick_loop_program(schedule, name), LOOP_PASSES)
    return run_passes(loop_program(schedule, name, per_iteration), LOOP_PASSES)


def generate_source(schedule: Schedule, name: str = "kernel", stages=None,
                    tier: Tier = Tier.OPTIMIZED) -> str:
    """The Python source of the kernel module for `schedule` at `tier`; with `stages` (a
    dict), its loop program's text is recorded there under "loop IR"."""
    program = lowered_loop_program(schedule, name, tier)
    if stages is not None:
        stages["loop IR"] = loop_program_text(program)
    return render.render(program)


def numpy_dtype_name(dtype) -> str:
    """NumPy's name of a flowjit dtype (`float32`)."""
    return np.dtype(dtype.np_dtype).name
