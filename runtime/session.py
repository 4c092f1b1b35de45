"""Sessions: `Session`, `InteractiveSession` and the default-session stack.

A Session binds a graph to per-session state (variable values, random generators) and runs
any subgraph of it: `run(fetches, feed_dict)` resolves fetches and feeds, looks up or builds
the execution plan for that signature (plans are cached; the graph is append-only, so a
plan never goes stale), executes it and returns values in the fetch structure.  Any tensor
may be fed, not only placeholders; a fed tensor's producers do not run.  Unless the
config turns it off, plans run groups of compilable ops as compiled clusters
(runtime/clustering.py), and then get the graph rewrites the config's OptimizerOptions ask
for (runtime/graph_optimizer.py: CSE and constant folding, on by default as in
TensorFlow); the user's graph is never changed by them.

Returned arrays are always the caller's to keep: values that alias session state or graph
constants are copied.  An error in one run leaves the session usable.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..compiler.core.graph import Operation, Tensor, get_default_graph
from ..compiler.core.session_hook import get_default_session  # noqa: F401 - public name
from ..compiler.core.session_hook import default_sessions, push_interactive, remove_interactive
from . import clustering, devices, graph_optimizer, local_cluster, placement
from .trace_events import compile_events_since
from .config import ConfigProto, NodeStats, TraceLevel, graph_rewrites, jit_options
from .device_partition import Partition, partition_graph_defs
from .executor import build_plan, execute, needed_ops, start_values
from .multi_device import MultiDevicePlan
from .fetches import FetchStructure, convert_feed, fits_exactly
from .state import SessionState, VariableRef



def _add_compile_events(run_metadata, began, device: str) -> None:
    """Add the compiles that began during a traced step (runtime/trace_events.py) to its
    step stats, as "Compile" events on the device that asked for them; note the step's
    wall-clock start."""
    start, wall = began
    run_metadata.wall_start = wall
    for event in compile_events_since(start):
        run_metadata.step_stats.append(NodeStats(
            event.label, "Compile", event.start - start, event.end - start, event.thread,
            device, category="Compile"))

class Session:
    """Runs ops of a graph (TensorFlow 1.x `tf.Session`)."""

    def __init__(self, target="", graph=None, config=None):
        self._graph = graph if graph is not None else get_default_graph()
        self._config = config or ConfigProto()
        self._state = SessionState()
        self._plans: dict = {}
        self._structures: dict = {}   # cacheable fetch argument -> _fetch_structure's tuple
        self._closed = False
        self._pool = None
        self._pool_lock = threading.Lock()
        threads = self._config.inter_op_parallelism_threads
        self._threads = threads if threads > 0 else (os.cpu_count() or 1)
        self._default_ctx = []
        jit = jit_options(self._config)
        self._group = functools.partial(clustering.form_clusters, options=jit) \
            if jit.enabled else None
        rewrites = graph_rewrites(self._config)
        self._optimize = functools.partial(graph_optimizer.optimize, options=rewrites) \
            if rewrites.enabled else None
        self._target = target or ""
        if not isinstance(self._target, str):
            raise TypeError(f"A Session target must be a string, got {target!r}.")
        # a cluster target: a master runs the steps on the cluster's tasks (runtime/master.py)
        self._master = local_cluster.connect(self._target, self._graph, self._config) \
            if self._target else None
        self._devices = self._master.devices if self._master is not None else \
            devices.make_devices(self._config.device_count, gpus=_asks_for_gpus(self.graph))
        self._cost_model = placement.CostModel()
        self._multi_plans: dict = {}
        self._placements: dict = {}   # one-device plans: key -> {op: device}

    # --- properties ---------------------------------------------------------------------------
    @property
    def graph(self):
        return self._graph

    @property
    def graph_def(self):
        return self._graph.as_graph_def()

    @property
    def sess_str(self) -> str:
        """The target this Session was made with ('' for this process's devices)."""
        return self._target

    def list_devices(self):
        """The session's devices (name, device_type, memory_limit_bytes, incarnation)."""
        return devices.describe(self._devices)

    # --- running ------------------------------------------------------------------------------
    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Compute `fetches` (nested Tensors/Operations/names), feeding `feed_dict` first.

        Returns the fetched values in the structure of `fetches` (None for operations).
        """
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        with self._state.running_step():   # steps running at once: ops/variable_ref.py
            return self._run(fetches, feed_dict, options, run_metadata)

    def _run(self, fetches, feed_dict, options, run_metadata):
        """`run` itself, counted as a running step by the caller."""
        structure, tensors, targets, fetch_key = self._fetch_structure(fetches)
        feeds = self._convert_feeds(feed_dict)
        # the same feeds in another order find another (equal) plan: no set per step
        key = (fetch_key, tuple([t._id for t in feeds]))
        if self._master is not None:
            return self._run_master(key, structure, tensors, targets, feeds, options,
                                    run_metadata)
        if len(self._devices) > 1:
            return self._run_devices(key, structure, tensors, targets, feeds, options,
                                     run_metadata)
        plan = self._plans.get(key)
        if plan is None:
            self._placements[key] = self._check_placement(tensors, targets, feeds)
            plan = build_plan(tensors, targets, feeds, self._group, self._optimize)
            self._plans[key] = plan
        values = start_values(plan, feeds)
        timeout, trace = None, None
        if options is not None:
            timeout = options.timeout_in_ms / 1000.0 if options.timeout_in_ms else None
            trace = [] if options.trace_level >= TraceLevel.SOFTWARE_TRACE else None
        began = (time.perf_counter(), time.time())
        execute(plan, values, self._state, self._get_pool() if plan.parallel else None,
                timeout, trace)
        if run_metadata is not None:
            if trace is not None:
                device = self._devices[0].name
                run_metadata.step_stats = [NodeStats(op.name, op.type, s, e, th, device)
                                           for op, s, e, th in trace]
                _add_compile_events(run_metadata, began, device)
            if options is not None and options.output_partition_graphs:
                run_metadata.partition_graphs = self._one_device_graphs(key)
        fed_arrays = {id(v) for v in feeds.values()} if feeds else ()
        results = {}
        for element in structure.elements:
            results[element] = (_fetch_value(values[element], fed_arrays)
                                if type(element) is Tensor else None)
        return structure.build(results)

    def _check_placement(self, tensors, targets, feeds) -> dict:
        """Where a one-device step's ops run: all on the device, but requests that no device
        satisfies raise (without allow_soft_placement), as in TensorFlow."""
        ops = needed_ops(tensors, targets, feeds)
        placed = placement.place(ops, self._devices,
                                 allow_soft_placement=self._config.allow_soft_placement,
                                 fed=frozenset(feeds))
        if self._config.log_device_placement:
            print(placement.placement_log(placed), file=sys.stderr, flush=True)
        return placed

    def _one_device_graphs(self, key) -> list:
        placed = self._placements.get(key) or {}
        ops = sorted(placed, key=lambda op: op._id)
        parts = [] if not ops else [Partition(self._devices[0], ops)]
        return partition_graph_defs(parts, placed)

    def _run_devices(self, key, structure, tensors, targets, feeds, options, run_metadata):
        """A step over several devices (runtime/multi_device.py)."""
        plan = self._multi_plans.get(key)
        if plan is None:
            plan = MultiDevicePlan.build(tensors, targets, feeds, self._devices, self._config,
                                         self._group, self._cost_model,
                                         home_task=bool(self._target))
            self._multi_plans[key] = plan
        timeout, trace = None, None
        if options is not None:
            timeout = options.timeout_in_ms / 1000.0 if options.timeout_in_ms else None
            trace = [] if options.trace_level >= TraceLevel.SOFTWARE_TRACE else None
        deadline = time.monotonic() + timeout if timeout else None
        began = (time.perf_counter(), time.time())
        computed = plan.run(feeds, self._state, deadline, trace, self._cost_model)
        if run_metadata is not None:
            if trace is not None:
                run_metadata.step_stats = [NodeStats(n.name, n.type, s, e, th, d.name)
                                           for n, s, e, th, d in trace]
                _add_compile_events(run_metadata, began, self._devices[0].name)
            if options is not None and options.output_partition_graphs:
                run_metadata.partition_graphs = plan.partition_graphs()
        return _results(structure, feeds, computed)

    def _run_master(self, key, structure, tensors, targets, feeds, options, run_metadata):
        """A step on a cluster's tasks (runtime/master.py)."""
        timeout, trace = None, False
        if options is not None:
            timeout = options.timeout_in_ms / 1000.0 if options.timeout_in_ms else None
            trace = options.trace_level >= TraceLevel.SOFTWARE_TRACE
        computed, plan, timeline = self._master.run(key, tensors, targets, feeds, timeout,
                                                    trace)
        if run_metadata is not None:
            if trace:
                run_metadata.step_stats = [NodeStats(*event) for event in timeline]
            if options is not None and options.output_partition_graphs:
                run_metadata.partition_graphs = plan.partition_graphs()
        return _results(structure, feeds, computed)

    def _missing_variables(self, names: list) -> list:
        """The names among `names` that are not variables of this Session (on a cluster:
        of any of its tasks) yet."""
        if self._master is not None:
            return self._master.missing_variables(names)
        return [n for n in names if n not in self._state.variables]

    def explain(self) -> str:
        """How this session runs its steps so far: what the graph optimizer did to its plans
        (one line), then every compiled cluster of every plan run (its inputs, ops and
        outputs), and per input signature whether its compiled kernel or the reference
        kernels run, and why (the tiered policy's decisions).  With several devices, each
        cluster says which device runs it."""
        steps, seen = [], set()
        node_lists = [(None, plan.ops) for plan in self._plans.values()] + \
            [(p.device.name, p.nodes) for plan in self._multi_plans.values()
             for p in plan.plans]
        for device, nodes in node_lists:
            for node in nodes:
                if (isinstance(node, clustering.ClusterStep) or hasattr(node, "loop")) \
                        and id(node) not in seen:
                    seen.add(id(node))
                    text = node.explain()
                    steps.append(text if device is None else f"on {device}: {text}")
        if not steps:
            steps = ["no clusters: every op runs with its reference kernel"]
        return "\n\n".join([self._explain_rewrites()] + steps)

    def _explain_rewrites(self) -> str:
        if self._optimize is None:
            return "graph optimizer: off (OptimizerOptions)"
        total = graph_optimizer.Report()
        for plan in self._plans.values():
            if plan.rewrites is not None:   # None: a control-flow plan, never rewritten
                total = total + plan.rewrites
        return f"graph optimizer ({len(self._plans)} plans): {total.describe()}"

    def _fetch_structure(self, fetches):
        """(FetchStructure, its tensors, its operations, their ids): cached for fetches that
        are one Tensor/Operation or a flat list/tuple of them (the graph is append-only)."""
        cache_key = None
        kind = type(fetches)
        if kind is Tensor or kind is Operation:
            cache_key = fetches
        elif (kind is list or kind is tuple) and all(
                type(f) is Tensor or type(f) is Operation for f in fetches):
            cache_key = (kind, *fetches)
        cached = self._structures.get(cache_key) if cache_key is not None else None
        if cached is None:
            structure = FetchStructure(fetches, self._graph)
            tensors, targets = structure.tensors, structure.operations
            ids = (tuple(t._id for t in tensors), tuple(op._id for op in targets))
            cached = (structure, tensors, targets, ids)
            if cache_key is not None and len(self._structures) < 4096:
                self._structures[cache_key] = cached
        return cached

    def _convert_feeds(self, feed_dict) -> dict:
        feeds = {}
        if not feed_dict:
            return feeds
        if not isinstance(feed_dict, dict):
            raise TypeError(f"feed_dict must be a dict, got {type(feed_dict).__name__}.")
        for key, value in feed_dict.items():
            if type(key) is Tensor and key._op.graph is self._graph:
                if type(value) is np.ndarray and fits_exactly(key, value):
                    feeds[key] = value  # the common case: no conversion, nothing to check
                else:
                    feeds[key] = convert_feed(key, value)
                continue
            try:
                tensor = self._graph.as_graph_element(key, allow_operation=False)
            except KeyError as e:
                raise KeyError(f"Cannot interpret feed_dict key {key!r} as a Tensor: "
                               f"{e.args[0]}") from None
            except (TypeError, ValueError) as e:
                raise TypeError(f"Cannot interpret feed_dict key {key!r} as a Tensor: "
                                f"{e}") from None
            feeds[tensor] = convert_feed(tensor, value)
        return feeds

    def _get_pool(self):
        if self._threads <= 1:
            return None
        if self._pool is None:
            with self._pool_lock:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(self._threads,
                                                    thread_name_prefix="flowjit-inter-op")
        return self._pool

    # --- lifetime -----------------------------------------------------------------------------
    def close(self):
        """Release the session's state; further `run` calls raise RuntimeError."""
        self._closed = True
        if self._master is not None:   # a cluster's state outlives a Session that used it
            self._master.close()
        self._state.close_resources()   # blocked threads wake up (CancelledError)
        self._state = SessionState()
        self._plans.clear()
        self._multi_plans.clear()
        self._structures.clear()
        for device in self._devices:
            if device is not devices.host_device():
                device.close()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    @contextlib.contextmanager
    def as_default(self):
        """Make this the default session (for Tensor.eval / Operation.run) inside the block."""
        default_sessions().append(self)
        try:
            yield self
        finally:
            default_sessions().pop()

    def __enter__(self):
        graph_ctx = self._graph.as_default()
        sess_ctx = self.as_default()
        graph_ctx.__enter__()
        sess_ctx.__enter__()
        self._default_ctx.append((graph_ctx, sess_ctx))
        return self

    def __exit__(self, exc_type, exc, tb):
        graph_ctx, sess_ctx = self._default_ctx.pop()
        sess_ctx.__exit__(exc_type, exc, tb)
        graph_ctx.__exit__(exc_type, exc, tb)
        self.close()
        return False

    def __del__(self):
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.shutdown(wait=False)
        for device in getattr(self, "_devices", ()):
            if device is not devices.host_device() and device._pool is not None:
                device._pool.shutdown(wait=False)   # a session dropped without close()


class InteractiveSession(Session):
    """A Session that installs itself as the default on creation (for notebooks and shells)."""

    def __init__(self, target="", graph=None, config=None):
        super().__init__(target, graph, config)
        self._graph_ctx = self._graph.as_default()
        self._graph_ctx.__enter__()
        push_interactive(self)

    def close(self):
        if remove_interactive(self):
            try:
                self._graph_ctx.__exit__(None, None, None)
            except IndexError:
                pass
        super().close()


def _results(structure, feeds, computed):
    """The fetched values in the structure of the fetches: fed tensors give their feeds,
    the others what the step `computed`."""
    fed_arrays = {id(v) for v in feeds.values()} if feeds else ()
    results = {}
    for element in structure.elements:
        if type(element) is Tensor:
            value = feeds[element] if element in feeds else computed[element]
            results[element] = _fetch_value(value, fed_arrays)
        else:
            results[element] = None
    return structure.build(results)


def _fetch_value(value, fed_arrays):
    """A fetched value the caller owns: never a view of a feed, a constant or a variable."""
    if type(value) is VariableRef:
        value = value.read()
    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            return value[()]  # scalars come back as NumPy scalars, as in TensorFlow
        if not value.flags.writeable or not value.flags.owndata or id(value) in fed_arrays:
            return value.copy()
    return value


def _asks_for_gpus(graph) -> bool:
    """Whether an op of `graph` requests a GPU (only then does a Session look for GPUs,
    which loads numba-cuda: runtime/gpu_device.py)."""
    return any("GPU" in op.device.upper() for op in graph.get_operations() if op.device)
