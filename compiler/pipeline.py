"""The compiler pipeline: every stage, in order, by name; each can be dumped.

`compile_cluster(ops, inputs, specs, outputs)` lowers a cluster of graph ops to kernel IR,
runs the IR passes of `PASSES` in order, schedules (fusion and loop grouping, then tiling
and memory planning decisions recorded on the schedule), generates the CPU module and
builds it.  `Stages` keeps the text of every stage (the loop IR among them:
compiler/loop_ir.py); `FLOWJIT_DUMP=<dir>` writes them to
files as they are produced (DESIGN.md principles 3 and 7).
"""

from __future__ import annotations

import dataclasses
import os

from . import passes
from .core import ir
from .core.ir_text import program_text
from .lowering import lower_cluster
from .schedule import make_schedule

PASSES = (
    ("constant_fold", passes.constant_fold),
    ("simplify", passes.simplify),
    ("cse", passes.eliminate_common_subexpressions),
    ("dce", passes.eliminate_dead_code),
)


@dataclasses.dataclass
class Stages:
    """Readable text of each pipeline stage, in order."""

    items: list = dataclasses.field(default_factory=list)

    def add(self, name: str, text):
        """Record stage `name`; `text` may be a function giving it, called when the text
        is first wanted (a stage that costs work to print, skipped on a cache hit)."""
        self.items.append((name, text))
        dump_dir = os.environ.get("FLOWJIT_DUMP")
        if dump_dir:
            os.makedirs(dump_dir, exist_ok=True)
            index = len(self.items)
            if callable(text):   # dumping wants it now
                text = text()
                self.items[-1] = (name, text)
            with open(os.path.join(dump_dir, f"{index:02d}_{name}.txt"), "w") as f:
                f.write(text + "\n")

    def text(self, name: str) -> str:
        for k, (n, t) in enumerate(self.items):
            if n == name:
                if callable(t):
                    t = t()
                    self.items[k] = (n, t)
                return t
        raise KeyError(name)

    def __str__(self):
        return "\n\n".join(f"=== {n} ===\n{self.text(n)}" for n, _ in self.items)


@dataclasses.dataclass
class CompiledCluster:
    """A compiled cluster: call `kernel(*inputs, *constants)` to get a tuple of outputs."""

    kernel: object
    source: str
    constants: list
    stages: Stages
    schedule: object


def optimize(program, stages: Stages):
    """Run every IR pass in order, recording each result."""
    for name, fn in PASSES:
        program = fn(program)
        stages.add(name, program_text(program))
    return program


def schedule_text(schedule) -> str:
    lines = ["fusion and grouping decisions:"] + [f"  {n}" for n in schedule.notes]
    for gi, g in enumerate(schedule.groups):
        members = ", ".join(m.name + (" (register)" if id(m) in schedule.local else "")
                            for m in g.members)
        lines.append(f"loop nest {gi} [{g.kind}] outer dims {len(g.outer)}: {members}; "
                     f"outer loop parallel when the work is large")
    return "\n".join(lines)


def compile_program(program, constants=(), stages: Stages | None = None):
    """Optimize, schedule, generate and build a kernel-IR program."""
    from ..targets.cpu.build import build_cached

    stages = stages if stages is not None else Stages()
    program = optimize(program, stages)
    program, constants = drop_unused_constants(program, list(constants))
    schedule = make_schedule(program)
    stages.add("schedule", schedule_text(schedule))
    generated: dict = {}
    kernel, source = build_cached(program, lambda: _generate(schedule, generated))
    stages.add("loop IR", generated.get("loop IR") or (lambda: _loop_ir_text(schedule)))
    stages.add("source", source)
    return CompiledCluster(kernel, source, list(constants), stages, schedule)


def drop_unused_constants(program, constants: list):
    """(program, constants) without the constant inputs no node reads any more (e.g. the
    paddings of a Pad, read while lowering), so the kernel takes only the arrays it uses.
    Constants are the last inputs; kept inputs keep their positions (and parameter names)."""
    from .core.ir import Program, Scalar, walk

    n_user = len(program.inputs) - len(constants)
    used = {id(n) for n in program.nodes()}
    for cond, _ in program.checks:
        used.update(id(e.attr) for e in walk(cond) if e.op is Scalar.LOAD)
    keep = [k for k in range(len(constants)) if id(program.inputs[n_user + k]) in used]
    if len(keep) == len(constants):
        return program, constants
    inputs = list(program.inputs[:n_user]) + [program.inputs[n_user + k] for k in keep]
    return (Program(inputs, program.outputs, program.checks, program.donated),
            [constants[k] for k in keep])


def _generate(schedule, stages: dict) -> str:
    from ..targets.cpu.codegen import generate_source  # imports numba: only on a cache miss

    return generate_source(schedule, stages=stages)


def _loop_ir_text(schedule) -> str:
    """The loop IR of a kernel loaded from the cache, built when someone asks for it."""
    from ..targets.cpu.codegen import generate_source  # imports numba: only when asked

    generated: dict = {}
    generate_source(schedule, stages=generated)
    return generated["loop IR"]


def compile_cluster(ops, input_tensors, input_specs, output_tensors, graph_text: str = "",
                    donated=()):
    """Lower one cluster of graph ops and compile it (see compile_program). `donated`:
    (input position, output index) pairs whose input arrays the caller lets the kernel
    overwrite with that output (ir.Program.donated)."""
    stages = Stages()
    if graph_text:
        stages.add("graph", graph_text)
    program, constants = lower_cluster(ops, input_tensors, input_specs, output_tensors)
    if donated:
        program = ir.Program(program.inputs, program.outputs, program.checks, donated)
    stages.add("lowered", program_text(program))
    return compile_program(program, [c for _, c in constants], stages)
