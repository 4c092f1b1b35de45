"""Placement: which device runs each op of a step (TensorFlow's placer; the 2015 paper §3.2.1).

Owns `place(ops, devices, ...)`, the per-session `CostModel` it consults, and
`placement_log` (the lines of `log_device_placement`).  The runtime layer of
docs/architecture.md: it reads the graph core (requests, colocation) and the device
registry (runtime/devices.py), and runs nothing.

The rules, in order:
1. Colocation groups (union-find): an op is united with the ops named by its colocation
   (`Graph.colocate_with`: `op._colocation`), and an op taking a variable reference
   (`op_def.ref_inputs`, through the Enter/Switch ops that carry one) with the reference's
   producer, so a variable, its initializer, its Assign/AssignAdd and its optimizer updates
   share a device; an op reading a resource handle (a queue's, a reader's: an op both
   STATEFUL and SOURCE) goes with the resource, since the handle is the resource itself and
   cannot be sent to another device or task.  A colocated op that the step does not run
   constrains the group through its own device request only.
2. A group may run on the devices that satisfy every member's request (`DeviceSpec.matches`:
   partial specs such as '/device:CPU:*', '/job:localhost' or '/cpu:1' work) and have a
   kernel for every member (`Device.supports`).
3. None: with `allow_soft_placement` the requests are relaxed, first to their device type
   (the index dropped), then entirely, keeping the kernel constraint; otherwise (or if no
   device has the kernels) an InvalidArgumentError names the op, its type, its request, the
   devices, the devices with a kernel for it, and, for a colocation conflict, the other
   members and their requests.
4. One feasible device: the group gets it.  Several: greedy simulated placement (§3.2.1).
   The ops are walked in graph order (topological but for while-loop back edges: an input
   whose producer was not simulated yet, NextIteration into Merge, is ignored), keeping a
   time at which each device is free.  The first op of an unplaced group goes to the
   feasible device where it would finish first: start at max(the device's load, each
   input's ready time, plus `transfer_seconds` when the producer is on another device),
   run `op_seconds`.  A device's load is the work already placed on it, as if packed from
   time 0 (idle gaps while it waited for inputs are assumed filled), so a device that only
   waited for a long chain of cheap ops does not look busy.  An op's fixed overhead
   (`OP_OVERHEAD`: the executor's Python dispatch, which the interpreter lock serializes
   whichever device runs the op) delays its outputs but adds nothing to its device's load.
   A device other than the lowest-index candidate must finish earlier by more than one
   op's overhead: tiny graphs stay on device 0 however wide or deep they are, and
   independent heavy chains spread out.
   Sources (ops without data inputs: constants, placeholders, variables) cost nothing in
   the simulation.  An unplaced source group waits: its outputs count as ready at time 0 on
   any device, and the group goes to the device of its first consumer placed (when
   feasible; otherwise its lowest-index feasible device), so a constant feeding ops pinned
   to CPU:1 is on CPU:1.  Fed tensors are ready at time 0 on every device, with no transfer.
5. One device: every op goes there after checking each op's own request and kernel.

Cost estimates (`CostModel`): output elements (an unknown dimension counts as 1000) times
1e-9 s for elementwise and most ops, input elements for reductions, 2*m*n*k / 2e10 s for
matrix products (and the like for convolutions), plus `OP_OVERHEAD`; a measured time
`record`ed for an op (an exponential moving average, keyed by the op's name) replaces the
estimate.  `transfer_seconds` = `TRANSFER_LATENCY` + bytes / 5e9.
"""

from __future__ import annotations

import dataclasses

import threading

from ..compiler.core.device_spec import DeviceSpec
from ..errors import InvalidArgumentError
from ..ops.registry import Trait

OP_OVERHEAD = 5e-6          # seconds of fixed cost per op (dispatch)
TRANSFER_LATENCY = 3e-5     # seconds per tensor sent between devices
ELEMENT_SECONDS = 1e-9      # per element of an elementwise op
FLOPS = 2e10                # matrix products
BANDWIDTH = 5e9             # bytes per second between devices
UNKNOWN_DIM = 1000          # elements assumed for a dimension unknown statically
EMA_WEIGHT = 0.5            # weight of a new measurement in the moving average

_REF_FORWARDERS = ("Enter", "Switch")   # pass a variable reference on (ops/variables.py)
_MATMULS = ("MatMul", "BatchMatMul", "BatchMatMulV2")


def _elements(shape) -> int:
    dims = shape.dims
    if dims is None:
        return UNKNOWN_DIM
    n = 1
    for d in dims:
        n *= UNKNOWN_DIM if d is None else d
    return n


def _dim(shape, i: int) -> int:
    dims = shape.dims
    if dims is None or len(dims) < abs(i) or dims[i] is None:
        return UNKNOWN_DIM
    return dims[i]


class CostModel:
    """Per-session op and transfer costs: estimates from static shapes until a run time is
    `record`ed for an op (module docstring).  Thread-safe."""

    def __init__(self):
        self._measured: dict = {}
        self._lock = threading.Lock()

    def op_seconds(self, op) -> float:
        """The measured run time of `op` if one was recorded, else the estimate."""
        measured = self._measured.get(op.name)
        return measured if measured is not None else self.estimate(op)

    def estimate(self, op) -> float:
        """Seconds `op` should take, from its static shapes (no measurement)."""
        traits = op.op_def.traits
        if not op.inputs or Trait.CONTROL_FLOW in traits:
            return OP_OVERHEAD
        out = sum(_elements(t.shape) for t in op.outputs)
        if op.type in _MATMULS and len(op.inputs) >= 2:
            a = op.inputs[0].shape
            flip = op._attrs.get("transpose_a") or op._attrs.get("adj_x")
            k = _dim(a, -2 if flip else -1)
            return OP_OVERHEAD + 2.0 * out * k / FLOPS
        if op.type.startswith("Conv") and len(op.inputs) >= 2:
            f = op.inputs[1].shape                     # [h, w, in, out]
            window = _elements(f) // max(1, _dim(f, -1))
            return OP_OVERHEAD + 2.0 * out * window / FLOPS
        if Trait.REDUCTION in traits:
            return OP_OVERHEAD + ELEMENT_SECONDS * _elements(op.inputs[0].shape)
        return OP_OVERHEAD + ELEMENT_SECONDS * out

    def record(self, op, seconds: float) -> None:
        """A measured run time of `op` (folded into a moving average by op name)."""
        seconds = float(seconds)
        with self._lock:
            old = self._measured.get(op.name)
            self._measured[op.name] = seconds if old is None else \
                EMA_WEIGHT * seconds + (1.0 - EMA_WEIGHT) * old

    def transfer_seconds(self, tensor) -> float:
        """Estimated seconds to send `tensor` from one device to another."""
        itemsize = getattr(tensor.dtype, "size", None) or 8
        return TRANSFER_LATENCY + _elements(tensor.shape) * itemsize / BANDWIDTH


# --- colocation groups ------------------------------------------------------------------------

class _Groups:
    """Union-find over Operations."""

    def __init__(self):
        self.parent: dict = {}

    def find(self, op):
        parent = self.parent
        root = parent.setdefault(op, op)
        while parent[root] is not root:
            root = parent[root]
        while parent[op] is not root:
            parent[op], op = root, parent[op]
        return root

    def union(self, a, b):
        ra, rb = self.find(a), self.find(b)
        if ra is not rb:
            if rb._id < ra._id:
                ra, rb = rb, ra
            self.parent[rb] = ra


def _is_ref(tensor) -> bool:
    op = tensor.op
    while op.type in _REF_FORWARDERS and op.inputs:
        op = op.inputs[0].op
    return op.type == "VariableV2"


def _is_resource(tensor) -> bool:
    """A handle of a queue or a reader (an op both STATEFUL and SOURCE, not a variable)."""
    traits = tensor.op.op_def.traits
    return Trait.STATEFUL in traits and Trait.SOURCE in traits and \
        tensor.op.type != "VariableV2"


def _colocated(op):
    """The ops `op` names in its colocation (names missing from the graph cannot constrain)."""
    for name in op._colocation:
        try:
            yield op.graph.get_operation_by_name(name)
        except KeyError:
            continue


def _groups(ops, colocate=()) -> dict:
    """{root: [members in graph order]}, members including colocated ops the step skips;
    each list of ops in `colocate` is one more colocation constraint (a control-flow frame
    the multi-device executor runs on one device: runtime/multi_device.py)."""
    uf = _Groups()
    for together in colocate:
        for op in together[1:]:
            uf.union(together[0], op)
    seen, work = set(), list(ops)
    while work:
        op = work.pop()
        if op in seen:
            continue
        seen.add(op)
        uf.find(op)
        for other in _colocated(op):
            uf.union(op, other)
            work.append(other)
        for i in op.op_def.ref_inputs:
            if i < len(op.inputs) and _is_ref(op.inputs[i]):
                uf.union(op, op.inputs[i].op)
                work.append(op.inputs[i].op)
        for t in op.inputs:
            if _is_resource(t):
                uf.union(op, t.op)
                work.append(t.op)
    groups: dict = {}
    for op in sorted(seen, key=lambda o: o._id):
        groups.setdefault(uf.find(op), []).append(op)
    return groups


# --- feasible devices and the errors ------------------------------------------------------------

def _spec(op, cache) -> DeviceSpec:
    spec = cache.get(op.device)
    if spec is None:
        spec = cache[op.device] = DeviceSpec.parse(op.device)
    return spec


def _names(devices) -> str:
    return "[ " + ", ".join(d.name for d in devices) + " ]" if devices else "[ ]"


_SHOWN = 6   # member names an error lists before "and N more"


def _few(ops) -> str:
    """Up to _SHOWN op names, then how many more."""
    names = ", ".join(f"'{m.name}'" for m in ops[:_SHOWN])
    return names + (f" and {len(ops) - _SHOWN} more" if len(ops) > _SHOWN else "")


def _requested(op) -> str:
    return op.device or "no device"


def _fail(op, members, devices, running, specs, soft):
    """The InvalidArgumentError for a group with no feasible device, blaming `op`'s own
    request or kernel when that alone is unsatisfiable, else the colocation."""
    kernels = [d for d in devices if d.supports(op)]
    own = [d for d in devices if _spec(op, specs).matches(d.spec)]
    head = f"Cannot assign a device for operation '{op.name}' (op: '{op.type}'): "
    tail = (f" Devices with a kernel for '{op.type}': {_names(kernels)}."
            f" Available devices: {_names(devices)}.")
    others = [m for m in members if m is not op]
    if not kernels:
        why = (f"no device has a kernel for op type '{op.type}' (requested: "
               f"{_requested(op)}).")
    elif not own and not soft:
        why = (f"Operation was explicitly assigned to {op.device} but no device matches it; "
               f"make sure the device specification refers to a valid device (or set "
               f"allow_soft_placement).")
    elif not (set(own) & set(kernels)) and not soft:
        types = sorted({d.device_type.name for d in own})
        why = (f"Could not satisfy explicit device specification '{op.device}' because no "
               f"supported kernel for {'/'.join(types)} devices is available.")
    else:
        by_request: dict = {}
        for m in members:
            by_request.setdefault(_requested(m), []).append(m)
        lines = "; ".join(f"requested {request}: {_few(group)}"
                          for request, group in by_request.items())
        limited = [m for m in members if m in running and
                   not all(d.supports(m) for d in devices)]
        kernels_line = "".join(
            f" '{m.name}' ({m.type}) has kernels only on "
            f"{_names([d for d in devices if d.supports(m)])}." for m in limited[:_SHOWN])
        skipped = [m for m in members if m not in running]
        if skipped:
            kernels_line += f" Not run in this step: {_few(skipped)}."
        what = ("no device has a kernel for every member" if soft else
                "no device satisfies the requests and kernels of every member")
        why = (f"Cannot colocate {len(members)} nodes ({_few([op] + others)}): {what} of "
               f"the colocation group. Operation '{op.name}' requested {_requested(op)}. "
               f"Members by requested device: {lines}.{kernels_line}")
    return InvalidArgumentError(None, op, head + why + tail)


_RELAX = (lambda s: s, DeviceSpec.without_index, lambda s: DeviceSpec())
_VARIABLE_TYPES = ("VariableV2", "Variable", "VarHandleOp")


def _requests(members, specs) -> set:
    """The device requests a colocation group must satisfy.  A variable's request wins
    over a conflicting one of an op taking its reference, as in TensorFlow, where
    `tf.assign(v, ...)` made under `replica_device_setter` asks for the worker but runs
    with `v` on its ps task; requests that agree with the variable's all count."""
    requests = {_spec(m, specs) for m in members if m.device}
    held = {_spec(m, specs) for m in members if m.device and m.type in _VARIABLE_TYPES}
    if not held or len(requests) == len(held):
        return requests
    return held | {r for r in requests if all(_agree(r, h) for h in held)}


def _agree(a: DeviceSpec, b: DeviceSpec) -> bool:
    """Whether two requests can name the same device (no field set differently)."""
    return all(x is None or y is None or x == y
               for x, y in zip(dataclasses.astuple(a), dataclasses.astuple(b)))


def _feasible(members, devices, running, specs, soft) -> list:
    """The devices a colocation group may run on (rule 2, relaxed by rule 3 when soft)."""
    run = [m for m in members if m in running]
    kernel_ok = [d for d in devices if all(d.supports(m) for m in run)]
    requests = _requests(members, specs)
    for relax in (_RELAX if soft else _RELAX[:1]):
        relaxed = [relax(s) for s in requests]
        out = [d for d in kernel_ok if all(s.matches(d.spec) for s in relaxed)]
        if out:
            return out
    # blame a member's own problem first, then the member whose addition empties the set
    for m in run:
        if not any(d.supports(m) for d in devices):
            raise _fail(m, members, devices, running, specs, soft)
    if not soft:
        for m in run:
            if m.device and not any(_spec(m, specs).matches(d.spec) and d.supports(m)
                                    for d in devices):
                raise _fail(m, members, devices, running, specs, soft)
    left = list(devices)
    for m in members:
        if m in running:
            left = [d for d in left if d.supports(m)]
        if m.device and not soft:
            left = [d for d in left if _spec(m, specs).matches(d.spec)]
        if not left:
            raise _fail(m if m in running else run[0], members, devices, running, specs, soft)
    raise _fail(run[0], members, devices, running, specs, soft)   # unreachable in practice


# --- placing ----------------------------------------------------------------------------------

def place(ops, devices, *, allow_soft_placement=False, cost_model=None,
          fed=frozenset(), colocate=(), home_task=False) -> dict:
    """{op: Device} for every op of `ops` (the ops a step runs, in graph order) over
    `devices` (device 0 is the default), by the rules of the module docstring.  Raises
    InvalidArgumentError when an op's request or colocation cannot be satisfied.
    `home_task` (a Session of a cluster's task, runtime/local_cluster.py): groups whose
    requests name no job go to device 0, the Session's own task, as in TensorFlow, instead
    of where the cost model would put them."""
    ops = list(ops)
    devices = list(devices)
    if not devices:
        raise ValueError("place() needs at least one device.")
    specs: dict = {}
    soft = bool(allow_soft_placement)
    if len(devices) == 1:
        only = devices[0]
        for op in ops:
            if not only.supports(op) or (not soft and op.device
                                         and not _spec(op, specs).matches(only.spec)):
                raise _fail(op, [op], devices, {op}, specs, soft)
        return dict.fromkeys(ops, only)

    running = set(ops)
    group_of, options = {}, {}
    for root, members in _groups(ops, colocate).items():
        feasible = _feasible(members, devices, running, specs, soft)
        if home_task and devices[0] in feasible and \
                all(_spec(m, specs).job is None for m in members):
            feasible = [devices[0]]   # a cluster Session's own task takes what no job names
        options[root] = feasible
        for m in members:
            group_of[m] = root
    chosen = {root: feas[0] for root, feas in options.items() if len(feas) == 1}
    if len(chosen) < len(options):
        _simulate(ops, devices, group_of, options, chosen,
                  cost_model if cost_model is not None else CostModel(), frozenset(fed))
    return {op: chosen[group_of[op]] for op in ops}


def _simulate(ops, devices, group_of, options, chosen, costs, fed):
    """Greedy simulated placement (rule 4): fills `chosen` for the groups left open."""
    index = {d: i for i, d in enumerate(devices)}
    load = dict.fromkeys(devices, 0.0)     # work placed on each device (seconds)
    done: dict = {}                        # op -> simulated finish time (its outputs ready)
    waiting: dict = {}                     # sources of groups not placed yet (insertion order)

    for op in ops:
        root = group_of[op]
        if not op.inputs:                  # a source: free, ready at 0 once placed
            if root in chosen:
                done[op] = 0.0
            else:
                waiting[op] = None
            continue
        pending = []
        for t in op.inputs:
            if t.op in waiting and t.op not in done:
                if group_of[t.op] in chosen:
                    done[t.op] = 0.0
                elif t not in fed:
                    pending.append(t.op)
        inputs = [t for t in op.inputs if t not in fed and t.op in done]
        controls = max((done[c] for c in op.control_inputs if c in done), default=0.0)
        seconds = costs.op_seconds(op)
        overhead = min(seconds, OP_OVERHEAD)
        work = seconds - overhead

        def finish(device):
            start = max(load[device], controls)
            for t in inputs:
                ready = done[t.op]
                if chosen[group_of[t.op]] is not device:
                    ready += costs.transfer_seconds(t)
                start = max(start, ready)
            return start + overhead + work

        if root in chosen:
            device = chosen[root]
            end = finish(device)
        else:                              # earliest finish; near-ties to the lowest index
            ends = [(finish(d), index[d], d) for d in options[root]]
            best = min(e for e, _, _ in ends)
            _, end, device = min((i, e, d) for e, i, d in ends if e <= best + OP_OVERHEAD)
            chosen[root] = device
        load[device] += work               # dispatch delays outputs, not the device
        done[op] = end
        for producer in pending:           # unplaced sources follow their first consumer
            _settle(chosen, options, group_of[producer], device)
            done[producer] = 0.0
    for op in waiting:                     # sources nothing in the step consumed
        _settle(chosen, options, group_of[op], options[group_of[op]][0])


def _settle(chosen, options, root, device):
    if root not in chosen:
        chosen[root] = device if device in options[root] else options[root][0]


def placement_log(placement: dict) -> str:
    """TensorFlow's log_device_placement lines, one per op in graph order:
    '<op name>: (<OpType>): <full device name>'."""
    return "\n".join(f"{op.name}: ({op.type}): {device.name}"
                     for op, device in sorted(placement.items(), key=lambda kv: kv[0]._id))
