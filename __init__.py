"""flowjit: TensorFlow-style dataflow graphs for Python, compiled just in time.

This module is the public API.  `import flowjit as tf` gives TensorFlow 1.x names: build a
graph with ops (`tf.constant`, `tf.placeholder`, `tf.matmul`, `tf.Variable`, ...), then run
any part of it with `tf.Session().run(fetches, feed_dict)`.
"""

from . import dtypes, errors
from .compiler.core.graph import (Graph, GraphKeys, Operation, Tensor, add_to_collection,
                             colocate_with, control_dependencies, device, get_collection,
                             get_collection_ref, get_default_graph, name_scope,
                             reset_default_graph)
from .compiler.core.device_spec import DeviceSpec
from .compiler.core.graph_def import GraphDef, NodeDef
from .compiler.graph_import import import_graph_def
from .compiler.core.shapes import Dimension, TensorShape
from .dtypes import (DType, as_dtype, bool_ as bool,
                     complex64, complex128, double, float16, float32, float64, half, int8,
                     int16, int32, int64, string, uint8, uint16, uint32, uint64)
from . import ops as _ops  # registers every op and installs Tensor operators
from .ops.api import *  # noqa: F401,F403 - the op functions under their TF1 names
from .compiler.gradients import UnconnectedGradients, gradients
# TF1's cond/while_loop, which also take the JAX-like forms (compiler/functional.py)
from .compiler.functional import cond, fori_loop, while_loop
from .ops.variables import (Variable, all_variables, assign, assign_add, assign_sub,
                            global_variables, global_variables_initializer,
                            initialize_all_variables, initialize_variables,
                            is_variable_initialized, local_variables,
                            local_variables_initializer, trainable_variables,
                            variables_initializer)
from .ops.variable_scope import (AUTO_REUSE, VariableScope, get_variable,
                                 get_variable_scope, variable_scope)
from .runtime.config import (ConfigProto, GPUOptions, GraphOptions, JitOptions, JitPolicy,
                             OptimizerOptions, PlacementOptions, RecvScheduling, RunMetadata,
                             RunOptions)
from .runtime import devices as _devices
from .runtime.jit import jit
from .runtime.process_tuning import process_tuned, tune_process
from .runtime.autodiff_api import grad, value_and_grad
from .runtime.session import InteractiveSession, Session, get_default_session
from .targets.cpu.cache import cache_dir, clear_cache
from . import client, distributed, gfile, nn, summary, train  # noqa: E402
from .protos import Event, SessionLog, Summary  # noqa: E402
from . import keras  # noqa: E402  - tf.keras: Sequential, layers, compile/fit (keras/)
from .models import layers, losses, metrics  # noqa: E402  - tf.layers, tf.losses, tf.metrics
from .client import graph_view as _graph_view  # noqa: E402

_graph_view.register_notebook_display()   # Graph._repr_html_ (compiler/core/display.py)

from ._version import __version__  # noqa: E402
from .targets.cpu.build import wait_for_cache_writes  # noqa: E402
newaxis = None


def disable_eager_execution():
    """No-op: flowjit graphs are always built lazily (TF 1.x graph mode)."""


def disable_v2_behavior():
    """No-op: flowjit follows TensorFlow 1.x graph-mode behaviour."""


def executing_eagerly() -> bool:
    """Always False: ops build graph nodes; values come from Session.run."""
    return False


def _namespace(name: str, doc: str, members: dict):
    """A TensorFlow-style sub-namespace (`tf.math`, `tf.random`, ...) importable by name."""
    import sys
    import types

    module = types.ModuleType(f"{__name__}.{name}", doc)
    module.__dict__.update({k: v for k, v in members.items() if v is not None})
    sys.modules[module.__name__] = module
    return module


def _pick(*names):
    g = globals()
    return {n: g.get(n) for n in names}


math = _namespace("math", "TensorFlow's `tf.math` names for flowjit's math ops.", _pick(
    "add", "subtract", "multiply", "divide", "truediv", "floordiv", "floormod", "mod", "pow",
    "maximum", "minimum", "negative", "abs", "sign", "square", "sqrt", "rsqrt", "reciprocal",
    "exp", "expm1", "log", "log1p", "sin", "cos", "tan", "tanh", "sigmoid", "erf", "floor",
    "ceil", "round", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    "logical_and", "logical_or", "logical_not", "logical_xor", "reduce_sum", "reduce_mean",
    "reduce_max", "reduce_min", "reduce_prod", "reduce_any", "reduce_all", "reduce_logsumexp",
    "argmax", "argmin", "is_nan", "is_inf", "is_finite", "squared_difference", "add_n", "atan2",
    "count_nonzero", "truncatediv", "truncatemod", "cumsum", "atan", "div_no_nan",
    "reduce_euclidean_norm"))
math.softplus = getattr(nn, "softplus", None)
random = _namespace("random", "TensorFlow's `tf.random` names.", {
    "normal": globals().get("random_normal"), "uniform": globals().get("random_uniform"),
    "truncated_normal": globals().get("truncated_normal"),
    "set_random_seed": globals().get("set_random_seed"),
    "get_seed": globals().get("get_seed")})
from .ops import bitwise_ops as _bitwise_ops  # noqa: E402

bitwise = _namespace("bitwise", "TensorFlow's `tf.bitwise` names: integer bit operations.",
                     {n: getattr(_bitwise_ops, n) for n in _bitwise_ops.__all__})
linalg = _namespace("linalg", "TensorFlow's `tf.linalg` names.", _pick("matmul", "transpose",
                                                                        "norm"))
linalg.l2_normalize = nn.l2_normalize
linalg.inv, linalg.det, linalg.solve = matrix_inverse, matrix_determinant, matrix_solve
linalg.cholesky = cholesky
initializers = _namespace("initializers", "TensorFlow's `tf.initializers` names.", {
    "zeros": zeros_initializer, "ones": ones_initializer, "constant": constant_initializer,
    "random_normal": random_normal_initializer, "random_uniform": random_uniform_initializer,
    "truncated_normal": truncated_normal_initializer,
    "glorot_uniform": glorot_uniform_initializer, "glorot_normal": glorot_normal_initializer,
    "variance_scaling": variance_scaling_initializer})
from .ops import math_composites as _mc, matrix_composites as _mx, tf1_helpers as _th  # noqa

for _space, _names in [*_mc.NAMESPACES.items(), *_mx.NAMESPACES.items(),
                       *_th.NAMESPACES.items()]:   # TF 1.x aliases and small composites
    globals()[_space].__dict__.update(_names)
math.__dict__.update(divide_no_nan=div_no_nan, unsorted_segment_sum=unsorted_segment_sum,
                     **{n: getattr(nn, n) for n in ("l2_normalize", "log_softmax", "softmax",
                                                    "softsign", "in_top_k", "top_k",
                                                    "zero_fraction")})
linalg.global_norm = global_norm
from .compiler import functional as _functional  # noqa: E402

lax = _namespace("lax", "JAX-like functional control flow (compiler/functional.py): "
                 "`cond(pred, true_fn, false_fn, *operands)`, `while_loop(cond_fn, body_fn, "
                 "init_val)`, `fori_loop(lower, upper, body_fn, init_val)`.", {
                     "cond": _functional.lax_cond, "while_loop": _functional.lax_while_loop,
                     "fori_loop": _functional.fori_loop})
config = _namespace("config", "flowjit's process settings: `tune_process()` opts in to its "
                    "process-wide tuning (runtime/process_tuning.py); the device listings "
                    "(runtime/devices.py).",
                    {**_pick("tune_process", "process_tuned"),
                     "list_physical_devices": _devices.list_physical_devices,
                     "list_logical_devices": _devices.list_logical_devices})
compat = _namespace("compat", "`flowjit.compat.v1` is flowjit itself (TF 1.x names).", {})
compat.v1 = __import__("sys").modules[__name__]
__import__("sys").modules[f"{__name__}.compat.v1"] = compat.v1
from .ops import tfrecord_format as _tfrecord  # noqa: E402

python_io = _namespace("python_io", "TensorFlow's `tf.python_io`: TFRecord files.", {
    "TFRecordWriter": _tfrecord.TFRecordWriter,
    "tf_record_iterator": _tfrecord.tf_record_iterator})
from .models import contrib_layers as _contrib_layers  # noqa: E402

# tf.contrib: one namespace, each part adds its sub-module (tf.contrib.layers here)
contrib = globals().get("contrib") or _namespace(
    "contrib", "TensorFlow 1.x's `tf.contrib` names that TF1 programs still use.", {})
contrib.layers = _contrib_layers
from .models import rnn as _rnn, rnn_cell as _rnn_cell, rnn_cell_wrappers as _rnn_wrappers  # noqa: E402

_cells = {n: getattr(_rnn_cell, n) for n in _rnn_cell.__all__}
_cells.update({n: getattr(_rnn_wrappers, n) for n in _rnn_wrappers.__all__})
nn.rnn_cell = _namespace("nn.rnn_cell", "TensorFlow's `tf.nn.rnn_cell`: RNN cells "
                         "(models/rnn_cell.py, models/rnn_cell_wrappers.py).", _cells)
contrib.rnn = _namespace("contrib.rnn", "TensorFlow 1.x's `tf.contrib.rnn`: the RNN cells and "
                         "the static unrolls (models/rnn.py).",
                         {**_cells, "static_rnn": _rnn.static_rnn,
                          "static_bidirectional_rnn": _rnn.static_bidirectional_rnn})
