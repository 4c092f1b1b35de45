"""The GPU benchmark script runs (tiny sizes, on the simulator) and checks its results."""

from flowjit.benchmarks import gpu


def test_gpu_benchmark_runs_with_tiny_sizes(capsys):
    assert gpu.main(["--tiny"]) == 0
    out = capsys.readouterr().out
    for name in ("copy bandwidth", "elementwise chain", "softmax", "layernorm", "matmul"):
        assert name in out
