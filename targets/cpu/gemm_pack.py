"""Packing a's rows for the GEMM with vector transposes, written in LLVM IR.

The micro-kernel (gemm_ukernel.py) reads a's micro-panel k-major: for each k, the MR
values a[r0 + r, p0 + k] of its rows side by side.  a is row-major, so that is a transpose
of an MR x KC block.  Copied one element at a time it costs as much as half the GEMM's
packing (1024^3 float32 on 2 threads: 0.5 ms of 7.0); `transpose_block` instead loads MR
rows of one vector each (LANES values of k) and writes the LANES x MR transposed block as
MR vectors, through three rounds of two-input shuffles (MR = 8 rows):

    round 1 pairs rows (0,1) (2,3) (4,5) (6,7), interleaving single elements:
        r0[k] r1[k] for k = 0, 1, ...
    round 2 interleaves those pairs two elements at a time:    r0[k] r1[k] r2[k] r3[k]
    round 3 interleaves the halves four at a time:             r0[k] ... r7[k]

which is exactly the packed order.  LLVM lowers each shuffle to one vpermt2ps/vpermt2pd.
`transposable` says whether a dtype's tile has the 8 rows this needs (the AVX-512 tile; the
AVX2 tile's 6 rows are packed element by element, gemm_tiles.py); the GEMM packs other
blocks (ragged rows, a's columns not contiguous, the last k values) element by element.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from .gemm_tiles import TILE, lanes

ROUNDS = 3   # log2 of the rows transposed together


def transposable(dtype_name: str) -> bool:
    """Whether `transpose_block` handles this dtype's micro-panels (MR == 2**ROUNDS)."""
    return dtype_name in TILE and TILE[dtype_name][0] == 1 << ROUNDS


def _interleave(b, x, y, group: int, width: int):
    """The two vectors of x and y interleaved `group` elements at a time."""
    i32 = ir.IntType(32)
    order = []
    for block in range(width // group):
        order += [block * group + e for e in range(group)]
        order += [width + block * group + e for e in range(group)]
    lo = ir.Constant(ir.VectorType(i32, width), order[:width])
    hi = ir.Constant(ir.VectorType(i32, width), order[width:])
    return b.shuffle_vector(x, y, lo), b.shuffle_vector(x, y, hi)


def _define(module: ir.Module, fty, dtype_name: str) -> ir.Function:
    """`void transpose(src, lds, dst)`: dst[k*8 + r] = src[r*lds + k], k < LANES, r < 8."""
    name = f"flowjit_gemm_pack_{dtype_name}"
    if name in module.globals:
        return module.globals[name]
    width, rows = lanes(dtype_name), 1 << ROUNDS
    i64 = ir.IntType(64)
    vty = ir.VectorType(fty, width)
    ptr = fty.as_pointer()
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ptr, i64, ptr]), name)
    fn.linkage = "internal"
    src, lds, dst = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    level = [b.load(b.bitcast(b.gep(src, [b.mul(lds, i64(r))]), vty.as_pointer()), align=4)
             for r in range(rows)]
    # after round t, entry j holds rows j*2**t .. (j+1)*2**t - 1 interleaved, as a list of
    # vectors (2**t of them)
    level = [[v] for v in level]
    for t in range(ROUNDS):
        group = 1 << t
        merged = []
        for j in range(0, len(level), 2):
            x, y = level[j], level[j + 1]
            out = []
            for vx, vy in zip(x, y):
                out += _interleave(b, vx, vy, group, width)
            merged.append(out)
        level = merged
    for v, vector in enumerate(level[0]):
        b.store(vector, b.bitcast(b.gep(dst, [i64(v * width)]), vty.as_pointer()), align=4)
    b.ret_void()
    return fn


@intrinsic
def transpose_block(typingctx, src, src_off, lds, dst, dst_off):
    """dst[dst_off + k*8 + r] = src.flat[src_off + r*lds + k] for r < 8 and k < LANES (one
    vector of k values from each of 8 rows; offsets and lds in elements, src's rows
    contiguous along k)."""
    if not (isinstance(src, types.Array) and isinstance(dst, types.Array)):
        return None
    if src.dtype != dst.dtype or str(src.dtype) not in TILE:
        return None

    def codegen(context, builder, signature, args):
        src_v, src_off_v, lds_v, dst_v, dst_off_v = args
        fn = _define(builder.module, context.get_value_type(src.dtype), str(src.dtype))

        def address(position, value, offset):
            data = context.make_array(signature.args[position])(context, builder, value).data
            return builder.gep(data, [offset])

        builder.call(fn, [address(0, src_v, src_off_v), lds_v, address(3, dst_v, dst_off_v)])
        return context.get_dummy_value()

    i64 = types.int64
    return types.none(src, i64, i64, dst, i64), codegen
