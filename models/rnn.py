"""Running an RNN cell over sequences (`tf.nn.dynamic_rnn`, `static_rnn` and their
bidirectional forms), with TensorFlow 1.x's signatures, scopes and results.

- `dynamic_rnn` is ONE while loop over the time steps (`recorded_while_loop`,
  ops/loop_history.py): its loop variables are the step counter, the state and one
  [time, batch, depth] buffer per output, written a row per step.  The loop holds pure
  ops only (the cell's variables are read as captured values; dropout's random numbers
  are drawn outside it, models/rnn_noise.py), so the runtime compiles it whole into one
  kernel (runtime/loop_steps.py, compiler/lower_loops.py), and its gradient is a second
  loop that reads each step's state from the buffers the forward loop filled, compiled
  the same way.
- `static_rnn` unrolls the cell over a Python list of inputs; the first step creates the
  variables and the others reuse them.

With `sequence_length`, a batch entry's steps at or past its length give zero outputs and
leave its state as it was (TensorFlow's copy-through; here a select per step, for
`static_rnn` too, which TensorFlow writes with conds: the same values).  `dynamic_rnn`
runs min(time, max(1, max(sequence_length))) steps, and the outputs of the steps it does
not run are zeros.
"""

from __future__ import annotations

from .. import dtypes as _dtypes
from ..compiler.core.shapes import TensorShape
from ..ops import api as ops
from ..ops import sequence_ops
from ..ops.loop_history import recorded_while_loop
from ..ops.nest import flatten, pack, same_structure
from ..ops.variable_scope import variable_scope
from . import rnn_noise
from .rnn_cell import RNNCell

__all__ = ["dynamic_rnn", "static_rnn", "bidirectional_dynamic_rnn",
           "static_bidirectional_rnn"]


def _check_cell(cell, who: str) -> None:
    if not isinstance(cell, RNNCell):
        raise TypeError(f"{who}: cell must be an RNNCell (tf.nn.rnn_cell), got {cell!r}.")


def _lengths(sequence_length, who: str):
    """`sequence_length` as an int32 vector (None stays None)."""
    if sequence_length is None:
        return None
    lengths = ops.convert_to_tensor(sequence_length)
    if not lengths.dtype.is_integer:
        raise TypeError(f"{who}: sequence_length must be an integer vector, got "
                        f"{lengths.name} ({lengths.dtype.name}).")
    if lengths.shape.ndims not in (None, 1):
        raise ValueError(f"{who}: sequence_length must be a vector of length batch_size, "
                         f"got {lengths.name} of shape {lengths.shape}.")
    return ops.identity(ops.cast(lengths, _dtypes.int32), name="sequence_length")


def _check_lengths_match(lengths, batch_size, who: str) -> None:
    if lengths is None or not isinstance(batch_size, int):
        return
    n = lengths.shape.as_list()[0] if lengths.shape.ndims == 1 else None
    if n is not None and n != batch_size:
        raise ValueError(f"{who}: sequence_length has {n} entries for a batch of "
                         f"{batch_size}.")


def _initial_state(cell, initial_state, batch_size, dtype, who: str):
    if initial_state is not None:
        return initial_state
    if dtype is None:
        raise ValueError(f"{who}: if there is no initial_state, you must give a dtype.")
    return cell.zero_state(batch_size, dtype)


def _copied_through(past_end, new, old):
    """Rows where `past_end` (a [batch] bool) take `old`, the others `new`."""
    rank = new.shape.ndims
    cond = past_end if rank in (None, 1) else ops.reshape(past_end, [-1] + [1] * (rank - 1))
    return ops.where_v2(cond, old, new)


def _batch_size(tensors, batch_axis: int):
    """The static batch size of the inputs, else a scalar int32 tensor (the first one's)."""
    for t in tensors:
        dims = t.shape.as_list() if t.shape.ndims is not None else None
        if dims is not None and dims[batch_axis] is not None:
            return dims[batch_axis]
    return ops.shape(tensors[0])[batch_axis]


def _time_major(tensors, time_major: bool, who: str) -> list:
    """The inputs as [time, batch, ...] tensors."""
    out = []
    for t in tensors:
        t = ops.convert_to_tensor(t)
        rank = t.shape.ndims
        if rank is not None and rank < 2:
            raise ValueError(f"{who}: input {t.name} must have rank at least 2 ([batch, time] "
                             f"or [time, batch]), got shape {t.shape}.")
        if not time_major:
            if rank is None:
                raise ValueError(f"{who}: batch-major input {t.name} needs a known rank.")
            t = ops.transpose(t, [1, 0] + list(range(2, rank)))
        out.append(t)
    return out


def dynamic_rnn(cell, inputs, sequence_length=None, initial_state=None, dtype=None,
                parallel_iterations=None, swap_memory=False, time_major=False, scope=None):
    """(outputs, final_state) of `cell` run over the time axis of `inputs` in one while
    loop.  `inputs`: [batch, time, ...] (`time_major`: [time, batch, ...]) or a nest of
    such tensors; `outputs` has the same layout, with the cell's output size as the last
    dimension; `final_state` is the state after each entry's last step."""
    _check_cell(cell, "dynamic_rnn")
    del swap_memory
    with variable_scope(scope or "rnn"):
        flat = _time_major(flatten(inputs), time_major, "dynamic_rnn")
        lengths = _lengths(sequence_length, "dynamic_rnn")
        batch_size = _batch_size(flat, 1)
        _check_lengths_match(lengths, batch_size, "dynamic_rnn")
        state = _initial_state(cell, initial_state, batch_size, dtype, "dynamic_rnn")
        outputs, final_state = _dynamic_loop(cell, inputs, flat, lengths, batch_size, state,
                                             parallel_iterations or 32)
        if not time_major:
            outputs = [ops.transpose(o, [1, 0] + list(range(2, o.shape.ndims)))
                       for o in outputs]
        return pack(cell.output_size, outputs), final_state


def _dynamic_loop(cell, inputs, flat, lengths, batch_size, state, parallel_iterations):
    """The while loop of dynamic_rnn: (flat output buffers [time, batch, ...], state)."""
    static_time = flat[0].shape.as_list()[0]
    time_steps = static_time if static_time is not None else ops.shape(flat[0])[0]
    for t in flat[1:]:
        other = t.shape.as_list()[0]
        if static_time is not None and other is not None and other != static_time:
            raise ValueError(f"dynamic_rnn: the inputs have different numbers of time steps "
                             f"({flat[0].name}: {static_time}, {t.name}: {other}).")
    state_leaves = flatten(state)
    dtype = state_leaves[0].dtype
    out_sizes = [_depth_list(s) for s in flatten(cell.output_size)]
    buffers = [ops.zeros(ops.stack([time_steps, batch_size] + size), dtype=dtype)
               for size in out_sizes]
    if lengths is not None:
        bound = ops.minimum(time_steps, ops.maximum(1, ops.reduce_max(lengths)))
    else:
        bound = time_steps
    noise = rnn_noise.StepNoise(time_steps, batch_size)
    n_out = len(buffers)

    def body(time, state, outs):
        step_inputs = [ops.strided_slice(t, [time], [time + 1], [1], shrink_axis_mask=1)
                       for t in flat]
        with rnn_noise.steps(noise, time):
            output, new_state = cell(pack(inputs, step_inputs), state)
        if not same_structure(state, new_state) or \
                len(flatten(new_state)) != len(flatten(state)):
            raise ValueError(f"dynamic_rnn: the cell returned a state {new_state!r} that does "
                             f"not have the structure of its input state {state!r}.")
        flat_out = flatten(output)
        if len(flat_out) != n_out:
            raise ValueError(f"dynamic_rnn: the cell returned {len(flat_out)} outputs, its "
                             f"output_size says {n_out}.")
        if lengths is not None:
            past_end = ops.greater_equal(time, lengths)
            flat_out = [_copied_through(past_end, o, ops.zeros_like(o)) for o in flat_out]
            new_state = pack(state, [_copied_through(past_end, n, o) for n, o in
                                     zip(flatten(new_state), flatten(state))])
        outs = [ops.tensor_strided_slice_update(buf, [time], [time + 1], [1], o,
                                                shrink_axis_mask=1)
                for buf, o in zip(outs, flat_out)]
        return time + 1, new_state, outs

    # the output buffers last: the gradient's loop then reads a buffer's row (for the
    # state's gradient) before it zeroes it, and the zeroing runs in place
    time = ops.constant(0, dtype=_dtypes.int32, name="time")
    _, final_state, outs = recorded_while_loop(
        lambda time, *_: ops.less(time, bound), body, (time, state, buffers), time_steps,
        write_only=range(1 + len(state_leaves), 1 + len(state_leaves) + n_out),
        parallel_iterations=parallel_iterations, name="while")
    return outs, final_state


def _depth_list(size) -> list:
    """An output size (an int or a TensorShape) as the list of its dims."""
    if isinstance(size, TensorShape):
        return [int(d) for d in size.as_list()]
    return [int(size)]


def static_rnn(cell, inputs, initial_state=None, dtype=None, sequence_length=None,
               scope=None):
    """(outputs, final_state) of `cell` unrolled over the list `inputs` (each [batch,
    depth], or a nest of them): a list of outputs, one per step."""
    _check_cell(cell, "static_rnn")
    if not isinstance(inputs, (list, tuple)):
        raise TypeError(f"static_rnn: inputs must be a list of tensors, got {inputs!r}.")
    if not inputs:
        raise ValueError("static_rnn: inputs must not be empty.")
    with variable_scope(scope or "rnn") as varscope:
        first = [ops.convert_to_tensor(t) for t in flatten(inputs[0])]
        for t in first:
            if t.shape.ndims is not None and t.shape.ndims < 2:
                raise ValueError(f"static_rnn: each input must be at least a matrix [batch, "
                                 f"depth], got {t.name} of shape {t.shape}.")
        batch_size = _batch_size(first, 0)
        lengths = _lengths(sequence_length, "static_rnn")
        _check_lengths_match(lengths, batch_size, "static_rnn")
        state = _initial_state(cell, initial_state, batch_size, dtype, "static_rnn")
        outputs = []
        for time, step_input in enumerate(inputs):
            if time > 0:
                varscope.reuse_variables()
            output, new_state = cell(step_input, state)
            if lengths is not None:
                past_end = ops.greater_equal(time, lengths)
                output = pack(output, [_copied_through(past_end, o, ops.zeros_like(o))
                                       for o in flatten(output)])
                new_state = pack(state, [_copied_through(past_end, n, o) for n, o in
                                         zip(flatten(new_state), flatten(state))])
            outputs.append(output)
            state = new_state
        return outputs, state


def _reverse(tensor, lengths, seq_axis: int, batch_axis: int):
    if lengths is None:
        return ops.reverse_v2(tensor, [seq_axis])
    return sequence_ops.reverse_sequence(tensor, lengths, seq_axis=seq_axis,
                                         batch_axis=batch_axis)


def bidirectional_dynamic_rnn(cell_fw, cell_bw, inputs, sequence_length=None,
                              initial_state_fw=None, initial_state_bw=None, dtype=None,
                              parallel_iterations=None, swap_memory=False, time_major=False,
                              scope=None):
    """((output_fw, output_bw), (state_fw, state_bw)): `cell_fw` run forwards and `cell_bw`
    backwards over each sequence (its first `sequence_length` steps reversed), the
    backward outputs put back in input order."""
    _check_cell(cell_fw, "bidirectional_dynamic_rnn")
    _check_cell(cell_bw, "bidirectional_dynamic_rnn")
    time_axis, batch_axis = (0, 1) if time_major else (1, 0)
    with variable_scope(scope or "bidirectional_rnn"):
        with variable_scope("fw") as fw_scope:
            output_fw, state_fw = dynamic_rnn(
                cell_fw, inputs, sequence_length, initial_state_fw, dtype, parallel_iterations,
                time_major=time_major, scope=fw_scope)
        with variable_scope("bw") as bw_scope:
            reversed_inputs = pack(inputs, [_reverse(ops.convert_to_tensor(t), sequence_length,
                                                     time_axis, batch_axis)
                                            for t in flatten(inputs)])
            reversed_out, state_bw = dynamic_rnn(
                cell_bw, reversed_inputs, sequence_length, initial_state_bw, dtype,
                parallel_iterations, time_major=time_major, scope=bw_scope)
    output_bw = pack(reversed_out, [_reverse(t, sequence_length, time_axis, batch_axis)
                                    for t in flatten(reversed_out)])
    return (output_fw, output_bw), (state_fw, state_bw)


def _reverse_steps(steps: list, lengths) -> list:
    """A list of per-step tensors (or nests) in reverse order, each entry's first
    `lengths[b]` steps only when lengths are given."""
    if lengths is None:
        return list(reversed(steps))
    columns = list(zip(*[flatten(s) for s in steps]))
    flipped = []
    for column in columns:
        stacked = ops.stack(list(column))
        flipped.append(ops.unstack(_reverse(stacked, lengths, 0, 1), num=len(column)))
    return [pack(steps[0], [f[t] for f in flipped]) for t in range(len(steps))]


def static_bidirectional_rnn(cell_fw, cell_bw, inputs, initial_state_fw=None,
                             initial_state_bw=None, dtype=None, sequence_length=None,
                             scope=None):
    """(outputs, state_fw, state_bw): both directions unrolled; each output is the
    concatenation of the forward and backward outputs of its step."""
    _check_cell(cell_fw, "static_bidirectional_rnn")
    _check_cell(cell_bw, "static_bidirectional_rnn")
    if not isinstance(inputs, (list, tuple)) or not inputs:
        raise TypeError(f"static_bidirectional_rnn: inputs must be a non-empty list, got "
                        f"{inputs!r}.")
    with variable_scope(scope or "bidirectional_rnn"):
        with variable_scope("fw") as fw_scope:
            output_fw, state_fw = static_rnn(cell_fw, inputs, initial_state_fw, dtype,
                                             sequence_length, scope=fw_scope)
        with variable_scope("bw") as bw_scope:
            reversed_inputs = _reverse_steps(list(inputs), sequence_length)
            tmp, state_bw = static_rnn(cell_bw, reversed_inputs, initial_state_bw, dtype,
                                       sequence_length, scope=bw_scope)
    output_bw = _reverse_steps(tmp, sequence_length)
    outputs = [pack(fw, [ops.concat([a, b], 1) for a, b in zip(flatten(fw), flatten(bw))])
               for fw, bw in zip(output_fw, output_bw)]
    return outputs, state_fw, state_bw
