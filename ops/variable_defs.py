"""A Variable as a `VariableDef` protobuf (the names of its ops), and back.

A MetaGraphDef (runtime/meta_graph.py) records its variable collections as VariableDefs:
the variable op's output, the initial value, the initializer op and the snapshot ("read")
tensor, each by name, and whether it is trainable.  `variable_def_of` writes one (names
relative to `export_scope`); `fill_from_def` points a Variable object at the ops a
VariableDef names in the default graph (under `import_scope`).
"""

from __future__ import annotations

from ..compiler.core.graph import get_default_graph
from ..protos import VariableDef


def _relative(name: str, scope) -> str:
    prefix = f"{scope.rstrip('/')}/" if scope else ""
    return name[len(prefix):] if prefix and name.startswith(prefix) else name


def variable_def_of(variable, export_scope=None) -> VariableDef:
    """The VariableDef of `variable`."""
    return VariableDef(variable_name=_relative(variable._variable.name, export_scope),
                       initial_value_name=_relative(variable._initial_value.name, export_scope),
                       initializer_name=_relative(variable._initializer_op.name, export_scope),
                       snapshot_name=_relative(variable._snapshot.name, export_scope),
                       trainable=variable._trainable)


def fill_from_def(variable, variable_def, import_scope=None) -> None:
    """Make `variable` wrap the ops `variable_def` names in the default graph."""
    graph = get_default_graph()
    prefix = f"{import_scope.rstrip('/')}/" if import_scope else ""

    def element(name):
        return graph.as_graph_element(prefix + name) if name else None

    variable._variable = element(variable_def.variable_name)
    variable._initializer_op = element(variable_def.initializer_name)
    variable._snapshot = element(variable_def.snapshot_name)
    variable._initial_value = element(variable_def.initial_value_name)
    if variable._initial_value is None and variable._initializer_op is not None:
        variable._initial_value = variable._initializer_op.inputs[1]
    variable._trainable = bool(variable_def.trainable)
