"""Tiling of loop nests by the data they touch (compiler/loop_tile.py), on the loop IR and
through the CPU target: a nest reading an array across rows (`a + b.T`) is cut into tiles,
equal NumPy's for sizes that are no multiple of the tile, and shows its tiles in the loop
IR; nests that read along rows, and row reductions, are left alone."""

import numpy as np

import flowjit
from flowjit.compiler.core.ir import Combiner
from flowjit import dtypes
from flowjit.compiler.loop_ir import (Accumulate, Comment, Dim, Int, Let, Load, Loop,
                                      LoopKind, LoopProgram, Store, Var)
from flowjit.compiler.loop_tile import tile_nests
from flowjit.compiler.loop_verify import verify
from flowjit.targets.cpu.codegen import TILE


def _nest(index_of_b, step=None):
    i0, i1 = Var("i0"), Var("i1")
    body = (Let("v1", Load("a", (i0, i1))), Let("v2", Load("b", index_of_b)),
            step or Store("out", (i0, i1), Var("v2")))
    inner = Loop(LoopKind.SERIAL, "i1", Int(0), Dim("a", 1), body)
    program = LoopProgram("k", ("a", "b", "out"), (), (
        Loop(LoopKind.PARALLEL, "i0", Int(0), Dim("a", 0), (Let("h", i0), inner)),))
    return verify(program)


def test_a_transposed_read_is_tiled_and_a_plain_one_is_not():
    tiled = verify(tile_nests(_nest((Var("i1"), Var("i0"))), 32))
    note, tiles = tiled.body
    assert isinstance(note, Comment) and "tiles of 32x32" in note.text and "b" in note.text
    assert tiles.loop_kind is LoopKind.PARALLEL and tiles.var == "i0_t"
    columns = tiles.body[0]
    rows = columns.body[0]
    assert columns.var == "i1_t" and columns.loop_kind is LoopKind.SERIAL
    assert rows.var == "i0" and rows.body[0] == Let("h", Var("i0"))
    assert rows.body[1].var == "i1" and rows.body[1].body == _nest(
        (Var("i1"), Var("i0"))).body[0].body[1].body
    plain = _nest((Var("i0"), Var("i1")))
    assert tile_nests(plain, 32) == plain
    acc = Accumulate(Combiner.ADD, "h", Var("v2"), Int(0), dtypes.float32)
    reduction = _nest((Var("i1"), Var("i0")), step=acc)
    assert tile_nests(reduction, 32) == reduction
    in_place = Store("b", (Var("i0"), Var("i1")), Var("v2"))   # b read transposed, written
    aliased = _nest((Var("i1"), Var("i0")), step=in_place)
    assert tile_nests(aliased, 32) == aliased


def _add_transposed(a, b):
    return a + b.T


def test_tiled_kernels_equal_numpy_and_show_their_tiles():
    f = flowjit.jit(_add_transposed)
    rng = np.random.default_rng(1)
    for rows, cols in ((TILE * 4 + 3, TILE * 5 - 7), (300, 301), (5, 3)):
        a = rng.standard_normal((rows, cols))
        b = rng.standard_normal((cols, rows))
        np.testing.assert_array_equal(f(a, b), _add_transposed(a, b))
    lowered = f.lower(a, b)
    assert f"tiles of {TILE}x{TILE}" in lowered.stages.text("loop IR")
    assert "for i0_t in prange(" in lowered.source
