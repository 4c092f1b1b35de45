"""flowjit: TensorFlow-style dataflow graphs for Python, compiled just in time.

This module is the public API.  `import flowjit as tf` gives TensorFlow 1.x names: build a
graph with ops (`tf.constant`, `tf.placeholder`, `tf.matmul`, `tf.Variable`, ...), then run
any part of it with `tf.Session().run(fetches, feed_dict)`.
"""

from . import dtypes, errors
from .compiler.graph import (Graph, GraphKeys, Operation, Tensor, add_to_collection,
                             control_dependencies, device, get_collection, get_collection_ref,
                             get_default_graph, name_scope, reset_default_graph)
from .compiler.shapes import Dimension, TensorShape
from .dtypes import (DType, as_dtype, bool_ as bool,
                     complex64, complex128, double, float16, float32, float64, half, int8,
                     int16, int32, int64, string, uint8, uint16, uint32, uint64)
from . import ops as _ops  # registers every op and installs Tensor operators
from .ops.array_ops import *  # noqa: F401,F403
from .ops.basic_ops import (constant, group, identity, no_op, placeholder,
                            placeholder_with_default)
from .ops.conversion import convert_to_tensor
from .ops.math_ops import *  # noqa: F401,F403
from .ops.matmul_ops import *  # noqa: F401,F403
from .ops.nn_ops import *  # noqa: F401,F403
from .ops.random_ops import *  # noqa: F401,F403
from .ops.reduction_ops import *  # noqa: F401,F403
from .ops.shape_ops import *  # noqa: F401,F403
from .ops.slicing_ops import *  # noqa: F401,F403
from .ops.variables import (Variable, all_variables, assign, assign_add, assign_sub,
                            global_variables, global_variables_initializer,
                            initialize_all_variables, initialize_variables,
                            is_variable_initialized, local_variables,
                            local_variables_initializer, trainable_variables,
                            variables_initializer)
from .runtime.config import ConfigProto, GPUOptions, RunMetadata, RunOptions
from .runtime.session import InteractiveSession, Session, get_default_session
from . import nn  # noqa: E402

__version__ = "0.1.0"
newaxis = None
