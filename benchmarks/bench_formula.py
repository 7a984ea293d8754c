"""Timings of reading and expanding long formulas: ``parse``, ``make_spec`` (parse, R's term
algebra, the column names) and ``DesignSpec.from_dict`` (what loading a saved model does), for
sums of N two-variable interactions ``ab:cd + ...`` over 450 columns, against formulaic's own
reading of the same term structure (``formulaic.Formula``, the peer; it only parses and expands
the terms, no columns).

Run: ``python benchmarks/bench_formula.py [--append]``. The configurations are interleaved (each
size is timed A B A B, the best of the repeats kept) and ``uptime`` is printed beside the table;
the work is single-threaded Python, so BLAS threads play no part. The cost per term should stay
flat as N grows (linear time); before issue 27 it grew with N (a 240 KB formula took > 40 s).
"""

from __future__ import annotations

import argparse
import itertools
import platform
import string
import subprocess
import time
from datetime import date

import numpy as np
import pandas as pd

from common import publish
from privatelr.design import DesignSpec, make_spec, parse

NAMES = [a + b for a in string.ascii_letters for b in string.ascii_letters
         if a + b not in ("if", "in", "NA")][:450]


#: the largest size the peer is timed at (20,000 terms: 270 s on a loaded 2-core machine)
PEER_MAX = 20_000


def formula(n: int) -> str:
    pairs = itertools.islice(itertools.combinations(NAMES, 2), n)
    return "y ~ " + " + ".join(f"{a}:{b}" for a, b in pairs)


def best(fn, repeats: int) -> float:
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return min(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,5000,20000,100000")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--append", action="store_true", help="append the table to RESULTS.md")
    args = ap.parse_args()
    import formulaic

    frame = pd.DataFrame({n: np.zeros(0) for n in NAMES + ["y"]})
    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        text = formula(n)
        rhs = text.split("~", 1)[1]
        times = {"parse": [], "make_spec": [], "from_dict": [], "formulaic": []}
        for _ in range(args.repeats):                       # A B A B: interleaved
            times["parse"].append(best(lambda: parse(text), 1))
            spec = make_spec(text, frame)
            times["make_spec"].append(best(lambda: make_spec(text, frame), 1))
            d = spec.to_dict()
            times["from_dict"].append(best(lambda: DesignSpec.from_dict(d), 1))
            if n <= PEER_MAX:                    # formulaic's reading grows faster than N
                times["formulaic"].append(best(lambda: list(formulaic.Formula(rhs)), 1))
        t = {k: min(v) if v else None for k, v in times.items()}
        rows.append((n, len(text), *("-" if t[k] is None else f"{t[k]:.2f}" for k in times),
                     f"{1e6 * t['make_spec'] / n:.0f}",
                     "-" if t["formulaic"] is None else f"{t['make_spec'] / t['formulaic']:.2f}"))
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    lines = [f"## Long formulas ({date.today()}, {platform.python_version()}, {uptime})", "",
             "| terms | characters | parse s | make_spec s | from_dict s | formulaic.Formula s "
             "| make_spec us/term | make_spec / formulaic |",
             "|---|---|---|---|---|---|---|---|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    publish(lines, args.append)


if __name__ == "__main__":
    main()
