"""Timings of the C-format reader/writer and of ``privatelr predict``'s chunked streaming.

Prints a table and appends a ``## C format and streaming predict`` section to
benchmarks/RESULTS.md. Run: ``python benchmarks/bench_cli_io.py [--rows 1000000]``.

Measured: ``write_cformat`` / ``read_cformat`` on an n x d file; ``predict_stream`` on an
n-row CSV for several chunk sizes, with the peak traced memory (tracemalloc: Python and numpy
allocations) to show that memory follows the chunk size, not the file size.
"""

from __future__ import annotations

import argparse
import io
import os
import platform
import sys
import tempfile
import time
import tracemalloc
import warnings
from datetime import date

import numpy as np
import pandas as pd

from privatelr import PrivacyWarning, dplr
from privatelr.cformat import read_cformat, write_cformat
from privatelr.cli import predict_stream


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000, help="rows of the predict CSV")
    ap.add_argument("--cf-rows", type=int, default=200_000, help="rows of the C-format file")
    ap.add_argument("--cf-dim", type=int, default=20)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        # ---- C format ------------------------------------------------------------------------
        n, d = args.cf_rows, args.cf_dim
        X = rng.standard_normal((n, d))
        X /= 1.01 * np.linalg.norm(X, axis=1).max()
        y = np.where(rng.uniform(size=n) < 0.5, -1, 1)
        path = os.path.join(tmp, "big.txt")
        t0 = time.perf_counter()
        write_cformat(path, X, y, lambda_=0.01, eps=1.0)
        t1 = time.perf_counter()
        data = read_cformat(path)
        t2 = time.perf_counter()
        assert np.array_equal(data.X, X)
        mb = os.path.getsize(path) / 1e6
        rows.append(("write_cformat", f"{n} x {d} ({mb:.0f} MB)", "-", f"{t1 - t0:.2f}", "-"))
        rows.append(("read_cformat", f"{n} x {d} ({mb:.0f} MB)", "-", f"{t2 - t1:.2f}",
                     f"{n * (d + 1) / (t2 - t1) / 1e6:.1f} M numbers/s"))

        # ---- streaming predict ----------------------------------------------------------------
        m = args.rows
        frame = pd.DataFrame({"x1": rng.uniform(-0.5, 0.5, m), "x2": rng.uniform(-0.5, 0.5, m),
                              "grp": rng.choice(["a", "b", "c"], m),
                              "other": rng.standard_normal(m)})
        frame["y"] = (frame["x1"] - frame["x2"] + 0.3 * rng.standard_normal(m) > 0).astype(int)
        csv = os.path.join(tmp, "big.csv")
        frame.to_csv(csv, index=False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyWarning)
            model = dplr("y ~ x1 + x2 + grp", frame.head(10_000), eps=1.0, random_state=1)
        del frame
        mb = os.path.getsize(csv) / 1e6
        for chunk in (10_000, 50_000, 200_000):
            out = open(os.devnull, "w")
            tracemalloc.start()
            t0 = time.perf_counter()
            info = predict_stream(model, csv, out, chunk_size=chunk)
            t1 = time.perf_counter()
            peak = tracemalloc.get_traced_memory()[1] / 1e6
            tracemalloc.stop()
            out.close()
            rows.append(("predict_stream", f"{m} rows ({mb:.0f} MB CSV)", f"{chunk}",
                         f"{t1 - t0:.2f}", f"{info['chunks']} chunks, peak traced "
                         f"{peak:.0f} MB"))

    head = ("step", "size", "chunk", "time (s)", "notes")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    table = "\n".join(lines)
    print(table)
    env = (f"{date.today()}, Python {platform.python_version()}, {platform.machine()}, "
           f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f} at the end")
    with open(os.path.join(os.path.dirname(__file__), "RESULTS.md"), "a") as fh:
        fh.write(f"\n## C format and streaming predict (bench_cli_io.py)\n\n{env}. Wall clock; "
                 "peak traced memory is tracemalloc's (Python + numpy allocations).\n\n"
                 f"{table}\n")


if __name__ == "__main__":
    sys.exit(main())
