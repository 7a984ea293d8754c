"""Where ``privatelr fit`` and ``privatelr predict`` spend their time on a large CSV.

Makes a CSV of ``--rows`` rows (default 2,000,000): five numeric columns in [0, 1], two factors
of 20 declared levels, a 0/1 response; every design row has norm <= sqrt(5 + 1 + 1 + 1) < 3,
so ``--data-norm 3 --clip`` is a private fit. Runs the command line in this process
(``privatelr.cli.main``) under cProfile and splits the wall time into stages by the cumulative
time of the functions that do them:

fit:     read (``cli`` reading the CSV), design (the model matrix: ``privatelr.design``), fit
         (the solver: ``erm.fit_rows`` minus its design and C-index parts), C-index
         (``report.roc.c_index``), save (``persist.save_model``)
predict: load, read (CSV chunks, typed), design + score (``DPLR.predict``), format
         (``cli`` CSV text), write

and lists the design functions with the largest share (the design package is another
engineer's: what the profile shows there is for the next round of work). Prints the tables;
with ``--record`` appends them to benchmarks/RESULTS.md. Profiling adds some overhead to
Python-level code; the wall times without the profiler are printed too.

Run: ``python benchmarks/bench_cli.py [--rows 2000000] [--record]``.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import os
import platform
import pstats
import sys
import tempfile
import time
from datetime import date

import numpy as np
import pandas as pd

from privatelr import cli

LEVELS = [f"L{i:02d}" for i in range(20)]


def make_csv(path: str, n: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    x = rng.random((n, 5))
    f = rng.integers(0, 20, size=n)
    g = rng.integers(0, 20, size=n)
    eta = x @ np.array([1.5, -1.0, 0.5, 0.0, 2.0]) - 1.5 + (f - 10) / 10 - (g % 3) / 2
    y = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(int)
    frame = pd.DataFrame({"y": y, **{f"x{i + 1}": np.round(x[:, i], 6) for i in range(5)},
                          "f": np.array(LEVELS)[f], "g": np.array(LEVELS)[g]})
    frame.to_csv(path, index=False)


def _cum(stats: pstats.Stats, where: str, name: str) -> float:
    """Cumulative time of the function ``name`` defined in a file whose path ends ``where``."""
    total = 0.0
    for (file, _, func), (_, _, _, cum, _) in stats.stats.items():
        if func == name and file.replace(os.sep, "/").endswith(where):
            total += cum
    return total


def _design_entries(stats: pstats.Stats) -> list[tuple[str, float]]:
    """The design step's entry points: functions of privatelr/design/ (not module imports) with
    the cumulative time of their calls from outside that package (cProfile's per-caller edge
    times), so that nested design calls are counted once."""
    out = []
    for (file, line, func), (_, _, _, _, callers) in stats.stats.items():
        if "/privatelr/design/" not in file.replace(os.sep, "/") or func == "<module>":
            continue
        cum = sum(edge[3] for caller, edge in callers.items()
                  if "/privatelr/design/" not in caller[0].replace(os.sep, "/"))
        if cum > 0:
            out.append((f"design/{os.path.basename(file)}:{line} {func}", cum))
    return sorted(out, key=lambda t: -t[1])


def _inside_design(stats: pstats.Stats, top: int = 8) -> list[tuple[str, float, float]]:
    """The design package's functions by own time (tottime) and cumulative time."""
    rows = []
    for (file, line, func), (_, _, tot, cum, _) in stats.stats.items():
        f = file.replace(os.sep, "/")
        if "/privatelr/design/" in f:
            rows.append((f"{f.split('/privatelr/')[1]}:{line} {func}", tot, cum))
    return sorted(rows, key=lambda t: -t[2])[:top]


def _profiled(argv: list[str]) -> tuple[float, pstats.Stats]:
    prof = cProfile.Profile()
    out = io.StringIO()
    t = time.perf_counter()
    with contextlib.redirect_stdout(out):
        prof.enable()
        code = cli.main(argv)
        prof.disable()
    wall = time.perf_counter() - t
    if code != 0:
        raise SystemExit(f"privatelr {' '.join(argv)} exited {code}")
    return wall, pstats.Stats(prof)


def _wall(argv: list[str]) -> float:
    t = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        code = cli.main(argv)
    if code != 0:
        raise SystemExit(f"privatelr {' '.join(argv)} exited {code}")
    return time.perf_counter() - t


def _quiet() -> list[str]:
    """``-q`` where the command line has it (so the script also times older versions)."""
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            cli.build_parser().parse_args(["predict", "m", "d", "-q"])
    except SystemExit:
        return []
    return ["-q"]


def run(rows: int) -> str:
    folder = tempfile.mkdtemp()
    data = os.path.join(folder, "big.csv")
    model = os.path.join(folder, "model.json")
    preds = os.path.join(folder, "preds.csv")
    t = time.perf_counter()
    make_csv(data, rows)
    made = time.perf_counter() - t
    levels = ["--levels", "f=" + ",".join(LEVELS), "--levels", "g=" + ",".join(LEVELS)]
    fit = ["fit", data, "--formula", "y ~ x1 + x2 + x3 + x4 + x5 + f + g", "--eps", "1",
           "--data-norm", "3", "--clip", "--seed", "1", *_quiet(), *levels, "--out", model]
    predict = ["predict", model, data, *_quiet(), "--out", preds]

    fit_wall, s = _profiled(fit)
    c_index = _cum(s, "report/roc.py", "c_index")
    design_entries = _design_entries(s)
    design = sum(c for _, c in design_entries)
    fit_stages = [("read", _cum(s, "privatelr/cli.py", "_read_table")),
                  ("design", design),
                  ("fit (scan, solver, rest of dplr)", _cum(s, "privatelr/_dplr.py", "dplr") - design - c_index),
                  ("C-index", c_index),
                  ("save", _cum(s, "privatelr/persist.py", "save_model"))]
    design_rows = _inside_design(s)
    pred_wall, s = _profiled(predict)
    stream = _cum(s, "privatelr/cli.py", "predict_stream")
    reading = _cum(s, "privatelr/cli.py", "_iter_chunks")
    scoring = _cum(s, "privatelr/results.py", "predict")
    formatting = _cum(s, "privatelr/cli.py", "_csv_lines")
    pred_stages = [("load", _cum(s, "privatelr/cli.py", "_load_model")),
                   ("read (chunks, typed)", reading),
                   ("design + score", scoring),
                   ("format", formatting),
                   ("write", max(stream - reading - scoring - formatting, 0.0))]
    fit_plain, pred_plain = _wall(fit), _wall(predict)

    lines = [f"n = {rows:,} rows, 5 numeric columns in [0, 1], 2 factors of 20 declared levels "
             f"(CSV {os.path.getsize(data) / 1e6:.0f} MB, made in {made:.1f} s); "
             f"{date.today()}, Python {platform.python_version()}, pandas {pd.__version__}, "
             f"{platform.machine()}, {os.cpu_count()} cores (shared).", "",
             "| command | stage | seconds (profiled) |", "|---|---|---|"]
    for cmd, stages, wall, plain in (("fit", fit_stages, fit_wall, fit_plain),
                                     ("predict", pred_stages, pred_wall, pred_plain)):
        for name, sec in stages:
            lines.append(f"| {cmd} | {name} | {sec:.2f} |")
        lines.append(f"| {cmd} | **total** (without profiler) | {wall:.2f} ({plain:.2f}) |")
    lines += ["", "Design step of `fit`, entry points (cumulative time of calls from outside "
              "privatelr/design):", ""]
    lines += [f"- `{name}`: {cum:.2f} s" for name, cum in design_entries[:6]]
    lines += ["", "Design functions by cumulative time in `fit` (own time, cumulative):", ""]
    lines += [f"- `{name}`: {tot:.2f} s own, {cum:.2f} s cumulative" for name, tot, cum in
              design_rows]
    for path in (data, model, preds):
        os.remove(path)
    os.rmdir(folder)
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--record", action="store_true",
                        help="append the tables to benchmarks/RESULTS.md")
    parser.add_argument("--title", default="CLI stages (bench_cli.py)")
    args = parser.parse_args(argv)
    text = run(args.rows)
    print(text)
    if args.record:
        results = os.path.join(os.path.dirname(os.path.abspath(__file__)), "RESULTS.md")
        with open(results, "a", encoding="utf-8") as fh:
            fh.write(f"\n## {args.title}\n\n{text}\n")


if __name__ == "__main__":
    sys.exit(main())
