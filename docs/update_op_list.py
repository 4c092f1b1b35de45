"""Rewrite the op list in README.md (between `<!-- ops:begin -->` and `<!-- ops:end -->`)
from the op registry, exactly as `python -m flowjit ops --markdown` prints it.

Run from anywhere: `python docs/update_op_list.py`.  tests/test_docs.py fails when the
README's list and the registry disagree.
"""

import os
import sys

README = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md")
BEGIN, END = "<!-- ops:begin -->", "<!-- ops:end -->"


def op_section() -> str:
    """The Markdown text that belongs between the markers."""
    from flowjit.__main__ import op_table

    return "\n".join(op_table(markdown=True))


def readme_section(text: str) -> str:
    """The text between the markers of README `text`."""
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    return text[start:end].strip("\n")


def main() -> int:
    with open(README) as f:
        text = f.read()
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    new = text[:start] + "\n" + op_section() + "\n" + text[end:]
    with open(README, "w") as f:
        f.write(new)
    print(f"updated {README}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
