"""Errors of ``privatelr fit``/``predict`` never name a temporary file.

Both commands write through :func:`privatelr.envelope.atomic_write` (a ``.<name>.<random>.tmp``
file renamed onto ``--out``). Each step of that write is made to fail in turn (creating the
temporary file, writing, flushing/syncing, renaming); every failure must give exit code 2 and
one line naming the ``--out`` path, never the temporary name, and leave no file behind.
"""

from __future__ import annotations

import errno
import os
import tempfile

import pytest

from privatelr import cli, envelope
from privatelr.datasets import load_mtcars


@pytest.fixture(scope="module")
def folder():
    with tempfile.TemporaryDirectory() as d:
        df = load_mtcars().reset_index(drop=True)
        df["mpg"] /= 40
        df["wt"] /= 6
        df.to_csv(os.path.join(d, "cars.csv"), index=False)
        assert cli.main(["fit", os.path.join(d, "cars.csv"), "--formula", "am ~ mpg + wt",
                         "--data-norm", "1.5", "--seed", "1", "-q",
                         "--out", os.path.join(d, "model.json")]) == 0
        yield d


def _fail(step: str, monkeypatch):
    """Make one step of atomic_write raise the OSError the OS would give, with the temporary
    file's name in it where the OS puts one."""
    def mkstemp(*, dir, prefix, suffix):
        raise PermissionError(errno.EACCES, "Permission denied",
                              os.path.join(dir, prefix + "abc123" + suffix))

    def fsync(fd):
        raise OSError(errno.EIO, "Input/output error")

    real_replace = os.replace

    def replace(src, dst):
        raise OSError(errno.EXDEV, "Invalid cross-device link", src, dst)

    if step == "create":
        monkeypatch.setattr(envelope.tempfile, "mkstemp", mkstemp)
    elif step == "sync":
        monkeypatch.setattr(envelope.os, "fsync", fsync)
    elif step == "rename":
        monkeypatch.setattr(envelope.os, "replace", replace)
    return real_replace


class _FullDisk:
    """A file object whose writes fail as on a full disk (no file name in the error)."""

    def __init__(self, fh):
        self._fh = fh

    def write(self, text):
        raise OSError(errno.ENOSPC, "No space left on device")

    def __getattr__(self, name):
        return getattr(self._fh, name)


@pytest.mark.parametrize("command", ["fit", "predict"])
@pytest.mark.parametrize("step", ["create", "write", "sync", "rename"])
def test_a_failed_write_names_out_not_the_temporary(folder, command, step, monkeypatch, capsys):
    out = os.path.join(folder, f"new-{command}-{step}.out")
    before = sorted(os.listdir(folder))
    _fail(step, monkeypatch)
    if step == "write":
        real = envelope.atomic_write

        def full(path, *a, **k):
            import contextlib

            @contextlib.contextmanager
            def cm():
                with real(path, *a, **k) as fh:
                    yield _FullDisk(fh)
            return cm()
        monkeypatch.setattr(envelope, "atomic_write", full)
    if command == "fit":
        argv = ["fit", os.path.join(folder, "cars.csv"), "--formula", "am ~ mpg + wt",
                "--data-norm", "1.5", "--seed", "1", "-q", "--out", out]
    else:
        argv = ["predict", os.path.join(folder, "model.json"), os.path.join(folder, "cars.csv"),
                "-q", "--out", out]
    code = cli.main(argv)
    _, err = capsys.readouterr()
    lines = err.splitlines()
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith(f"privatelr {command}: error: "), err
    assert out in lines[0], err
    assert ".tmp" not in err and "abc123" not in err, err
    monkeypatch.undo()
    assert sorted(os.listdir(folder)) == before                # nothing left behind
