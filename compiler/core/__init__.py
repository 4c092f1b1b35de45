"""The graph core: the foundation every other layer builds on (docs/architecture.md).

Owns the dataflow graph model (`graph`, `node`: Graph, Operation, Tensor; `shapes`;
`graph_def`: serialization), the kernel IR and its builders (`ir`, `ir_build`, `ir_text`,
`unit_dims`), and the default-session hook `Tensor.eval` uses (`session_hook`).

It knows no op and no runtime: it imports only `flowjit.dtypes` and `flowjit.errors`.
`ops/` sits directly above it; an import-linter contract in pyproject.toml enforces both.
"""
