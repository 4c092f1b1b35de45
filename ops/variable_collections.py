"""The variable collections and their initializer ops (`tf.global_variables()`, ...).

Variables add themselves to the graph's GLOBAL_VARIABLES, TRAINABLE_VARIABLES or
LOCAL_VARIABLES collections when made (ops/variables.py); these functions read the
collections and group the variables' initializers into one op.
"""

from __future__ import annotations

from . import basic_ops
from ..compiler.core.graph import GraphKeys, get_default_graph


def global_variables(scope=None) -> list:
    """The graph's global variables (optionally those whose names match `scope`)."""
    return get_default_graph().get_collection(GraphKeys.GLOBAL_VARIABLES, scope)


def all_variables() -> list:
    """Deprecated TensorFlow name for global_variables()."""
    return global_variables()


def trainable_variables(scope=None) -> list:
    """The graph's trainable variables (optionally those whose names match `scope`)."""
    return get_default_graph().get_collection(GraphKeys.TRAINABLE_VARIABLES, scope)


def local_variables(scope=None) -> list:
    """The graph's local variables (optionally those whose names match `scope`)."""
    return get_default_graph().get_collection(GraphKeys.LOCAL_VARIABLES, scope)


def variables_initializer(var_list, name="init"):
    """An op that runs the initializers of `var_list` (a no-op for an empty list)."""
    var_list = list(var_list)
    if not var_list:
        return basic_ops.no_op(name=name)
    return basic_ops.group(*[v.initializer for v in var_list], name=name)


def initialize_variables(var_list, name="init"):
    """Deprecated TensorFlow name for variables_initializer()."""
    return variables_initializer(var_list, name=name)


def global_variables_initializer():
    """An op named "init" running every global variable's initializer."""
    return variables_initializer(global_variables(), name="init")


initialize_all_variables = global_variables_initializer


def local_variables_initializer():
    """An op named "init" running every local variable's initializer."""
    return variables_initializer(local_variables(), name="init")
