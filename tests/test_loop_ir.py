"""The loop IR (compiler/loop_ir.py): structure in, structure out.

The verifier (compiler/loop_verify.py) accepts well-formed programs and rejects malformed
ones; the CPU passes (row_jam.jam_rows, vector_width.widen) return verified programs of the
expected shape; every compiled kernel's loop program is verified after each pass (tests/conftest.py
sets FLOWJIT_VERIFY_LOOP_IR=1), and the "loop IR" stage shows it.
"""

import numpy as np
import pytest

import flowjit
from flowjit import dtypes
from flowjit.compiler.core.ir import Combiner, Scalar
from flowjit.compiler.loop_ir import (Accumulate, AccResult, Alloc, Call, Check, Do, If,
                                      IndexOpKind, Int, Let, Load, Loop, LoopKind,
                                      LoopProgram, LoopTag, Return, ScalarOp, Store, Var,
                                      index_op)
from flowjit.compiler.loop_walk import rename
from flowjit.compiler.loop_text import loop_program_text
from flowjit.compiler.loop_verify import LoopIRError, run_passes, verify
from flowjit.targets.cpu import render
from flowjit.targets.cpu.codegen import LOOP_PASSES

F32 = dtypes.float32
ROWS = frozenset({LoopTag.ROWS_OF_REDUCTIONS})


def _row_sums(tag=ROWS, kind=LoopKind.PARALLEL, stop=Var("m")):
    """out[i0] = sum_r x[i0, r] as a loop program over n rows of m columns."""
    i0, r0 = Var("i0"), Var("r0")
    row = (Let("acc1", Var("C0")),
           Loop(LoopKind.SERIAL, "r0", Int(0), stop, (
               Let("v2", Load("x", (i0, r0))),
               Accumulate(Combiner.ADD, "acc1", Var("v2"), r0, F32))),
           Store("out", (i0,), AccResult(Combiner.ADD, "acc1", F32)))
    body = (Let("n", Call("len", (Var("x"),))), Let("m", Var("n")),
            Alloc("out", Call("empty_buffer", (Var("n"),))),
            Loop(kind, "i0", Int(0), Var("n"), row, tag),
            Return((Var("out"),)))
    return LoopProgram("kernel", ("x",), (("C0", "np.float32(0.0)"),), body)


def test_a_well_formed_program_verifies_and_prints():
    program = _row_sums()
    assert verify(program) is program
    text = loop_program_text(program)
    assert "parallel for i0 in [0, n):  # rows of one-axis reductions" in text
    assert "acc1 <-add v2 at r0" in text
    source = render.render(program)
    assert "for i0 in prange(n):" in source and "acc1 = radd(acc1, v2)" in source


@pytest.mark.parametrize("mutate, message", [
    (lambda b: (Let("y", Var("undefined")),) + b, "before it is defined"),
    (lambda b: (Store("n_scalar", (Int(0),), Int(1)),) + b, "not an array"),
    (lambda b: (Accumulate(Combiner.ADD, "nope", Int(1), Int(0), F32),) + b,
     "before it is bound"),
    (lambda b: (Loop(LoopKind.SERIAL, "k", Int(0), Int(3), (Let("k", Int(1)),)),) + b,
     "rebound in its loop"),
    (lambda b: (Loop(LoopKind.PARALLEL, "a", Int(0), Int(3), (
        Loop(LoopKind.PARALLEL, "b", Int(0), Int(3), ()),)),) + b, "nested in a parallel"),
    (lambda b: (Loop(LoopKind.SERIAL, "k", Int(0), Int(3), (
        Loop(LoopKind.SERIAL, "k", Int(0), Int(3), ()),)),) + b, "rebound by an inner loop"),
    (lambda b: (Loop(LoopKind.SERIAL, "k", Int(0), Int(3), (Let("t", Var("k")),)),
                Let("u", Var("t"))) + b, "before it is defined"),
    (lambda b: (Let("s", Load("s0", (Int(0),))),) + b, "not an array"),
])
def test_the_verifier_rejects_malformed_programs(mutate, message):
    program = _row_sums()
    body = (Let("n_scalar", Int(3)),) + program.body
    bad = LoopProgram(program.name, program.params, program.constants, mutate(body))
    with pytest.raises(LoopIRError, match=message):
        verify(bad)


def test_names_bound_in_both_arms_of_a_branch_are_visible_after_it():
    arms = If(Var("c"), (Let("t", Int(1)),), (Let("t", Int(2)),))
    one_arm = If(Var("c"), (Let("w", Int(1)),))
    ok = LoopProgram("k", (), (("c", "True"),), (arms, Let("u", Var("t"))))
    verify(ok)
    with pytest.raises(LoopIRError, match="'w' before"):
        verify(LoopProgram("k", (), (("c", "True"),), (one_arm, Let("u", Var("w")))))


def test_rename_renames_scalars_not_buffers():
    body = _row_sums().body[3].body
    out = rename(body, {"acc1": "acc1_j1", "v2": "v2_j1", "i0": "i0_j1"})
    assert out[0] == Let("acc1_j1", Var("C0"))
    assert out[1].body[0] == Let("v2_j1", Load("x", (Var("i0_j1"), Var("r0"))))
    assert out[2].buffer == "out" and out[2].indices == (Var("i0_j1"),)


def test_the_cpu_passes_jam_tagged_rows_and_widen_parallel_loops():
    program = run_passes(_row_sums(), LOOP_PASSES, verify_each=True)
    block, rest = program.body[4], program.body[5]
    assert program.body[0] == Do(Call("wide_vectors"))
    assert block.loop_kind is LoopKind.PARALLEL and block.var == "i0_b"
    assert block.body[0] == Do(Call("wide_vectors"))
    assert rest.loop_kind is LoopKind.SERIAL and rest.var == "i0" and not rest.tags
    assert rest.start == index_op(IndexOpKind.MUL, index_op(IndexOpKind.FLOORDIV, Var("n"),
                                                            Int(4)), Int(4))
    reduction = [s for s in block.body if isinstance(s, Loop)]
    assert len(reduction) == 1 and len(reduction[0].body) == 4 * 2   # 4 rows, 2 statements
    untagged = run_passes(_row_sums(tag=frozenset()), LOOP_PASSES, verify_each=True)
    assert untagged.body[4].var == "i0" and untagged.body[4].body[0] == Do(Call("wide_vectors"))
    serial = run_passes(_row_sums(kind=LoopKind.SERIAL), LOOP_PASSES, verify_each=True)
    assert sum(s == Do(Call("wide_vectors")) for s in serial.body) == 1
    assert serial.body[4].var == "i0_b" and serial.body[4].loop_kind is LoopKind.SERIAL


def test_run_passes_names_the_pass_that_broke_the_program():
    def breaks(program):
        return LoopProgram(program.name, program.params, program.constants,
                           (Let("y", Var("nowhere")),) + program.body)
    with pytest.raises(LoopIRError, match="after loop-IR pass 'breaks'"):
        run_passes(_row_sums(), [("breaks", breaks)], verify_each=True)


def test_scalar_ops_render_through_the_cpu_table():
    e = ScalarOp(Scalar.ADD, dtypes.int32, (Var("a"), Var("b")), (dtypes.int32, dtypes.int32))
    assert render.expr(e) == "np.int32((a + b))"
    check = Check(Var("ok"), "bad size")
    assert render.lines([check]) == ["if not ok:", "    raise ValueError('bad size')"]
    assert render.expr(index_op(IndexOpKind.FLOORDIV, index_op(
        IndexOpKind.SUB, index_op(IndexOpKind.ADD, Var("n"), Var("p")), Int(1)),
        Var("p"))) == "(n + p - 1) // p"


def _softmax(a):
    e = np.exp(a - a.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_compiled_kernels_show_their_loop_ir_stage():
    f = flowjit.jit(_softmax)
    a = np.random.default_rng(0).standard_normal((300, 257)).astype(np.float32)
    np.testing.assert_allclose(f(a), _softmax(a), rtol=1e-5, atol=1e-6)
    lowered = f.lower(a)
    text = lowered.stages.text("loop IR")
    assert "function kernel(in0):" in text and "parallel for i0 in" in text
    assert text.count("call wide_vectors()") == lowered.source.count("wide_vectors()")
