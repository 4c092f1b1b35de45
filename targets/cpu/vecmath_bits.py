"""Bit-level numba intrinsics for vecmath: bit casts, 2**n, rint, FMA, frexp, quadrant bits.

Each intrinsic is generic over float32/float64 and emits a few LLVM instructions or one LLVM
intrinsic that the loop vectorizer widens (bitcast, fptosi/shl, llvm.rint, llvm.fmuladd,
llvm.fma, llvm.copysign, llvm.fabs), so code built from them has no calls once inlined.
Integer work happens at the float's width (int32 for float32), which numba's own integer
typing would not keep (int32 + int32 is int64 in numba). None of them checks its input
range; the callers clamp first (e.g. so fptosi never sees NaN or an out-of-range value).
"""
from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core.errors import TypingError
from numba.extending import intrinsic

_INT_OF = {types.float32: types.int32, types.float64: types.int64}
_MANT_BITS = {types.float32: 23, types.float64: 52}
_BIAS = {types.float32: 127, types.float64: 1023}


def _float_type(ty: types.Type) -> types.Float:
    if ty not in _INT_OF:
        raise TypingError(f"vecmath intrinsics take float32 or float64, not {ty}")
    return ty


def _llvm_intrinsic(builder: ir.IRBuilder, name: str, args: list[ir.Value]) -> ir.Value:
    ftype = args[0].type
    fnty = ir.FunctionType(ftype, [ftype] * len(args))
    suffix = "f32" if isinstance(ftype, ir.FloatType) else "f64"
    module = builder.module
    fullname = f"llvm.{name}.{suffix}"
    try:
        fn = module.get_global(fullname)
    except KeyError:
        fn = ir.Function(module, fnty, fullname)
    return builder.call(fn, args)


@intrinsic
def float_bits(typingctx, x):
    """Reinterpret a float32/float64 as int32/int64 (same bits)."""
    fty = _float_type(x)
    ity = _INT_OF[fty]

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], context.get_value_type(ity))

    return ity(fty), codegen


@intrinsic
def bits_float(typingctx, i):
    """Reinterpret an int32/int64 as float32/float64 (same bits)."""
    if i == types.int32:
        fty = types.float32
    elif i == types.int64:
        fty = types.float64
    else:
        raise TypingError(f"bits_float takes int32 or int64, not {i}")

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], context.get_value_type(fty))

    return fty(i), codegen


@intrinsic
def pow2i(typingctx, n):
    """2**n for an integer-valued float n inside the normal exponent range (no checks)."""
    fty = _float_type(n)
    ity = _INT_OF[fty]

    def codegen(context, builder, sig, args):
        lity = context.get_value_type(ity)
        k = builder.fptosi(args[0], lity)
        k = builder.add(k, ir.Constant(lity, _BIAS[fty]))
        k = builder.shl(k, ir.Constant(lity, _MANT_BITS[fty]))
        return builder.bitcast(k, context.get_value_type(fty))

    return fty(fty), codegen


# "Shifter" floats: z = SHIFTER + v rounds v to the nearest integer n, which lands in z's low
# mantissa bits: bits(SHIFTER + n) == bits(SHIFTER) + n for SHIFTER = 1.5 * 2**mantissa_bits
# and |n| < 2**(mantissa_bits - 1); z - SHIFTER == n exactly.


def _shifter_exponent(context, builder, fty, z):
    # n << mantissa_bits for z = SHIFTER + n; the shift drops SHIFTER's own bits
    lity = context.get_value_type(_INT_OF[fty])
    return builder.shl(builder.bitcast(z, lity), ir.Constant(lity, _MANT_BITS[fty]))


@intrinsic
def ldexp_shifter(typingctx, y, z):
    """y * 2**n for z = SHIFTER + n, by adding n to y's exponent field (two integer ops).

    Exact while y and the result are normal (or y is +-0 and n is 0); otherwise the bits are
    meaningless but defined (any z, NaN and inf included), so callers patch those with selects.
    """
    fty = _float_type(y)
    if z != fty:
        raise TypingError("ldexp_shifter arguments must have the same float type")

    def codegen(context, builder, sig, args):
        lity = context.get_value_type(_INT_OF[fty])
        bits = builder.bitcast(args[0], lity)
        bits = builder.add(bits, _shifter_exponent(context, builder, fty, args[1]))
        return builder.bitcast(bits, context.get_value_type(fty))

    return fty(fty, fty), codegen


@intrinsic
def pow2_neg_shifter(typingctx, z):
    """2**-n for z = SHIFTER + n with 2**-n normal (-126 <= n <= 126 in f32); no checks."""
    fty = _float_type(z)

    def codegen(context, builder, sig, args):
        lity = context.get_value_type(_INT_OF[fty])
        one_bits = ir.Constant(lity, _BIAS[fty] << _MANT_BITS[fty])
        bits = builder.sub(one_bits, _shifter_exponent(context, builder, fty, args[0]))
        return builder.bitcast(bits, context.get_value_type(fty))

    return fty(fty), codegen


def _unary(llvm_name: str, doc: str):
    def typer(typingctx, x):
        fty = _float_type(x)

        def codegen(context, builder, sig, args):
            return _llvm_intrinsic(builder, llvm_name, list(args))

        return fty(fty), codegen

    typer.__doc__ = doc
    typer.__name__ = llvm_name
    return intrinsic(typer)


rint = _unary("rint", "Round to the nearest integer, ties to even (llvm.rint).")
fabs = _unary("fabs", "Absolute value (llvm.fabs): clears the sign bit, keeps NaN.")


@intrinsic
def copysign(typingctx, x, y):
    """|x| with the sign bit of y (llvm.copysign)."""
    fty = _float_type(x)
    if y != fty:
        raise TypingError("copysign arguments must have the same float type")

    def codegen(context, builder, sig, args):
        return _llvm_intrinsic(builder, "copysign", list(args))

    return fty(fty, fty), codegen


@intrinsic
def fmadd(typingctx, a, b, c):
    """a*b + c, fused when the CPU has FMA (llvm.fmuladd); never a libm call."""
    fty = _float_type(a)
    if b != fty or c != fty:
        raise TypingError("fmadd arguments must have the same float type")

    def codegen(context, builder, sig, args):
        return _llvm_intrinsic(builder, "fmuladd", list(args))

    return fty(fty, fty, fty), codegen


@intrinsic
def fma(typingctx, a, b, c):
    """a*b + c with a single rounding (llvm.fma): exact products for Cody-Waite reduction.

    Compiles to one vfmadd instruction on CPUs with FMA (every x86-64-v3 and AArch64 CPU); on
    older CPUs LLVM calls libm's fma, which stays correct but is slow.
    """
    fty = _float_type(a)
    if b != fty or c != fty:
        raise TypingError("fma arguments must have the same float type")

    def codegen(context, builder, sig, args):
        return _llvm_intrinsic(builder, "fma", list(args))

    return fty(fty, fty, fty), codegen


_SQRT_HALF_BITS = {types.float32: 0x3F3504F3, types.float64: 0x3FE6A09E667F3BCD}


@intrinsic
def frexp_sqrt2(typingctx, x):
    """(m, e) with x == m * 2**e and sqrt(1/2) <= m < sqrt(2), for positive normal x.

    Both are floats of x's type. Zero, negative, subnormal, inf and NaN inputs give
    meaningless (but defined) results; callers patch them with selects.
    """
    fty = _float_type(x)
    ity = _INT_OF[fty]
    ret = types.UniTuple(fty, 2)

    def codegen(context, builder, sig, args):
        lity = context.get_value_type(ity)
        lfty = context.get_value_type(fty)
        bits = builder.bitcast(args[0], lity)
        shifted = builder.sub(bits, ir.Constant(lity, _SQRT_HALF_BITS[fty]))
        e = builder.ashr(shifted, ir.Constant(lity, _MANT_BITS[fty]))
        mbits = builder.sub(bits, builder.shl(e, ir.Constant(lity, _MANT_BITS[fty])))
        m = builder.bitcast(mbits, lfty)
        return context.make_tuple(builder, ret, [m, builder.sitofp(e, lfty)])

    return ret(fty), codegen


@intrinsic
def int_bit(typingctx, n, mask):
    """True where (int(n) & mask) != 0, for an integer-valued float n with |n| < 2**22 (f32)
    or 2**51 (f64); uses the 1.5 * 2**mantissa_bits shifter trick, so NaN/huge n are defined."""
    fty = _float_type(n)
    ity = _INT_OF[fty]
    if not isinstance(mask, types.Integer):
        raise TypingError("int_bit mask must be an integer")

    def codegen(context, builder, sig, args):
        lity = context.get_value_type(ity)
        lfty = context.get_value_type(fty)
        shifter = ir.Constant(lfty, 1.5 * 2.0 ** _MANT_BITS[fty])
        bits = builder.bitcast(builder.fadd(args[0], shifter), lity)
        m = context.cast(builder, args[1], mask, ity)
        return builder.icmp_signed("!=", builder.and_(bits, m), ir.Constant(lity, 0))

    return types.boolean(fty, mask), codegen
