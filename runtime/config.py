"""Session options with TensorFlow's names: ConfigProto, RunOptions, RunMetadata.

Only the fields flowjit acts on are meaningful; others are accepted (so TF 1.x code that
sets them runs) and documented as ignored.

Auto-clustering (runtime/clustering.py) is switched by, in order of precedence:
`ConfigProto(jit=False | True | JitOptions(...))`; TensorFlow's spelling
`ConfigProto(graph_options=GraphOptions(optimizer_options=OptimizerOptions(
global_jit_level=OptimizerOptions.OFF | ON_1 | ON_2)))` (DEFAULT defers); the environment
variable `FLOWJIT_JIT=auto|always|never` (also 1/0); and otherwise it is on, with the tiered "auto"
policy.  `jit_options(config)` resolves them.  The policies (`JitPolicy`; runtime/
clustering.py has the details):
- "auto" (the default): a cluster whose kernel is in a cache runs compiled from its first
  run; any other is compiled on a background thread once it has shown it is hot, while its
  reference kernels keep running the steps, and the kernel is swapped in between two runs
  of the cluster; the compiled kernel is kept only if it measures faster;
- "always" (`ConfigProto(jit="always")`, `JitOptions.always()`): every lowerable cluster,
  even a single op, is compiled before its first run, with no reference-kernel tier first
  (the tests use it so compiled kernels really run);
- "never" (`ConfigProto(jit="never")` or `jit=False`): no clusters; ops run one by one.

Graph rewrites of each plan (runtime/graph_optimizer.py: CSE and constant folding) follow
TensorFlow's OptimizerOptions: `opt_level` L1 (the default) turns both on, L0 leaves each to
its `do_*` flag; `graph_rewrites(config)` resolves them into a `GraphRewrites`.
"""

from __future__ import annotations

import dataclasses
import enum
import os

from ..targets.target import TargetKind


class GPUOptions:
    """Accepted for compatibility; flowjit has no GPU memory options yet."""

    def __init__(self, allow_growth=False, per_process_gpu_memory_fraction=1.0, **kwargs):
        self.allow_growth = allow_growth
        self.per_process_gpu_memory_fraction = per_process_gpu_memory_fraction


class OptimizerOptions:
    """Graph optimizer options, with TensorFlow's fields and defaults (config.proto).

    Graph rewrites before a plan runs (runtime/graph_optimizer.py):
    `do_common_subexpression_elimination`, `do_constant_folding` and
    `max_folded_constant_in_bytes` (0: 10 MiB, TensorFlow's cap).  `opt_level` L1 (the
    default) turns both rewrites on whatever the two flags say; L0 leaves each to its flag
    (False unless set), as TensorFlow's GraphOptimizer does.
    `global_jit_level` switches auto-clustering: DEFAULT leaves the choice to flowjit's
    default, OFF disables clustering, ON_1 and ON_2 enable it.
    `do_function_inlining` is accepted and ignored (flowjit has no graph functions).
    """

    class Level(enum.IntEnum):
        """TensorFlow's OptimizerOptions.Level."""

        L1 = 0    # the default: CSE and constant folding
        L0 = -1   # no optimization unless a do_* flag asks for it

    class GlobalJitLevel(enum.IntEnum):
        """TensorFlow's OptimizerOptions.GlobalJitLevel."""

        DEFAULT = 0
        OFF = -1
        ON_1 = 1
        ON_2 = 2

    DEFAULT = GlobalJitLevel.DEFAULT
    OFF = GlobalJitLevel.OFF
    ON_1 = GlobalJitLevel.ON_1
    ON_2 = GlobalJitLevel.ON_2
    L1 = Level.L1
    L0 = Level.L0

    def __init__(self, do_common_subexpression_elimination=False, do_constant_folding=False,
                 opt_level=Level.L1, global_jit_level=GlobalJitLevel.DEFAULT,
                 max_folded_constant_in_bytes=0, do_function_inlining=False, **kwargs):
        self.do_common_subexpression_elimination = bool(do_common_subexpression_elimination)
        self.do_constant_folding = bool(do_constant_folding)
        self.max_folded_constant_in_bytes = int(max_folded_constant_in_bytes)
        self.do_function_inlining = bool(do_function_inlining)
        self.opt_level = self.Level(int(opt_level))
        self.global_jit_level = self.GlobalJitLevel(int(global_jit_level))


class GraphOptions:
    """Graph options: `optimizer_options` (an OptimizerOptions); the rest is ignored."""

    def __init__(self, optimizer_options=None, **kwargs):
        self.optimizer_options = optimizer_options or OptimizerOptions()
        for k, v in kwargs.items():
            setattr(self, k, v)


class JitPolicy(enum.Enum):
    """When clusters are compiled (module docstring)."""

    AUTO = "auto"
    ALWAYS = "always"
    NEVER = "never"

    @classmethod
    def parse(cls, value) -> "JitPolicy":
        """A JitPolicy from itself, its name or a boolean-ish string ("1": auto, "0": never)."""
        if isinstance(value, cls):
            return value
        text = str(value).strip().lower()
        if text in ("1", "true", "on", "yes"):
            return cls.AUTO
        if text in ("0", "false", "off", "no"):
            return cls.NEVER
        try:
            return cls(text)
        except ValueError:
            raise ValueError(f"unknown jit policy {value!r}: use one of "
                             f"{', '.join(p.value for p in cls)}") from None


@dataclasses.dataclass(frozen=True)
class JitOptions:
    """flowjit's auto-clustering policy (runtime/clustering.py explains it).

    policy: a JitPolicy (or its name): AUTO, the tiered default; ALWAYS, compile before the
    first run; NEVER, no clusters (the same as enabled=False).
    Under AUTO, a signature's first run looks for its kernel in the target's caches
    (`from_cache`), and a signature not found there is compiled in the background once it has
    run `background_after_runs` times with the reference kernels AND spent
    `background_after_seconds` in them (both 0: start on the first run), and a new kernel
    serves `measure_runs` timed runs before it is kept: if those are slower than the
    reference kernels were, the cluster goes back to them for good (0: keep it untimed).
    quick_tier: the background compile makes a quick kernel first (serial loops, products
    through BLAS: compiler/tiers.py), installs it, then compiles the optimized kernel in the
    background and keeps whichever of the two measures faster (False: optimized only).
    min_ops: clusters with fewer non-constant ops stay plain ops.
    max_ops: the largest cluster (0: no limit).
    target: what compiles the clusters (runtime/targets.py): TargetKind.CPU (numba, the
    default) or TargetKind.REFERENCE (the NumPy interpreter of the kernel IR); a name such
    as "reference" is accepted and stored as the TargetKind.
    """

    enabled: bool = True
    policy: JitPolicy = JitPolicy.AUTO
    from_cache: bool = True
    background_after_runs: int = 2
    background_after_seconds: float = 0.02
    measure_runs: int = 3
    quick_tier: bool = True
    min_ops: int = 2
    max_ops: int = 0
    target: TargetKind = TargetKind.CPU

    def __post_init__(self):
        object.__setattr__(self, "target", TargetKind.parse(self.target))
        object.__setattr__(self, "policy", JitPolicy.parse(self.policy))
        if self.policy is JitPolicy.NEVER:
            object.__setattr__(self, "enabled", False)

    @classmethod
    def always(cls, **kwargs) -> "JitOptions":
        """The compile-always policy: every lowerable cluster compiled before its first run."""
        return cls(policy=JitPolicy.ALWAYS, min_ops=kwargs.pop("min_ops", 1), **kwargs)




class RecvScheduling(enum.Enum):
    """When a device's Recv nodes start (runtime/recv_schedule.py)."""

    ALAP = "alap"   # as late as the critical path allows: received tensors held briefly
    ASAP = "asap"   # as soon as the step starts


@dataclasses.dataclass(frozen=True)
class PlacementOptions:
    """flowjit's multi-device options (TensorFlow has no ConfigProto fields for them).

    recv_scheduling: RecvScheduling.ALAP (the default) or ASAP (or their names).
    compress_transfers: send float32 tensors between devices as float16 and widen them on
    arrival (lossy, 2015 paper §5.5): False (the default), True for every float32 edge, or
    a collection of tensor names ("layer1/out:0") for those edges only.
    """

    recv_scheduling: RecvScheduling = RecvScheduling.ALAP
    compress_transfers: object = False

    def __post_init__(self):
        object.__setattr__(self, "recv_scheduling", RecvScheduling(self.recv_scheduling))
        compress = self.compress_transfers
        if not isinstance(compress, bool):
            object.__setattr__(self, "compress_transfers", frozenset(
                getattr(t, "name", t) for t in compress))


class ConfigProto:
    """Session configuration.

    inter_op_parallelism_threads: threads that run independent ops concurrently (0: one
    per CPU core; 1: run ops one after another in the calling thread).
    graph_options.optimizer_options.global_jit_level and `jit` (flowjit's own: a bool, a
    JitOptions, or "always" for JitOptions.always()) switch auto-clustering; see the module
    docstring for precedence.
    device_count: {"CPU": n} makes n virtual CPU devices, each with its share of the cores
    (runtime/devices.py); {"GPU": n} asks for up to n GPUs (those the machine has).
    allow_soft_placement: an op whose requested device does not exist, or has no kernel for
    it, goes to a device that can run it instead of raising (runtime/placement.py).
    log_device_placement: print where every op of a step runs when its plan is built.
    placement: flowjit's PlacementOptions (Recv scheduling, compressed transfers).
    Other TensorFlow fields (gpu_options, intra_op_parallelism_threads) are accepted and
    ignored.
    """

    def __init__(self, inter_op_parallelism_threads=0, intra_op_parallelism_threads=0,
                 log_device_placement=False, allow_soft_placement=False, gpu_options=None,
                 device_count=None, graph_options=None, jit=None, placement=None, **kwargs):
        self.inter_op_parallelism_threads = int(inter_op_parallelism_threads)
        self.intra_op_parallelism_threads = int(intra_op_parallelism_threads)
        self.log_device_placement = log_device_placement
        self.allow_soft_placement = allow_soft_placement
        self.gpu_options = gpu_options or GPUOptions()
        self.device_count = dict(device_count or {})
        self.graph_options = graph_options or GraphOptions()
        self.jit = jit
        self.placement = placement if placement is not None else PlacementOptions()
        for k, v in kwargs.items():
            setattr(self, k, v)


def jit_options(config: ConfigProto) -> JitOptions:
    """The auto-clustering policy `config` asks for (explicit settings, then FLOWJIT_JIT)."""
    jit = config.jit
    if isinstance(jit, JitOptions):
        return jit
    if isinstance(jit, (str, JitPolicy)):
        return _of_policy(JitPolicy.parse(jit))
    if jit is not None:
        return JitOptions(enabled=bool(jit))
    level = config.graph_options.optimizer_options.global_jit_level
    if level != OptimizerOptions.DEFAULT:
        return JitOptions(enabled=level > 0)
    env = os.environ.get("FLOWJIT_JIT", "").strip()
    if env:
        return _of_policy(JitPolicy.parse(env))
    return JitOptions()


def _of_policy(policy: JitPolicy) -> JitOptions:
    return JitOptions.always() if policy is JitPolicy.ALWAYS else JitOptions(policy=policy)


# TensorFlow's cap on a folded constant when max_folded_constant_in_bytes is 0
DEFAULT_MAX_FOLDED_CONSTANT_BYTES = 10 * 1024 * 1024


@dataclasses.dataclass(frozen=True)
class GraphRewrites:
    """Which graph rewrites a Session's plans get (runtime/graph_optimizer.py), resolved
    from OptimizerOptions by `graph_rewrites(config)`.

    cse: merge identical pure ops; constant_folding: evaluate constant subgraphs once, when
    the plan is built; max_constant_bytes: the largest folded result kept.
    """

    cse: bool = True
    constant_folding: bool = True
    max_constant_bytes: int = DEFAULT_MAX_FOLDED_CONSTANT_BYTES

    @property
    def enabled(self) -> bool:
        return self.cse or self.constant_folding


def graph_rewrites(config: ConfigProto) -> GraphRewrites:
    """The graph rewrites `config` asks for, as TensorFlow's GraphOptimizer reads
    OptimizerOptions: opt_level L1 turns CSE and constant folding on, L0 leaves each to
    its do_* flag."""
    opts = config.graph_options.optimizer_options
    level_on = opts.opt_level >= OptimizerOptions.L1
    cap = opts.max_folded_constant_in_bytes or DEFAULT_MAX_FOLDED_CONSTANT_BYTES
    return GraphRewrites(cse=level_on or opts.do_common_subexpression_elimination,
                         constant_folding=level_on or opts.do_constant_folding,
                         max_constant_bytes=cap)


class TraceLevel(enum.IntEnum):
    NO_TRACE = 0
    SOFTWARE_TRACE = 1
    HARDWARE_TRACE = 2
    FULL_TRACE = 3


class RunOptions:
    """Per-call options: `timeout_in_ms` (DeadlineExceededError past it), `trace_level`
    (FULL_TRACE fills `RunMetadata.step_stats` with per-op timings) and
    `output_partition_graphs` (fills `RunMetadata.partition_graphs`: one GraphDef per
    device, with its _Send/_Recv nodes)."""

    TraceLevel = TraceLevel
    NO_TRACE = TraceLevel.NO_TRACE
    SOFTWARE_TRACE = TraceLevel.SOFTWARE_TRACE
    HARDWARE_TRACE = TraceLevel.HARDWARE_TRACE
    FULL_TRACE = TraceLevel.FULL_TRACE

    def __init__(self, timeout_in_ms=0, trace_level=TraceLevel.NO_TRACE,
                 output_partition_graphs=False, **kwargs):
        self.timeout_in_ms = int(timeout_in_ms)
        self.trace_level = TraceLevel(trace_level)
        self.output_partition_graphs = bool(output_partition_graphs)


class NodeStats:
    """Timing of one op in one run (seconds since the run started); `category` is "Op"
    for what the step ran (ops, clusters, Send/Recv) and "Compile" for a compile that
    happened during the step (runtime/trace_events.py)."""

    __slots__ = ("node_name", "op_type", "start", "end", "thread", "device", "category")

    def __init__(self, node_name, op_type, start, end, thread, device="", category="Op"):
        self.node_name = node_name
        self.op_type = op_type
        self.start = start
        self.end = end
        self.thread = thread
        self.device = device
        self.category = category

    def __repr__(self):
        return (f"NodeStats({self.node_name!r}, {self.op_type}, "
                f"{(self.end - self.start) * 1e6:.1f} us)")


class RunMetadata:
    """Filled by `Session.run` when RunOptions asks: `step_stats` is a list of NodeStats in
    completion order (trace_level), `partition_graphs` a GraphDef per device
    (output_partition_graphs)."""

    def __init__(self):
        self.step_stats = []
        self.partition_graphs = []
        self.wall_start = 0.0   # time.time() when the traced step began
