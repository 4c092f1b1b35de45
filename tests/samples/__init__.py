"""Per-op test cases, one table per op area, checked for every registered op.

Each area module defines `SAMPLES: dict[str, strategy]`, mapping an op type name (as
registered, e.g. "Add") to a hypothesis strategy that draws an `OpCase`.  The generic test
(tests/test_registry_ops.py) builds each case in a fresh graph, runs it in a Session, and
checks (1) the op type was created, (2) inferred static dtype/shape agree with the values,
(3) values equal the case's independent NumPy oracle.  Every registered op must have a case.
"""

import dataclasses
from typing import Callable

import importlib

from hypothesis import HealthCheck, Phase, given, settings

AREA_MODULES = ("basic", "math", "reduction", "matmul", "nn", "array", "shape", "slicing",
                "random", "linalg", "control", "queues", "readers", "tf_graph", "summary",
                "sparse", "conv", "pool_norm", "sequence", "accumulators")


def areas():
    """The area modules that exist (each op area's owner adds its own)."""
    out = []
    for name in AREA_MODULES:
        try:
            out.append(importlib.import_module(f"{__name__}.{name}"))
        except ModuleNotFoundError as e:
            if e.name != f"{__name__}.{name}":
                raise
    return out


@dataclasses.dataclass
class OpCase:
    """build() creates the op (in the default graph) and returns the tensors to fetch;
    feeds maps placeholder names to arrays; expected(feeds) returns NumPy's answer for each
    fetched tensor (None to check only dtype/shape, e.g. for random ops); rtol/atol compare
    floats (0, the default: exactly, as for data movement)."""

    build: Callable
    feeds: dict
    expected: Callable | None
    rtol: float = 0.0   # exact unless the case's arithmetic rounds (it says how much)
    atol: float = 0.0


def all_samples() -> dict:
    merged = {}
    for module in areas():
        for name, strategy in module.SAMPLES.items():
            assert name not in merged, f"two sample tables define {name}"
            merged[name] = strategy
    return merged


def draw_cases(strategy, examples: int) -> list:
    """The first `examples` cases hypothesis generates from `strategy`, derandomized (the
    same cases in every run), in generation order."""
    drawn = []

    @settings(max_examples=examples, derandomize=True, database=None, deadline=None,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(case):
        drawn.append(case)

    collect()
    return drawn
