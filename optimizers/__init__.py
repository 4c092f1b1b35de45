"""Optimizers: TensorFlow 1.x's `tf.train.*Optimizer` classes, built from public ops.

Owns the `Optimizer` base class (`minimize` = `compute_gradients` + `apply_gradients`,
slot variables, non-slot variables such as Adam's beta powers) and the five concrete
optimizers: GradientDescent, Momentum (optionally Nesterov), Adam, Adagrad and RMSProp
(optionally centered).  A dense update is an Assign, AssignAdd or AssignSub on a variable,
computed with the public math ops, so the executor runs it like any other part of the graph.
An IndexedSlices gradient (an embedding table's, ops/indexed_slices.py) is applied sparsely,
as TensorFlow 1.x does: GradientDescent subtracts the scaled rows with one ScatterSub
(repeated rows add up); the others first sum the rows of repeated indices (Unique +
UnsortedSegmentSum), then Momentum and Adagrad run SparseApplyMomentum / SparseApplyAdagrad
(ops/sparse_training_ops.py) and Adam decays m and v densely and scatter-adds the new parts
(TensorFlow's `_apply_sparse`) and RMSProp updates the rows of the indices (gathered and
scattered back, TensorFlow's SparseApplyRMSProp).  A subclass without `_apply_sparse`
applies the dense value of the slices.  It lives at the package root, beside `nn.py`,
because it is front-end graph building (it imports `ops/` and `compiler/`; only
`sync_replicas` imports `runtime/`, for the queue runner and the session hook a
synchronous replica needs).  Modules: `base` (the Optimizer class and slots), `descent`
(GradientDescent, Momentum), `adaptive` (Adam, Adagrad, RMSProp), `sync_replicas`
(SyncReplicasOptimizer: gradients of several replicas averaged into one update).

Invariants:
- Every update of one `apply_gradients` waits for every gradient (a control dependency), so all
  gradients see the variables' values from before the step, whatever the executor's order.
- Updates of one variable are chained by data edges (a slot's new value feeds the variable's
  update), so each step reads each slot once and writes it once.
- Work that must follow all variable updates (Adam's beta-power decay, the global-step
  increment) has control dependencies on them; `apply_gradients` returns one op that runs it all.
- Slot and non-slot variables are non-trainable members of GLOBAL_VARIABLES, so
  `global_variables_initializer()` initializes them and a `Saver` saves them.  Slot variables
  are named `<var>/<optimizer name>` (`w/Adam`, `w/Adam_1`), as in TensorFlow.

`use_locking` is accepted and ignored: a variable update holds the session's state lock anyway.
"""

from .adaptive import AdagradOptimizer, AdamOptimizer, RMSPropOptimizer
from .base import Optimizer
from .descent import GradientDescentOptimizer, MomentumOptimizer
from .sync_replicas import SyncReplicasOptimizer

__all__ = ["Optimizer", "GradientDescentOptimizer", "MomentumOptimizer", "AdamOptimizer",
           "AdagradOptimizer", "RMSPropOptimizer", "SyncReplicasOptimizer"]
