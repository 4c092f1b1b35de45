"""`tf.train.SyncReplicasOptimizer`: synchronous data parallelism between graphs (each
worker builds its own graph and session; docs/architecture.md, "Clusters").

Every worker's train op adds its gradients to one `ConditionalAccumulator` per variable
(ops/accumulator_ops.py, on the variable's task, shared by name between the workers'
graphs), then waits for a token from the sync token queue (on the global step's task)
and sets its local step to it.  The chief runs one more loop, a queue runner: take the
mean of `replicas_to_aggregate` gradients from every accumulator, apply it with the
wrapped optimizer (one update, incrementing the global step), then put one token per
replica, the new global step, in the queue.  A gradient computed at a local step older
than the accumulator's step (a straggler of an earlier update) is dropped.

`make_session_run_hook(is_chief, num_tokens)` gives the hook a MonitoredTrainingSession
needs: after a session is made it sets the local step (and, on the chief, the
accumulators' step), puts `num_tokens` tokens in the queue (default: one per replica to
aggregate, so the first round does not wait; 0 makes every step strictly wait for the
previous update) and starts the chief's queue runner.
"""

from __future__ import annotations

from .. import dtypes as _dtypes
from ..compiler.core.graph import GraphKeys
from ..ops.accumulators import ConditionalAccumulator
from ..ops.basic_ops import constant, group
from ..ops.fill_ops import fill
from ..ops.queues import FIFOQueue
from ..ops.variables import Variable, assign
from ..runtime.queue_runner import QueueRunner
from ..runtime.session_hooks import SessionRunHook
from .base import Optimizer


class SyncReplicasOptimizer(Optimizer):
    """Wraps `opt` so `replicas_to_aggregate` replicas' gradients make one update (module
    docstring).  `total_num_replicas` (default: `replicas_to_aggregate`) sets how many
    tokens a step hands out."""

    def __init__(self, opt, replicas_to_aggregate, total_num_replicas=None,
                 variable_averages=None, variables_to_average=None, use_locking=False,
                 name="sync_replicas"):
        if variable_averages is not None or variables_to_average:
            raise NotImplementedError("SyncReplicasOptimizer: variable_averages is not "
                                      "supported by flowjit.")
        super().__init__(use_locking, name)
        if replicas_to_aggregate < 1:
            raise ValueError(f"replicas_to_aggregate must be at least 1, got "
                             f"{replicas_to_aggregate}.")
        self._opt = opt
        self._replicas_to_aggregate = int(replicas_to_aggregate)
        self._total_num_replicas = int(total_num_replicas or replicas_to_aggregate)
        self._tokens_per_step = max(self._total_num_replicas, self._replicas_to_aggregate)
        self._gradients_applied = False
        self._global_step = None
        self._sync_token_queue = None
        self._chief_queue_runner = None
        self._accumulators: list = []
        self._local_step = None
        self.local_step_init_op = None
        self.chief_init_op = None

    def compute_gradients(self, *args, **kwargs):
        """The wrapped optimizer's gradients."""
        return self._opt.compute_gradients(*args, **kwargs)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """The worker's train op: add the gradients to the accumulators, wait for a token,
        set the local step to it.  Builds the chief's update and token loop too."""
        if global_step is None:
            raise ValueError("SyncReplicasOptimizer.apply_gradients needs the global_step: "
                             "it tells stale gradients from current ones.")
        if self._gradients_applied:
            raise ValueError("SyncReplicasOptimizer.apply_gradients can be called once.")
        pairs = [(g, v) for g, v in grads_and_vars if g is not None]
        if not pairs:
            raise ValueError("SyncReplicasOptimizer: no gradients to apply.")
        graph = global_step.graph
        self._global_step = global_step
        with graph.device(None), graph.name_scope(None):
            # the replica's own step, on its own task (outside any replica_device_setter)
            self._local_step = Variable(constant(0, dtype=_dtypes.int64), trainable=False,
                                        name="sync_rep_local_step",
                                        collections=[GraphKeys.LOCAL_VARIABLES])
        self.local_step_init_op = assign(self._local_step, global_step.read_value()).op
        with graph.name_scope(name or self._name):
            applied, averaged = [], []
            for grad, var in pairs:
                with graph.device(var.device):
                    acc = ConditionalAccumulator(grad.dtype, shape=var.shape,
                                                 shared_name=var.name + "/grad_accum")
                    applied.append(acc.apply_grad(grad, local_step=self._local_step))
                    averaged.append(acc.take_grad(self._replicas_to_aggregate))
                self._accumulators.append((acc, var.device))
            with graph.device(global_step.device):
                update = self._opt.apply_gradients(list(zip(averaged, [v for _, v in pairs])),
                                                   global_step=global_step)
                self._sync_token_queue = FIFOQueue(-1, global_step.dtype.base_dtype,
                                                   shapes=[], shared_name="sync_token_q",
                                                   name="sync_token_q")
                dummy = FIFOQueue(1, _dtypes.int32, shapes=[], shared_name="dummy_queue",
                                  name="dummy_queue")
                with graph.control_dependencies(applied):
                    token = self._sync_token_queue.dequeue()
                with graph.control_dependencies([update]):
                    tokens = fill([self._tokens_per_step], global_step.read_value())
                    sync_op = self._sync_token_queue.enqueue_many((tokens,))
            train_op = assign(self._local_step, token, name="train_op").op
            self._chief_queue_runner = QueueRunner(dummy, [sync_op])
            inits = [self.local_step_init_op]
            for acc, device in self._accumulators:
                with graph.device(device):
                    inits.append(acc.set_global_step(global_step.read_value(),
                                                     name="SetGlobalStep"))
            self.chief_init_op = group(*inits)
        self._gradients_applied = True
        return train_op

    def get_chief_queue_runner(self) -> QueueRunner:
        """The chief's loop of updates (module docstring)."""
        if not self._gradients_applied:
            raise ValueError("Call apply_gradients before get_chief_queue_runner.")
        return self._chief_queue_runner

    def get_init_tokens_op(self, num_tokens=-1):
        """The op putting `num_tokens` tokens (-1: replicas_to_aggregate) in the queue."""
        if not self._gradients_applied:
            raise ValueError("Call apply_gradients before get_init_tokens_op.")
        if num_tokens == -1:
            num_tokens = self._replicas_to_aggregate
        if num_tokens < 0:
            raise ValueError(f"num_tokens must be -1 or at least 0, got {num_tokens}.")
        if num_tokens == 0:
            return group(name="no_init_tokens")
        graph = self._global_step.graph
        with graph.device(self._global_step.device):
            tokens = fill([num_tokens], self._global_step.read_value())
            return self._sync_token_queue.enqueue_many((tokens,))

    def make_session_run_hook(self, is_chief, num_tokens=-1) -> "SessionRunHook":
        """The hook a MonitoredTrainingSession of this replica needs (module docstring)."""
        return _SyncReplicasHook(self, is_chief, num_tokens)

    def get_slot(self, *args, **kwargs):
        return self._opt.get_slot(*args, **kwargs)

    def get_slot_names(self, *args, **kwargs):
        return self._opt.get_slot_names(*args, **kwargs)

    def variables(self):
        return self._opt.variables()


class _SyncReplicasHook(SessionRunHook):
    """Sets the local step, hands out the first tokens and starts the chief's loop."""

    def __init__(self, optimizer: SyncReplicasOptimizer, is_chief: bool, num_tokens: int):
        self._opt, self._is_chief, self._num_tokens = optimizer, is_chief, num_tokens

    def begin(self):
        if not self._opt._gradients_applied:
            raise ValueError("SyncReplicasOptimizer.apply_gradients must be called before "
                             "its hook is used.")
        if self._is_chief:
            self._init_op = self._opt.chief_init_op
            self._tokens_op = self._opt.get_init_tokens_op(self._num_tokens)
            self._runner = self._opt.get_chief_queue_runner()
        else:
            self._init_op = self._opt.local_step_init_op

    def after_create_session(self, session, coord):
        session.run(self._init_op)
        if self._is_chief:
            session.run(self._tokens_op)
            self._runner.create_threads(session, coord=coord, daemon=True, start=True)
