"""Which elementwise consumer of a matrix product becomes that product's GEMM epilogue.

`relu(a @ b + bias)` is a matmul group and, after it, a loop nest that reads each product
element once and writes the result in place (memory planning gives it the product's
buffer).  That nest is one more pass over C, from memory: 4 MB read and written again for a
1024 x 1024 float32 product.  When the nest computes exactly one of

    C + bias        bias + C        max(C + bias, 0)    max(bias + C, 0)    max(C, 0)

(C loaded at the nest's own index, bias a vector along C's columns: an array loaded at
`[0, ..., 0, column]`), the
GEMM can apply it to each tile of C while the tile is still in registers, after the last
slice of the reduction.  `find_epilogues` records that as `Epilogue`s in the schedule; the
target decides whether its GEMM takes it (it does not for transposed or batched products, or
products it sends to BLAS) and otherwise emits the nest as usual, right after the product.

`max` here is the IR's NaN-propagating maximum (np.maximum) with the constant 0 second,
whose result for C = NaN is NaN and for C = -0.0 is +0.0 (scalar_code.fmax); the GEMM's
epilogue keeps exactly these values.

Conditions, besides the form: the nest is a group of one member, written in place into the
product's buffer (so nothing else reads C before it), of C's dtype and shape; the bias has
C's dtype and exists before the product runs (an input, or a buffer of an earlier group).
"""

from __future__ import annotations

import dataclasses
import math

from .core import ir
from .core.ir import NodeKind, Scalar


@dataclasses.dataclass(frozen=True)
class Epilogue:
    """What the GEMM computing `product` also applies: `result = max(C + bias, 0)` with
    the bias optional (None) and the max only when `relu`; `node` is the nest's node, whose
    result this is (it shares the product's buffer)."""

    product: ir.Node
    node: ir.Node
    bias: ir.Node | None
    relu: bool

    def describe(self) -> str:
        """A short text for the schedule's notes, e.g. 'bias t5, relu'."""
        parts = ([f"bias {self.bias.name}"] if self.bias is not None else []) + \
            (["relu"] if self.relu else [])
        return ", ".join(parts)


def find_epilogues(sched) -> dict:
    """{id(matmul node): Epilogue} for the schedule's products whose only consumer is an
    epilogue-shaped nest (module docstring); notes what was found."""
    found: dict = {}
    group_of = {id(m): k for k, g in enumerate(sched.groups) for m in g.members}
    for k, g in enumerate(sched.groups):
        if g.kind != "loop" or len(g.members) != 1:
            continue
        node = g.members[0]
        product = sched.reuse.get(id(node))
        if product is None or product.kind is not NodeKind.MATMUL or id(product) in found:
            continue
        if len(product.shape) != 2 or node.dtype is not product.dtype \
                or not sched.sizes.same_shape(tuple(node.shape), tuple(product.shape)):
            continue
        match = _match(sched.resolved.get(id(node)), product)
        if match is None:
            continue
        bias, relu = match
        if bias is not None and not _ready_before(sched, bias, group_of, group_of[id(product)]):
            continue
        epilogue = Epilogue(product, node, bias, relu)
        found[id(product)] = epilogue
        sched.notes.append(f"{node.name}: fused into {product.name}'s GEMM as its epilogue "
                           f"({epilogue.describe()}), when the GEMM computes it")
    return found


def _match(expr, product):
    """(bias node or None, relu) when `expr` has an epilogue's form over `product`."""
    if expr is None:
        return None
    relu = False
    if expr.op is Scalar.MAX and ir.is_const(expr.args[1], 0) and \
            math.copysign(1.0, expr.args[1].attr) > 0:     # max(x, -0.0) keeps -0.0
        relu, expr = True, expr.args[0]
    if _is_own_load(expr, product):
        return (None, True) if relu else None   # a bare copy is no epilogue
    if expr.op is not Scalar.ADD:
        return None
    for c_side, bias_side in ((0, 1), (1, 0)):
        if _is_own_load(expr.args[c_side], product):
            bias = _column_vector(expr.args[bias_side], product)
            if bias is not None:
                return bias, relu
    return None


def _is_own_load(e, product) -> bool:
    return e.op is Scalar.LOAD and e.attr is product and \
        tuple(e.args) == tuple(ir.axis_vars(2))


def _column_vector(e, product):
    """The node of a load `bias[0, ..., 0, i1]`: a vector along product's columns (the
    kernel's shape checks already hold its length to the column count)."""
    if e.op is not Scalar.LOAD or e.attr.dtype is not product.dtype:
        return None
    index = tuple(e.args)
    if not index or index[-1] is not ir.axis_var(1) or \
            not all(ir.is_const(i, 0) for i in index[:-1]):
        return None
    return e.attr


def _ready_before(sched, bias, group_of, product_group: int) -> bool:
    """Whether `bias` is an array the GEMM can read when the product runs."""
    if bias.kind is NodeKind.INPUT:
        return True
    if id(bias) in sched.inline or id(bias) in sched.local or id(bias) in sched.scratch:
        return False
    return group_of.get(id(bias), product_group) < product_group
