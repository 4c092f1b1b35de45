"""Checkpoints: `Saver`, `latest_checkpoint` and friends (TensorFlow 1.x `tf.train`).

A checkpoint is one data file, `<prefix>.fjckpt`, holding named arrays (variables are saved
under `var.op.name`):

    magic       8 bytes, b"FJCKPT\\x00\\x01"
    header_len  8 bytes, little-endian uint64
    header      UTF-8 JSON: {"format": 1, "tensors": [{"name", "dtype" (flowjit dtype name),
                "shape", "offset", "nbytes"}, ...]}; offsets are relative to the payload
    payload     each array's bytes, C order, little-endian (string arrays: per element an
                8-byte length, then the bytes)
    digest      32 bytes, SHA-256 of everything before it

Each directory also holds a state file, `checkpoint`, in TensorFlow's text form
(`model_checkpoint_path: "model.ckpt-3"` then one `all_model_checkpoint_paths: "..."` line
per kept checkpoint, oldest first; paths relative to the directory).  `latest_checkpoint`
reads it.

Crash safety (invariants):
- Every file is written to a temporary file in its directory, fsynced, `os.replace`d over its
  name, and the directory fsynced: a reader sees the old complete file or the new one.
- The state file is rewritten only after the new data file is in place, and old checkpoints
  are deleted only after the state file stops listing them, so at every instant the state file
  names complete checkpoints.
- Restore verifies the digest (a damaged or truncated file is a `DataLossError` naming it) and
  every variable's presence, dtype and shape before assigning any, so a failed restore leaves
  the session's variables as they were.

A `Saver` enforces `max_to_keep` across restarts: on its first save into a directory it adopts
the checkpoints the state file lists there (TensorFlow's Saver would forget them).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import struct

import numpy as np

from .. import dtypes as _dtypes
from ..compiler.core.graph import GraphKeys, Tensor, get_default_graph
from ..gfile import write_atomically
from ..errors import DataLossError, InvalidArgumentError, NotFoundError
from ..ops.basic_ops import group, placeholder
from ..ops.variables import assign
from .meta_graph import export_meta_graph

__all__ = ["Saver", "CheckpointState", "latest_checkpoint", "get_checkpoint_state",
           "checkpoint_exists", "list_variables", "load_variable", "read_checkpoint",
           "write_checkpoint"]

SUFFIX = ".fjckpt"
STATE_FILENAME = "checkpoint"
_MAGIC = b"FJCKPT\x00\x01"
_DIGEST = 32


# --- files ----------------------------------------------------------------------------------------


def _data_path(prefix: str) -> str:
    prefix = os.fspath(prefix)
    return prefix if prefix.endswith(SUFFIX) else prefix + SUFFIX


def _encode(array: np.ndarray, dtype) -> bytes:
    if dtype is _dtypes.string:
        parts = []
        for item in array.reshape(-1):
            data = item.encode("utf-8") if isinstance(item, str) else bytes(item)
            parts += [struct.pack("<Q", len(data)), data]
        return b"".join(parts)
    little = array.astype(np.dtype(dtype.as_numpy_dtype).newbyteorder("<"), copy=False)
    return np.ascontiguousarray(little).tobytes()


def _decode(data: bytes, dtype, shape, path, name) -> np.ndarray:
    if dtype is _dtypes.string:
        items, pos = [], 0
        count = int(np.prod(shape, dtype=np.int64))
        for _ in range(count):
            if pos + 8 > len(data):
                raise DataLossError(None, None, f"Checkpoint {path}: tensor '{name}' is cut "
                                                "short.")
            (n,) = struct.unpack_from("<Q", data, pos)
            items.append(bytes(data[pos + 8:pos + 8 + n]))
            pos += 8 + n
        out = np.empty(count, dtype=object)
        out[:] = items
        return out.reshape(shape)
    little = np.dtype(dtype.as_numpy_dtype).newbyteorder("<")
    if len(data) != little.itemsize * int(np.prod(shape, dtype=np.int64)):
        raise DataLossError(None, None, f"Checkpoint {path}: tensor '{name}' has {len(data)} "
                                        f"bytes, which does not fit shape {list(shape)}.")
    return np.frombuffer(data, dtype=little).astype(dtype.as_numpy_dtype).reshape(shape)


def write_checkpoint(path: str, arrays: dict) -> None:
    """Write {name: (flowjit dtype, ndarray)} as one checksummed data file at `path`."""
    entries, blobs, offset = [], [], 0
    for name, (dtype, array) in arrays.items():
        blob = _encode(array, dtype)
        entries.append({"name": name, "dtype": dtype.name, "shape": list(array.shape),
                        "offset": offset, "nbytes": len(blob)})
        blobs.append(blob)
        offset += len(blob)
    header = json.dumps({"format": 1, "tensors": entries}).encode("utf-8")
    chunks = [_MAGIC, struct.pack("<Q", len(header)), header, *blobs]
    digest = hashlib.sha256()
    for chunk in chunks:
        digest.update(chunk)
    write_atomically(path, [*chunks, digest.digest()])


def read_checkpoint(save_path) -> dict:
    """{name: ndarray} from checkpoint `save_path` (a prefix or a data file), verified.

    NotFoundError if there is no such checkpoint; DataLossError (naming the file) if it is
    damaged, truncated or not a flowjit checkpoint.
    """
    path = _data_path(save_path)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        raise NotFoundError(None, None, f"Checkpoint not found: {path} does not exist "
                                        f"(from save_path {os.fspath(save_path)!r}).") from None

    def damaged(why):
        return DataLossError(None, None, f"Checkpoint file {path} is damaged: {why}. Restore "
                                         "from an earlier checkpoint.")

    if len(raw) < len(_MAGIC) + 8 + _DIGEST or not raw.startswith(_MAGIC):
        raise damaged("it is truncated or not a flowjit checkpoint (bad magic bytes)")
    body, digest = raw[:-_DIGEST], raw[-_DIGEST:]
    if hashlib.sha256(body).digest() != digest:
        raise damaged("the SHA-256 checksum does not match its contents (truncated or "
                      "corrupted)")
    (header_len,) = struct.unpack_from("<Q", body, len(_MAGIC))
    start = len(_MAGIC) + 8
    try:
        header = json.loads(body[start:start + header_len].decode("utf-8"))
        tensors = header["tensors"]
    except (ValueError, KeyError, TypeError) as e:
        raise damaged(f"unreadable header ({e})") from None
    payload = memoryview(body)[start + header_len:]
    out = {}
    for entry in tensors:
        lo, n = entry["offset"], entry["nbytes"]
        if lo < 0 or n < 0 or lo + n > len(payload):
            raise damaged(f"tensor '{entry['name']}' lies outside the file")
        dtype = _dtypes.as_dtype(entry["dtype"])
        out[entry["name"]] = _decode(payload[lo:lo + n], dtype, tuple(entry["shape"]), path,
                                     entry["name"])
    return out


def list_variables(ckpt_dir_or_file) -> list:
    """[(name, shape)] of every variable in a checkpoint (a prefix, or a directory's latest)."""
    arrays = read_checkpoint(_resolve(ckpt_dir_or_file))
    return [(name, list(a.shape)) for name, a in sorted(arrays.items())]


def load_variable(ckpt_dir_or_file, name: str) -> np.ndarray:
    """The saved value of variable `name` (a prefix, or a directory's latest checkpoint)."""
    path = _resolve(ckpt_dir_or_file)
    arrays = read_checkpoint(path)
    if name not in arrays:
        raise NotFoundError(None, None, f"Variable '{name}' is not in checkpoint {path}.")
    return arrays[name]


def _resolve(ckpt_dir_or_file) -> str:
    path = os.fspath(ckpt_dir_or_file)
    if os.path.isdir(path):
        latest = latest_checkpoint(path)
        if latest is None:
            raise NotFoundError(None, None, f"No checkpoint found in directory {path}.")
        return latest
    return path


# --- the state file -------------------------------------------------------------------------------


class CheckpointState:
    """A directory's checkpoint list: `model_checkpoint_path` (the newest) and
    `all_model_checkpoint_paths` (oldest first); paths are joined with the directory."""

    def __init__(self, model_checkpoint_path, all_model_checkpoint_paths):
        self.model_checkpoint_path = model_checkpoint_path
        self.all_model_checkpoint_paths = list(all_model_checkpoint_paths)

    def __repr__(self):
        return (f"CheckpointState(model_checkpoint_path={self.model_checkpoint_path!r}, "
                f"all_model_checkpoint_paths={self.all_model_checkpoint_paths!r})")


def _write_state(directory: str, paths: list, latest_filename=None) -> None:
    rel = [os.path.relpath(p, directory) if os.path.dirname(os.path.abspath(p)) ==
           os.path.abspath(directory) else p for p in paths]
    lines = [f"model_checkpoint_path: {json.dumps(rel[-1])}"]
    lines += [f"all_model_checkpoint_paths: {json.dumps(p)}" for p in rel]
    write_atomically(os.path.join(directory, latest_filename or STATE_FILENAME),
                      [("\n".join(lines) + "\n").encode("utf-8")])


def get_checkpoint_state(checkpoint_dir, latest_filename=None):
    """The directory's `CheckpointState`, or None when it has no state file.

    DataLossError (naming the file) if the state file cannot be parsed.
    """
    directory = os.fspath(checkpoint_dir)
    path = os.path.join(directory, latest_filename or STATE_FILENAME)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (FileNotFoundError, NotADirectoryError):
        return None
    latest, every = None, []
    try:
        for line in text.splitlines():
            if not line.strip():
                continue
            key, _, value = line.partition(":")
            value = json.loads(value.strip())
            if not isinstance(value, str):
                raise ValueError(f"{value!r} is not a path")
            value = value if os.path.isabs(value) else os.path.join(directory, value)
            if key.strip() == "model_checkpoint_path":
                latest = value
            elif key.strip() == "all_model_checkpoint_paths":
                every.append(value)
            else:
                raise ValueError(f"unknown field {key.strip()!r}")
    except ValueError as e:
        raise DataLossError(None, None, f"Checkpoint state file {path} is damaged: {e}.") \
            from None
    if latest is None:
        raise DataLossError(None, None, f"Checkpoint state file {path} is damaged: it has no "
                                        "model_checkpoint_path.")
    if latest not in every:
        every.append(latest)
    return CheckpointState(latest, every)


def checkpoint_exists(checkpoint_prefix) -> bool:
    """Whether the data file of checkpoint `checkpoint_prefix` exists."""
    return os.path.isfile(_data_path(checkpoint_prefix))


def latest_checkpoint(checkpoint_dir, latest_filename=None):
    """The prefix of the newest checkpoint in `checkpoint_dir`, or None when there is none."""
    state = get_checkpoint_state(checkpoint_dir, latest_filename)
    if state is None or not checkpoint_exists(state.model_checkpoint_path):
        return None
    return state.model_checkpoint_path


# --- Saver ----------------------------------------------------------------------------------------


def _variables_by_name(var_list) -> dict:
    if isinstance(var_list, dict):
        items = list(var_list.items())
    else:
        items = [(getattr(v, "op", None) and v.op.name, v) for v in var_list]
    out = {}
    for name, var in items:
        ref = var._as_graph_tensor() if hasattr(var, "_as_graph_tensor") else var
        if not isinstance(ref, Tensor) or ref.op.type != "VariableV2":
            raise TypeError(f"Saver: {var!r} is not a variable.")
        if not isinstance(name, str) or not name:
            raise TypeError(f"Saver: variable name {name!r} must be a non-empty string.")
        if name in out:
            raise ValueError(f"Saver: at least two variables have the same name: {name}")
        out[name] = ref
    return out


class Saver:
    """Saves and restores variables (TensorFlow 1.x `tf.train.Saver`).

    `var_list`: None (every global variable), a list of variables (saved under `var.op.name`)
    or a dict {checkpoint name: variable}.  `max_to_keep` recent checkpoints are kept (None
    or 0 keeps all).  Restore ops are built here, so the graph may be finalized afterwards.
    """

    def __init__(self, var_list=None, max_to_keep=5, name=None, allow_empty=False,
                 pad_step_number=False, reshape=False, sharded=False,
                 keep_checkpoint_every_n_hours=10000.0, restore_sequentially=False,
                 saver_def=None, builder=None, defer_build=False, write_version=None,
                 save_relative_paths=False, filename=None):
        # reshape, sharded, restore_sequentially, saver_def, builder, defer_build,
        # write_version, save_relative_paths and filename are TF1's options for its own file
        # formats; flowjit writes one .fjckpt file per checkpoint, so they change nothing.
        # keep_checkpoint_every_n_hours (TF1 keeps such checkpoints beyond max_to_keep) is
        # not implemented: max_to_keep alone decides.
        graph = get_default_graph()
        if var_list is None:
            var_list = graph.get_collection(GraphKeys.GLOBAL_VARIABLES)
        self._vars = _variables_by_name(var_list)
        if not self._vars and not allow_empty:
            raise ValueError("No variables to save.")
        self._max_to_keep = max_to_keep
        self._pad_step_number = pad_step_number
        self._last: list[str] = []
        self._adopted_dirs: set[str] = set()
        self._feeds = {}
        self._restore_op = None
        if self._vars:
            graph = next(iter(self._vars.values())).graph
            with graph.as_default(), graph.control_dependencies(None), \
                    graph.name_scope(name or "save"):
                assigns = []
                for key, ref in self._vars.items():
                    ph = placeholder(ref.dtype, name="restore_value")
                    self._feeds[key] = ph
                    assigns.append(assign(ref, ph, name="restore_assign").op)
                self._restore_op = group(*assigns, name="restore_all")

    @property
    def last_checkpoints(self) -> list:
        """Prefixes of the checkpoints this Saver keeps, oldest first."""
        return list(self._last)

    def save(self, sess, save_path, global_step=None, latest_filename=None,
             meta_graph_suffix="meta", write_meta_graph=True, write_state=True,
             strip_default_attrs=False, save_debug_info=False) -> str:
        """Write a checkpoint of the variables' values in `sess`; returns its prefix.

        The prefix is `save_path`, or `save_path-<step>` with a `global_step` (an int, or a
        tensor/variable read in `sess`).  Updates the directory's state file (unless
        `write_state=False`) and deletes checkpoints beyond `max_to_keep`.  With
        `write_meta_graph` (the default) the graph and its collections go to
        `<prefix>.<meta_graph_suffix>` (runtime/meta_graph.py), which
        `train.import_meta_graph` reads back.
        """
        save_path = os.fspath(save_path)
        if global_step is not None:
            step = global_step if isinstance(global_step, (int, np.integer)) else \
                sess.run(global_step)
            step = int(step)
            prefix = f"{save_path}-{step:08d}" if self._pad_step_number else \
                f"{save_path}-{step}"
        else:
            prefix = save_path
        directory = os.path.dirname(os.path.abspath(prefix))
        os.makedirs(directory, exist_ok=True)
        names = list(self._vars)
        values = sess.run([self._vars[n] for n in names]) if names else []
        arrays = {n: (self._vars[n].dtype, np.asarray(v, dtype=self._vars[n].dtype.as_numpy_dtype))
                  for n, v in zip(names, values)}
        write_checkpoint(_data_path(prefix), arrays)
        if write_meta_graph:
            export_meta_graph(f"{prefix}.{meta_graph_suffix}",
                              graph=next(iter(self._vars.values())).graph if self._vars
                              else sess.graph)
        if not write_state:
            return prefix
        self._adopt(directory, latest_filename)
        prefix_abs = os.path.abspath(prefix)
        self._last = [p for p in self._last if os.path.abspath(p) != prefix_abs] + [prefix]
        drop = []
        if self._max_to_keep:
            drop, self._last = self._last[:-self._max_to_keep], self._last[-self._max_to_keep:]
        _write_state(directory, [p for p in self._last
                                 if os.path.dirname(os.path.abspath(p)) == directory],
                     latest_filename)
        for old in drop:  # only after the state file no longer lists them
            for path in (_data_path(old), f"{old}.{meta_graph_suffix}"):
                with contextlib.suppress(FileNotFoundError):
                    os.remove(path)
        return prefix

    def _adopt(self, directory, latest_filename):
        """On the first save into `directory`, take over the checkpoints its state lists."""
        if directory in self._adopted_dirs:
            return
        self._adopted_dirs.add(directory)
        state = get_checkpoint_state(directory, latest_filename)
        if state is not None:
            known = {os.path.abspath(p) for p in self._last}
            self._last = [p for p in state.all_model_checkpoint_paths
                          if checkpoint_exists(p) and os.path.abspath(p) not in known] + \
                self._last

    def restore(self, sess, save_path) -> None:
        """Set every variable of this Saver in `sess` to its value in checkpoint `save_path`.

        Checks everything first: NotFoundError for a missing checkpoint or variable,
        InvalidArgumentError for a dtype or shape mismatch (naming the variable, the
        expected and the found dtype/shape), DataLossError for a damaged file; on any error
        no variable is changed.
        """
        if save_path is None:
            raise ValueError("Can't load save_path when it is None.")
        path = _data_path(save_path)
        arrays = read_checkpoint(save_path)
        feed = {}
        for name, ref in self._vars.items():
            if name not in arrays:
                held = sorted(arrays)
                listed = ", ".join(held[:10]) + (f", ... ({len(held)} in all)"
                                                 if len(held) > 10 else "")
                raise NotFoundError(None, ref.op, f"Variable '{name}' was not found in "
                                                  f"checkpoint {path} (it holds: {listed}).")
            value = arrays[name]
            found = _dtypes.string if value.dtype == object else _dtypes.as_dtype(value.dtype)
            if found is not ref.dtype or not ref.shape.is_compatible_with(value.shape):
                raise InvalidArgumentError(
                    None, ref.op, f"Variable '{name}' does not match checkpoint {path}: the "
                                  f"variable has dtype {ref.dtype.name} and shape {ref.shape}, "
                                  f"the checkpoint holds dtype {found.name} and shape "
                                  f"{list(value.shape)}.")
            feed[self._feeds[name]] = value
        if self._restore_op is not None:
            sess.run(self._restore_op, feed_dict=feed)
