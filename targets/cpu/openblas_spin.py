"""Bound how long the worker threads of NumPy's and scipy's OpenBLAS spin after a call.

OpenBLAS's idle workers spin until `thread_timeout` cycles have passed since their last job
(2**28 by default, ~0.1 s) before they sleep.  A flowjit kernel that starts its parallel
loops meanwhile shares a core with a spinner: its threads split the work evenly, so the
whole kernel runs at the speed of the thread on the shared core.  Measured on a 2-core Zen 4,
1024^3 float32 products alternated with NumPy's `a @ b`: flowjit 23.2 ms a call (one core's
speed) against NumPy's 13.1; with the spin bounded, 11.7 against 12.1.

OpenBLAS reads OPENBLAS_THREAD_TIMEOUT (n: 2**n cycles) once, when the library loads, which
is when NumPy is imported: usually before flowjit, so setting the variable here would come
too late.  `bound_openblas_spinning()` therefore writes the value OpenBLAS derived from it,
the file-static `thread_timeout` that its spinning workers read on every turn, in each
OpenBLAS loaded in the process.  Its address is the library's load address (from
/proc/self/maps) plus the value of the local symbol `thread_timeout` in the library's ELF
symbol table (a 4-byte object; NumPy's and scipy's wheels keep that table).  The word is
written only when it holds what OpenBLAS itself stores there, a power of two from 2**4 to
2**30, and only lowered, to SPIN_CYCLES (2**20, ~0.3 ms: the order of the bound flowjit sets
on libgomp's spin, thread_affinity.SPIN_COUNT); a library laid out otherwise is left alone.
The cost to NumPy: its workers fall asleep 0.3 ms after a call instead of 0.1 s, and the
next call wakes them through a condition variable (microseconds).

This writes into another library's private state, so it is off by default: nothing is done
unless the user opted in to process tuning (`flowjit.config.tune_process()` or
FLOWJIT_TUNE_PROCESS=1; docs/architecture.md, "Manners in the user's process"), and not then
either when the user set OPENBLAS_THREAD_TIMEOUT, binds threads (thread_affinity.wanted()),
or off Linux.  `thread_timeouts()` reads the words without writing (the tests compare them).
"""

from __future__ import annotations

import ctypes
import os
import struct

import numpy as np

from . import thread_affinity

SPIN_CYCLES = 1 << 20
_LIMITS = (1 << 4, 1 << 30)         # what OpenBLAS stores: 1 << n with n clamped to 4..30
_SYMBOL = b"thread_timeout"
_SHT_SYMTAB, _STT_OBJECT, _PT_LOAD = 2, 1, 1
_SYM = np.dtype([("name", "<u4"), ("info", "u1"), ("other", "u1"), ("shndx", "<u2"),
                 ("value", "<u8"), ("size", "<u8")])
_done: dict = {}   # {library path: (spin cycles before, after)}, or None where left alone


def bound_openblas_spinning() -> dict:
    """Lower the spin of every OpenBLAS loaded in this process to SPIN_CYCLES (once per
    library); returns {path: (cycles before, after) or None where it was left alone}."""
    if not _wanted():
        return {}
    for path, base in loaded_openblas().items():
        if path not in _done:
            _done[path] = _bound_one(path, base)
    return dict(_done)


def thread_timeouts() -> dict:
    """{path: the spin bound OpenBLAS keeps now} of each loaded OpenBLAS whose `thread_timeout`
    is found as `bound_openblas_spinning` finds it; reads only, writes nothing."""
    words = {}
    for path, base in loaded_openblas().items():
        try:
            located = timeout_symbol(path)
        except (OSError, ValueError, struct.error):
            continue
        if located is not None:
            words[path] = ctypes.c_uint32.from_address(base - located[1] + located[0]).value
    return words


def _wanted() -> bool:
    return "OPENBLAS_THREAD_TIMEOUT" not in os.environ and thread_affinity.wanted()


def loaded_openblas() -> dict:
    """{path: load address} of the OpenBLAS libraries mapped into this process."""
    found: dict = {}
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                parts = line.split()
                if len(parts) < 6 or "openblas" not in os.path.basename(parts[5]).lower():
                    continue
                start, offset = int(parts[0].split("-")[0], 16), int(parts[2], 16)
                if offset == 0 and parts[5] not in found:
                    found[parts[5]] = start
    except OSError:
        return {}
    return found


def _bound_one(path: str, mapped_at: int):
    try:
        located = timeout_symbol(path)
    except (OSError, ValueError, struct.error):
        return None
    if located is None:
        return None
    value, first_load_vaddr = located
    word = ctypes.c_uint32.from_address(mapped_at - first_load_vaddr + value)
    before = word.value
    if not (_LIMITS[0] <= before <= _LIMITS[1] and before & (before - 1) == 0):
        return None
    if before > SPIN_CYCLES:
        word.value = SPIN_CYCLES
    return before, word.value


def timeout_symbol(path: str):
    """(st_value of the 4-byte object `thread_timeout`, p_vaddr of the first PT_LOAD) read
    from the ELF file at `path` (64-bit little-endian), or None when it has no such single
    symbol."""
    with open(path, "rb") as f:
        header = f.read(64)
        if header[:4] != b"\x7fELF" or header[4] != 2 or header[5] != 1:
            return None
        phoff, shoff = struct.unpack_from("<QQ", header, 0x20)
        phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", header, 0x36)
        f.seek(phoff)
        programs = f.read(phentsize * phnum)
        loads = [struct.unpack_from("<IIQQ", programs, i * phentsize) for i in range(phnum)]
        vaddrs = [vaddr for kind, _, offset, vaddr in loads if kind == _PT_LOAD and offset == 0]
        f.seek(shoff)
        table = f.read(shentsize * shnum)
        sections = [struct.unpack_from("<IIQQQQIIQQ", table, i * shentsize)
                    for i in range(shnum)]
        symtabs = [s for s in sections if s[1] == _SHT_SYMTAB]
        if len(vaddrs) != 1 or len(symtabs) != 1:
            return None
        _, _, _, _, sym_offset, sym_size, link, _, _, _ = symtabs[0]
        f.seek(sym_offset)
        symbols = np.frombuffer(f.read(sym_size - sym_size % _SYM.itemsize), _SYM)
        strtab = sections[link]
        f.seek(strtab[4])
        strings = f.read(strtab[5])
    names = _name_offsets(strings, _SYMBOL)
    hits = symbols[np.isin(symbols["name"], names) & (symbols["size"] == 4)
                   & ((symbols["info"] & 0xF) == _STT_OBJECT) & (symbols["shndx"] != 0)]
    if len(hits) != 1:
        return None
    return int(hits["value"][0]), vaddrs[0]


def _name_offsets(strings: bytes, name: bytes) -> list:
    """Offsets in an ELF string table at which the string `name` starts (linkers share a
    string's tail: `thread_timeout` may start inside `openblas_thread_timeout`)."""
    offsets, start = [], strings.find(name + b"\0")
    while start >= 0:
        offsets.append(start)
        start = strings.find(name + b"\0", start + 1)
    return offsets
