"""Writing privatelr's files safely.

For now this module holds one helper, :func:`atomic_write`: every file privatelr writes (saved
models, the command line's predictions) goes through it, so that an interrupted or failed write
never leaves a truncated file behind and never touches any file other than its destination.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile

__all__ = ["atomic_write"]


def _umask() -> int:
    """The process's umask, read without changing it when the system allows."""
    try:  # Linux >= 4.7: no window in which another thread sees a different umask
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _target_mode(path: str) -> int:
    """Permission bits for the new file: the existing destination's, else 0o666 minus umask."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return 0o666 & ~_umask()


def _about(path: str, exc: OSError, note: str = "") -> OSError:
    """The same error (same errno, hence the same OSError subclass) about ``path``."""
    strerror = (exc.strerror or str(exc)) + note
    if exc.errno is None:
        return OSError(f"{strerror}: {path}")
    return OSError(exc.errno, strerror, path)


def _fsync_directory(directory: str) -> None:
    """Make the rename durable (POSIX); ignored where directories cannot be opened."""
    flags = getattr(os, "O_DIRECTORY", None)
    if flags is None:
        return
    try:
        fd = os.open(directory, os.O_RDONLY | flags)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_write(path, mode: str = "w", *, encoding: str | None = None,
                 newline: str | None = None):
    """Write a file so that it is either completely replaced or left untouched.

    The content goes to a new temporary file with a unique name in the destination's directory
    (``.<name>.<random>.tmp``, created by :func:`tempfile.mkstemp`, so no existing file is ever
    opened or overwritten). When the ``with`` block ends normally the temporary file is flushed,
    synced to disk (``os.fsync``) and renamed onto ``path`` with :func:`os.replace`, which is
    atomic: readers see either the old file or the whole new one. If the block raises (including
    ``KeyboardInterrupt``), the temporary file is removed, ``path`` keeps its previous content (or
    stays absent) and the exception propagates.

    Parameters
    ----------
    path : str or os.PathLike
        Destination. A symbolic link is followed: its target is replaced and the link kept.
    mode : {"w", "wt", "wb"}
        Text (default) or binary.
    encoding, newline : str, optional
        As for :func:`open` in text mode (must be None in binary mode).

    Yields
    ------
    file object
        The open temporary file; write the content to it.

    Raises
    ------
    OSError
        If the file cannot be created, written or renamed. Errors about the temporary file are
        reported with ``path`` as their file name, never the temporary name.

    Notes
    -----
    The new file gets the permission bits of the file it replaces, or the usual ``0o666`` minus
    the umask when ``path`` did not exist (not :func:`tempfile.mkstemp`'s ``0o600``). Replacing
    creates a new inode: other hard links to the old file keep the old content, and the owner
    is the writing user.

    Examples
    --------
    >>> import os, tempfile
    >>> from privatelr.envelope import atomic_write
    >>> folder = tempfile.mkdtemp()
    >>> path = os.path.join(folder, "out.csv")
    >>> with atomic_write(path, newline="") as fh:
    ...     _ = fh.write("probability\\n0.25\\n")
    >>> open(path).read()
    'probability\\n0.25\\n'
    >>> try:
    ...     with atomic_write(path) as fh:
    ...         _ = fh.write("half a fi")
    ...         raise RuntimeError("interrupted")
    ... except RuntimeError:
    ...     pass
    >>> open(path).read()          # the previous content is intact
    'probability\\n0.25\\n'
    >>> os.listdir(folder)         # and no temporary file is left behind
    ['out.csv']
    """
    if mode not in ("w", "wt", "wb"):
        raise ValueError(f"atomic_write: mode must be 'w', 'wt' or 'wb', got {mode!r}")
    if "b" in mode and (encoding is not None or newline is not None):
        raise ValueError("atomic_write: encoding and newline apply to text mode only")
    path = os.fspath(path)
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    target = os.path.realpath(path)
    directory, base = os.path.split(target)
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + base + ".", suffix=".tmp")
    except OSError as exc:
        raise _about(path, exc, f" (cannot create a new file in {directory or '.'})") from None
    fh = None
    try:
        try:
            try:
                os.chmod(tmp, _target_mode(target))
            except OSError:
                pass  # e.g. a file system without permission bits: keep mkstemp's
            if "b" in mode:
                fh = os.fdopen(fd, "wb")
            else:
                fh = os.fdopen(fd, "w", encoding=encoding, newline=newline)
        except BaseException:
            if fh is None:
                os.close(fd)
            raise
        try:
            yield fh
        except OSError as exc:
            if tmp not in (exc.filename, exc.filename2):
                raise  # about some other file: not ours to rename
            raise _about(path, exc) from None
        try:
            fh.flush()
            os.fsync(fh.fileno())
            fh.close()
            os.replace(tmp, target)
        except OSError as exc:
            raise _about(path, exc) from None
    except BaseException:
        if fh is not None:
            try:
                fh.close()
            except OSError:
                pass
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_directory(directory)
