"""Helpers the benchmark scripts share: peak memory, a configuration in a fresh process, the
machine's load, the ``N,D`` sizes of a command line, and printing a table that is appended to
benchmarks/RESULTS.md."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path


def peak_mb() -> float:
    """This process's peak resident memory so far, in MiB (Linux reports kB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def uptime() -> str:
    """The output of ``uptime`` (the load next to a table of timings)."""
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def sizes(given: list[str] | None, default: list[str]) -> list[tuple[int, int]]:
    """``(n, d)`` pairs from ``--size N,D`` arguments (``1e6,20`` allowed), else ``default``."""
    return [(int(float(a)), int(float(b))) for a, b in (s.split(",") for s in given or default)]


def run_child(script: str, *args: str) -> dict:
    """Run ``python script --child args...`` in a fresh process (so that its peak memory is its
    own) and return the JSON object its last line of output prints."""
    out = subprocess.run([sys.executable, script, "--child", *args], capture_output=True,
                         text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def publish(lines: list[str], append: bool) -> None:
    """Print the lines as one text and, when ``append``, add it to benchmarks/RESULTS.md."""
    text = "\n".join(lines) + "\n"
    print(text)
    if append:
        with open(Path(__file__).with_name("RESULTS.md"), "a") as fh:
            fh.write(text)
