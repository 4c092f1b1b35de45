"""Test helper: find the line of a test file that holds a marker comment, so tests can check
that errors and tracebacks point at the right user line without hard-coding numbers."""


def line_of(path: str, marker: str) -> int:
    """The line number in `path` of the (unique) line containing `marker`."""
    with open(path) as f:
        for i, line in enumerate(f, 1):
            if marker in line and "line_of" not in line:
                return i
    raise AssertionError(f"marker {marker!r} not found in {path}")
