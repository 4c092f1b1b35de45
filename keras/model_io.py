"""A Keras model's weights in and out: `set_weights`, `save_weights`/`load_weights` and the
`summary()` table.

Weights are saved in flowjit's checkpoint format (runtime/checkpoint.py, the `tf.train.Saver`
data file): `save_weights(path)` writes `<path>.fjckpt` (or `path` itself when it already
ends in `.fjckpt`), one tensor per weight under its variable's name (`dense/kernel`), in the
order of `model.weights`, so `tf.train.list_variables(path)` and `load_variable` read it
too.  The write is atomic (a temporary file in the same directory, fsynced, then renamed
over the old file), so an interrupted save leaves the previous file whole.  `load_weights`
matches the file's tensors to the weights by position, as Keras does for its own files
(by name with `by_name=True`), and checks every count and shape before it assigns anything.
"""

from __future__ import annotations

import os

import numpy as np

from ..runtime.checkpoint import read_checkpoint, write_checkpoint

__all__ = ["assign_weights", "save_weights", "load_weights", "summary", "weights_path"]


def weights_path(filepath) -> str:
    """The data file `save_weights(filepath)` writes: `filepath` + ".fjckpt"."""
    path = os.fspath(filepath)
    return path if path.endswith(".fjckpt") else path + ".fjckpt"


def assign_weights(model, variables, values) -> None:
    """Set `variables` of `model` to `values` (NumPy arrays) in its session, all at once;
    a count or shape mismatch is a ValueError and changes nothing."""
    if len(values) != len(variables):
        raise ValueError(f"Model {model.name} has {len(variables)} weights, but "
                         f"{len(values)} values were given.")
    feeds = {}
    for variable, value in zip(variables, values):
        value = np.asarray(value)
        if tuple(variable.shape.as_list()) != value.shape:
            raise ValueError(f"Weight {variable.op.name} has shape "
                             f"{tuple(variable.shape.as_list())}, the value given has shape "
                             f"{value.shape}.")
        feeds[variable.initial_value] = value.astype(variable.dtype.as_numpy_dtype,
                                                     copy=False)
    session = model.session
    if variables:
        session.run([v.initializer for v in variables], feed_dict=feeds)


def save_weights(model, filepath, overwrite: bool = True) -> str:
    """Write every weight of `model` to `weights_path(filepath)` (module docstring)."""
    path = weights_path(filepath)
    if not overwrite and os.path.exists(path):
        raise FileExistsError(f"save_weights: {path} exists and overwrite=False.")
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    variables = model.weights
    values = model.get_weights()
    write_checkpoint(path, {v.op.name: (v.dtype, np.asarray(value))
                            for v, value in zip(variables, values)})
    return path


def load_weights(model, filepath, by_name: bool = False) -> None:
    """Assign the weights saved by `save_weights(filepath)`: by position (the default) or by
    variable name; NotFoundError/DataLossError from reading the file, ValueError when the
    file's weights do not fit the model (nothing is assigned then)."""
    arrays = read_checkpoint(weights_path(filepath))
    variables = model.weights
    if by_name:
        missing = [v.op.name for v in variables if v.op.name not in arrays]
        if missing:
            raise ValueError(f"load_weights(by_name=True): {weights_path(filepath)} has no "
                             f"weights named {missing} (it has {sorted(arrays)}).")
        values = [arrays[v.op.name] for v in variables]
    else:
        if len(arrays) != len(variables):
            raise ValueError(f"load_weights: {weights_path(filepath)} holds {len(arrays)} "
                             f"weights, model {model.name} has {len(variables)}.")
        values = list(arrays.values())
    assign_weights(model, variables, values)


def _shape_text(shape) -> str:
    if shape is None:
        return "multiple"
    dims = ["None" if d is None else str(d) for d in shape.as_list()]
    return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


def summary(model, line_length=None, print_fn=None) -> None:
    """Print (with `print_fn`, default print) a table of the model's layers: name and type,
    output shape, number of parameters; then the total, trainable and non-trainable counts."""
    model._build_graph()
    print_fn = print_fn or print
    width = int(line_length or 65)
    stops = [int(width * 0.45), int(width * 0.85), width]

    def row(fields):
        line = ""
        for field, stop in zip(fields, stops):
            line = (line + str(field))[:stop - 1].ljust(stop)
        print_fn(line.rstrip())

    print_fn(f'Model: "{model.name}"')
    print_fn("_" * width)
    row(["Layer (type)", "Output Shape", "Param #"])
    print_fn("=" * width)
    for layer in model.layers:
        params = layer.count_params() if layer.built else 0
        row([f"{layer.name} ({type(layer).__name__})", _shape_text(layer.output_shape),
             params])
    print_fn("=" * width)
    trainable = sum(int(w.shape.num_elements()) for w in model.trainable_weights)
    total = model.count_params()
    print_fn(f"Total params: {total:,}")
    print_fn(f"Trainable params: {trainable:,}")
    print_fn(f"Non-trainable params: {total - trainable:,}")
    print_fn("_" * width)
