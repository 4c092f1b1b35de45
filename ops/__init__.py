"""The op vocabulary: every op flowjit knows, registered in this one place.

One op, one definition (docs/architecture.md, "A new op"): each op module creates its
OpDefs complete — shape/dtype inference, NumPy reference kernel, gradient and lowering are
given to the constructor together, and an OpDef is frozen, so nothing changes it later — and
lists them in `OP_DEFS`.  An op family's gradients and lowerings live in the family's module
(MatMul's gradient beside MatMul in matmul_ops.py, the unary math gradients in
math_unary.py); adding an op touches one module (plus `ops/api.py` for a public name).

Imports between op modules (gradients make op families depend on each other both ways):
- an op module imports other op modules as objects (`from . import reshape_ops`) and calls
  through them (`reshape_ops.reshape(...)`), which Python resolves when the call runs, so
  the modules import in any order;
- names are imported (`from .builder import make_op`) from the shared builders, which import
  no op module: `registry`, `builder`, `conversion`, `elementwise`, `array_common`,
  `slice_spec`, `lower_util`, `lower_index`, `lower_reduce`, `lower_window`, `lower_conv`,
  `variable_ref`;
- only a module that no op module imports may import names from op modules: the gathering
  modules (`math_ops`, `array_ops`, `nn_ops`, `api`: they define nothing) and the
  compositions and front ends at the top (`composite_ops`, `loss_ops`, `sort_ops`,
  `linalg_ops`, `variable_scope`, `operators`, ...).
`tests/test_op_definitions.py` checks these rules, that OpDefs are frozen and that
importing the ops twice leaves every definition as it was.

Importing `flowjit.ops` does two things, once and explicitly, in `register_all`: it adds
every module's `OP_DEFS` to the registry table, and it installs the Tensor/Variable Python
operators (`ops/operators.py`).  Registration reads the OpDefs; it never changes them.
"""

from . import (arg_ops, array_ops, basic_ops, bitwise_ops, check_ops, control_flow_ops,
               gather_ops, grad_ops, linalg_ops, parsing_ops, queue_ops, reader_ops,
               math_ops, matmul_ops, nn_ops, random_ops, reduction_ops, scatter_ops, segment_ops,
               shape_ops, slice_update_ops, slicing_ops, sort_ops, sum_to_shape, summary_ops,
               training_ops, variables)
from . import conv_grad_ops, conv_ops
from . import sparse_training_ops, unique_ops, variable_scatter_ops
from . import lrn_ops, norm_grad_ops, norm_ops, pool_argmax_ops, pool_grad_ops, pool_ops
from . import sequence_ops
from . import accumulator_ops
from . import operators, registry

OP_MODULES = (basic_ops, variables, math_ops, bitwise_ops, check_ops, reduction_ops, arg_ops,
              matmul_ops, nn_ops, array_ops, shape_ops, slicing_ops, gather_ops, segment_ops,
              scatter_ops, sum_to_shape, random_ops, linalg_ops, sort_ops, control_flow_ops,
              queue_ops, reader_ops, parsing_ops, slice_update_ops, grad_ops, training_ops,
              summary_ops, conv_ops, conv_grad_ops)
OP_MODULES += (variable_scatter_ops, unique_ops, sparse_training_ops)
OP_MODULES += (pool_ops, pool_grad_ops, pool_argmax_ops, norm_ops, norm_grad_ops, lrn_ops)
OP_MODULES += (sequence_ops, accumulator_ops)


def register_all():
    """Add every op module's OpDefs to the registry and install the Tensor operators."""
    for module in OP_MODULES:
        for op_def in module.OP_DEFS:
            registry.register(op_def)
    operators.install()


register_all()
