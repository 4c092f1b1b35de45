"""CPU code of a structured while loop (a WHILE node of the kernel IR and its WHILE_OUT
values): a `while` statement inside the kernel, calling the loop's condition and body.

The condition and the body are closed kernel-IR programs (compiler/core/ir.py `WhileSpec`).
Each is scheduled with the kernel's own schedule options and generated into a function of
its own by the same code generator (codegen.py, at the kernel's tier; it runs once per
iteration, so only larger loop nests and products go parallel there: a parallel region per
iteration waits for every thread each time), named
`<kernel>_w<k>_cond` / `_body` with module-level constants of its own prefix; the kernel's
loop program lists them in `functions`, render.py writes them before the kernel, and
build.py compiles them with numba before it, so the kernel calls them as compiled functions
(numba links them into the kernel's object code, which the disk cache stores whole).  The
loop in the kernel:

    var0 = init0.copy(); ...               # the loop variables (never the caller's arrays)
    go = cond(var0, ..., captured...)[0][()]
    while go:
        res = body(var0, ..., captured...)
        var0 = res[0]; ...
        go = cond(var0, ..., captured...)[0][()]

so no iteration leaves the kernel (docs/architecture.md, "Control flow").  The WHILE_OUT
values are the loop variables' final arrays.  A body returns new arrays (never an argument:
codegen copies an output that is an input), so rebinding is safe.
"""

from __future__ import annotations

from ...compiler.loop_ir import Alloc, Comment, Let, Source, Var, While
from ...compiler.schedule import make_schedule


def while_lines(gen, node) -> list:
    """Statements running WHILE node `node` in generator `gen`'s kernel; records the loop
    variables' names for its WHILE_OUT nodes (`gen.while_vars`)."""
    from .codegen import lowered_loop_program   # codegen imports this module

    spec = node.attr
    n = spec.n_carried
    base = f"{gen.name}_w{len(gen.functions) // 2}"
    programs = []
    for part, program in (("cond", spec.cond), ("body", spec.body)):
        schedule = make_schedule(program, gen.schedule.options)
        programs.append(lowered_loop_program(schedule, f"{base}_{part}", gen.tier,
                                             per_iteration=True))
    gen.functions.extend(programs)
    cond_name, body_name = (p.name for p in programs)
    carried = [gen.names.fresh("var") for _ in range(n)]
    gen.while_vars[id(node)] = carried
    args = ", ".join(carried + [gen.buffers[id(x)] for x in node.inputs[n:]])
    go, result = gen.names.fresh("go"), gen.names.fresh("res")
    test = Let(go, Source(f"{cond_name}({args})[0][()]"))
    stmts = [Comment(f"while loop {node.name}: {n} loop variables")]
    stmts += [Alloc(c, Source(f"{gen.buffers[id(x)]}.copy()"))
              for c, x in zip(carried, node.inputs[:n])]
    step = [Alloc(result, Source(f"{body_name}({args})"))]
    step += [Alloc(c, Source(f"{result}[{k}]")) for k, c in enumerate(carried)]
    return stmts + [test, While(Var(go), tuple(step + [test]))]


def while_out_lines(gen, node) -> list:
    """A WHILE_OUT value is its loop variable's final array: no statement."""
    gen.buffers[id(node)] = gen.while_vars[id(node.inputs[0])][node.attr]
    return []
