"""In-place box updates (compiler/box_updates.py, schedule.plan_memory, the CPU loops).

A slice update of a local array (`q[i] -= ...`) must compile to a loop over the slice only,
writing into the array's own buffer, when that is safe; when the update reads the array at
other positions inside the slice it must not (a loop over the box in place would read
values it has already overwritten). Either way the results equal NumPy's.
"""

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flowjit as tf
from flowjit.compiler.core import ir
from flowjit.compiler.box_updates import box_of
from flowjit.compiler.core.ir import Scalar
from flowjit.dtypes import bool_ as BOOL

I0, I1 = ir.axis_var(0), ir.axis_var(1)


def _c(v):
    return ir.const(v, ir.INDEX)


def test_box_of_reads_conjunctions_of_index_comparisons():
    rows = ir.make(Scalar.AND, BOOL, (
        ir.make(Scalar.GE, BOOL, (ir.make(Scalar.SUB, ir.INDEX, (I0, _c(2))), _c(0))),
        ir.make(Scalar.LT, BOOL, (ir.make(Scalar.SUB, ir.INDEX, (I0, _c(2))), _c(1)))))
    assert box_of(rows) == {0: (2, 3)}
    wrapped = ir.make(Scalar.SELECT, BOOL, (rows, ir.const(True, BOOL),
                                               ir.const(False, BOOL)))
    assert box_of(wrapped) == {0: (2, 3)}
    cols = ir.make(Scalar.AND, BOOL, (
        ir.make(Scalar.LE, BOOL, (_c(1), I1)), ir.make(Scalar.GT, BOOL, (_c(7), I1))))
    assert box_of(cols) == {1: (1, 7)}
    both = ir.make(Scalar.AND, BOOL, (rows, cols))
    assert box_of(both) == {0: (2, 3), 1: (1, 7)}
    # not a box: an index compared with another index, or with a loaded value
    assert box_of(ir.make(Scalar.LT, BOOL, (I0, I1))) is None


def gram_schmidt(v):
    q = v.copy()
    for i in range(q.shape[0]):
        for j in range(i):
            q[i] -= (q[j] @ q[i]) * q[j]
        q[i] /= np.sqrt(q[i] @ q[i])
    return q


def test_row_updates_run_over_their_row_in_place():
    v = np.random.default_rng(0).standard_normal((4, 301))
    f = tf.jit(gram_schmidt)
    np.testing.assert_allclose(f(v), gram_schmidt(v), rtol=1e-12, atol=1e-12)
    lowered = f.lower(v)
    source = lowered.source
    # the loops compile as loops (compiler/lower_loops.py) whose bodies update one row of
    # the loop's own array in place, over a box known at run time (dynamic_boxes.py): no
    # 2-D buffer is allocated, and the row loops start at a run-time row
    assert lowered.compiled and "def kernel_w0_body_w0_body(" in source
    assert re.search(r"for i0 in range\(v\d+, min\(v\d+, ", source), source
    assert not re.search(r"empty_buffer\(\(\w+, \w+, \)", source), source


def shifted_update(a):
    b = a * 1.0
    b[1:-1] = b[:-2] + b[2:]    # reads neighbours inside the box: not in place
    b[0] += b[-1]
    return b


def column_update(a):
    b = a + 0.0
    b[:, 2] *= 3.0
    b[1:3, 1:4] -= b[0, 0]
    return b


def test_updates_reading_inside_their_box_stay_out_of_place():
    a = np.arange(13.0)
    f = tf.jit(shifted_update)
    np.testing.assert_array_equal(f(a), shifted_update(a))


def test_column_and_block_updates():
    a = np.arange(30.0).reshape(5, 6)
    f = tf.jit(column_update)
    np.testing.assert_array_equal(f(a), column_update(a))
    assert "in place over the box" in f.lower(a).stages.text("schedule")


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 9), st.integers(1, 9), st.data())
def test_random_slice_updates_match_numpy(n, m, data):
    r0 = data.draw(st.integers(0, n - 1))
    r1 = data.draw(st.integers(r0 + 1, n))
    c0 = data.draw(st.integers(0, m - 1))
    c1 = data.draw(st.integers(c0 + 1, m))
    src_row = data.draw(st.integers(0, n - 1))

    def update(a):
        b = a * 2.0
        b[r0:r1, c0:c1] += b[src_row, c0:c1] * 0.5
        b[r0:r1] -= 1.0
        return b

    a = np.arange(n * m, dtype=np.float64).reshape(n, m)
    np.testing.assert_array_equal(tf.jit(update)(a), update(a))


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_box_update_keeps_the_dtype(dtype):
    def f(a):
        b = a.copy()
        b[1] += b[0]
        return b

    a = np.arange(12, dtype=dtype).reshape(3, 4)
    out = tf.jit(f)(a)
    assert out.dtype == dtype
    np.testing.assert_array_equal(out, f(a))


def test_a_box_bound_below_zero_is_clamped_to_the_array():
    from flowjit.compiler.box_updates import find_box_update
    from flowjit.dtypes import float64

    old = ir.compute(float64, [_c(5)], [I0], ir.make(Scalar.CAST, float64, (I0,)))
    cond = ir.make(Scalar.AND, BOOL, (ir.make(Scalar.GE, BOOL, (I0, _c(-3))),
                                      ir.make(Scalar.LT, BOOL, (I0, _c(2)))))
    body = ir.make(Scalar.SELECT, float64, (cond, ir.const(1.0, float64), ir.load(old, (I0,))))
    node = ir.compute(float64, [_c(5)], [I0], body)
    assert find_box_update(node, body) == (old, {0: (0, 2)})
