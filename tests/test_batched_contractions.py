"""Batched contractions under `flowjit.jit`, compiled: `a @ b` whose batch dims broadcast
(BatchMatMulV2's lowering, ops/matmul_ops.py) and einsum contractions that become a batched
matmul (compiler/np_linalg.py), against NumPy.

Every check asserts that the call ran the compiled kernel (`lower(...).compiled`, and the
graph holds the BatchMatMulV2 the kernel computes), on odd sizes, an empty batch, float32
and float64.  Jitted functions are shared across cases: a kernel compiles per dtype, rank
and which sizes are 1, so the cases of one signature reuse one compile.
"""

import numpy as np
import pytest

import flowjit
from flowjit.errors import InvalidArgumentError

RNG = np.random.default_rng(7)
BMM = flowjit.jit(lambda a, b: a @ b, fallback=False)


def _arrays(dtype, *shapes):
    return [RNG.standard_normal(s).astype(dtype) for s in shapes]


def _check(jitted, ref_fn, args, rtol):
    lowered = jitted.lower(*args)
    assert lowered.compiled, str(lowered)
    assert "BatchMatMulV2" in lowered.stage("graph")
    got, ref = jitted(*args), ref_fn(*args)
    assert got.shape == ref.shape and got.dtype == ref.dtype
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=rtol)


# (shapes of a and b): cases in one group share a signature (one compile)
BROADCAST = {
    "shared a, float64": (np.float64, [((1, 5, 3), (4, 3, 7)), ((1, 2, 9), (3, 9, 1 + 10)),
                                       ((1, 5, 3), (0, 3, 7)), ((1, 0, 3), (2, 3, 5))]),
    "shared b, float32": (np.float32, [((4, 5, 3), (1, 3, 7)), ((13, 11, 17), (1, 17, 6))]),
    "both ways, float64": (np.float64, [((3, 1, 5, 3), (1, 4, 3, 7)),
                                        ((2, 1, 7, 2), (1, 5, 2, 3)),
                                        ((0, 1, 5, 3), (1, 4, 3, 7))]),
    "full batch, float32": (np.float32, [((8, 5, 3), (8, 3, 7)), ((0, 5, 3), (0, 3, 7))]),
}


@pytest.mark.parametrize("group", sorted(BROADCAST))
def test_batched_matmul_compiles_and_matches_numpy(group):
    dtype, cases = BROADCAST[group]
    rtol = 1e-4 if dtype == np.float32 else 1e-10
    for sa, sb in cases:
        _check(BMM, lambda a, b: a @ b, _arrays(dtype, sa, sb), rtol)


def test_batch_dims_that_do_not_broadcast_are_an_error():
    a, b = _arrays(np.float32, (3, 5, 3), (4, 3, 7))
    with pytest.raises((ValueError, InvalidArgumentError)):
        BMM(a, b)


EINSUM = {sub: flowjit.jit(lambda a, b, sub=sub: np.einsum(sub, a, b), fallback=False)
          for sub in ("bij,bjk->bik", "bij,jk->bik", "pij,qkj->qpki")}


@pytest.mark.parametrize("sub, sa, sb", [
    ("bij,bjk->bik", (3, 4, 5), (3, 5, 6)), ("bij,bjk->bik", (0, 4, 5), (0, 5, 6)),
    ("bij,jk->bik", (7, 4, 5), (5, 3)), ("bij,jk->bik", (2, 9, 11), (11, 13)),
    ("pij,qkj->qpki", (2, 4, 5), (3, 6, 5)),
])
def test_einsum_contraction_is_a_compiled_batched_matmul(sub, sa, sb):
    _check(EINSUM[sub], lambda a, b: np.einsum(sub, a, b), _arrays(np.float64, sa, sb), 1e-10)
