"""`flowjit.train`: TensorFlow 1.x's `tf.train` namespace.

Kept small: it re-exports what lives elsewhere (optimizers from `optimizers/`, `Saver` and
`latest_checkpoint` from `runtime/checkpoint.py`, the queue runners and batching from
`runtime/queue_runner.py`, `ClusterSpec`, `replica_device_setter` and `Server` from
`runtime/cluster_spec.py`, `runtime/device_setter.py` and `runtime/local_cluster.py`) and holds only thin glue: `write_graph` and
the global-step helpers (an int64 variable named "global_step" in the GLOBAL_STEP collection).
"""

from __future__ import annotations

import os

from . import gfile as _gfile
from . import dtypes as _dtypes
from .compiler.core.graph import Graph, GraphKeys, get_default_graph
from .compiler.core.graph_def import GraphDef
from .optimizers import (AdagradOptimizer, AdamOptimizer, GradientDescentOptimizer,
                         MomentumOptimizer, Optimizer, RMSPropOptimizer,
                         SyncReplicasOptimizer)
from .runtime.learning_rates import (exponential_decay, inverse_time_decay, natural_exp_decay,
                                     piecewise_constant, polynomial_decay)
from .ops.example_proto import BytesList, Example, Feature, Features, FloatList, Int64List
from .runtime.meta_graph import export_meta_graph, import_meta_graph_def
from .runtime.queue_runner import (Coordinator, QueueRunner, add_queue_runner, batch,
                                   input_producer, shuffle_batch, start_queue_runners,
                                   string_input_producer)
from .runtime.cluster_spec import ClusterSpec
from .runtime.global_step import get_global_step
from .runtime.device_setter import replica_device_setter
from .runtime.local_cluster import Server
from .runtime.monitored_session import (ChiefSessionCreator, MonitoredSession,
                                        MonitoredTrainingSession, Scaffold,
                                        SingularMonitoredSession, WorkerSessionCreator)
from .runtime.session_hooks import (CheckpointSaverHook, LoggingTensorHook,
                                    NanLossDuringTrainingError, NanTensorHook,
                                    SecondOrStepTimer, SessionRunArgs, SessionRunContext,
                                    SessionRunHook, SessionRunValues, StopAtStepHook)
from .runtime.checkpoint import (CheckpointState, Saver, checkpoint_exists,
                                 get_checkpoint_state, latest_checkpoint, list_variables,
                                 load_variable)

__all__ = ["write_graph", "export_meta_graph", "import_meta_graph", "Optimizer",
           "GradientDescentOptimizer", "MomentumOptimizer",
           "AdamOptimizer", "AdagradOptimizer", "RMSPropOptimizer", "SyncReplicasOptimizer",
           "Saver", "CheckpointState",
           "latest_checkpoint", "get_checkpoint_state", "checkpoint_exists", "list_variables",
           "load_variable", "get_global_step",
           "create_global_step", "get_or_create_global_step", "global_step",
           "exponential_decay", "inverse_time_decay", "natural_exp_decay", "polynomial_decay",
           "piecewise_constant", "Coordinator", "QueueRunner", "add_queue_runner",
           "start_queue_runners", "batch", "shuffle_batch", "input_producer",
           "string_input_producer", "Example", "Features", "Feature", "BytesList",
           "FloatList", "Int64List", "ClusterSpec", "replica_device_setter", "Server",
           "MonitoredSession", "MonitoredTrainingSession", "SingularMonitoredSession",
           "Scaffold", "ChiefSessionCreator", "WorkerSessionCreator", "SessionRunHook",
           "SessionRunArgs", "SessionRunContext", "SessionRunValues", "StopAtStepHook",
           "CheckpointSaverHook", "NanTensorHook", "NanLossDuringTrainingError",
           "LoggingTensorHook", "SecondOrStepTimer"]


def import_meta_graph(meta_graph_or_file, clear_devices: bool = False, import_scope=None,
                      **kwargs):
    """Rebuild the graph and collections of a MetaGraphDef (or `<prefix>.meta` file, as
    `Saver.save` writes) in the default graph; returns a `Saver` of its variables, or None
    when it has none (runtime/meta_graph.py)."""
    variables = import_meta_graph_def(meta_graph_or_file, clear_devices=clear_devices,
                                      import_scope=import_scope,
                                      input_map=kwargs.get("input_map"))
    return Saver(variables) if variables else None


def write_graph(graph_or_graph_def, logdir, name, as_text: bool = True) -> str:
    """Write a Graph (or GraphDef) to `logdir/name`; returns the path written.

    `as_text=True` writes the readable text form, otherwise the binary form; both are read
    back by `GraphDef().ParseFromString`.  `logdir` is created if needed, and the file is
    written atomically (a temporary file in the same directory, then a rename), so an
    existing file is only replaced by a complete new one.
    """
    if isinstance(graph_or_graph_def, Graph):
        graph_def = graph_or_graph_def.as_graph_def(add_shapes=True)
    elif isinstance(graph_or_graph_def, GraphDef):
        graph_def = graph_or_graph_def
    else:
        raise TypeError("write_graph expects a Graph or a GraphDef, got "
                        f"{type(graph_or_graph_def).__name__}.")
    data = str(graph_def) if as_text else graph_def.SerializeToString()
    path = os.path.join(os.fspath(logdir), name)
    _gfile.MakeDirs(os.path.dirname(path) or ".")
    _gfile.atomic_write_string_to_file(path, data)
    return path


# --- the global step ----------------------------------------------------------------------------


def create_global_step(graph=None):
    """Make the graph's global step: a non-trainable int64 scalar variable starting at 0.

    Raises ValueError if the graph already has one.
    """
    from .ops.variables import Variable

    graph = graph if graph is not None else get_default_graph()
    if get_global_step(graph) is not None:
        raise ValueError('"global_step" already exists.')
    with graph.as_default(), graph.name_scope(None):
        return Variable(_zeros_int64, trainable=False, name="global_step",
                        collections=[GraphKeys.GLOBAL_VARIABLES, GraphKeys.GLOBAL_STEP])


def _zeros_int64():
    from .ops.basic_ops import constant

    return constant(0, dtype=_dtypes.int64)


def get_or_create_global_step(graph=None):
    """The graph's global step, made (see `create_global_step`) if it has none."""
    graph = graph if graph is not None else get_default_graph()
    step = get_global_step(graph)
    return step if step is not None else create_global_step(graph)


def global_step(sess, global_step_tensor) -> int:
    """The value of `global_step_tensor` in session `sess`, as a Python int."""
    return int(sess.run(global_step_tensor))
