"""A readable, target-neutral text of a loop program: the pipeline's "loop IR" stage
(docs/architecture.md, principle 3: every stage can be dumped).

The text shows the structure a target renders: `parallel for i0 in [0, n):`, lets,
stores `buf[i0] <- v`, accumulator steps `acc <-add v`, branches, calls and the opaque
statements a target wrote itself (marked `verbatim`).  One table per node kind (no string
dispatch); it is for people, not parsed back.
"""

from __future__ import annotations

from .loop_ir import ExprKind, IndexOpKind, LoopProgram, StmtKind


def expr_text(e) -> str:
    """Text of one loop-IR expression."""
    return _EXPR[e.kind](e)


def _args(e) -> str:
    return ", ".join(expr_text(a) for a in e.args)


def _index(e) -> str:
    if e.op in (IndexOpKind.MIN, IndexOpKind.MAX):
        return f"{e.op.value}({_args(e)})"
    if e.op is IndexOpKind.NOT:
        return f"not {expr_text(e.args[0])}"
    return "(" + f" {e.op.value} ".join(expr_text(a) for a in e.args) + ")"


_EXPR = {
    ExprKind.VAR: lambda e: e.name,
    ExprKind.INT: lambda e: str(e.value),
    ExprKind.DIM: lambda e: f"dim({e.buffer}, {e.axis})",
    ExprKind.LOAD: lambda e: f"{e.buffer}[{', '.join(map(expr_text, e.indices))}]",
    ExprKind.SCALAR: lambda e: f"{e.op.value}:{e.dtype.name}({_args(e)})",
    ExprKind.INDEX: _index,
    ExprKind.CALL: lambda e: f"call {e.fn}({_args(e)})",
    ExprKind.ACC_RESULT: lambda e: f"result({e.combiner.value}, {e.acc}):{e.dtype.name}",
    ExprKind.SOURCE: lambda e: f"`{e.text}`",
}


def _loop(s, ind):
    tags = "".join(f"  # {t.value}" for t in sorted(s.tags, key=lambda t: t.value))
    return [f"{ind}{s.loop_kind.value} for {s.var} in [{expr_text(s.start)}, "
            f"{expr_text(s.stop)}):{tags}"] + _lines(s.body, ind + "  ")


def _if(s, ind):
    out = [f"{ind}if {expr_text(s.cond)}:"] + _lines(s.then, ind + "  ")
    if s.orelse:
        out += [f"{ind}else:"] + _lines(s.orelse, ind + "  ")
    return out


_STMT = {
    StmtKind.LOOP: _loop,
    StmtKind.WHILE: lambda s, ind: [f"{ind}while {expr_text(s.cond)}:"]
    + _lines(s.body, ind + "  "),
    StmtKind.LET: lambda s, ind: [f"{ind}{s.name} = {expr_text(s.value)}"],
    StmtKind.STORE: lambda s, ind: [
        f"{ind}{s.buffer}[{', '.join(map(expr_text, s.indices))}] <- {expr_text(s.value)}"],
    StmtKind.ACCUMULATE: lambda s, ind: [
        f"{ind}{s.acc} <-{s.combiner.value} {expr_text(s.value)} at {expr_text(s.index)}"],
    StmtKind.IF: _if,
    StmtKind.CHECK: lambda s, ind: [f"{ind}check {expr_text(s.cond)}: {s.message!r}"],
    StmtKind.ALLOC: lambda s, ind: [f"{ind}array {s.name} = {expr_text(s.value)}"],
    StmtKind.DO: lambda s, ind: [f"{ind}{expr_text(s.call)}"],
    StmtKind.COMMENT: lambda s, ind: [f"{ind}# {s.text}"],
    StmtKind.RETURN: lambda s, ind: [f"{ind}return {', '.join(map(expr_text, s.values))}"],
    StmtKind.VERBATIM: lambda s, ind: [f"{ind}verbatim: {line}" for line in s.lines],
}


def _lines(body, ind: str) -> list:
    out = []
    for s in body:
        out += _STMT[s.kind](s, ind)
    return out


def loop_program_text(program: LoopProgram) -> str:
    """The whole program: constants, then the function."""
    subs = [loop_program_text(f) + "\n" for f in program.functions]
    head = [f"const {name} = {value}" for name, value in program.constants]
    sig = f"function {program.name}({', '.join(program.params)}):"
    return "\n".join(subs + head + [sig] + _lines(program.body, "  "))
