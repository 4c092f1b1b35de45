"""Package discovery for setuptools (the rest of the metadata is in pyproject.toml).

The repository root is the `flowjit` package itself, so packages are found relative to it
and prefixed: `compiler/core/` becomes `flowjit.compiler.core`.  No hand-kept list: a new
folder with an `__init__.py` is packaged without touching this file.  This file sits in the
package's folder too, so the build leaves it out of the package's modules.
"""

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

_NOT_PACKAGED = ["tests", "tests.*", "docs", "docs.*", "examples", "examples.*", "notebooks",
                 "notebooks.*", "build", "build.*", "dist", "dist.*"]


class BuildPyWithoutSetup(build_py):
    """build_py that does not ship this build script as the module `flowjit.setup`."""

    def find_package_modules(self, package, package_dir):
        modules = super().find_package_modules(package, package_dir)
        return [m for m in modules if not (package == "flowjit" and m[1] == "setup")]


setup(
    packages=["flowjit"] + ["flowjit." + p for p in find_packages(".", exclude=_NOT_PACKAGED)],
    package_dir={"flowjit": "."},
    cmdclass={"build_py": BuildPyWithoutSetup},
)
