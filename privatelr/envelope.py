"""privatelr's saved-file format, and writing files safely: the one home of both.

**The envelope.** Every file privatelr saves (a fitted ``dplr`` model, a WALR release) is one
JSON object::

    {"format": "<kind>", "format_version": <int>, "package_version": "...",
     ... the body ...,
     "sha256": "<checksum of the canonical JSON of everything else>"}

written as strict JSON (a non-finite float is ``{"$float": "NaN"}``, ``"Infinity"`` or
``"-Infinity"``; every finite float in its shortest round-trip form, so values come back bit for
bit). :func:`loads` checks, in order: valid JSON (deep nesting and duplicate keys refused),
``format``, ``format_version`` (a newer file names both versions; an older one says why it
cannot be read), then the checksum (``verify=False`` skips it for a hand-edited file). The
body's own fields are validated by the class that reads it. Every failure is a ``ValueError``
starting with ``corrupted <kind> file``, or naming the version.

**Writing.** :func:`atomic_write`: every file privatelr writes (saved models, the command line's
predictions) goes through it, so that an interrupted or failed write never leaves a truncated
file behind and never touches any file other than its destination.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import stat
import tempfile
from typing import Any

__all__ = ["atomic_write", "dumps", "loads", "read_text", "write_text", "encode"]


# ---------------------------------------------------------------------------------------------
# the format
# ---------------------------------------------------------------------------------------------

_NONFINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def encode(obj):
    """``obj`` as strict-JSON data: tuples and arrays as lists, NumPy scalars as Python numbers,
    non-finite floats as ``{"$float": ...}`` markers."""
    if isinstance(obj, dict):
        return {str(k): encode(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [encode(v) for v in obj]
    if hasattr(obj, "tolist") and hasattr(obj, "dtype"):        # NumPy array or scalar
        return encode(obj.tolist())
    if isinstance(obj, bool):
        return obj
    if isinstance(obj, int):
        return int(obj)
    if isinstance(obj, float):
        if math.isnan(obj):
            return {"$float": "NaN"}
        if math.isinf(obj):
            return {"$float": "Infinity" if obj > 0 else "-Infinity"}
        return obj
    if obj is None or isinstance(obj, str):
        return obj
    raise TypeError(f"cannot store a {type(obj).__name__} in a privatelr file")


def _decode_pairs(pairs):
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError(f"a key appears twice ({sorted({k for k in keys if keys.count(k) > 1})})")
    d = dict(pairs)
    if len(d) == 1 and "$float" in d:
        v = d["$float"]
        if not isinstance(v, str) or v not in _NONFINITE:
            raise ValueError(f"bad non-finite number marker {v!r}")
        return _NONFINITE[v]
    return d


def _refuse_constant(name):
    raise ValueError(f"non-standard JSON number {name}")


def _checksum(payload: dict) -> str:
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), allow_nan=False,
                      ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def dumps(kind: str, version: int, body: dict, *, indent: int | None = 1) -> str:
    """The text of a file of ``kind`` (format ``version``) holding ``body``.

    Examples
    --------
    >>> text = dumps("privatelr.example", 1, {"x": float("nan"), "y": [1.5]})
    >>> loads(text, "privatelr.example", 1)["y"]
    [1.5]
    """
    from ._version import __version__

    payload = {"format": kind, "format_version": version, "package_version": __version__}
    payload.update(encode(body))
    payload["sha256"] = _checksum(payload)
    return json.dumps(payload, indent=indent, allow_nan=False, ensure_ascii=True)


def loads(text, kind: str, version: int, *, verify: bool = True, older: str | None = None,
          name: str | None = None) -> dict:
    """The body of a file of ``kind`` (format ``version``), checked as the module says.

    ``older``: why files of an earlier version cannot be read (refused with this reason);
    ``None`` refuses them as unknown. ``name``: the kind's name in messages.
    """
    name = name or kind
    what = f"corrupted {name} file"
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    try:
        payload = json.loads(text, object_pairs_hook=_decode_pairs,
                             parse_constant=_refuse_constant)
    except RecursionError:
        raise ValueError(f"{what}: the JSON is nested too deeply") from None
    except ValueError as exc:
        raise ValueError(f"{what}: not valid JSON ({exc})") from None
    if not isinstance(payload, dict):
        raise ValueError(f"not a {name} file: the JSON is not an object")
    if payload.get("format") != kind:
        raise ValueError(f"not a {name} file: 'format' is {payload.get('format')!r}, expected "
                         f"{kind!r}")
    got = payload.get("format_version")
    if isinstance(got, bool) or not isinstance(got, int) or got < 1:
        raise ValueError(f"{what}: bad format_version {got!r}")
    written_by = payload.get("package_version", "?")
    if got > version:
        from ._version import __version__

        raise ValueError(f"this file has format version {got} (written by privatelr "
                         f"{written_by}); this privatelr ({__version__}) reads format versions "
                         f"up to {version}: upgrade privatelr")
    if got < version:
        raise ValueError(f"this file has format version {got} (privatelr {written_by}): "
                         f"{older or 'an old layout this privatelr does not read'}")
    body = {k: v for k, v in payload.items() if k != "sha256"}
    if verify:
        stored = payload.get("sha256")
        if stored is None:
            raise ValueError(f"{what}: the sha256 checksum is missing (verify=False skips the "
                             "check)")
        try:
            again = _checksum(encode(body))
        except (RecursionError, TypeError, OverflowError, ValueError):
            raise ValueError(f"{what}: the content cannot be re-encoded (nested too deeply or "
                             "not JSON data)") from None
        if again != stored:
            raise ValueError(f"{what}: the sha256 checksum does not match the content (the file "
                             "was modified after it was saved; verify=False loads it anyway)")
    for key in ("format", "format_version", "package_version"):
        body.pop(key, None)
    return body


def read_text(path, kind: str) -> str:
    """A file's text (UTF-8), with a directory or undecodable bytes reported as bad input."""
    try:
        with open(os.fspath(path), "rb") as fh:
            raw = fh.read()
    except IsADirectoryError:
        raise ValueError(f"{path} is a directory, not a {kind} file") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{path}: corrupted {kind} file: not UTF-8 text") from None


def write_text(path, text: str) -> None:
    """Write ``text`` (and a final newline) to ``path`` atomically (:func:`atomic_write`)."""
    with atomic_write(path, "w", encoding="ascii") as fh:
        fh.write(text)
        fh.write("\n")


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
    fh: Any = None
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
