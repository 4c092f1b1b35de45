"""`flowjit.gfile`: TensorFlow 1.x's file API (`tf.gfile`) as thin wrappers over `os`.

Local files only.  OS errors become flowjit's errors as in TensorFlow: a missing path is a
`NotFoundError`, an existing target an `AlreadyExistsError`, a directory where a file is
expected (or the reverse) a `FailedPreconditionError`, no permission a
`PermissionDeniedError`.  `GFile` opens lazily, like TensorFlow's: a missing file is reported
on the first read, not by the constructor.  `atomic_write_string_to_file` writes through a
temporary file in the target directory and `os.replace`, so readers never see a partial file.
"""

from __future__ import annotations

import contextlib
import glob as _glob
import os
import shutil
import tempfile

from . import errors

__all__ = ["GFile", "Open", "FastGFile", "Exists", "MakeDirs", "MkDir", "Remove",
           "DeleteRecursively", "ListDirectory", "Glob", "IsDirectory", "Rename", "Copy",
           "Stat", "Walk", "FileStatistics", "atomic_write_string_to_file"]


@contextlib.contextmanager
def _os_errors(path):
    """Re-raise OSErrors about `path` as TensorFlow's error classes."""
    try:
        yield
    except FileNotFoundError as e:
        raise errors.NotFoundError(None, None, f"{path}; {e.strerror or e}") from None
    except FileExistsError as e:
        raise errors.AlreadyExistsError(None, None, f"{path}; {e.strerror or e}") from None
    except (IsADirectoryError, NotADirectoryError) as e:
        raise errors.FailedPreconditionError(None, None, f"{path}; {e.strerror or e}") from None
    except PermissionError as e:
        raise errors.PermissionDeniedError(None, None, f"{path}; {e.strerror or e}") from None
    except OSError as e:
        raise errors.UnknownError(None, None, f"{path}; {e.strerror or e}") from None


class GFile:
    """A file object (`tf.gfile.GFile(name, mode="r")`); "b" in mode reads/writes bytes.

    Text mode reads str (UTF-8); `write` accepts str or bytes in either mode.  Usable as a
    context manager and iterable over lines.
    """

    def __init__(self, name, mode: str = "r"):
        if not set(mode) <= set("rwab+") or not set(mode) & set("rwa"):
            raise errors.InvalidArgumentError(None, None, f"Invalid mode {mode!r} for {name}.")
        self._name = os.fspath(name)
        self._mode = mode
        self._binary = "b" in mode
        self._file = None
        self._closed = False

    @property
    def name(self) -> str:
        return self._name

    @property
    def mode(self) -> str:
        return self._mode

    def _f(self):
        if self._closed:
            raise ValueError(f"I/O operation on closed file {self._name}.")
        if self._file is None:
            with _os_errors(self._name):
                if self._binary:
                    self._file = open(self._name, self._mode)
                else:  # no newline translation: text is read and written as stored
                    self._file = open(self._name, self._mode, encoding="utf-8", newline="")
        return self._file

    def read(self, n: int = -1):
        """Up to `n` bytes (characters in text mode); all that remain if n < 0."""
        with _os_errors(self._name):
            return self._f().read(n)

    def readline(self):
        with _os_errors(self._name):
            return self._f().readline()

    def readlines(self) -> list:
        return list(self)

    def __iter__(self):
        return self

    def __next__(self):
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    next = __next__

    def write(self, data) -> None:
        """Append `data` (str is written as UTF-8)."""
        if self._binary and isinstance(data, str):
            data = data.encode("utf-8")
        elif not self._binary and not isinstance(data, str):
            data = bytes(data).decode("utf-8")
        with _os_errors(self._name):
            self._f().write(data)

    def seek(self, offset: int = None, whence: int = 0, position: int = None) -> int:
        """Move to byte `offset` (or `position`, TensorFlow's older name) from `whence`."""
        target = position if offset is None else offset
        with _os_errors(self._name):
            return self._f().seek(int(target or 0), whence)

    def tell(self) -> int:
        return self._f().tell()

    def size(self) -> int:
        """The file's current size in bytes."""
        if self._file is not None and not self._closed:
            self._file.flush()
        with _os_errors(self._name):
            return os.path.getsize(self._name)

    def seekable(self) -> bool:
        return True

    def flush(self) -> None:
        if self._file is not None and not self._closed:
            self._file.flush()

    def close(self) -> None:
        if self._file is not None and not self._closed:
            self._file.close()
        self._closed = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        return f"<flowjit.gfile.GFile {self._name!r} mode={self._mode!r}>"


Open = GFile
FastGFile = GFile


def Exists(filename) -> bool:
    """True if the path exists (file or directory)."""
    return os.path.exists(filename)


def IsDirectory(dirname) -> bool:
    return os.path.isdir(dirname)


def MakeDirs(dirname) -> None:
    """Create `dirname` and any missing parents; fine if it already exists."""
    with _os_errors(dirname):
        os.makedirs(dirname, exist_ok=True)


def MkDir(dirname) -> None:
    """Create one directory (its parent must exist); fine if it already exists."""
    with _os_errors(dirname):
        if not os.path.isdir(dirname):
            os.mkdir(dirname)


def Remove(filename) -> None:
    """Delete a file (NotFoundError if missing; FailedPreconditionError for a directory)."""
    with _os_errors(filename):
        if os.path.isdir(filename):
            raise IsADirectoryError(21, "Is a directory")
        os.remove(filename)


def DeleteRecursively(dirname) -> None:
    """Delete a directory tree (or a single file)."""
    with _os_errors(dirname):
        if os.path.isdir(dirname) and not os.path.islink(dirname):
            shutil.rmtree(dirname)
        else:
            os.remove(dirname)


def ListDirectory(dirname) -> list:
    """The entry names in `dirname` (no path, no '.'/'..'), sorted."""
    if not os.path.isdir(dirname):
        raise errors.NotFoundError(None, None, f"Could not find directory {dirname}")
    with _os_errors(dirname):
        return sorted(os.listdir(dirname))


def Glob(filename) -> list:
    """Paths matching the pattern, sorted."""
    return sorted(_glob.glob(os.fspath(filename)))


def Rename(oldname, newname, overwrite: bool = False) -> None:
    """Move a file; AlreadyExistsError if `newname` exists and not `overwrite`."""
    with _os_errors(oldname):
        if not os.path.exists(oldname):
            raise FileNotFoundError(2, "No such file or directory")
        if not overwrite and os.path.exists(newname):
            raise errors.AlreadyExistsError(None, None, f"{newname} already exists")
        os.replace(oldname, newname)


def Copy(oldpath, newpath, overwrite: bool = False) -> None:
    """Copy a file; AlreadyExistsError if `newpath` exists and not `overwrite`."""
    if not overwrite and os.path.exists(newpath):
        raise errors.AlreadyExistsError(None, None, f"{newpath}; file already exists")
    with _os_errors(oldpath):
        shutil.copyfile(oldpath, newpath)


class FileStatistics:
    """Result of `Stat`: `length` (bytes), `mtime_nsec`, `is_directory`."""

    def __init__(self, length: int, mtime_nsec: int, is_directory: bool):
        self.length = length
        self.mtime_nsec = mtime_nsec
        self.is_directory = is_directory

    def __repr__(self):
        return (f"FileStatistics(length={self.length}, mtime_nsec={self.mtime_nsec}, "
                f"is_directory={self.is_directory})")


def Stat(filename) -> FileStatistics:
    with _os_errors(filename):
        st = os.stat(filename)
    return FileStatistics(st.st_size, st.st_mtime_ns, os.path.isdir(filename))


def Walk(top, in_order: bool = True):
    """Yield (dirname, subdirs, files) for each directory under `top` (top-down if in_order)."""
    for dirpath, dirs, files in os.walk(top, topdown=in_order):
        yield dirpath, sorted(dirs), sorted(files)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_FILE_MODE = 0o666 & ~_umask()  # what open() would give; mkstemp's files are 0600


def _fsync_dir(directory: str) -> None:
    """Make a rename in `directory` durable (not every platform lets a directory be fsynced)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_atomically(path, chunks) -> None:
    """Write the byte `chunks` so that `path` is either untouched or complete and durable.

    A temporary file in the same directory (with the mode `open` would give) is written and
    fsynced, then `os.replace`d over `path`, then the directory is fsynced; on any failure
    the temporary file is removed and an existing file is left as it was."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.",
                               suffix=".tmp")
    try:
        with contextlib.suppress(OSError, AttributeError):  # no fchmod on some platforms
            os.fchmod(fd, _FILE_MODE)
        with os.fdopen(fd, "wb") as f:
            for chunk in chunks:
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise
    _fsync_dir(directory)


def atomic_write_string_to_file(filename, contents, overwrite: bool = True) -> None:
    """Write `contents` (str or bytes) so that `filename` is either untouched or complete
    (see `write_atomically`)."""
    filename = os.fspath(filename)
    if isinstance(contents, str):
        contents = contents.encode("utf-8")
    if not overwrite and os.path.exists(filename):
        raise errors.AlreadyExistsError(None, None, f"{filename} already exists")
    with _os_errors(filename):
        write_atomically(filename, [bytes(contents)])
