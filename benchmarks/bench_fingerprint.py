"""The streamed Dask fit's partition fingerprint: SHA-256 of the bytes (now) against the wrapping
word sum it replaced (issue 27) and BLAKE2b, per 1e6 x 11 float64 block, interleaved A B C.

    python benchmarks/bench_fingerprint.py [--append]

One BLAS thread does not matter here (no BLAS call); hashlib and NumPy's sum each run on one
core. ``uptime`` is printed next to the table: the figures are only comparable under one load.
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import time

import numpy as np

from common import publish

from privatelr.backends.dask import _fingerprint


def word_sum(a):
    """The fingerprint before issue 27."""
    return (a.shape, int(np.ascontiguousarray(a, dtype=np.float64).view(np.uint64)
                         .reshape(-1).sum()))


def blake2b(a):
    d = hashlib.blake2b(memoryview(np.ascontiguousarray(a, dtype=np.float64).reshape(-1))
                        .cast("B"), digest_size=16)
    return a.shape, d.hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--append", action="store_true")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    X = np.random.default_rng(0).standard_normal((1_000_000, 11))
    peers = {"word sum (before)": word_sum, "sha256 (now)": lambda a: _fingerprint(a),
             "blake2b (alternative)": blake2b}
    times = {k: [] for k in peers}
    for _ in range(args.rounds):                           # interleaved: A B C A B C ...
        for name, fn in peers.items():
            t = time.perf_counter()
            fn(X)
            times[name].append(time.perf_counter() - t)
    base = np.median(times["word sum (before)"])
    lines = ["", "### Partition fingerprint, 1e6 x 11 float64 block (88 MB), median of "
             f"{args.rounds} interleaved rounds", "",
             f"`uptime`: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}",
             "", "| fingerprint | median ms | min ms | / word sum |", "|---|---|---|---|"]
    for name, ts in times.items():
        lines.append(f"| {name} | {1e3 * np.median(ts):.1f} | {1e3 * min(ts):.1f} | "
                     f"{np.median(ts) / base:.1f} |")
    publish(lines, args.append)


if __name__ == "__main__":
    main()
