"""TF 1.x queue classes: `FIFOQueue`, `RandomShuffleQueue`, `PaddingFIFOQueue` (the
`tf.QueueBase` API).  Each builds a queue resource op (ops/queue_ops.py) once and the ops
on its handle on request; values are tensors, lists of tensors or dicts (with `names`).
"""

from __future__ import annotations

from .. import dtypes as _dtypes
from ..compiler.core.graph import get_default_graph
from ..compiler.core.shapes import TensorShape, as_shape
from . import queue_ops
from .builder import make_op, to_tensor


class QueueBase:
    """A queue of tuples of tensors, shared by every run of a session (TF1 `tf.QueueBase`)."""

    def __init__(self, op_def, dtypes, shapes, names, capacity, name, extra_attrs=None):
        if isinstance(dtypes, (list, tuple)):
            self._dtypes = [_dtypes.as_dtype(d) for d in dtypes]
            self._single = False
        else:
            self._dtypes = [_dtypes.as_dtype(dtypes)]
            self._single = True
        if names is not None:
            names = [names] if isinstance(names, str) else list(names)
            if len(names) != len(self._dtypes):
                raise ValueError(f"Queue: {len(names)} names for {len(self._dtypes)} dtypes.")
        self._names = names
        if shapes is not None:
            if isinstance(shapes, TensorShape) or all(d is None or isinstance(d, int)
                                                     for d in shapes):
                shapes = [shapes]   # one shape, not a list of them (TensorFlow's rule)
            shapes = list(shapes)
            if len(shapes) != len(self._dtypes):
                raise ValueError(f"Queue: {len(shapes)} shapes for {len(self._dtypes)} dtypes.")
            self._shapes = [as_shape(s) for s in shapes]
        else:
            self._shapes = [TensorShape(None)] * len(self._dtypes)
        attrs = {"component_types": [d.name for d in self._dtypes],
                 "shapes": None if shapes is None else
                 [None if s.dims is None else list(s.dims) for s in self._shapes],
                 "capacity": int(capacity), "shared_name": "", **(extra_attrs or {})}
        self._attrs = attrs
        graph = get_default_graph()
        self._queue_ref = graph.create_op(op_def, [], attrs, name).outputs[0]
        self._name = self._queue_ref.op.name

    # --- properties -------------------------------------------------------------------------
    @property
    def queue_ref(self):
        return self._queue_ref

    @property
    def name(self) -> str:
        return self._name

    @property
    def dtypes(self) -> list:
        return list(self._dtypes)

    @property
    def shapes(self) -> list:
        return list(self._shapes)

    @property
    def names(self):
        return self._names

    # --- operations -------------------------------------------------------------------------
    def _components(self, vals, many: bool) -> list:
        if self._names is not None and isinstance(vals, dict):
            missing = set(self._names) - set(vals)
            if missing:
                raise ValueError(f"Queue '{self._name}': missing components {sorted(missing)}.")
            vals = [vals[n] for n in self._names]
        elif not isinstance(vals, (list, tuple)):
            vals = [vals]
        if len(vals) != len(self._dtypes):
            raise ValueError(f"Queue '{self._name}' holds {len(self._dtypes)} components; "
                             f"got {len(vals)} values.")
        out = []
        for i, (v, d, s) in enumerate(zip(vals, self._dtypes, self._shapes)):
            t = to_tensor(v, dtype=d)
            if t.dtype is not d:
                raise TypeError(f"Queue '{self._name}': component {i} is {t.dtype.name}, the "
                                f"queue holds {d.name}.")
            want = TensorShape([None]).concatenate(s) if many else s
            if not t.shape.is_compatible_with(want):
                raise ValueError(f"Queue '{self._name}': component {i} has shape {t.shape}, "
                                 f"expected {want}.")
            out.append(t)
        return out

    def enqueue(self, vals, name=None):
        """The op adding one element (waits while the queue is full)."""
        return make_op(queue_ops.ENQUEUE, [self._queue_ref] + self._components(vals, False),
                       {}, name or "enqueue")

    def enqueue_many(self, vals, name=None):
        """The op adding each slice along the first axis of `vals` as an element."""
        return make_op(queue_ops.ENQUEUE_MANY, [self._queue_ref] + self._components(vals, True),
                       {}, name or "enqueue_many")

    def _dequeue(self, op_def, name, n=None):
        attrs = {"component_types": self._attrs["component_types"],
                 "shapes": self._attrs["shapes"]}
        if n is not None:
            attrs["n"] = int(n)
        op = make_op(op_def, [self._queue_ref], attrs, name)
        outs = list(op.outputs)
        if n is None:
            for t, s in zip(outs, self._shapes):
                t.set_shape(s)
        if self._names is not None:
            return dict(zip(self._names, outs))
        return outs[0] if len(outs) == 1 else outs   # TensorFlow's rule

    def dequeue(self, name=None):
        """One element (waits while the queue is empty; OutOfRangeError once closed and
        empty)."""
        return self._dequeue(queue_ops.DEQUEUE, name or "dequeue")

    def dequeue_many(self, n, name=None):
        """`n` elements stacked along a new first axis."""
        return self._dequeue(queue_ops.DEQUEUE_MANY, name or "dequeue_many", _static_int(n))

    def dequeue_up_to(self, n, name=None):
        """`n` elements, or the rest of a closed queue (at least one)."""
        return self._dequeue(queue_ops.DEQUEUE_UP_TO, name or "dequeue_up_to", _static_int(n))

    def size(self, name=None):
        """The number of elements in the queue (int32 scalar)."""
        return make_op(queue_ops.SIZE, [self._queue_ref], {}, name or "size").outputs[0]

    def close(self, cancel_pending_enqueues=False, name=None):
        """The op closing the queue: no more enqueues; dequeues drain what is left."""
        return make_op(queue_ops.CLOSE, [self._queue_ref],
                       {"cancel_pending_enqueues": bool(cancel_pending_enqueues)},
                       name or "close")

    def is_closed(self, name=None):
        raise NotImplementedError("QueueBase.is_closed is not supported by flowjit.")


def _static_int(n) -> int:
    if isinstance(n, int):
        return n
    value = getattr(n, "item", None)
    if value is not None:
        return int(n)
    raise TypeError(f"The number of elements to dequeue must be a Python int, got {n!r}.")


class FIFOQueue(QueueBase):
    """A first-in first-out queue (TF1 `tf.FIFOQueue`)."""

    def __init__(self, capacity, dtypes, shapes=None, names=None, shared_name=None,
                 name="fifo_queue"):
        super().__init__(queue_ops.FIFO_QUEUE, dtypes, shapes, names, capacity, name,
                         {"shared_name": shared_name or ""})


class PaddingFIFOQueue(QueueBase):
    """A FIFO queue whose dequeue_many pads components to the batch's largest shape
    (TF1 `tf.PaddingFIFOQueue`); `shapes` may leave dimensions unknown."""

    def __init__(self, capacity, dtypes, shapes, names=None, shared_name=None,
                 name="padding_fifo_queue"):
        super().__init__(queue_ops.PADDING_FIFO_QUEUE, dtypes, shapes, names, capacity, name,
                         {"shared_name": shared_name or ""})


class RandomShuffleQueue(QueueBase):
    """A queue dequeuing in random order, keeping `min_after_dequeue` elements until closed
    (TF1 `tf.RandomShuffleQueue`)."""

    def __init__(self, capacity, min_after_dequeue, dtypes, shapes=None, names=None,
                 seed=None, shared_name=None, name="random_shuffle_queue"):
        graph_seed = get_default_graph().seed
        op_seed = seed if seed is not None else (0 if graph_seed is None else graph_seed)
        super().__init__(queue_ops.RANDOM_SHUFFLE_QUEUE, dtypes, shapes, names, capacity, name,
                         {"shared_name": shared_name or "",
                          "min_after_dequeue": int(min_after_dequeue), "seed": int(op_seed)})


__all__ = ["QueueBase", "FIFOQueue", "PaddingFIFOQueue", "RandomShuffleQueue"]
