"""The register-blocked GEMM micro-kernel, written in LLVM IR with explicit vector types.

`ukernel(kc, ap, a_off, bp, b_off, ldb, c, c_off, ldc, accumulate, vectors, bias, bias_off,
epilogue)` computes one MR x NR tile (or its first `vectors` vectors of columns)

    C[r, j] (+)= sum over k < kc of Ap[a_off + k*MR + r] * Bp[b_off + k*ldb + j]

from a packed A micro-panel (MR values per k) and a B micro-panel whose rows are ldb apart
(NR for a packed panel, the matrix's row stride when B is read where it lies) into C's
buffer at c_off with row stride ldc (elements; C's columns are contiguous), overwriting C
when `accumulate` is 0 and adding to it otherwise.  With `epilogue` set (the last slice of
a product with a fused epilogue, compiler/gemm_epilogue.py), each stored value becomes
v + bias[bias_off + j] (EPILOGUE_BIAS; the GEMM passes zeros when the product has no bias)
and then, with EPILOGUE_RELU, max(v, 0) as np.maximum computes it (NaN stays NaN, -0.0
becomes 0.0), while the tile is still in registers.  The MR x NV accumulators
are SSA vectors (`<LANES x float>` phis), so they live in registers for the whole k loop:
each k step loads NV vectors of B, broadcasts MR scalars of A and issues MR*NV fused
multiply-adds (`llvm.fma`, which LLVM turns into vfmadd231ps with an embedded broadcast).
numba's loop vectorizer cannot produce this from scalar code: a small local accumulator
array is never promoted to registers.

The function is defined once per LLVM module (internal linkage) by the intrinsic's code
generator, so cached object code carries it and needs no extra symbol.  Tile shapes are in
gemm_tiles.py, per CPU: a vector is 64 bytes of the element type with AVX-512 and 32 bytes
otherwise (with AVX2 the broadcast is a separate vbroadcastss from memory).
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from .gemm_tiles import TILE, lanes

EPILOGUE_BIAS = 1   # epilogue flags: add the bias vector ...
EPILOGUE_RELU = 2   # ... then take max(v, 0)

def _define(module: ir.Module, fty, dtype_name: str, nv: int) -> ir.Function:
    """The micro-kernel function of `dtype_name` with `nv` vectors per row (defined once)."""
    mr = TILE[dtype_name][0]
    width = lanes(dtype_name)
    name = f"flowjit_gemm_ukernel_{dtype_name}_{mr}x{nv * width}"
    if name in module.globals:
        return module.globals[name]
    i64, i32 = ir.IntType(64), ir.IntType(32)
    vty = ir.VectorType(fty, width)
    ptr = fty.as_pointer()
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(),
                                             [i64, ptr, ptr, i64, ptr, i64, i64, ptr, i64]),
                     name)
    fn.linkage = "internal"
    fn.attributes.add("noinline")   # two call sites; inlining them only grows every kernel
    kc, ap, bp, ldb, cp, ldc, accumulate, bias, epilogue = fn.args
    entry, loop, store = (fn.append_basic_block(n) for n in ("entry", "loop", "store"))
    bits = 32 if dtype_name == "float32" else 64
    fma = cgutils.get_or_insert_function(module, ir.FunctionType(vty, [vty, vty, vty]),
                                         f"llvm.fma.v{width}f{bits}")
    zero = ir.Constant(vty, [0.0] * width)
    splat = ir.Constant(ir.VectorType(i32, width), [0] * width)
    undef = ir.Constant(vty, ir.Undefined)

    b = ir.IRBuilder(entry)
    b.cbranch(b.icmp_signed(">", kc, i64(0)), loop, store)

    b.position_at_end(loop)
    k = b.phi(i64, name="k")
    acc = [[b.phi(vty) for _ in range(nv)] for _ in range(mr)]
    k.add_incoming(i64(0), entry)
    b_row = b.gep(bp, [b.mul(k, ldb)])
    b_vec = [b.load(b.bitcast(b.gep(b_row, [i64(v * width)]), vty.as_pointer()), align=4)
             for v in range(nv)]
    a_col = b.gep(ap, [b.mul(k, i64(mr))])
    nxt = []
    for r in range(mr):
        scalar = b.load(b.gep(a_col, [i64(r)]), align=4)
        wide = b.shuffle_vector(b.insert_element(undef, scalar, i32(0)), undef, splat)
        nxt.append([b.call(fma, [wide, b_vec[v], acc[r][v]]) for v in range(nv)])
    k_next = b.add(k, i64(1))
    k.add_incoming(k_next, loop)
    for r in range(mr):
        for v in range(nv):
            acc[r][v].add_incoming(zero, entry)
            acc[r][v].add_incoming(nxt[r][v], loop)
    b.cbranch(b.icmp_signed("<", k_next, kc), loop, store)

    b.position_at_end(store)
    totals = []
    for r in range(mr):
        row = []
        for v in range(nv):
            total = b.phi(vty)
            total.add_incoming(zero, entry)
            total.add_incoming(nxt[r][v], loop)
            row.append(total)
        totals.append(row)
    # two store loops, so that an overwrite never reads C; each with and without epilogue
    add, put, done = (fn.append_basic_block(n) for n in ("add", "put", "done"))
    b.cbranch(b.icmp_signed("!=", accumulate, i64(0)), add, put)
    for block, adding in ((add, True), (put, False)):
        b.position_at_end(block)
        values = []
        for r in range(mr):
            c_row = b.gep(cp, [b.mul(ldc, i64(r))])
            for v in range(nv):
                slot = b.bitcast(b.gep(c_row, [i64(v * width)]), vty.as_pointer())
                value = totals[r][v]
                if adding:
                    value = b.fadd(value, b.load(slot, align=4))
                values.append((slot, r, v, value))
        finish = fn.append_basic_block("finish" if adding else "finish_put")
        plain = fn.append_basic_block("plain" if adding else "plain_put")
        b.cbranch(b.icmp_signed("!=", epilogue, i64(0)), finish, plain)
        b.position_at_end(plain)
        for slot, _, _, value in values:
            b.store(value, slot, align=4)
        b.branch(done)
        b.position_at_end(finish)
        _store_with_epilogue(b, values, bias, epilogue, vty, width)
        b.branch(done)
    b.position_at_end(done)
    b.ret_void()
    return fn


def _store_with_epilogue(b, values, bias, epilogue, vty, width):
    """Store each (slot, row, vector, value) as max(value + bias, 0) or value + bias."""
    i64 = ir.IntType(64)
    zero = ir.Constant(vty, [0.0] * width)
    relu = b.icmp_signed("!=", b.and_(epilogue, i64(EPILOGUE_RELU)), i64(0))
    keep_all = b.insert_element(ir.Constant(ir.VectorType(ir.IntType(1), width), ir.Undefined),
                                b.not_(relu), ir.IntType(32)(0))
    keep_all = b.shuffle_vector(keep_all, keep_all,
                                ir.Constant(ir.VectorType(ir.IntType(32), width), [0] * width))
    shifts = {}
    for slot, _, v, value in values:
        if v not in shifts:
            shifts[v] = b.load(b.bitcast(b.gep(bias, [i64(v * width)]), vty.as_pointer()),
                               align=4)
        value = b.fadd(value, shifts[v])
        # np.maximum(v, 0): v where v > 0 or v is NaN ("unordered or greater"), else +0.0
        keep = b.or_(b.fcmp_unordered(">", value, zero), keep_all)
        b.store(b.select(keep, value, zero), slot, align=4)


@intrinsic
def ukernel(typingctx, kc, ap, a_off, bp, b_off, ldb, c, c_off, ldc, accumulate, vectors,
            bias, bias_off, epilogue):
    """One MR x (vectors * lanes) tile of C (module docstring).  ap, bp, c and bias are arrays
    of one float dtype whose buffers hold the panels, the tile and the epilogue's bias (read
    only when `epilogue` is not 0: NR values from bias_off); offsets, ldb and ldc are in
    elements; `vectors` (1..NV) is how many vectors of each row are computed: NV for a full
    tile, fewer for the ragged last column panel, whose padding would otherwise cost whole
    vectors of multiply-adds (a 64-column product computed 96 columns)."""
    arrays = (ap, bp, c, bias)
    if not all(isinstance(x, types.Array) for x in arrays):
        return None
    dtype = ap.dtype
    if str(dtype) not in TILE or any(x.dtype != dtype for x in arrays):
        return None

    def codegen(context, builder, signature, args):
        (kc_v, ap_v, aoff_v, bp_v, boff_v, ldb_v, c_v, coff_v, ldc_v, acc_v, nv_v, bias_v,
         bias_off_v, epilogue_v) = args
        fty, name = context.get_value_type(dtype), str(dtype)
        most = TILE[name][1]
        functions = [_define(builder.module, fty, name, nv) for nv in range(1, most + 1)]

        def address(position, value, offset):
            data = context.make_array(signature.args[position])(context, builder, value).data
            return builder.gep(data, [offset])

        operands = [kc_v, address(1, ap_v, aoff_v), address(3, bp_v, boff_v), ldb_v,
                    address(6, c_v, coff_v), ldc_v, acc_v, address(11, bias_v, bias_off_v),
                    epilogue_v]
        # vectors >= NV (or out of range) runs the full tile; smaller counts their own
        done = builder.append_basic_block("ukernel_done")
        full = builder.append_basic_block("ukernel_full")
        switch = builder.switch(nv_v, full)
        for nv, fn in enumerate(functions[:-1], start=1):
            block = builder.append_basic_block(f"ukernel_{nv}")
            switch.add_case(ir.Constant(nv_v.type, nv), block)
            builder.position_at_end(block)
            builder.call(fn, operands)
            builder.branch(done)
        builder.position_at_end(full)
        builder.call(functions[-1], operands)
        builder.branch(done)
        builder.position_at_end(done)
        return context.get_dummy_value()

    i64 = types.int64
    return types.none(i64, ap, i64, bp, i64, i64, c, i64, i64, i64, i64, bias, i64, i64), codegen
