"""`python -m flowjit run`: load a saved GraphDef in a fresh process and run ops on it.

The Python counterpart of the second program of TensorFlow's C++ API guide (load `mlp.pb`,
run `init_all_vars_op`, then per step fetch `cost` and run `train` with `x` and `y` fed):

    python -m flowjit run mlp.pb --run init_all_vars_op --feed x=x.npy --feed y=y.npy \\
        --fetch cost --run train --steps 10

Semantics (also in `--help`):
- `--run OP` and `--fetch TENSOR[,TENSOR...]` are *actions*, kept in command-line order; each
  action is one `Session.run` call (a `--fetch` of several tensors fetches them in one call).
- The actions before the per-step body are *setup*, run once; the body is run `--steps`
  times.  The body starts at `--each-step` if given, else at the first `--fetch`; with
  neither, every action is setup (and `--steps` above 1 is an error: nothing to repeat).
- Every `--feed` applies to every action (TensorFlow feeds what a call does not need
  harmlessly), so `x` and `y` are fed to the `cost` run and to the `train` run of a step.
- Fetched values print as `step N: NAME = VALUE` (setup: `setup: NAME = VALUE`), scalars in
  their dtype's shortest round-trip form (`str(np.float32(v))`: parse it back in that dtype
  and you get the same bits); with `--format json` one JSON object per line,
  `{"step": N, "values": {NAME: VALUE}}` (step 0 is setup; floats exact as Python floats).

Random ops saved without a seed (seed = seed2 = 0, as in a program that never called
`tf.set_random_seed`) draw fresh entropy in every session, as in TensorFlow, so two runs
start from different weights.  `--seed N` gives each such op the seeds TensorFlow's graph-seed
rule would have given it had the building program called `tf.set_random_seed(N)` first:
(N, the op's index in the GraphDef, which `as_graph_def` writes in creation order).  Ops
saved with seeds keep theirs.  flowjit's random ops draw from a Philox generator keyed by
(seed, seed2), so a seeded graph starts from the same values in every process.

User errors (unreadable or invalid files, unknown names, with close names suggested, feeds of
the wrong shape or dtype, an op failing at run time) print one `flowjit run: error: ...`
message and exit with status 2 (usage) or 1 (run time), never a traceback.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import sys

import numpy as np

from ..compiler.core.graph import Graph
from ..compiler.core.graph_def import DecodeError, parse_graph_def
from ..compiler.graph_import import import_graph_def
from ..errors import NotFoundError, OpError
from ..progress import progress
from .config import ConfigProto
from .session import Session

_SOURCE_KINDS = ("random", "zeros", "ones", "value")
_MAXINT32 = 2**31 - 1

DESCRIPTION = "Load a GraphDef saved by tf.train.write_graph and run ops on it, step by step."

EPILOG = """\
actions and steps:
  --run and --fetch are actions, kept in command-line order; each is one Session.run call
  (--fetch a,b fetches both in one call).  Actions before the per-step body run once, as
  setup; the body runs --steps times.  The body starts at --each-step if given, else at the
  first --fetch.  Every --feed is fed to every action.

feed sources (NAME=SOURCE; NAME is a tensor, 'x' meaning 'x:0'):
  FILE.npy            the array in FILE (cast to the tensor's dtype if the cast is same-kind)
  FILE.npz[:KEY]      the array KEY of FILE (default: its only array, or the one named NAME)
  @random:100x32      uniform [0, 1) floats (integers 0..99, random bools), drawn from
                      numpy.random.default_rng(--feed-seed) in the order the feeds are given
  @zeros:SHAPE, @ones:SHAPE, @value:JSON (e.g. @value:0.5, @value:[[1,2]])

output:
  text: 'step N: NAME = VALUE', one line per fetched tensor ('setup: ...' for setup
  fetches); scalars in shortest round-trip form of their dtype, arrays NumPy-formatted
  (summarized past 1000 elements).  json: one object per line, {"step": N, "values":
  {NAME: VALUE}} with full nested lists (step 0 = setup; NaN/Infinity as Python's json).

example (the second program of TensorFlow's C++ API guide):
  python examples/mlp_train.py        # writes mlp.pb
  python -m flowjit run mlp.pb --seed 1 --run init_all_vars_op --feed x=@random:100x32 \\
      --feed y=@random:100x8 --fetch cost --run train --steps 10

exit status: 0 done; 1 an op failed at run time; 2 a usage error (bad option, file or name).
"""


class UsageError(Exception):
    """A mistake in the command line or its files: reported without a traceback, status 2."""


class _Ordered(argparse.Action):
    """Appends (kind, value) to `namespace.actions`, so --run/--fetch keep their order."""

    def __call__(self, parser, namespace, values, option_string=None):
        actions = list(getattr(namespace, "actions", None) or [])
        actions.append((self.const, values))
        namespace.actions = actions


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `run` (shared by `python -m flowjit run` and this module's `main`)."""
    parser.add_argument("graph", metavar="GRAPH",
                        help="GraphDef file written by tf.train.write_graph (binary or text)")
    parser.add_argument("--run", metavar="OP", dest="actions", action=_Ordered, const="run",
                        help="run the op OP (a target: nothing is printed)")
    parser.add_argument("--fetch", metavar="TENSOR[,TENSOR]", dest="actions", action=_Ordered,
                        const="fetch", help="fetch and print tensors ('cost' = 'cost:0')")
    parser.add_argument("--each-step", dest="actions", action=_Ordered, const="body", nargs=0,
                        help="the actions after this flag form the per-step body "
                             "(default: from the first --fetch on)")
    parser.add_argument("--feed", metavar="NAME=SOURCE", action="append", default=[],
                        help="feed a tensor in every action; SOURCE: FILE.npy, FILE.npz[:KEY], "
                             "@random:SHAPE, @zeros:SHAPE, @ones:SHAPE, @value:JSON")
    parser.add_argument("--steps", type=int, default=1, metavar="N",
                        help="how many times the body runs (1)")
    parser.add_argument("--seed", type=int, default=None, metavar="N",
                        help="seed the graph's unseeded random ops as tf.set_random_seed(N) "
                             "would have (default: fresh randomness, as in TensorFlow)")
    parser.add_argument("--feed-seed", type=int, default=0, metavar="N",
                        help="seed of the @random feeds (0)")
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="output format (text)")
    parser.add_argument("--no-jit", action="store_true",
                        help="no auto-clustering: run every op's reference kernel "
                             "(ConfigProto(jit=False))")
    parser.add_argument("--list", action="store_true",
                        help="list the graph's ops and their outputs, then exit")
    parser.set_defaults(actions=[])


# --- loading ------------------------------------------------------------------------------------


def seed_unseeded_random_ops(graph_def, seed: int) -> int:
    """Give every node with attrs seed == seed2 == 0 the seeds of `tf.set_random_seed(seed)`.

    The op seed TF 1.x derives from a graph seed is the number of ops created before the op,
    which is the node's index in a GraphDef written in creation order.  Returns how many
    nodes were changed.
    """
    changed = 0
    for index, node in enumerate(graph_def.node):
        if _unseeded(node):
            seeds = (seed % _MAXINT32, index % _MAXINT32)
            node.attr["seed"].i, node.attr["seed2"].i = \
                seeds if seeds != (0, 0) else (0, _MAXINT32)
            changed += 1
    return changed


def _unseeded(node) -> bool:
    """A random op whose `seed` and `seed2` attrs are both 0."""
    attrs = node.attr
    return ("seed" in attrs and "seed2" in attrs and attrs["seed"].WhichOneof("value") == "i"
            and attrs["seed"].i == 0 and attrs["seed2"].i == 0)


def count_unseeded_random_ops(graph_def) -> int:
    """Nodes whose `seed` and `seed2` attrs are both 0 (fresh randomness in every session)."""
    return sum(_unseeded(n) for n in graph_def.node)


def load_graph(path: str, seed: int | None = None):
    """(a new Graph holding the GraphDef in `path`, unseeded random ops left); UsageError."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise UsageError(f"cannot read the graph {path}: {exc.strerror or exc}") from None
    try:
        graph_def = parse_graph_def(data)
    except DecodeError as exc:
        why = str(exc).rstrip(".")
        raise UsageError(f"{path} is not a GraphDef ({why}); flowjit reads the binary and "
                         "text GraphDefs tf.train.write_graph writes, flowjit's or "
                         "TensorFlow's") from None
    if seed is not None:
        seed_unseeded_random_ops(graph_def, seed)
    graph = Graph()
    try:
        with graph.as_default():
            import_graph_def(graph_def, name="")
    except (ValueError, TypeError, KeyError, NotFoundError) as exc:
        raise UsageError(f"cannot import {path}: {exc}") from None
    return graph, count_unseeded_random_ops(graph_def)


def _unknown(kind: str, name: str, candidates) -> UsageError:
    close = difflib.get_close_matches(name, list(candidates), n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else \
        " (--list shows the graph's ops)"
    return UsageError(f"the graph has no {kind} {name!r}{hint}")


def resolve_op(graph, name: str):
    """The Operation named `name`, or a UsageError suggesting close names."""
    if ":" in name:
        raise UsageError(f"--run takes an op name, not the tensor {name!r}: use "
                         f"--run {name.split(':')[0]} or --fetch {name}")
    try:
        return graph.get_operation_by_name(name.lstrip("^"))
    except (KeyError, ValueError):
        raise _unknown("op", name, (op.name for op in graph.get_operations())) from None


def resolve_tensor(graph, name: str):
    """The Tensor `name` ('op' means 'op:0'), or a UsageError suggesting close names."""
    op_name, _, index = name.partition(":")
    op = resolve_op(graph, op_name) if op_name else None
    if op is None:
        raise UsageError(f"empty tensor name in {name!r}")
    if not op.outputs:
        raise UsageError(f"{op_name!r} is an op with no outputs ({op.type}): use --run "
                         f"{op_name} to run it")
    if not index:
        return op.outputs[0]
    if not index.isdigit() or int(index) >= len(op.outputs):
        raise UsageError(f"{op_name!r} ({op.type}) has outputs "
                         f"{', '.join(t.name for t in op.outputs)}; there is no {name!r}")
    return op.outputs[int(index)]


# --- feeds --------------------------------------------------------------------------------------


def _parse_shape(text: str, spec: str) -> tuple:
    if text in ("", "scalar"):
        return ()
    try:
        shape = tuple(int(d) for d in text.lower().split("x"))
    except ValueError:
        shape = (-1,)
    if any(d < 0 for d in shape):
        raise UsageError(f"--feed {spec}: bad shape {text!r} (write it like 100x32)")
    return shape


def _generated(kind: str, arg: str, dtype: np.dtype, rng, spec: str) -> np.ndarray:
    if kind == "value":
        try:
            return np.asarray(json.loads(arg))
        except ValueError:
            raise UsageError(f"--feed {spec}: {arg!r} is not a JSON value") from None
    shape = _parse_shape(arg, spec)
    if kind == "zeros":
        return np.zeros(shape, dtype)
    if kind == "ones":
        return np.ones(shape, dtype)
    if dtype.kind == "f":
        return rng.random(shape, dtype=np.float64 if dtype == np.float64 else np.float32)
    if dtype.kind in "iu":
        return rng.integers(0, 100, shape)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    raise UsageError(f"--feed {spec}: @random cannot make {dtype} values")


def _loaded(source: str, tensor_op: str, spec: str) -> np.ndarray:
    path, key = source, None
    if ".npz:" in source:
        path, key = source.rsplit(":", 1)
    try:
        with open(path, "rb") as f:
            magic = f.read(6)
        if magic[:6] != b"\x93NUMPY" and magic[:4] != b"PK\x03\x04":
            raise ValueError(f"it is not a .npy or .npz file (it starts with {magic!r})")
        data = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise UsageError(f"--feed {spec}: cannot load {path!r}: {why}") from None
    if not isinstance(data, np.lib.npyio.NpzFile):
        if key is not None:
            raise UsageError(f"--feed {spec}: {path!r} is not an .npz file, it has no keys")
        return data
    with data:
        keys = list(data.files)
        if key is None:
            key = keys[0] if len(keys) == 1 else tensor_op if tensor_op in keys else None
            if key is None:
                raise UsageError(f"--feed {spec}: {path!r} holds {', '.join(keys)}; name one "
                                 f"as {path}:KEY")
        if key not in keys:
            raise UsageError(f"--feed {spec}: {path!r} has no array {key!r} "
                             f"(it holds {', '.join(keys) or 'nothing'})")
        return data[key]


def resolve_feeds(graph, specs, feed_seed: int = 0) -> dict:
    """{Tensor: array} for the `--feed NAME=SOURCE` specs, checked against the tensors."""
    rng = np.random.default_rng(feed_seed)
    feeds = {}
    for spec in specs:
        name, sep, source = spec.partition("=")
        if not sep or not name or not source:
            raise UsageError(f"--feed {spec!r}: write NAME=FILE.npy or NAME=@random:SHAPE")
        tensor = resolve_tensor(graph, name)
        dtype = np.dtype(tensor.dtype.np_dtype)
        kind, _, arg = source[1:].partition(":")
        if source.startswith("@"):
            if kind not in _SOURCE_KINDS:
                raise UsageError(f"--feed {spec}: unknown source @{kind} "
                                 f"(known: {', '.join('@' + k for k in _SOURCE_KINDS)})")
            value = _generated(kind, arg, dtype, rng, spec)
        else:
            value = _loaded(source, tensor.op.name, spec)
        if value.dtype != dtype:
            if not np.can_cast(value.dtype, dtype, "same_kind"):
                raise UsageError(f"--feed {spec}: the values are {value.dtype}, the tensor "
                                 f"{tensor.name} is {dtype} (no same-kind cast)")
            value = value.astype(dtype)
        if not tensor.shape.is_compatible_with(value.shape):
            raise UsageError(f"--feed {spec}: the values have shape {value.shape}, the tensor "
                             f"{tensor.name} has shape {tensor.shape}")
        feeds[tensor] = value
    return feeds


# --- the plan and the run -----------------------------------------------------------------------


def split_actions(actions: list) -> tuple:
    """(setup, body) lists of ("run" | "fetch", name) from the ordered command-line actions."""
    kinds = [kind for kind, _ in actions]
    if kinds.count("body") > 1:
        raise UsageError("--each-step may be given once")
    start = kinds.index("body") if "body" in kinds else \
        kinds.index("fetch") if "fetch" in kinds else len(actions)
    setup = [a for a in actions[:start] if a[0] != "body"]
    return setup, [a for a in actions[start:] if a[0] != "body"]


def _resolve(graph, action) -> tuple:
    kind, name = action
    if kind == "run":
        return kind, [name], resolve_op(graph, name)
    names = [n.strip() for n in name.split(",") if n.strip()]
    if not names:
        raise UsageError(f"--fetch {name!r}: no tensor named")
    return kind, names, [resolve_tensor(graph, n) for n in names]


def format_value(value) -> str:
    """Text of a fetched value: scalars in shortest round-trip form, arrays NumPy-formatted."""
    value = np.asarray(value)
    if value.ndim == 0:
        return str(value[()])
    return np.array2string(value, floatmode="unique", separator=", ")


def _json_value(value):
    value = np.asarray(value)
    if value.dtype.kind in "SUO":
        value = value.astype(str)
    return value.tolist()


def _emit(step: int, values: dict, fmt: str, out) -> None:
    if fmt == "json":
        print(json.dumps({"step": step, "values": {k: _json_value(v)
                                                    for k, v in values.items()}}), file=out)
        return
    label = "setup" if step == 0 else f"step {step}"
    for name, value in values.items():
        text = format_value(value).replace("\n", "\n" + " " * (len(label) + len(name) + 5))
        print(f"{label}: {name} = {text}", file=out)
    out.flush()


def _list_ops(graph, out) -> None:
    for op in graph.get_operations():
        outputs = ", ".join(f"{t.name} {t.dtype.name} {t.shape}" for t in op.outputs)
        print(f"{op.name}  ({op.type})" + (f"  -> {outputs}" if outputs else ""), file=out)


def execute(args, out=None, err=None) -> int:
    """Run the parsed `run` command; raises UsageError for mistakes found before running."""
    out, err = out or sys.stdout, err or sys.stderr
    if args.steps < 0:
        raise UsageError("--steps must be at least 0")
    graph, unseeded = load_graph(args.graph, args.seed)
    if args.list:
        _list_ops(graph, out)
        return 0
    setup, body = split_actions(args.actions)
    if not setup and not body:
        raise UsageError("nothing to do: give --run OP and/or --fetch TENSOR (see --help)")
    if not body and args.steps > 1:
        raise UsageError(f"--steps {args.steps} but no per-step body: start it with --fetch "
                         "or --each-step")
    setup = [_resolve(graph, a) for a in setup]
    body = [_resolve(graph, a) for a in body]
    feeds = resolve_feeds(graph, args.feed, args.feed_seed)
    if unseeded and args.format == "text":
        print(f"note: {unseeded} random op(s) of {os.path.basename(args.graph)} have no seed, "
              "so values differ from run to run; --seed N makes them reproducible", file=err)
    config = ConfigProto(jit=False) if args.no_jit else ConfigProto()
    bar = progress(total=args.steps, desc="steps", enabled=None if args.steps > 1 else False,
                   file=err, unit="step")
    with Session(graph=graph, config=config) as sess, bar:
        for step, actions in [(0, setup)] + [(i, body) for i in range(1, args.steps + 1)]:
            values = {}
            for kind, names, what in actions:
                try:
                    result = sess.run(what, feed_dict=feeds)
                except (OpError, ValueError, TypeError) as exc:
                    where = "setup" if step == 0 else f"step {step}"
                    bar.close()
                    print(f"flowjit run: error in {where}, {kind} {','.join(names)}: {exc}",
                          file=err)
                    return 1
                if kind == "fetch":
                    values.update(zip(names, result))
            if values:
                with bar.printing(out):
                    _emit(step, values, args.format, out)
            bar.update(step > 0)
    return 0


def main(argv=None, prog: str = "python -m flowjit run") -> int:
    """Command line of this module (the same as `python -m flowjit run`)."""
    parser = argparse.ArgumentParser(prog=prog, description=DESCRIPTION,
                                     epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    return run_command(parser.parse_args(argv))


def run_command(args) -> int:
    """Run parsed arguments, turning UsageError into one message and exit status 2."""
    try:
        return execute(args)
    except UsageError as exc:
        print(f"flowjit run: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
