"""The compile worker: a child process that compiles kernels into the disk cache.

The tiered policy compiles in the background while the user's steps run with reference
kernels (runtime/cluster_kernels.py).  A compile on a thread of the user's process holds
its GIL for most of numba's work, so the steps that run meanwhile slowed from 0.6 ms to
4-11 ms and a 15 s compile stretched to over a minute (measured on the MLP training step,
benchmarks/tiered_session.py).  Compiled here instead, in a process of its own, it takes a
core the steps do not use and costs them nothing.

The hand-off is the disk cache (cache.py): the parent sends the kernel's source, cache key
and key material and its entry point's inputs and outputs (build.kernel_io); the worker
compiles the kernel and its entry point exactly as build.py would, writes the cache entry
(atomically: temp folder and rename) and answers; the parent then loads the entry with the
native loader as any cached kernel (native.py).  A worker that fails, dies or answers no
gives False, and the caller compiles in its own process instead.

Messages are length-prefixed JSON on the worker's stdin/stdout.  One worker per process,
started on the first request; it runs at a lower scheduling priority (nice +5) than the
user's process, and lives until the parent closes its end: at the parent's exit, a
compile in progress still finishes and reaches the cache for the next run, and the parent
does not wait for it.  The worker imports flowjit from the parent's own package folder.
"""

from __future__ import annotations

import json
import logging
import os
import struct
import subprocess
import sys
import threading
import traceback

from . import build, cache

log = logging.getLogger("flowjit.cache")

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NICENESS = 5
_HEADER = struct.Struct("<Q")
_lock = threading.Lock()
_proc: subprocess.Popen | None = None

# The child imports flowjit from PACKAGE_DIR whatever its folder is called (an editable
# install maps the repository root to the name), then serves requests.
_BOOT = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location(
    "flowjit", sys.argv[1] + "/__init__.py", submodule_search_locations=[sys.argv[1]])
module = importlib.util.module_from_spec(spec)
sys.modules["flowjit"] = module
spec.loader.exec_module(module)
from flowjit.targets.cpu.compile_worker import serve
serve()
"""


def compile_in_worker(source: str, key: str, material: dict, io: dict) -> bool:
    """Have the worker compile this kernel into the disk cache; True when its entry is
    there (or another process stored it), False when this process should compile."""
    request = {"source": source, "key": key, "material": material, "io": io,
               "cache_dir": cache.cache_dir()}
    with _lock:
        proc = _worker()
        if proc is None:
            return False
        try:
            _send(proc.stdin, request)
            reply = _receive(proc.stdout)
        except (OSError, EOFError, ValueError) as e:
            log.warning("flowjit: the compile worker stopped (%s: %s); compiling here",
                        type(e).__name__, e)
            _discard()
            return False
    if not reply.get("ok"):
        log.warning("flowjit: the compile worker could not build kernel %s: %s", key[:16],
                    reply.get("error", "no reason given"))
        return False
    return True


def _worker() -> subprocess.Popen | None:
    """The running worker, started if needed (None when it cannot start)."""
    global _proc
    if _proc is not None and _proc.poll() is None:
        return _proc
    try:
        _proc = subprocess.Popen([sys.executable, "-c", _BOOT, PACKAGE_DIR],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, close_fds=True)
    except OSError as e:
        log.warning("flowjit: cannot start the compile worker (%s); compiling here", e)
        _proc = None
    return _proc


def _discard() -> None:
    global _proc
    if _proc is not None:
        try:
            _proc.kill()
        except OSError:
            pass
        _proc = None


def shutdown() -> None:
    """Close the worker's input: it finishes a compile in progress and exits (tests)."""
    global _proc
    with _lock:
        if _proc is not None:
            try:
                _proc.stdin.close()
                _proc.wait(timeout=120)
            except (OSError, subprocess.TimeoutExpired):
                _discard()
            _proc = None


def _send(stream, message: dict) -> None:
    data = json.dumps(message).encode()
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def _receive(stream) -> dict:
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        raise EOFError("the compile worker closed its output")
    (size,) = _HEADER.unpack(header)
    data = stream.read(size)
    if len(data) < size:
        raise EOFError("the compile worker's answer was cut short")
    return json.loads(data)


def serve() -> None:
    """The worker's loop: answer requests until the parent closes stdin."""
    try:
        os.nice(NICENESS)
    except OSError:
        pass
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        try:
            request = _receive(stdin)
        except EOFError:
            return
        reply = _handle(request)
        try:
            _send(stdout, reply)
        except OSError:   # the parent has gone; the entry is in the cache already
            return


def _handle(request: dict) -> dict:
    os.environ["FLOWJIT_CACHE_DIR"] = request["cache_dir"]   # this process only
    try:
        files = build.build_entry_files(request["source"], request["io"])
        if not build.store_entry(request["key"], request["material"], files):
            return {"ok": False, "error": "the cache entry was not written (the flowjit "
                                          "files changed, or the cache folder is not writable)"}
        return {"ok": True}
    except Exception:  # noqa: BLE001 - any failure is reported; the parent compiles
        return {"ok": False, "error": traceback.format_exc(limit=8)}
