"""Products of traced arrays with NumPy's semantics: matmul/@, dot, vdot, inner, outer,
tensordot-free einsum.

matmul follows NumPy's rules for 1-D operands (promoted, then the added axis removed) and
broadcasts batch axes; the 2-D and batched cases are MatMul/BatchMatMul (BLAS in compiled
code). einsum handles explicit and implicit subscripts without ellipsis or repeated indices
within one operand: two-operand matrix products become matmul, two-operand contractions
over one index with an own index on each side a batched matmul ('bij,bjk->bik',
'bij,jk->bik'), anything else a broadcast product and a sum over the contracted indices,
which the compiler fuses into one loop nest.
"""

from __future__ import annotations

import numpy as np

from ..ops.conversion import static_value
from .np_array import GraphBreak, api, as_tensor, np_dtype_of, to_tensor, wrap
from .np_ufuncs import _dummy


def _operands(a, b):
    dt = np.matmul(_dummy_mat(a), _dummy_mat(b)).dtype
    return to_tensor(a, dt), to_tensor(b, dt)


def _dummy_mat(x):
    d = _dummy(x)
    return d if np.ndim(d) else np.empty((0,), np_dtype_of(x))


# dtypes MatMul has no kernel for: multiplied as int64 (bool: any product true; small and
# unsigned integers: the same wrapped result, int64 products wrap modulo 2**64 too)
_WIDENED = frozenset(np.dtype(t) for t in (np.bool_, np.int8, np.int16, np.uint8, np.uint16,
                                            np.uint32, np.uint64))


def matmul(a, b):
    """`a @ b` / np.matmul."""
    tf = api()
    ta, tb = _operands(a, b)
    dtype = np.dtype(ta.dtype.as_numpy_dtype)
    if dtype in _WIDENED:
        wide = as_tensor(matmul(wrap(tf.cast(ta, tf.int64)), wrap(tf.cast(tb, tf.int64))))
        return wrap(tf.not_equal(wide, 0) if dtype == np.bool_ else tf.cast(wide, ta.dtype))
    ra, rb = ta.shape.ndims, tb.shape.ndims
    if ra == 0 or rb == 0:
        raise ValueError("matmul: Input operand does not have enough dimensions")
    if ra == 1 and rb == 1:
        return wrap(tf.reduce_sum(tf.multiply(ta, tb)))
    if ra == 1:
        r = tf.matmul(tf.expand_dims(ta, 0), tb)
        return wrap(tf.squeeze(r, [-2]))
    if rb == 1:
        r = tf.matmul(ta, tf.expand_dims(tb, -1))
        return wrap(tf.squeeze(r, [-1]))
    if ra == rb == 2:   # a transposed operand is BLAS's transpose flag, not a copy
        (ta, flip_a), (tb, flip_b) = _untransposed(ta), _untransposed(tb)
        return wrap(tf.matmul(ta, tb, transpose_a=flip_a, transpose_b=flip_b))
    return wrap(tf.matmul(ta, tb))


def _untransposed(t):
    """(x, True) when `t` is Transpose(x, [1, 0]) of a matrix, else (t, False)."""
    if t.op.type == "Transpose" and t.shape.ndims == 2:
        perm = static_value(t.op.inputs[1])
        if perm is not None and list(np.asarray(perm).reshape(-1)) == [1, 0]:
            return t.op.inputs[0], True
    return t, False


def dot(a, b, out=None):
    """np.dot for scalars, vectors and matrices (N-D dot is a GraphBreak)."""
    if np.ndim(_dummy(a)) == 0 or np.ndim(_dummy(b)) == 0:
        from .np_ufuncs import call

        result = call(np.multiply, (a, b))
    else:
        ta, tb = _operands(a, b)
        if ta.shape.ndims > 2 or tb.shape.ndims > 2:
            raise GraphBreak("np.dot of arrays with more than 2 dimensions")
        result = matmul(wrap(ta), wrap(tb))
    if out is not None:
        out[...] = result
        return out
    return result


def vdot(a, b):
    """np.vdot: the flattened dot product, the first operand conjugated."""
    tf = api()
    ta, tb = _operands(a, b)
    if ta.dtype.is_complex:
        raise GraphBreak("np.vdot of complex values (the conjugate is not traced)")
    return wrap(tf.reduce_sum(tf.multiply(tf.reshape(ta, [-1]), tf.reshape(tb, [-1]))))


def inner(a, b):
    tf = api()
    ta, tb = _operands(a, b)
    if ta.shape.ndims == 0 or tb.shape.ndims == 0:
        return wrap(tf.multiply(ta, tb))
    if ta.shape.ndims > 2 or tb.shape.ndims > 2:
        raise GraphBreak("np.inner of arrays with more than 2 dimensions")
    return matmul(wrap(ta), wrap(tf.transpose(tb)) if tb.shape.ndims == 2 else wrap(tb))


def outer(a, b, out=None):
    tf = api()
    ta, tb = _operands(a, b)
    product = tf.logical_and if ta.dtype.is_bool else tf.multiply   # NumPy's bool loop
    r = product(tf.reshape(ta, [-1, 1]), tf.reshape(tb, [1, -1]))
    if out is not None:
        out[...] = wrap(r)
        return out
    return wrap(r)


def _parse(subscripts: str, count: int):
    s = subscripts.replace(" ", "")
    if "." in s:
        raise GraphBreak("np.einsum with '...'")
    if "->" in s:
        ins, out = s.split("->")
    else:
        ins = s
        letters = ins.replace(",", "")
        out = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    terms = ins.split(",")
    if len(terms) != count:
        raise ValueError("more operands provided to einstein sum function than specified "
                         "in the subscripts string" if count > len(terms) else
                         "fewer operands provided to einstein sum function than specified "
                         "in the subscripts string")
    for t in terms:
        if len(set(t)) != len(t):
            raise GraphBreak("np.einsum with a repeated index in one operand (a diagonal)")
    return terms, out


def einsum(subscripts, *operands, optimize=False, dtype=None, out=None, **kwargs):
    """np.einsum (see the module docstring for the forms supported)."""
    if kwargs or not isinstance(subscripts, str):
        raise GraphBreak("np.einsum with these arguments")
    tf = api()
    terms, target = _parse(subscripts, len(operands))
    dt = np.result_type(*[_dummy(o) for o in operands]) if dtype is None else np.dtype(dtype)
    tensors = [to_tensor(o, dt) for o, _ in zip(operands, terms)]
    for t, term in zip(tensors, terms):
        if t.shape.ndims != len(term):
            raise ValueError(f"einstein sum subscripts string contains too many subscripts "
                             f"for operand ({term!r} for an array of rank {t.shape.ndims})")
    contracted = sorted(set("".join(terms)) - set(target))
    if len(tensors) == 2 and len(contracted) == 1 and len(target) == 2 and \
            all(len(t) == 2 for t in terms):
        result = _einsum_matmul(tensors, terms, target, contracted[0])
        if result is not None:
            return wrap(result)
    if len(tensors) == 2 and len(contracted) == 1 and dt.kind == "f":
        result = _einsum_batched(tensors, terms, target, contracted[0])
        if result is not None:
            if out is not None:
                out[...] = wrap(result)
                return out
            return wrap(result)
    order = list(target) + contracted
    product = None
    for t, term in zip(tensors, terms):
        perm = sorted(range(len(term)), key=lambda k: order.index(term[k]))
        t = tf.transpose(t, perm) if perm != list(range(len(term))) else t
        present = sorted(term, key=order.index)
        shape_idx = [present.index(c) if c in present else None for c in order]
        for pos, k in enumerate(shape_idx):
            if k is None:
                t = tf.expand_dims(t, pos)
        product = t if product is None else tf.multiply(product, t)
    if contracted:
        product = tf.reduce_sum(product, axis=list(range(len(target), len(order))))
    result = wrap(product)
    if out is not None:
        out[...] = result
        return out
    return result


def _einsum_matmul(tensors, terms, target, c):
    tf = api()
    (a, b), (ta, tb) = tensors, terms
    if c not in ta or c not in tb:
        return None
    fa, fb = ta.replace(c, ""), tb.replace(c, "")
    if {fa, fb} != set(target) or fa == fb:
        return None
    r = tf.matmul(a, b, transpose_a=ta.index(c) == 0, transpose_b=tb.index(c) == 1)
    return r if target == fa + fb else tf.transpose(r)


def _einsum_batched(tensors, terms, target, c):
    """Two operands and one contracted index `c` as a batched matrix product: a's last
    own index (in `target` order) is the rows, b's the columns, every other output index a
    batch dim (size 1 in the operand that lacks it, so BatchMatMulV2 broadcasts it), e.g.
    'bij,bjk->bik' and 'bij,jk->bik'.  None for other forms (no own index on one side, an
    index summed away that is not `c`)."""
    tf = api()
    (a, b), (ta, tb) = tensors, terms
    if c not in ta or c not in tb or set(ta + tb) - {c} != set(target):
        return None
    own_a = [x for x in target if x in ta and x not in tb]
    own_b = [x for x in target if x in tb and x not in ta]
    if not own_a or not own_b:
        return None
    i, k = own_a[-1], own_b[-1]
    batch = [x for x in target if x not in (i, k)]

    def arrange(t, term, last):
        present = [x for x in batch if x in term] + last
        perm = [term.index(x) for x in present]
        if perm != list(range(len(term))):
            t = tf.transpose(t, perm)
        for pos, x in enumerate(batch):   # a batch index this operand lacks: size 1
            if x not in term:
                t = tf.expand_dims(t, pos)
        return t

    product = tf.matmul(arrange(a, ta, [i, c]), arrange(b, tb, [c, k]))
    order = batch + [i, k]
    if order != list(target):
        product = tf.transpose(product, [order.index(x) for x in target])
    return product
