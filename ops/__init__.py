"""The op vocabulary: every op flowjit knows, registered in this one place.

Each module below defines its ops once (OpDef: inference, reference kernel, gradient and
lowering slots) and lists them in `OP_DEFS`; `register_all` adds them to the registry and
installs the Tensor/Variable Python operators.  Importing `flowjit.ops` does both, once.
"""

from . import (array_ops, basic_ops, math_ops, matmul_ops, nn_ops, random_ops,
               reduction_ops, shape_ops, slicing_ops, variables)
from . import operators, registry

OP_MODULES = (basic_ops, variables, math_ops, reduction_ops, matmul_ops, nn_ops, array_ops,
              shape_ops, slicing_ops, random_ops)


def register_all():
    for module in OP_MODULES:
        for op_def in module.OP_DEFS:
            registry.register(op_def)
    operators.install()


register_all()
