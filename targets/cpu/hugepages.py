"""Transparent huge pages for large buffers a kernel allocates.

NumPy asks Linux for transparent huge pages (madvise MADV_HUGEPAGE) on every allocation of
4 MiB or more; numba's runtime allocator does not, so a large output allocated inside a
kernel was faulted in 4 KiB at a time: a fresh 40 MB float32 output cost ~13 ms of page
faults, more than the fused loop that fills it (W1 at 10^7 elements). `advise_huge(buf)`,
called by generated code right after allocating a buffer of at least HUGE_MIN_BYTES, gives
numba-allocated buffers the same advice NumPy's own get. The call is a plain `madvise` by
symbol name, so cached object code resolves it in a fresh process like any libc function;
on platforms without madvise it compiles to nothing.
"""

from __future__ import annotations

import sys

from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

HUGE_MIN_BYTES = 4 << 20   # NumPy's threshold for the same advice
_PAGE = 4096
_MADV_HUGEPAGE = 14        # Linux <sys/mman.h>

_HAVE_MADVISE = sys.platform.startswith("linux")


@intrinsic
def _madvise(typingctx, address, nbytes):
    """madvise(address, nbytes, MADV_HUGEPAGE); the result is ignored (advice only)."""
    sig = types.void(types.intp, types.intp)

    def codegen(context, builder, signature, args):
        if not _HAVE_MADVISE:
            return context.get_dummy_value()
        i8p = cgutils.voidptr_t
        intp = context.get_value_type(types.intp)
        fnty = cgutils.ir.FunctionType(cgutils.int32_t, [i8p, intp, cgutils.int32_t])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "madvise")
        addr, size = args
        builder.call(fn, [builder.inttoptr(addr, i8p), size,
                          cgutils.int32_t(_MADV_HUGEPAGE)])
        return context.get_dummy_value()

    return sig, codegen


@njit(error_model="numpy", nogil=True)
def advise_huge(buf):
    """Advise the kernel to back `buf`'s whole pages with transparent huge pages."""
    start = buf.ctypes.data
    end = start + buf.size * buf.itemsize
    first = (start + _PAGE - 1) // _PAGE * _PAGE
    last = end // _PAGE * _PAGE
    if last - first >= HUGE_MIN_BYTES:
        _madvise(first, last - first)
