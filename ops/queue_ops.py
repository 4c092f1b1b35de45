"""Queue ops (2015 paper §4.6): the queue resources (FIFOQueueV2, RandomShuffleQueueV2,
PaddingFIFOQueueV2) and the ops on a queue handle (enqueue, enqueue many, dequeue,
dequeue many, dequeue up to, size, close).

A queue op's output is a handle: a scalar string tensor whose value is the session's
`Queue` (ops/queue_state.py), made on the first run that needs it and kept by the session
(`ctx.state.resource`).  Enqueue and dequeue ops are BLOCKING (the executor runs them on a
thread of their own in a parallel step, and their waits honour the run's deadline) and
STATEFUL (never folded, merged or compiled).  The Python classes users build queues with
are in ops/queues.py.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core.shapes import TensorShape, scalar
from ..errors import InvalidArgumentError
from . import queue_state
from .registry import OpDef, Trait

_RESOURCE = frozenset({Trait.STATEFUL, Trait.SOURCE})
_WAITS = frozenset({Trait.STATEFUL, Trait.BLOCKING})


def _handle_infer(op):
    return [(_dtypes.string, scalar())]


def _resource_kernel(kind):
    def kernel(ctx, inputs, attrs):
        shapes = attrs.get("shapes")

        def make():
            return queue_state.Queue(attrs.get("shared_name") or ctx.op.name, kind,
                         [_dtypes.as_dtype(t).np_dtype for t in attrs["component_types"]],
                         None if not shapes else [None if s is None else tuple(s)
                                                  for s in shapes],
                         attrs.get("capacity", -1), attrs.get("min_after_dequeue", 0),
                         attrs.get("seed") or None)

        handle = np.empty((), dtype=object)
        handle[()] = ctx.state.resource(("queue", attrs.get("shared_name") or ctx.op.name), make)
        return [handle]

    return kernel


_KIND = queue_state.QueueKind
FIFO_QUEUE = OpDef("FIFOQueueV2", _handle_infer, _resource_kernel(_KIND.FIFO),
                   traits=_RESOURCE, default_name="fifo_queue",
                   doc="A first-in first-out queue of tuples of tensors.")
RANDOM_SHUFFLE_QUEUE = OpDef("RandomShuffleQueueV2", _handle_infer,
                             _resource_kernel(_KIND.RANDOM_SHUFFLE), traits=_RESOURCE,
                             default_name="random_shuffle_queue",
                             doc="A queue that dequeues its elements in random order.")
PADDING_FIFO_QUEUE = OpDef("PaddingFIFOQueueV2", _handle_infer,
                           _resource_kernel(_KIND.PADDING_FIFO), traits=_RESOURCE,
                           default_name="padding_fifo_queue",
                           doc="A FIFO queue whose dequeue_many pads to the batch's shape.")
QUEUE_TYPES = (FIFO_QUEUE, RANDOM_SHUFFLE_QUEUE, PADDING_FIFO_QUEUE)


def _queue(inputs):
    return inputs[0][()]


# --- enqueue ---------------------------------------------------------------------------------

def _no_outputs(op):
    return []


def _enqueue_kernel(ctx, inputs, attrs):
    queue = _queue(inputs)
    element = tuple(np.asarray(v, dtype=d) for v, d in zip(inputs[1:], queue.dtypes))
    queue.enqueue([element], ctx.deadline, ctx.op)
    return []


def _enqueue_many_kernel(ctx, inputs, attrs):
    queue = _queue(inputs)
    parts = [np.asarray(v, dtype=d) for v, d in zip(inputs[1:], queue.dtypes)]
    sizes = {p.shape[0] if p.ndim else None for p in parts}
    if None in sizes or len(sizes) != 1:
        raise InvalidArgumentError(None, ctx.op, f"enqueue_many needs every component to have "
                                                 f"the same first dimension; got shapes "
                                                 f"{[p.shape for p in parts]}.")
    n = sizes.pop()
    # slices as arrays (a 0-d slice of p[i] would be a NumPy scalar)
    queue.enqueue([tuple(p[i:i + 1].reshape(p.shape[1:]) for p in parts) for i in range(n)],
                  ctx.deadline, ctx.op)
    return []


ENQUEUE = OpDef("QueueEnqueueV2", _no_outputs, _enqueue_kernel, traits=_WAITS,
                default_name="enqueue", doc="Adds one element; waits while the queue is full.")
ENQUEUE_MANY = OpDef("QueueEnqueueManyV2", _no_outputs, _enqueue_many_kernel, traits=_WAITS,
                     default_name="enqueue_many",
                     doc="Adds the slices along the first axis as elements.")


# --- dequeue ---------------------------------------------------------------------------------

def _component_shapes(op, batch):
    shapes = op.get_attr("shapes")
    types = op.get_attr("component_types")
    out = []
    for i, t in enumerate(types):
        shape = TensorShape(None) if not shapes or shapes[i] is None else \
            TensorShape(list(shapes[i]))
        if batch is not False:
            shape = TensorShape([batch]).concatenate(shape)
        out.append((_dtypes.as_dtype(t), shape))
    return out


def _dequeue_infer(op):
    return _component_shapes(op, False)


def _dequeue_kernel(ctx, inputs, attrs):
    queue = _queue(inputs)
    [element] = queue.dequeue(None, False, ctx.deadline, ctx.op)
    return list(element)


def _dequeue_many_infer(op):
    n = op.get_attr("n")
    return _component_shapes(op, n if op.type == "QueueDequeueManyV2" else None)


def _dequeue_many_kernel(allow_smaller):
    def kernel(ctx, inputs, attrs):
        queue = _queue(inputs)
        elements = queue.dequeue(attrs["n"], allow_smaller, ctx.deadline, ctx.op)
        return queue_state.stack_components(queue, elements)

    return kernel


def _dequeue_start(many, allow_smaller):
    """The non-blocking form of a dequeue kernel (OpDef.start: 2015 paper §5.3)."""
    def start(ctx, inputs, attrs, done):
        queue = _queue(inputs)

        def finished(error, elements):
            if error is not None:
                done(error, None)
            elif many:
                done(None, queue_state.stack_components(queue, elements))
            else:
                done(None, list(elements[0]))

        return queue.dequeue_async(attrs["n"] if many else None, allow_smaller, ctx.op,
                                   finished)

    return start


DEQUEUE = OpDef("QueueDequeueV2", _dequeue_infer, _dequeue_kernel, traits=_WAITS,
                default_name="dequeue", doc="Takes one element; waits while it is empty.",
                start=_dequeue_start(False, False))
DEQUEUE_MANY = OpDef("QueueDequeueManyV2", _dequeue_many_infer, _dequeue_many_kernel(False),
                     traits=_WAITS, default_name="dequeue_many",
                     doc="Takes n elements, stacked along a new first axis.",
                     start=_dequeue_start(True, False))
DEQUEUE_UP_TO = OpDef("QueueDequeueUpToV2", _dequeue_many_infer, _dequeue_many_kernel(True),
                      traits=_WAITS, default_name="dequeue_up_to",
                      doc="Takes n elements, or what is left of a closed queue.",
                      start=_dequeue_start(True, True))


def _size_infer(op):
    return [(_dtypes.int32, scalar())]


def _size_kernel(ctx, inputs, attrs):
    return [np.array(_queue(inputs).size(), np.int32)]


def _close_kernel(ctx, inputs, attrs):
    _queue(inputs).close(attrs.get("cancel_pending_enqueues", False))
    return []


SIZE = OpDef("QueueSizeV2", _size_infer, _size_kernel, traits={Trait.STATEFUL},
             default_name="size", doc="The number of elements in the queue now.")
CLOSE = OpDef("QueueCloseV2", _no_outputs, _close_kernel, traits={Trait.STATEFUL},
              default_name="close", doc="Closes the queue (optionally cancelling blocked "
                                        "enqueues).")

# --- epochs of an input producer ------------------------------------------------------------

class _Epochs:
    """How many epochs an input producer has handed out in this session."""

    def __init__(self):
        self.count = 0


def _epoch_infer(op):
    t = op.inputs[0]
    return [(t.dtype, t.shape)]


def _epoch_kernel(ctx, inputs, attrs):
    from ..errors import OutOfRangeError
    epochs = ctx.state.resource(("epochs", ctx.op.name), _Epochs)
    limit = attrs.get("num_epochs") or 0
    if limit and epochs.count >= limit:
        raise OutOfRangeError(None, ctx.op, f"Reached the limit of {limit} epochs of "
                                            f"'{ctx.op.name}'.")
    epochs.count += 1
    value = inputs[0]
    if attrs.get("shuffle") and len(value):
        gen = ctx.state.generator(ctx.op, attrs.get("seed", 0), 1 if attrs.get("seed") else 0)
        value = value[gen.permutation(len(value))]
    return [value]


INPUT_EPOCH = OpDef("InputProducerEpoch", _epoch_infer, _epoch_kernel,
                    traits={Trait.STATEFUL}, default_name="input_epoch",
                    doc="One epoch of an input producer's elements (shuffled on request); "
                        "OutOfRangeError after `num_epochs` epochs.")

OP_DEFS = [INPUT_EPOCH, FIFO_QUEUE, RANDOM_SHUFFLE_QUEUE, PADDING_FIFO_QUEUE, ENQUEUE,
           ENQUEUE_MANY, DEQUEUE, DEQUEUE_MANY, DEQUEUE_UP_TO, SIZE, CLOSE]
