"""The op vocabulary: every op flowjit knows, registered in this one place.

Each module below defines its ops once (OpDef: inference, reference kernel, gradient and
lowering slots) and lists them in `OP_DEFS`; `register_all` adds them to the registry,
installs each op's gradient and the Tensor/Variable Python operators.  Importing
`flowjit.ops` does all three, once.

Gradients: the op modules are at their size limit, so an area's gradients live in a sibling
module (`math_grad`, `reduction_grad`, `nn_grad`, `array_grad`) as a `GRADIENTS` table of
(OpDef, fn); `register_all` sets `OpDef.gradient` from those tables, so an op's definition
is still its one OpDef.  An op without a gradient has `gradient = None`.
"""

from . import (array_ops, basic_ops, bitwise_ops, check_ops, linalg_ops, math_ops, matmul_ops,
               nn_ops, random_ops, reduction_ops, scatter_ops, segment_ops, shape_ops,
               slicing_ops, sort_ops, sum_to_shape, variables)
from . import array_grad, math_grad, nn_grad, reduction_grad
from . import operators, registry

OP_MODULES = (basic_ops, variables, math_ops, bitwise_ops, check_ops, reduction_ops, matmul_ops,
              nn_ops, array_ops, shape_ops, slicing_ops, segment_ops, scatter_ops, sum_to_shape,
              random_ops, linalg_ops, sort_ops)
GRADIENT_MODULES = (math_grad, reduction_grad, nn_grad, array_grad, scatter_ops, check_ops,
                    sum_to_shape, linalg_ops, sort_ops)


def register_all():
    """Register every op, install the gradients, and install the Tensor operators."""
    for module in OP_MODULES:
        for op_def in module.OP_DEFS:
            registry.register(op_def)
    for module in GRADIENT_MODULES:
        for op_def, gradient in module.GRADIENTS:
            if op_def.gradient is not None and op_def.gradient is not gradient:
                raise ValueError(f"Two gradients for op type '{op_def.name}'.")
            op_def.gradient = gradient
    operators.install()


register_all()
