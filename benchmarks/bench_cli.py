"""Where ``privatelr fit`` and ``privatelr predict`` spend their time on a large CSV.

Makes a CSV of ``--rows`` rows (default 2e6): five numeric columns in [-1, 1], two factors of 20
levels each and a 0/1 response, then times the stages the command line runs — reading the file,
building the design (``DesignSpec.rows``), the fit alone (``erm.fit_rows`` through ``dplr``), the
training C-index, saving — and ``predict`` streaming the same file. Also the start-up: ``privatelr
--help`` and ``import privatelr`` as separate processes (median of 5).

Run: ``python benchmarks/bench_cli.py [--rows 2000000]``; prints a Markdown table (paste it into
RESULTS.md with the machine's load, ``uptime``).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
import pandas as pd


def _make_csv(path: str, n: int, rng) -> None:
    levels = [f"L{k:02d}" for k in range(20)]
    df = pd.DataFrame({f"x{j}": rng.uniform(-1, 1, n).round(4) for j in range(5)})
    df["f1"] = rng.choice(levels, n)
    df["f2"] = rng.choice(levels, n)
    eta = df.x0 - df.x1 + 0.5 * (df.f1 < "L10")
    df["y"] = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(int)
    df.to_csv(path, index=False)


def _seconds(cmd: list[str], repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    args = ap.parse_args()
    from privatelr import cli, dplr
    from privatelr.datasets import load_iris  # noqa: F401  (warm the package's imports)

    rng = np.random.default_rng(0)
    levels = {f: [f"L{k:02d}" for k in range(20)] for f in ("f1", "f2")}
    formula = "y ~ x0 + x1 + x2 + x3 + x4 + f1 + f2"
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "data.csv")
        _make_csv(data, args.rows, rng)
        size = os.path.getsize(data) / 1e6

        t = time.perf_counter()
        frame = cli._read_table(data)
        rows.append(("fit: read CSV", time.perf_counter() - t))

        prof = cProfile.Profile()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = time.perf_counter()
            prof.enable()
            model = dplr(formula, frame, eps=1, data_norm=np.sqrt(7), clip=True,
                         levels=levels, random_state=0)
            prof.disable()
            total = time.perf_counter() - t
        stats = pstats.Stats(prof)
        inner = {}
        for (file, _, func), (_, _, _, cum, _) in stats.stats.items():
            inner[(os.path.basename(file), func)] = max(cum, inner.get((os.path.basename(file),
                                                                         func), 0.0))
        design = inner.get(("spec.py", "rows"), float("nan"))
        fit = inner.get(("erm.py", "fit_rows"), float("nan"))
        cidx = inner.get(("roc.py", "c_index"), float("nan"))
        rows += [("fit: dplr() in all", total), ("  design rows (DesignSpec.rows)", design),
                 ("  erm.fit_rows (the fit alone)", fit), ("  training C-index", cidx),
                 ("  the rest (coding, scan, checks)", total - design - fit - cidx)]
        del frame

        out = os.path.join(tmp, "model.json")
        t = time.perf_counter()
        model.to_json(out)
        rows.append(("fit: save", time.perf_counter() - t))

        t = time.perf_counter()
        with open(os.devnull, "w") as sink:
            cli.predict_stream(model, data, sink)
        rows.append(("predict: whole file, streamed", time.perf_counter() - t))

        t = time.perf_counter()
        cli.main(["predict", out, data, "--out", os.path.join(tmp, "p.csv"), "-q"])
        rows.append(("predict: command (load, stream, atomic write)", time.perf_counter() - t))

    rows.append(("start-up: privatelr --help", _seconds(["privatelr", "--help"])))
    rows.append(("start-up: python -c 'import privatelr'",
                 _seconds([sys.executable, "-c", "import privatelr"])))
    rows.append(("start-up: python -c 'from privatelr import dplr'",
                 _seconds([sys.executable, "-c", "from privatelr import dplr"])))

    print(f"n = {args.rows:,} rows, CSV {size:.0f} MB, {formula}; load: {os.getloadavg()[0]:.2f}")
    print("| stage | seconds |\n|---|---|")
    for name, sec in rows:
        print(f"| {name} | {sec:.3f} |")
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(12)
    print("\nprofile of dplr() (cumulative):\n" + "\n".join(buf.getvalue().splitlines()[:40]))


if __name__ == "__main__":
    main()
