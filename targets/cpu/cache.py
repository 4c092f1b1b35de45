"""The on-disk kernel cache: keys, entries, verification, clearing (DESIGN.md principle 6).

A key is the sha256 of the *key material*: a canonical serialization of the optimized kernel
IR (`ir_fingerprint`: nodes numbered in program order, constants written exactly, so it does
not depend on interning order or node names), the target options, a fingerprint of the code
that turns IR into machine code (the source files of the schedule, codegen and this target),
the host CPU name and features, and the Python, flowjit, numba, llvmlite and NumPy versions.
Computing it needs neither numba nor the code generator, so a warm process never imports
them.

An entry is a directory `<cache dir>/<key[:2]>/<key>/` holding the files the target wrote
plus `manifest.json` (format, key, key material and the sha256 of every file), written
last.  A filler writes into a private temporary directory and renames it into place, so a
reader never sees a half-written entry and two processes filling the same key both succeed
(the loser's rename fails and its copy is discarded).  `read_entry` verifies the manifest
and every file's hash; any mismatch (truncation, flipped byte, stale material) logs a
warning, removes the entry and reports a miss, so the caller rebuilds it: a corrupt entry is
never executed.

The cache lives under the user's cache directory (`$XDG_CACHE_HOME/flowjit/kernels`,
`~/Library/Caches/flowjit/kernels` on macOS, `%LOCALAPPDATA%\\flowjit\\kernels` on Windows);
`FLOWJIT_CACHE_DIR` moves it, `FLOWJIT_CACHE_DIR=off` disables it.  Public API:
`flowjit.cache_dir()`, `flowjit.clear_cache()`; `STATS` counts hits, misses, stores and
rejected entries in this process.
"""

from __future__ import annotations

import glob
import hashlib
import json
import logging
import os
import shutil
import sys
import tempfile
import uuid

import numpy as np

from ..._version import __version__ as flowjit_version
from ...compiler.core.ir import Program
from ..fingerprint import ir_fingerprint

log = logging.getLogger("flowjit.cache")

FORMAT = "flowjit-kernel-cache-1"
MANIFEST = "manifest.json"
STATS = {"hits": 0, "misses": 0, "stores": 0, "rejected": 0}

# Source files whose text decides what machine code an IR program becomes: the compiler,
# the target protocol and this target (other targets' files do not: editing the reference
# interpreter leaves CPU kernels cached).
_CODE_FILES = ("compiler/*.py", "targets/*.py", "targets/cpu/**/*.py")
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_static_material: dict | None = None


# --- where ----------------------------------------------------------------------------------
def cache_dir() -> str | None:
    """The directory of flowjit's on-disk kernel cache (None when disabled)."""
    env = os.environ.get("FLOWJIT_CACHE_DIR")
    if env is not None:
        if env.strip().lower() in ("", "0", "off", "none", "false"):
            return None
        return os.path.abspath(os.path.expanduser(env))
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.expanduser("~")
    elif sys.platform == "darwin":
        base = os.path.expanduser("~/Library/Caches")
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return os.path.join(base, "flowjit", "kernels")


def clear_cache() -> int:
    """Delete every entry of the on-disk kernel cache; returns how many were removed.

    Kernels already loaded in running processes keep working."""
    root = cache_dir()
    if root is None or not os.path.isdir(root):
        return 0
    removed = 0
    for shard in os.listdir(root):
        path = os.path.join(root, shard)
        if not os.path.isdir(path):
            continue
        for name in os.listdir(path):
            if _discard(os.path.join(path, name)):
                removed += 1
        try:
            os.rmdir(path)
        except OSError:
            pass
    log.info("flowjit cache: cleared %d entries under %s", removed, root)
    return removed


def _discard(path: str) -> bool:
    """Remove a directory: rename it aside first so readers never see it half-deleted."""
    trash = f"{path}.trash-{uuid.uuid4().hex}"
    try:
        os.rename(path, trash)
    except OSError:
        return False
    shutil.rmtree(trash, ignore_errors=True)
    return True


# --- key ------------------------------------------------------------------------------------
# The canonical IR text is target-neutral: it lives in targets/fingerprint.py, shared by
# every target's cache key (targets/target.py).
def _module_version(name: str) -> str:
    """A package's version without importing it (numba's import alone costs 0.3 s)."""
    mod = sys.modules.get(name)
    if mod is not None and getattr(mod, "__version__", None):
        return str(mod.__version__)
    import importlib.util  # lazy: used once

    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return "absent"
    folder = list(spec.submodule_search_locations)[0]
    for fname in ("_version.py", "version.py"):
        path = os.path.join(folder, fname)
        if os.path.exists(path):
            with open(path, "rb") as f:
                return "sha256:" + hashlib.sha256(f.read()).hexdigest()
    return "unknown"


def code_fingerprint() -> str:
    """sha256 of the compiler and target source files, as they are on disk now."""
    code = hashlib.sha256()
    for pattern in _CODE_FILES:
        for path in sorted(glob.glob(os.path.join(_ROOT, pattern), recursive=True)):
            code.update(os.path.relpath(path, _ROOT).encode() + b"\0")
            with open(path, "rb") as f:
                code.update(f.read())
    return code.hexdigest()


def static_material() -> dict:
    """The key material that does not depend on the kernel (computed once per process)."""
    global _static_material
    if _static_material is None:
        # lazy: numba/LLVM load only when compiling (cached kernels run without them)
        import llvmlite
        # lazy: numba/LLVM load only when compiling (cached kernels run without them)
        import llvmlite.binding as ll

        _static_material = {
            "format": FORMAT,
            "python": sys.version,
            "platform": sys.platform,
            "flowjit": flowjit_version,
            "flowjit_code": code_fingerprint(),
            "numba": _module_version("numba"),
            "llvmlite": llvmlite.__version__,
            "numpy": np.__version__,
            "cpu": ll.get_host_cpu_name(),
            "cpu_features": ll.get_host_cpu_features().flatten(),
        }
    return _static_material


def key_material(program: Program, options: dict) -> dict:
    """Everything the compiled kernel depends on; its hash is the cache key."""
    return {**static_material(), "options": {k: repr(v) for k, v in sorted(options.items())},
            "ir": ir_fingerprint(program)}


def key_of(material: dict) -> str:
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


# --- entries --------------------------------------------------------------------------------
def _entry_path(root: str, key: str) -> str:
    return os.path.join(root, key[:2], key)


def discard_entry(key: str) -> None:
    """Remove entry `key` (e.g. one that verified but could not be loaded)."""
    root = cache_dir()
    if root is not None and os.path.isdir(_entry_path(root, key)):
        _discard(_entry_path(root, key))


def read_entry(key: str, material: dict, names) -> dict | None:
    """The verified contents {file name: bytes} of entry `key`, or None (a miss).

    A present but invalid entry (unreadable manifest, missing or altered file, other key
    material) is logged, counted in STATS["rejected"] and removed."""
    root = cache_dir()
    if root is None:
        return None
    path = _entry_path(root, key)
    if not os.path.isdir(path):
        STATS["misses"] += 1
        return None
    problem = None
    files: dict = {}
    try:
        with open(os.path.join(path, MANIFEST), "rb") as f:
            manifest = json.loads(f.read().decode())
        if manifest.get("format") != FORMAT or manifest.get("key") != key:
            problem = "manifest names another format or key"
        elif manifest.get("material") != material:
            problem = "stale key material"
        else:
            digests = manifest["files"]
            for name in names:
                if name not in digests:
                    problem = f"{name} is not in the manifest"
                    break
                with open(os.path.join(path, name), "rb") as f:
                    data = f.read()
                if hashlib.sha256(data).hexdigest() != digests[name]:
                    problem = f"{name} does not match its sha256"
                    break
                files[name] = data
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        problem = f"unreadable ({type(e).__name__}: {e})"
    if problem is None:
        STATS["hits"] += 1
        return files
    STATS["rejected"] += 1
    STATS["misses"] += 1
    log.warning("flowjit cache: discarding invalid entry %s (%s); it will be rebuilt",
                path, problem)
    _discard(path)
    return None


def write_entry(key: str, material: dict, files: dict) -> bool:
    """Store `files` ({name: bytes}) as entry `key`; False when it could not be written
    (an existing valid entry written by another process counts as success)."""
    root = cache_dir()
    if root is None:
        return False
    final = _entry_path(root, key)
    try:
        os.makedirs(os.path.dirname(final), exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=f".tmp-{key[:16]}-", dir=os.path.dirname(final))
    except OSError as e:
        log.warning("flowjit cache: cannot write under %s: %s", root, e)
        return False
    try:
        digests = {}
        for name, data in files.items():
            with open(os.path.join(tmp, name), "wb") as f:
                f.write(data)
            digests[name] = hashlib.sha256(data).hexdigest()
        manifest = {"format": FORMAT, "key": key, "material": material, "files": digests}
        with open(os.path.join(tmp, MANIFEST), "w") as f:
            json.dump(manifest, f, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        try:
            os.rename(tmp, final)
        except OSError:
            # Another process stored this key first; its entry is verified when read.
            shutil.rmtree(tmp, ignore_errors=True)
            return os.path.isdir(final)
        STATS["stores"] += 1
        return True
    except OSError as e:
        shutil.rmtree(tmp, ignore_errors=True)
        log.warning("flowjit cache: cannot write entry %s: %s", final, e)
        return False
