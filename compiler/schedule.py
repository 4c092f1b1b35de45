"""Fusion and loop grouping: decide which IR nodes get buffers and which loop nests hold them.

Input: a simplified `Program`.  Output: a `Schedule` —
- `inline`: nodes folded into every consumer's expression (elementwise fusion; also
  elementwise producers of reductions, so they fuse into the reduction loop);
- `groups`: loop nests in execution order.  A group shares an *outer* iteration space;
  its members are materialized nodes computed inside it, one after another per outer
  index.  So softmax becomes one group over rows holding max-reduce, sum-reduce and the
  normalizing loop (reduction fusion with broadcast-back consumers), and two elementwise
  outputs of one shape share one loop (multi-output fusion);
- `local`: group members only read inside their group at the current outer index: kept in
  a scalar variable, never stored;
- `notes`: why each pair of neighbouring nodes was or was not fused (for `lower()`).

Rules (each recorded in `notes` when it splits a fusion):
- program outputs, REDUCE, MATMUL, RESHAPE, SCATTER, LIBCALL, WHILE_OUT and the inputs of
  MATMUL, RESHAPE, SCATTER, LIBCALL and WHILE are materialized (a WHILE is a group of its
  own, "while", whose condition and body the target schedules as programs of their own);
- a COMPUTE read by several consumers is materialized if it is expensive (transcendental
  functions or a body of more than 12 operations), otherwise recomputed in each;
- a COMPUTE read broadcast, by a consumer looping over an axis outside the ones it is read
  at, is materialized unless it is cheap (at most 4 operations, none a division, root,
  power or transcendental function): inlined, it would be recomputed along that axis;
- a node joins the current group when its leading dimensions are the group's outer space
  and it reads earlier members only at the current outer index;
- a *column reduction* (`is_column_reduction`: e.g. `x.sum(axis=0)` of a row-major matrix)
  is a loop nest of its own, joining no group and joined by none, when the target asks for
  it (`ScheduleOptions.column_reductions`, the CPU target's choice).  Fused with its consumers
  its outer loop would have to run over columns, each reduction walking a column with the
  row stride; alone, the target interchanges its loops so rows run outside and the
  contiguous columns inside (accumulating a row of partial results), and the consumers run
  over the reduced row in the following loop nest.

Target hooks: the choices above that only pay off for one kind of machine are switched by
the target's `ScheduleOptions` (targets/target.py hands them over; docs/architecture.md:
compiler/ makes no target-specific decision on its own): column-reduction nests, and
whether GEMM epilogues are looked for (compiler/gemm_epilogue.py).  The default options
switch both off, a plain target-neutral schedule.
"""

from __future__ import annotations

import dataclasses

from .core import ir
from . import dynamic_boxes
from .box_updates import find_box_update
from .equal_dims import SizeClasses
from .gemm_epilogue import find_epilogues
from .core.ir import Node, NodeKind, Scalar

# nodes computed by a call of their own (a group each), whose inputs are materialized
_CALL_KINDS = (NodeKind.MATMUL, NodeKind.RESHAPE, NodeKind.SCATTER, NodeKind.LIBCALL,
               NodeKind.WHILE, NodeKind.WHILE_OUT)

_EXPENSIVE_BODY = 12


@dataclasses.dataclass(frozen=True)
class ScheduleOptions:
    """What a target asks of the schedule (module docstring, "Target hooks").

    column_reductions: give each column reduction a loop nest of its own, which the target
    interchanges (rows outside, contiguous columns inside).
    gemm_epilogues: record the elementwise nests a GEMM may apply to its tiles
    (`Schedule.epilogues`), for a target whose matrix product takes them.
    """

    column_reductions: bool = False
    gemm_epilogues: bool = False


@dataclasses.dataclass
class Group:
    """One loop nest: `outer` dims shared by `members` (materialized nodes, in order)."""

    outer: tuple
    members: list
    kind: str = "loop"           # "loop" | "matmul" | "reshape"
    parallel: str = "outer"      # which loop may run in parallel (decided at run time)


@dataclasses.dataclass
class Schedule:
    program: ir.Program
    inline: set                  # ids of inlined nodes
    groups: list
    local: set                   # ids of group members kept in registers
    notes: list
    scratch: set = dataclasses.field(default_factory=set)  # per-row scratch buffers
    reuse: dict = dataclasses.field(default_factory=dict)  # id(node) -> node whose buffer it takes
    resolved: dict = dataclasses.field(default_factory=dict)  # id -> body, loads resolved
    boxes: dict = dataclasses.field(default_factory=dict)  # id(node) -> {axis: (lo, hi)}
    # id(node) -> bool Expr: a run-time box update runs in place only where it holds
    box_guards: dict = dataclasses.field(default_factory=dict)
    epilogues: dict = dataclasses.field(default_factory=dict)  # id(matmul) -> Epilogue
    sizes: SizeClasses | None = None  # sizes the program's checks prove equal
    options: ScheduleOptions = ScheduleOptions()  # the target's requests


def _body_cost(node: Node) -> tuple:
    ops, transcendental = 0, False
    if node.body is None:
        return 0, False
    for e in ir.walk(node.body):
        if e.args and e.op is not Scalar.LOAD:
            ops += 1
        if e.op in ir.TRANSCENDENTAL:
            transcendental = True
    return ops, transcendental


def _loads(node: Node):
    """(producer, index tuple) for every load in node's body and shape."""
    if node.body is None:
        return []
    return [(e.attr, e.args) for e in ir.walk(node.body) if e.op is Scalar.LOAD]


def _read_by_sizes(program: ir.Program, nodes) -> set:
    """Ids of the nodes that a node's shape or a check loads (a Fill whose dims are computed
    in the kernel): those are read before their readers' loops, as whole values, so they
    are materialized, never fused."""
    exprs = [d for n in nodes for d in n.shape + n.rshape] + [c for c, _ in program.checks]
    return {id(e.attr) for x in exprs for e in ir.walk(x) if e.op is Scalar.LOAD}


def _select_pieces(nodes) -> set:
    """Ids of COMPUTE nodes that a consumer reads only inside the arms of its selects, when
    it has two or more such producers (a concat of computed pieces, the gradient of a
    split).  A loop nest evaluates both arms of a select, so a costly piece fused there
    would be computed for every element of the whole: decide_inlining gives it a buffer."""
    out = set()
    for u in nodes:
        if u.body is None:
            continue
        unguarded, stack, seen = set(), [u.body], set()
        while stack:   # the loads reached without entering a select's arms
            e = stack.pop()
            if id(e) in seen:
                continue
            seen.add(id(e))
            if e.op is Scalar.LOAD:
                unguarded.add(id(e.attr))
            stack.extend(e.args[:1] if e.op is Scalar.SELECT else e.args)
        guarded = {id(p) for p, _ in _loads(u)
                   if id(p) not in unguarded and p.kind is NodeKind.COMPUTE}
        if len(guarded) >= 2:
            out.update(guarded)
    return out


def decide_inlining(program: ir.Program):
    """(inline ids, notes): which COMPUTE nodes fold into their consumers."""
    nodes = program.nodes()
    consumers: dict = {id(n): [] for n in nodes}
    for n in nodes:
        for p in ir.producers(n):
            consumers[id(p)].append(n)
    outputs = {id(o) for o in program.outputs}
    must = set(outputs)
    for n in nodes:
        if n.kind in _CALL_KINDS:
            must.update(id(p) for p in n.inputs)
    sized = _read_by_sizes(program, nodes)
    must |= sized
    pieces = _select_pieces(nodes)
    inline, notes = set(), []
    total_cost: dict = {}   # id -> (ops, transcendental) of the body with inlined producers
    for n in nodes:
        own, transcendental = _body_cost(n)
        for p, _ in _loads(n):
            if id(p) in inline:
                c, t = total_cost[id(p)]
                own, transcendental = own + c, transcendental or t
        total_cost[id(n)] = (own, transcendental)
        if n.kind is not NodeKind.COMPUTE or id(n) in must:
            if n.kind is NodeKind.COMPUTE and id(n) in outputs:
                notes.append(f"{n.name}: materialized (program output)")
            elif n.kind is NodeKind.COMPUTE and id(n) in sized:
                notes.append(f"{n.name}: materialized (a size or a check reads it)")
            elif n.kind is NodeKind.COMPUTE:
                notes.append(f"{n.name}: materialized (read by a BLAS call or a view)")
            continue
        users = consumers[id(n)]
        cost, transcendental = total_cost[id(n)]
        if id(n) in pieces and (transcendental or cost > _BROADCAST_CHEAP):
            notes.append(f"{n.name}: materialized, not fused into {users[0].name} (one of "
                         "its select's costly arms, as a concat's piece: fused, every element "
                         f"would compute every arm; {cost} ops)")
            continue
        reads = {(id(u), idx) for u in users for p, idx in _loads(u) if p is n}
        if (len(users) > 1 or len(reads) > 1) and (transcendental or cost > _EXPENSIVE_BODY):
            names = ", ".join(u.name for u in users)
            notes.append(f"{n.name}: materialized, not fused into {names} (read at "
                         f"{len(reads)} places by {len(users)} consumers and costly to "
                         f"recompute: {cost} ops{', transcendental' if transcendental else ''})")
            continue
        if (transcendental or cost > _BROADCAST_CHEAP or _divides(n, inline, nodes)) and \
                any(_recomputed_along(u, idx) for u in users for p, idx in _loads(u)
                    if p is n):
            notes.append(f"{n.name}: materialized, not fused into {users[0].name} (that "
                         f"loops over an axis outside the ones {n.name} is read at, so its "
                         f"{cost} ops would run again at every step of that axis)")
            continue
        inline.add(id(n))
        notes.append(f"{n.name}: fused into {', '.join(u.name for u in users)}")
    return inline, notes


_BROADCAST_CHEAP = 4   # ops a broadcast producer may have and still be recomputed
_SLOW_OPS = frozenset({Scalar.DIV, Scalar.FLOORDIV, Scalar.MOD, Scalar.POW, Scalar.SQRT})


def _divides(node: Node, inline: set, nodes) -> bool:
    """Whether `node`'s body (with its inlined producers) divides, takes a root or a power:
    operations too slow to repeat for free even in a memory-bound loop."""
    seen, stack = set(), [node]
    while stack:
        n = stack.pop()
        if n.body is None or id(n) in seen:
            continue
        seen.add(id(n))
        for e in ir.walk(n.body):
            if e.op in _SLOW_OPS:
                return True
            if e.op is Scalar.LOAD and id(e.attr) in inline:
                stack.append(e.attr)
    return False


def _recomputed_along(user: Node, index) -> bool:
    """Whether a load at `index` in `user` misses a loop of `user` (not of size 1) that runs
    outside a loop it does use: inlined, the loaded value would be computed again at every
    step of the missed loop (`A @ (y / s)` as a sum over k: `y[k] / s` once per row of A).
    `user`'s loops run in the order of its axes, then its reduction axes."""
    loops = list(zip(user.axes, user.shape))
    if user.kind is NodeKind.REDUCE:
        loops += list(zip(user.raxes, user.rshape))
    used = {e.attr for a in index for e in ir.walk(a) if e.op is Scalar.VAR}
    positions = [k for k, (v, _) in enumerate(loops) if v.attr in used]
    if not positions:
        return False
    return any(v.attr not in used and not ir.is_const(extent, 1)
               for v, extent in loops[:max(positions)])


def resolve(expr, inline: set, nodes_by_id: dict):
    """`expr` with loads of inlined nodes replaced by their (resolved) bodies, folded and
    simplified again (a producer's axis read at a constant index makes `0 == 0`)."""
    from .passes import fold_and_simplify

    memo: dict = {}   # id -> (expr, resolved): holding the expr, a freed temporary's id
    # would be reused (a substituted body is one)
    # an explicit stack, not recursion (docs/architecture.md, "The path of a computation"):
    # a chain of fused nodes resolves to one expression as deep as the chain
    stack = [(expr, None)]
    while stack:
        e, body = stack[-1]
        if id(e) in memo:
            stack.pop()
            continue
        pending = [a for a in e.args if id(a) not in memo]
        if pending:   # the arguments (a load's indices) first, left to right
            stack.extend((a, None) for a in reversed(pending))
            continue
        if e.op is Scalar.LOAD and id(e.attr) in inline:
            if body is None:   # the producer's body at these indices, then resolved
                producer = e.attr
                idx = [memo[id(a)][1] for a in e.args]
                body = ir.substitute(producer.body,
                                     {id(v): i for v, i in zip(producer.axes, idx)})
                stack[-1] = (e, body)
            if id(body) not in memo:
                stack.append((body, None))
                continue
            out = memo[id(body)][1]
        elif e.args:
            args = tuple([memo[id(a)][1] for a in e.args])
            out = fold_and_simplify(e if all(a is b for a, b in zip(args, e.args)) else
                                    ir.make(e.op, e.dtype, args, e.attr))
        else:
            out = e
        stack.pop()
        memo[id(e)] = (e, out)
    return memo[id(expr)][1]


def _outer_space(node: Node) -> tuple:
    if node.kind is NodeKind.REDUCE:
        shape = list(node.shape)
        while shape and ir.is_const(shape[-1], 1):
            shape.pop()
        return tuple(shape)
    return tuple(node.shape)


def _aligned(idx, p: int) -> bool:
    """idx reads the current outer index (axis vars 0..p-1) and zeros after."""
    for k, e in enumerate(idx):
        if k < p:
            if e is not ir.axis_var(k):
                return False
        elif not ir.is_const(e, 0):
            return False
    return True


def _box_candidate(node: Node, body) -> bool:
    """Whether COMPUTE `node` has the form of a box update (box_updates.py,
    dynamic_boxes.py): plan_memory decides whether it may write in place."""
    return find_box_update(node, body) is not None or dynamic_boxes.find(node, body) is not None


def group_nodes(program: ir.Program, inline: set, resolved: dict,
                options: ScheduleOptions = ScheduleOptions()):
    """Loop groups in execution order, the ids of register-local members, and notes."""
    groups: list = []
    notes: list = []
    member_group: dict = {}
    sealed: set = set()   # indices of groups no later node may join (column reductions)
    outputs = {id(o) for o in program.outputs}
    for n in program.nodes():
        if n.kind is NodeKind.INPUT or id(n) in inline:
            continue
        if n.kind in _CALL_KINDS:
            groups.append(Group(tuple(n.shape), [n], kind=n.kind.value))
            member_group[id(n)] = len(groups) - 1
            continue
        current = groups[-1] if groups and groups[-1].kind == "loop" else None
        if options.column_reductions and n.kind is NodeKind.REDUCE and \
                is_column_reduction(n, resolved[id(n)]):
            groups.append(Group(_outer_space(n), [n]))
            member_group[id(n)] = len(groups) - 1
            sealed.add(len(groups) - 1)
            notes.append(f"{n.name}: a loop nest of its own (column reduction: rows outside, "
                         "the contiguous axis inside)")
            continue
        if current is not None and len(groups) - 1 in sealed:
            notes.append(f"{n.name}: new loop nest after {current.members[0].name} (a column "
                         "reduction or a box update, computed alone)")
            current = None
        if n.kind is NodeKind.COMPUTE and _box_candidate(n, resolved[id(n)]):
            # a possible in-place box update: alone in its nest, so plan_memory may let it
            # loop over its box only
            groups.append(Group(tuple(n.shape), [n]))
            member_group[id(n)] = len(groups) - 1
            sealed.add(len(groups) - 1)
            notes.append(f"{n.name}: a loop nest of its own (it may update a buffer in place "
                         "over a box)")
            continue
        body_loads = _loads_of(resolved[id(n)])
        joined = False
        if current is not None:
            p = len(current.outer)
            lead = tuple(n.shape[:p]) if n.kind is NodeKind.COMPUTE else _outer_space(n)[:p]
            same_space = p > 0 and len(n.shape) >= p and lead == current.outer
            reads_ok = all(_same_row(idx, p) for prod, idx in body_loads
                           if member_group.get(id(prod)) == len(groups) - 1)
            if n.kind is NodeKind.REDUCE and _outer_space(n) != current.outer:
                same_space = False
            if same_space and reads_ok:
                current.members.append(n)
                member_group[id(n)] = len(groups) - 1
                notes.append(f"{n.name}: same loop nest as {current.members[0].name} "
                             f"(shares its outer loops)")
                joined = True
            elif current.members:
                why = "different outer loop space" if not same_space else \
                    "reads an earlier member at another index (needs it complete first)"
                notes.append(f"{n.name}: new loop nest after {current.members[-1].name} "
                             f"({why})")
        if not joined:
            groups.append(Group(_outer_space(n) if n.kind is NodeKind.REDUCE
                                else tuple(n.shape), [n]))
            member_group[id(n)] = len(groups) - 1
    # members read only by later members of their own group at the aligned index stay local
    readers: dict = {}
    for g_index, g in enumerate(groups):
        for m in g.members:
            for prod, idx in (_loads_of(resolved[id(m)]) if id(m) in resolved else []):
                readers.setdefault(id(prod), []).append((g_index, idx, len(g.outer)))
        if g.kind != "loop":
            for p in g.members[0].inputs:
                readers.setdefault(id(p), []).append((-1, None, 0))
    for sized in _read_by_sizes(program, program.nodes()):   # read whole, before any nest
        readers.setdefault(sized, []).append((-1, None, 0))
    local, scratch = set(), set()
    for g_index, g in enumerate(groups):
        if g.kind != "loop":
            continue
        for m in g.members:
            if id(m) in outputs:
                continue
            uses = readers.get(id(m), [])
            in_group = all(gi == g_index and idx is not None for gi, idx, _ in uses)
            if not in_group:
                continue
            if _fits_outer(m, len(g.outer)) and all(_aligned(idx, len(g.outer))
                                                    for _, idx, _ in uses):
                local.add(id(m))
            elif len(g.outer) > 0 and all(_same_row(idx, len(g.outer)) for _, idx, _ in uses):
                scratch.add(id(m))
                notes.append(f"{m.name}: kept in a per-row scratch buffer (only read by "
                             "its loop nest at the same outer index)")
    return groups, local, scratch, notes


def is_column_reduction(node: Node, body) -> bool:
    """True for a REDUCE (not an arg-reduction) with outer loops whose loads (in its resolved
    `body`) use the innermost outer axis only as their last, contiguous index, and some load
    also indexes a reduction axis before it (e.g. `t[r0, i0]` of `x.sum(axis=0)`).  Such a
    reduction walks memory with a stride when its outer loop is outermost; with the reduction
    loops outside and that axis innermost every load is contiguous (the target does this)."""
    if node.kind is not NodeKind.REDUCE or node.attr in (ir.Combiner.ARGMAX,
                                                           ir.Combiner.ARGMIN):
        return False
    p = len(_outer_space(node))
    if p == 0 or body is None:
        return False
    inner = ir.axis_var(p - 1)
    strided = False
    for e in ir.walk(body):
        if e.op is not Scalar.LOAD or not e.args:
            continue
        uses = [any(x is inner for x in ir.walk(a)) for a in e.args]
        if any(uses[:-1]):
            return False  # the inner axis strides this load: no interchange helps
        if uses[-1] and any(x.op is Scalar.VAR and x.attr[0] == "r"
                            for a in e.args[:-1] for x in ir.walk(a)):
            strided = True
    return strided


def _same_row(idx, p: int) -> bool:
    """idx reads at the current outer index (axis vars 0..p-1); inner indices are free,
    because members run one after another for each outer index."""
    return all(idx[k] is ir.axis_var(k) for k in range(p)) if len(idx) >= p else False


def _fits_outer(node: Node, p: int) -> bool:
    """True when node's value at one outer index is a single scalar."""
    return all(ir.is_const(d, 1) for d in node.shape[p:])


def _loads_of(expr):
    return [(e.attr, e.args) for e in ir.walk(expr) if e.op is Scalar.LOAD]


def make_schedule(program: ir.Program,
                  options: ScheduleOptions = ScheduleOptions()) -> Schedule:
    """Fusion decisions and loop groups for a program, with the target's `options`."""
    inline, notes = decide_inlining(program)
    nodes = program.nodes()
    by_id = {id(n): n for n in nodes}
    resolved = {id(n): resolve(n.body, inline, by_id) for n in nodes
                if n.body is not None and id(n) not in inline}
    groups, local, scratch, group_notes = group_nodes(program, inline, resolved, options)
    sched = Schedule(program, inline, groups, local, notes + group_notes, scratch=scratch,
                     resolved=resolved, options=options)
    sched.sizes = SizeClasses(program)
    plan_memory(sched)
    if options.gemm_epilogues:
        sched.epilogues = find_epilogues(sched)
    return sched


def plan_memory(sched: Schedule):
    """Buffer reuse: a loop-nest member that reads a temporary buffer only at its own index,
    as that buffer's last reader, with the same shape and dtype, writes in place into it
    (e.g. the bias+relu epilogue after a matmul).  Records `sched.reuse` and notes."""
    outputs = {id(o) for o in sched.program.outputs}
    readers: dict = {}
    for g in sched.groups:
        for m in g.members:
            if g.kind != "loop":
                for q in m.inputs:
                    readers.setdefault(id(q), []).append((m, None))
                continue
            for prod, idx in _loads_of(sched.resolved[id(m)]):
                readers.setdefault(id(prod), []).append((m, idx))
    taken = set()
    group_of = {id(m): k for k, g in enumerate(sched.groups) for m in g.members}
    for g in sched.groups:
        if g.kind == "scatter":
            _plan_scatter(sched, g.members[0], readers, group_of, outputs, taken)
    for g in sched.groups:
        if g.kind != "loop":
            continue
        for m in g.members:
            if m.kind is not NodeKind.COMPUTE or id(m) in sched.local or id(m) in sched.scratch:
                continue
            if len(g.members) == 1 and _plan_box_update(sched, m, readers, group_of, outputs,
                                                        taken):
                continue
            # a donated argument first: writing there also saves the copy back to it
            loads = sorted(_loads_of(sched.resolved[id(m)]),
                           key=lambda load: load[0].kind is not NodeKind.INPUT)
            for prod, idx in loads:
                donated = _donated_for(sched, prod, m)
                if not (donated or _can_take_buffer(sched, prod, m, outputs, taken)):
                    continue
                uses = readers.get(id(prod), [])
                own_index = tuple(ir.axis_vars(len(m.shape)))
                if all(r is m and i is not None and tuple(i) == own_index for r, i in uses):
                    sched.reuse[id(m)] = prod
                    taken.add(id(prod))
                    where = (f"input {prod.attr[0]}'s array (donated)" if donated
                             else f"{prod.name}'s buffer")
                    sched.notes.append(f"{m.name}: written in place into {where} (its only "
                                       "reader, same index, shape and dtype)")
                    break


def _can_take_buffer(sched: Schedule, prod, m, outputs, taken) -> bool:
    """Whether node `m` may write into temporary `prod`'s buffer: prod has a buffer of its own
    (not an input, view, output, register, row scratch or fused expression), no other node
    took it, and it has m's dtype and shape. (Readers are the caller's to check.)"""
    return not (prod.kind in (NodeKind.INPUT, NodeKind.RESHAPE) or id(prod) in outputs
                or id(prod) in taken or id(prod) in sched.local or id(prod) in sched.scratch
                or id(prod) in sched.inline or prod.dtype is not m.dtype
                or not sched.sizes.same_shape(tuple(prod.shape), tuple(m.shape)))


def _donated_for(sched: Schedule, prod, m) -> bool:
    """Whether input `prod` was donated for an output that `m` is (the caller's argument
    takes that result: `c += ...` on an argument), so m may write into its array; `m` is
    not also an output of another position, and prod is not itself an output."""
    if prod.kind is not NodeKind.INPUT or prod.dtype is not m.dtype \
            or not sched.sizes.same_shape(tuple(prod.shape), tuple(m.shape)):
        return False
    position = prod.attr[0]
    outs = [k for k, o in enumerate(sched.program.outputs) if o is m]
    return (len(outs) == 1 and (position, outs[0]) in sched.program.donated
            and not any(o is prod for o in sched.program.outputs))


def _donated_input(sched: Schedule, prod, m, outputs, taken) -> bool:
    """Whether box update `m` may write into input `prod`'s array: the caller donated it
    (a loop variable's array, an argument flowjit.jit writes back: the program's result
    for it is computed from here on), it is no output itself, and no node took it."""
    return (prod.kind is NodeKind.INPUT and id(prod) not in taken and id(prod) not in outputs
            and prod.dtype is m.dtype
            and any(position == prod.attr[0] for position, _ in sched.program.donated)
            and sched.sizes.same_shape(tuple(prod.shape), tuple(m.shape)))


def _plan_box_update(sched: Schedule, m, readers, group_of, outputs, taken) -> bool:
    """Record `m` as an in-place box update of the buffer it selects from (box_updates.py)
    when that buffer is a temporary no later loop nest reads."""
    found = find_box_update(m, sched.resolved[id(m)])
    guard = None
    if found is None:   # a box known at run time only (dynamic_boxes.py)
        found = dynamic_boxes.find(m, sched.resolved[id(m)])
        if found is None:
            return False
        found, guard = found[:2], found[2]
    prod, box = found
    if not (id(prod) in group_of and _can_take_buffer(sched, prod, m, outputs, taken)
            or _donated_input(sched, prod, m, outputs, taken)):
        return False
    here = group_of[id(m)]
    if any(r is not m and group_of.get(id(r), here) >= here for r, _ in readers.get(id(prod), [])):
        return False
    sched.reuse[id(m)] = prod
    sched.boxes[id(m)] = box
    if guard is not None:
        sched.box_guards[id(m)] = guard
    taken.add(id(prod))
    ranges = ", ".join(f"axis {a}: [{lo}, {'end' if hi is None else hi})"
                       for a, (lo, hi) in sorted(box.items()))
    sched.notes.append(f"{m.name}: updates {prod.name}'s buffer in place over the box "
                       f"{ranges} only")
    return True


def _scatter_reads_base(sched: Schedule, m) -> bool:
    """Whether scatter `m` reads its base through its rows or updates (`x[idx] = x`): rows
    written in place would then be read again as updates of later rows."""
    base = m.inputs[0]
    by_id = {id(n): n for n in sched.program.nodes()}
    for node in m.inputs[1:]:
        if node is base:
            return True
        if id(node) in sched.inline and node.body is not None and any(
                prod is base for prod, _ in _loads_of(resolve(node.body, sched.inline, by_id))):
            return True
    return False


def _plan_scatter(sched: Schedule, m, readers, group_of, outputs, taken) -> None:
    """A SCATTER writes its rows into its base's buffer when nothing reads the base after
    it: a temporary (not an output), or an input the caller donated for this output."""
    base = m.inputs[0]
    here = group_of[id(m)]
    if any(r is not m and group_of.get(id(r), here) >= here
           for r, _ in readers.get(id(base), [])):
        return
    if id(base) in taken or _scatter_reads_base(sched, m):
        return
    if base.kind is NodeKind.INPUT:
        position = base.attr[0]
        outs = [k for k, o in enumerate(sched.program.outputs) if o is m]
        if not any((position, k) in sched.program.donated for k in outs) or \
                any(o is base for o in sched.program.outputs):
            return
        note = f"writes its rows into input {position}'s array in place (donated)"
    elif id(base) not in group_of or not _can_take_buffer(sched, base, m, outputs, taken):
        return
    else:
        note = f"writes its rows into {base.name}'s buffer in place"
    sched.reuse[id(m)] = base
    taken.add(id(base))
    sched.notes.append(f"{m.name}: {note}")
