"""Auto-clustering: `Session.run` runs maximal groups of compilable ops as compiled functions.

`form_clusters(ops, fetches, fed, options)` partitions a plan's ops (runtime/executor.py)
into *clusters*: maximal connected sets of ops that have a lowering and none of the traits
STATEFUL, RUNTIME_VALUE, BLOCKING or COMMUNICATION (Const is welcome), produce no fed
tensor and have only tensors of dtypes the target renders (no strings or complex; no float16
on the CPU).  The exceptions are the variable ops:
VariableV2 (the cluster reads the variable), Assign/AssignAdd/AssignSub (the cluster
installs the new value after its kernel) and NoOp (ordering only), so a whole training step
is one kernel — runtime/cluster_updates.py owns those rules and checks them per cluster.
Clusters grow greedily along data and control edges in graph order (a control edge inside
a kernel is kept by construction: every read sees the values from before the step's
updates, which are installed at its end); two clusters merge only if the contracted graph
stays acyclic (no path between them through anything else — the XLA-style cycle check), so
a cluster can run as ONE node of the executor's dependency graph, which waits for every
member's data and control inputs.  Feeds, random and other runtime ops stay with the
executor, which hands tensors to a cluster at its boundary: a cluster's inputs are tensors
it reads that are fed or made outside it (and its member variables); its outputs are the
tensors it makes that are fetched or read outside it, plus its variables' new values.  A
fed tensor therefore splits a chain.

Policy (`JitOptions.policy`, runtime/config.py) — compiling costs ~0.5-15 s of a core per
cluster and signature, so the user's steps never wait for it by default:
- clusters with fewer than `JitOptions.min_ops` (2) non-constant ops stay plain ops;
- "auto" (tiered, the default): on a signature's first run the kernel is looked up in the
  target's caches (this process's kernels, then the disk cache: `Target.lookup`, no
  compiling); found, it runs compiled from that first run.  Otherwise the reference kernels
  run the steps (op by op, inside the cluster's step), and once the signature has run
  `background_after_runs` (2) times and spent `background_after_seconds` (20 ms) in them,
  its compile is queued for the background compiler (runtime/compile_queue.py: one thread,
  hottest cluster first; the CPU target compiles in its compile worker process, so the
  steps meanwhile keep this process's GIL and core), so a one-shot or tiny graph never
  costs a core for seconds.  The first compile is of the quick tier (compiler/tiers.py:
  serial loops, BLAS products, about 3x cheaper to compile); once installed, the optimized
  kernel compiles next.  A finished kernel is installed at the start of the cluster's next
  run (never while it runs; variables are the same arrays either way, so stateful clusters
  swap safely), with one log line.  Its first `measure_runs` (3) runs are timed: if the
  best of them is slower than the best run of what ran before (the reference kernels, or
  the quick kernel), the cluster goes back to that ("never slower than NumPy"), with a log
  line and the reason in `explain()` (`Session.explain()`).  A cached quick kernel runs
  from the first step while the optimized one compiles;
- "always" (`JitOptions.always()`, `FLOWJIT_JIT=always`): every cluster, even of one op, is
  compiled before its first run: the tests' policy, so compiled kernels are what they compare;
- the signature is compiler/tracing.py's `array_key` per input (dtype, rank, which sizes are
  1): new batch sizes reuse the kernel.  Kernels (and run counts) are shared by every session
  and plan of a graph that contain the same cluster with the same boundary;
- an op the compiler cannot lower (`NotLowerable`) makes that cluster signature run with the
  reference kernels for good (logged once on the `flowjit.jit` logger).
The option lives in runtime/config.py (`ConfigProto(jit=...)`, `global_jit_level`,
`FLOWJIT_JIT`); `JitOptions.target` picks what compiles clusters (runtime/targets.py: the
cpu target by default, or the reference interpreter), and kernels are kept per target.

Errors: a compiled kernel raises ValueError/ZeroDivisionError for bad sizes or integer
division by zero; the cluster then reruns its ops with the reference kernels (stateless, so
safe) to report the exact op and user line; if they succeed, an InvalidArgumentError names
the cluster's ops and the first op's line.  A compiled call holds the kernel slot of the
device the thread runs for (runtime/devices.py): one kernel at a time per device, over the
device's share of the cores; kernels of different devices run at the same time.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import threading
import time
import weakref

import numpy as np

from ..compiler.tracing import array_key
from ..errors import InvalidArgumentError, ResourceExhaustedError
from ..ops.registry import Trait
from ..ops.variables import VARIABLE_V2
from ..targets.target import TargetKind
from . import cluster_updates, devices, executor, gpu_values, loop_steps
from .cluster_kernels import ClusterKernels
from .partition import clusterable, partition  # noqa: F401 - part of this module's API
from .config import JitOptions
from .state import VariableRef
from .targets import get_target

log = logging.getLogger("flowjit.jit")

# NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED, with a native byte order: what a kernel's trusted
# entry point needs beyond the dtype and rank its signature fixes
TRUSTED_FLAGS = 0x101

STRICT = False  # tests: a compiler failure other than NotLowerable raises instead of falling back

# graph -> {cluster key: ClusterKernels}: compiled kernels and run counts shared by all sessions
_SHARED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_SHARED_LOCK = threading.Lock()


def form_clusters(ops, fetches, fed, options: JitOptions, exclude=None,
                  loops: bool = False, colour=None, target_of=None) -> list:
    """The plan's nodes: `ops` with each worthwhile cluster replaced by a `ClusterStep`;
    `exclude(op)` true keeps an op out of every cluster; with `loops`, top-level while loops
    of compilable ops become LoopSteps (runtime/loop_steps.py); `colour(op)` (its device)
    keeps ops of different colours in different clusters (runtime/partition.py);
    `target_of(op)` names the target of a cluster holding op (its device's: a GPU's
    clusters compile with the CUDA target), None for the options' own."""
    nodes = _clustered(ops, fetches, fed, options, exclude, colour, target_of)
    if loops:
        renders = get_target(options.target).capabilities.dtypes
        nodes = loop_steps.replace_loops(nodes, ops, options, renders)
    return nodes


def _clustered(ops, fetches, fed, options: JitOptions, exclude, colour=None,
               target_of=None) -> list:
    renders = get_target(options.target).capabilities.dtypes
    groups = partition(ops, fed, options.max_ops, renders=renders, exclude=exclude,
                       colour=colour)
    if not all(cluster_updates.updates_are_safe(g) for g in groups):
        groups = partition(ops, fed, options.max_ops, updates=False, renders=renders,
                           exclude=exclude, colour=colour)
    groups = [g for g in groups
              if sum(Trait.SOURCE not in op.op_def.traits for op in g) >= options.min_ops]
    if not groups:
        return ops
    readers = collections.defaultdict(list)
    for op in ops:
        for t in op.inputs:
            if t not in fed:
                readers[t].append(op)
    fetched = set(fetches)
    grouped = {}
    for g in groups:
        target = target_of(g[0]) if target_of is not None else None
        step = ClusterStep(g, readers, fetched, options if target in (None, options.target)
                           else dataclasses.replace(options, target=target))
        if not step.outputs:  # only run as targets, no effects: keep them plain
            continue
        for op in g:
            grouped[op] = step
    return loop_steps.substitute_steps(ops, grouped)


class ClusterStep:
    """A plan node that runs a cluster: compiled when the policy says so, else op by op."""

    type = "Cluster"

    def __init__(self, ops, readers, fetched, options: JitOptions):
        members = set(ops)
        inputs, first_reader = [], {}
        unread = cluster_updates.write_only_refs(ops)
        for op in ops:
            for t in op.inputs:
                if t not in first_reader and t not in unread and (
                        t.op not in members or t.op.op_def is VARIABLE_V2):
                    first_reader[t] = op
                    inputs.append(t)
        self.ops = tuple(ops)
        self.inputs = tuple(inputs)
        self.readers = tuple(first_reader[t] for t in inputs)
        # member variables: the step makes their references (for its updates and for readers
        # outside) and reads them straight from the session state
        self.published = tuple(op for op in ops if op.op_def is VARIABLE_V2 and (
            op.outputs[0] in fetched or any(r not in members for r in readers[op.outputs[0]])))
        # per input: the session-state key of a member variable read directly, else None
        self.variable_keys = tuple(t.op.name if t.op in members else None for t in inputs)
        self._last_signature = (None, None, None)  # (dtypes, shapes, key) of the last call
        self.compiled_ops = tuple(op for op in ops if op.op_def is not VARIABLE_V2)
        self.outputs = tuple(t for op in self.compiled_ops for t in op.outputs
                             if t in fetched or any(r not in members for r in readers[t])
                             or cluster_updates.is_update(op))
        self.writes = cluster_updates.VariableWrites(ops, self.outputs)
        self.locking = any(cluster_updates.is_update(op) and op._attrs.get("use_locking")
                           for op in ops)
        # outputs someone outside reads (the rest are variable updates, installed instead)
        self.handed_out = tuple((i, t) for i, t in enumerate(self.outputs)
                                if t in fetched or any(r not in members for r in readers[t]))
        self.options = options
        self.kernels = _shared_kernels(self)
        self.name = self.kernels.name

    def __repr__(self):
        return f"<ClusterStep {self.name}: {', '.join(op.name for op in self.ops)}>"

    def run(self, values, state, deadline):
        """Compute the cluster's outputs from `values` into `values`.  A cluster holding an
        update with `use_locking` reads, computes and installs under the session's variable
        lock, so concurrent steps never lose its update (TensorFlow's guarantee)."""
        if self.locking:
            with state.lock:
                self._run(values, state, deadline)
        else:
            self._run(values, state, deadline)

    def _run(self, values, state, deadline):
        for op in self.published:
            values[op.outputs[0]] = VariableRef(state, op.name, op)
        arrays, key = self._inputs_and_signature(values, state)
        kernels = self.kernels
        entry = kernels.entry(self, arrays, key, STRICT) if key is not None else None
        if entry is not None:
            start = time.perf_counter()
            outs = self._call(entry, arrays, key, values, state, deadline)
            if outs is not None:
                kernels.timed(key, time.perf_counter() - start)
            if outs is not None:
                kernels.compiled_runs += 1
                if executor.CHECK_OUTPUTS:
                    for t, v in zip(self.outputs, outs):
                        executor.check_output(t.op, t, gpu_values.to_host(v))
                if self.writes:
                    self.writes.install(outs, state)
                for i, t in self.handed_out:
                    values[t] = outs[i]
                return
        start = time.perf_counter()
        self.interpret(values, state, deadline)
        if key is not None:
            kernels.interpreted(key, time.perf_counter() - start)

    def _inputs_and_signature(self, values, state):
        """(the inputs as C-contiguous arrays, variables read; their array_key_of), or
        (None, None) if one is not an array.  One pass: the signature of the last call is
        reused when the dtypes and shapes repeat."""
        arrays, dts, shapes = [], [], []
        variables = state.variables
        for t, reader, var_key in zip(self.inputs, self.readers, self.variable_keys):
            if var_key is not None:  # a member variable: read it here
                v = variables.get(var_key)
                if v is None:
                    VariableRef(state, var_key, t.op).read(reader)  # raises, naming both
            else:
                v = values[t]
                if type(v) is VariableRef:
                    v = v.stored(reader)   # in device memory, if a GPU cluster wrote it
            if not isinstance(v, np.ndarray):
                if not gpu_values.is_device_array(v):
                    return None, None
                if self.options.target is not TargetKind.CUDA:   # another target: host
                    v = gpu_values.to_host(v)
                arrays.append(v)   # in place (C-contiguous: a CUDA kernel's or a copy)
                dts.append(v.dtype)
                shapes.append(v.shape)
                continue
            # C-contiguous, aligned, native byte order, as the compiled kernel's trusted
            # entry needs (dtype and rank: the signature)
            dtype = v.dtype
            if v.flags.num & TRUSTED_FLAGS != TRUSTED_FLAGS or not dtype.isnative:
                v = np.array(v, dtype=dtype.newbyteorder("="), order="C")
                dtype = v.dtype
            arrays.append(v)
            dts.append(dtype)
            shapes.append(v.shape)
        last_dts, last_shapes, key = self._last_signature
        if shapes != last_shapes or dts != last_dts:
            key = array_key_of(arrays)
            self._last_signature = (dts, shapes, key)
        return arrays, key

    def _call(self, entry, arrays, key, values, state, deadline):
        """The compiled kernel's outputs; None when it failed to build (then interpret)."""
        try:
            trusted = getattr(entry.kernel, "call_trusted", None)
            device = devices.running_on()
            with device.kernel_slot(self.options.target):
                if trusted is not None:  # dtypes and ranks: the signature; layout: checked
                    return trusted(arrays + entry.constants)
                if device.device_type is devices.GPU and self.options.target is TargetKind.CUDA:
                    return self._on_gpu(entry, arrays, device)
                return entry.kernel(*arrays, *entry.constants)
        except (ValueError, ZeroDivisionError) as e:
            self.interpret(values, state, deadline)  # raises the exact op's error, if any
            raise InvalidArgumentError(None, self.ops[0], f"{e} (in compiled cluster "
                                       f"{self.name} of ops {self._op_names()})") from None
        except MemoryError as e:
            raise ResourceExhaustedError(None, self.ops[0], f"Out of memory in compiled "
                                         f"cluster {self.name}: {e}") from e
        except Exception as e:  # noqa: BLE001 - numba may compile on the first call
            if STRICT:
                raise
            self.kernels.give_up(key, f"numba failed: {e!r}")
            return None

    def _on_gpu(self, entry, arrays, device):
        """A CUDA kernel on a GPU device, on its compute stream: outputs stay in device
        memory for the readers there, variable updates included (the variable then lives
        on the GPU: readers elsewhere get host copies, ops/variable_ref.py)."""
        stream = gpu_values.streams(device).compute
        return entry.kernel.on_device(*arrays, *entry.constants, stream=stream)

    def interpret(self, values, state, deadline):
        """Run the member ops one by one with their reference kernels (on host copies of
        inputs a GPU left in device memory)."""
        gpu_values.host_inputs(values, self.inputs)
        for op in self.ops:
            executor.run_op(op, values, state, deadline)

    def _op_names(self) -> str:
        names = [op.name for op in self.ops if Trait.SOURCE not in op.op_def.traits]
        return ", ".join(f"'{n}'" for n in names[:8]) + (", ..." if len(names) > 8 else "")

    def describe(self) -> str:
        """The cluster as text: its inputs, then one line per op."""
        lines = [f"{self.name}: inputs " + ", ".join(t.name for t in self.inputs)]
        for op in self.ops:
            outs = ", ".join(f"{t.dtype.name}{t.shape}" for t in op.outputs)
            lines.append(f"{op.name} = {op.type}({', '.join(t.name for t in op.inputs)})"
                         f" -> {outs}")
        lines.append("outputs " + ", ".join(t.name for t in self.outputs))
        return "\n".join(lines)

    def explain(self) -> str:
        """describe(), then per input signature which kernels run it and why."""
        kernels = self.kernels
        keys = list(kernels.decisions) + [k for k in kernels.runs if k not in kernels.decisions]
        decisions = [f"signature {key}: {kernels.explain(key)}" for key in keys]
        return "\n".join([self.describe()] + decisions)


def array_key_of(arrays) -> tuple:
    """A cluster call's signature: dtype and which sizes are 1, per input array."""
    return tuple(array_key(a) for a in arrays)


def _shared_kernels(step: ClusterStep) -> ClusterKernels:
    """The kernel cache of this cluster, shared by every plan of the graph that has it."""
    graph = step.ops[0].graph
    # the target too: a reference-target kernel is not a CPU kernel (runtime/targets.py)
    key = (tuple(op._id for op in step.ops), tuple(t.name for t in step.inputs),
           tuple(t.name for t in step.outputs), step.options.target)
    with _SHARED_LOCK:
        table = _SHARED.get(graph)
        if table is None:
            table = _SHARED[graph] = {}
        kernels = table.get(key)
        if kernels is None:
            kernels = table[key] = ClusterKernels(f"cluster_{len(table)}")
        return kernels

