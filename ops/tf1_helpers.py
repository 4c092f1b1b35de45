"""Small TensorFlow 1.x helpers that typical TF1 programs call, built on flowjit's graph and ops
(no op types of their own): `is_tensor`, `dimension_value`, `dimension_at_index`,
`get_static_value`, `identity_n`, `tuple`, `add_to_collections`, `model_variables`,
`tables_initializer` (`initialize_all_tables`: flowjit has no lookup tables, so it is a
no-op), `initialize_local_variables`, `no_regularizer`, `random.categorical`, and the
`tf.initializers` he/lecun variance-scaling initializers.  `NAMESPACES` lists what the
package root adds to its `tf.random` and `tf.initializers` namespaces (as
math_composites.py and matrix_composites.py do for `tf.math` and `tf.linalg`).
"""

from __future__ import annotations

from .. import dtypes as _dtypes
from ..compiler.core.graph import GraphKeys, Tensor, get_default_graph
from ..compiler.core.shapes import Dimension, TensorShape
from .basic_ops import group, identity, no_op
from .builder import graph_for
from .conversion import static_value
from .indexed_slices import IndexedSlices
from .init_ops import variance_scaling_initializer
from .random_ops import multinomial, random_shuffle
from .variable_collections import (global_variables_initializer, local_variables_initializer,
                                   variables_initializer)

__all__ = ["is_tensor", "dimension_value", "dimension_at_index", "get_static_value",
           "identity_n", "tuple", "add_to_collections", "model_variables", "tables_initializer",
           "initialize_all_tables", "initialize_local_variables", "no_regularizer"]


def is_tensor(x) -> bool:
    """Whether `x` is a graph tensor (a Tensor, Variable or IndexedSlices)."""
    return isinstance(x, (Tensor, IndexedSlices)) or hasattr(x, "_as_graph_tensor")


def dimension_value(dimension):
    """The int (or None) of a Dimension, int or None."""
    return dimension.value if isinstance(dimension, Dimension) else dimension


def dimension_at_index(shape, index) -> Dimension:
    """Dimension `index` of `shape` (unknown for a shape of unknown rank)."""
    shape = TensorShape(shape)
    return Dimension(None) if shape.ndims is None else shape[index]


def get_static_value(tensor, partial=False):
    """The NumPy value of `tensor` when it is known while building the graph, else None."""
    del partial
    if not isinstance(tensor, Tensor):
        return None
    return static_value(tensor)


def identity_n(input, name=None) -> list:  # noqa: A002 - TensorFlow's name
    """An Identity of each tensor of `input` (a list)."""
    values = list(input)
    graph = graph_for(values)
    with graph.as_default(), graph.name_scope(name or "IdentityN"):
        return [identity(v) for v in values]


def tuple(tensors, name=None, control_inputs=None) -> list:  # noqa: A001 - TensorFlow's name
    """The tensors, each available only after all of them (and `control_inputs`) are
    computed: an Identity of each behind one group of them all (None entries stay None)."""
    present = [t for t in tensors if t is not None]
    graph = graph_for(present)
    with graph.as_default(), graph.name_scope(name or "tuple"):
        deps = [t.op if hasattr(t, "op") else t for t in present]
        gate = group(*deps, *(control_inputs or []))
        with graph.control_dependencies([gate]):
            return [None if t is None else identity(t) for t in tensors]


def add_to_collections(names, value) -> None:
    """Add `value` to each collection of `names` (a name or a list) of the default graph."""
    get_default_graph().add_to_collections(names, value)


def model_variables(scope=None) -> list:
    """The MODEL_VARIABLES collection (optionally filtered by `scope`)."""
    return get_default_graph().get_collection(GraphKeys.MODEL_VARIABLES, scope)


def tables_initializer(name="init_all_tables"):
    """The op that initializes the graph's lookup tables: flowjit has none, so a NoOp."""
    return no_op(name=name)


initialize_all_tables = tables_initializer


def initialize_local_variables():
    """TensorFlow 1.x's deprecated name for local_variables_initializer()."""
    return local_variables_initializer()


def no_regularizer(_):
    """The regularizer that adds no loss (None)."""
    return None


def categorical(logits, num_samples, dtype=None, seed=None, name=None) -> Tensor:
    """`num_samples` class indices per row of `logits` (unnormalized log-probabilities),
    int64 unless `dtype` (tf.random.categorical: multinomial)."""
    return multinomial(logits, num_samples, seed=seed, name=name,
                       output_dtype=_dtypes.as_dtype(dtype or _dtypes.int64))


def he_normal(seed=None):
    """Truncated normal with variance 2 / fan_in (He et al.)."""
    return variance_scaling_initializer(2.0, "fan_in", "truncated_normal", seed)


def he_uniform(seed=None):
    """Uniform with variance 2 / fan_in (He et al.)."""
    return variance_scaling_initializer(2.0, "fan_in", "uniform", seed)


def lecun_normal(seed=None):
    """Truncated normal with variance 1 / fan_in (LeCun)."""
    return variance_scaling_initializer(1.0, "fan_in", "truncated_normal", seed)


def lecun_uniform(seed=None):
    """Uniform with variance 1 / fan_in (LeCun)."""
    return variance_scaling_initializer(1.0, "fan_in", "uniform", seed)


# what the package root adds to its `tf.random` and `tf.initializers` namespaces
NAMESPACES = {
    "random": {"categorical": categorical, "multinomial": multinomial,
               "shuffle": random_shuffle},
    "initializers": {"he_normal": he_normal, "he_uniform": he_uniform,
                     "lecun_normal": lecun_normal, "lecun_uniform": lecun_uniform,
                     "global_variables": global_variables_initializer,
                     "local_variables": local_variables_initializer,
                     "variables": variables_initializer,
                     "tables_initializer": tables_initializer},
}
