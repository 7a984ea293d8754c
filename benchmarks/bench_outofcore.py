"""Benchmark: dplr on a Parquet data set larger than this machine's memory, through Dask.

The data: ``--rows`` rows (default 3.5e8), covariates ``x1 .. x10`` float64 uniform in
[-0.3, 0.3] (every row's norm is below 0.95, so ``data_norm=1`` holds without clipping) and a
0/1 response ``y`` (int8) from a logistic model, written as Parquet files of 1e6 rows each,
file by file (the generator never holds more than one file). At 3.5e8 rows that is 28 GB of
float64 covariates and 28.4 GB on disk: more than the machine's 24 GiB of memory, so no pass can
be served from memory, the page cache included. The data set is kept in ``--dir`` between runs
(a manifest names its rows, seed and layout; it is written again only when they change).

Every size runs in a fresh subprocess:

* ``dask``: ``LocalCluster(2 worker processes x 1 thread, memory_limit=4 GiB each)`` (Dask's
  spilling to disk on, at its default thresholds), ``dd.read_parquet`` of the first n rows' files,
  then ``dplr("y ~ .", ddf, eps=1, data_norm=1, random_state=7)`` with the rows **streamed**
  (``dask.config`` ``privatelr.persist = False``; workers started without Dask's default
  ``MALLOC_TRIM_THRESHOLD_``, see ``run_dask``): every pass re-reads its partitions from the
  Parquet files and rebuilds the design, so no worker holds more than the partitions it is
  processing. Reported: wall time of the fit; the reads of the data and their times (one set-up
  read that counts rows and missing values, fingerprints the partitions, runs the validation
  scan and takes the solver's 1/16 subsample, and the solver's passes, each giving value,
  gradient and Hessian); peak RSS of the
  client (over its start-up baseline) and of each worker.
* ``memory`` (at ``--check-rows``, default 1e7): the same files read with pandas and the same
  ``dplr`` call in memory; its coefficients are compared with the Dask fit's at that size (same
  data, same seed: the same release to rounding, target 1e-10).

The slope of wall time against n (least squares over the sizes) and the time per 1e6 rows at each
size are printed; the table is appended to benchmarks/RESULTS.md unless ``--no-append``.

    python benchmarks/bench_outofcore.py                         # 1e6, 1e7, 1e8, 3.5e8 rows
    python benchmarks/bench_outofcore.py --rows 2e7 --sizes 1e6 1e7 2e7   # a quick look
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import resource
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from common import peak_mb, publish, run_child

D = 10
PART = 1_000_000
HALF_WIDTH = 0.3
SEED = 2026
FORMULA = "y ~ ."
FIT = dict(eps=1.0, data_norm=1.0, random_state=7)


def _write_file(root: str, i: int) -> int:
    import pandas as pd
    from scipy.special import expit

    beta = np.linspace(-3.0, 3.0, D)
    rng = np.random.default_rng([SEED, i])
    X = rng.uniform(-HALF_WIDTH, HALF_WIDTH, size=(PART, D))
    y = (rng.uniform(size=PART) < expit(0.5 + X @ beta)).astype(np.int8)
    frame = pd.DataFrame(X, columns=[f"x{j + 1}" for j in range(D)])
    frame["y"] = y
    tmp = Path(root) / f".part-{i:05d}.parquet.tmp"
    frame.to_parquet(tmp, index=False, compression=None)
    tmp.replace(Path(root) / f"part-{i:05d}.parquet")  # atomic: a file is whole or absent
    return i


def ensure_data(root: Path, rows: int) -> list[str]:
    """The Parquet files of ``rows`` rows in ``root``, written (two processes) when missing."""
    root.mkdir(parents=True, exist_ok=True)
    files = rows // PART
    manifest = root / "manifest.json"
    want = dict(rows=files * PART, part=PART, d=D, seed=SEED, half_width=HALF_WIDTH)
    names = [str(root / f"part-{i:05d}.parquet") for i in range(files)]
    have = json.loads(manifest.read_text()) if manifest.exists() else {}
    same = all(have.get(k) == v for k, v in want.items() if k != "rows")
    if same and have.get("rows", 0) >= want["rows"] and all(map(os.path.exists, names)):
        return names  # the same layout, at least as many rows: the first files are the data
    missing = [i for i in range(files) if not os.path.exists(names[i])]
    t = time.perf_counter()
    with ProcessPoolExecutor(max_workers=2) as pool:
        for k, _ in enumerate(pool.map(_write_file, [str(root)] * len(missing), missing)):
            if (k + 1) % 25 == 0:
                print(f"  wrote {k + 1} of {len(missing)} files", flush=True)
    manifest.write_text(json.dumps(want))
    size = sum(os.path.getsize(f) for f in names) / 1e9
    print(f"wrote {len(missing)} files ({size:.1f} GB in all) in {time.perf_counter() - t:.0f} s",
          flush=True)
    return names


def _timed(owner, name: str, log: list, label) -> None:
    """Wrap ``owner.name`` so that every call appends ``(label, seconds)`` to ``log``;
    ``label`` is a string or a function of the call's first argument."""
    inner = getattr(owner, name)

    def wrapper(*args, **kwargs):
        t = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            log.append((label if isinstance(label, str) else label(args[0]),
                        time.perf_counter() - t))

    setattr(owner, name, wrapper)


def run_dask(files: list[str]) -> dict:
    import dask
    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    from privatelr import dplr
    from privatelr.backends import dask as backend

    log: list = []
    _timed(backend, "design_rows", log, "count")
    _timed(backend.DaskRows, "scan", log, "scan")
    answered = backend.DaskRows._scanned   # the scan answered by the set-up's read: no pass

    def scanned(self, *args):
        out = answered(self, *args)
        log.append(("scan reads", float(out is None)))
        return out

    backend.DaskRows._scanned = scanned
    # the solver's passes, by the rows they cover (the warm start's subsamples are persisted;
    # the first of their passes waits for the subsample to be read from the full data)
    _timed(backend.DaskERMObjective, "_pass", log, lambda obj: f"solver {obj.n}")
    # Dask's nanny starts workers with MALLOC_TRIM_THRESHOLD_=65536, which turns off glibc's
    # adaptive mmap threshold: every large temporary is then a fresh mmap paying its page faults
    # (measured: a streamed pass over 1e7 rows 8.2 s with it, 4.0 s without). Kept out here.
    environ = {k: v for k, v in dask.config.get("distributed.nanny.pre-spawn-environ").items()
               if k != "MALLOC_TRIM_THRESHOLD_"}
    dask.config.set({"distributed.nanny.pre-spawn-environ": environ})
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           dashboard_address=":0", memory_limit="4GiB")
    client = Client(cluster)
    client.run(lambda: None)
    base = peak_mb()
    ddf = dd.read_parquet(files)
    t0 = time.perf_counter()
    with dask.config.set({"privatelr.persist": False}):
        model = dplr(FORMULA, ddf, **FIT)
    wall = time.perf_counter() - t0
    workers = client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    client.close()
    cluster.close()
    phases: dict = {}
    for label, sec in log:
        phases.setdefault(label, []).append(sec)
    return dict(wall=wall, coef=model.coefficients.to_numpy().tolist(), n=model.n,
                status=model.status, convergence=int(model.convergence), phases=phases,
                client_base_mb=base, client_peak_mb=peak_mb(),
                worker_peak_mb=sorted(workers.values()), partitions=ddf.npartitions)


def run_memory(files: list[str]) -> dict:
    """The same dplr call on the same files in memory. The columns are read file by file into
    preallocated arrays and framed without a copy (``pd.concat`` would hold every piece and
    the result at once: twice the data, which at 1e8 rows with dplr's design on top did not fit
    in 23.5 GiB)."""
    import pandas as pd
    import pyarrow.parquet as pq

    from privatelr import dplr

    t0 = time.perf_counter()
    schema = pq.read_schema(files[0])
    n = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
    cols = {name: np.empty(n, dtype=schema.field(name).type.to_pandas_dtype())
            for name in schema.names if not name.startswith("__")}
    at = 0
    for f in files:
        table = pq.read_table(f, columns=list(cols))
        k = table.num_rows
        for name in cols:
            cols[name][at:at + k] = table.column(name).to_numpy()
        at += k
        del table
    frame = pd.DataFrame(cols, copy=False)
    t1 = time.perf_counter()
    model = dplr(FORMULA, frame, **FIT)
    return dict(read=t1 - t0, fit=time.perf_counter() - t1, n=model.n,
                coef=model.coefficients.to_numpy().tolist(), peak_mb=peak_mb())


def child(kind: str, files: list[str]) -> dict:
    return run_child(__file__, kind, *files)


def _summary(n: int, r: dict) -> dict:
    ph = r["phases"]
    sizes = sorted(int(k.split()[1]) for k in ph if k.startswith("solver "))
    solver = ph[f"solver {sizes[-1]}"]
    warm = sum(sum(ph[f"solver {m}"]) for m in sizes[:-1])
    # reads of the source: the set-up's one (count, fingerprints, scan, the warm start's
    # subsample), the scan's own when the set-up's did not answer it, the solver's passes (the
    # warm start's passes run on the subsample held by the workers)
    setup = 1 + int(sum(ph.get("scan reads", [0.0])))
    passes = len(solver) + setup
    return dict(n=n, wall=r["wall"], passes=passes, per_pass=r["wall"] / passes, setup=setup,
                count=ph["count"][0], scan=ph["scan"][0], subsample=warm,
                solver=len(solver), solver_median=float(np.median(solver)) if solver else 0.0,
                client=r["client_peak_mb"], workers=r["worker_peak_mb"], status=r["status"],
                coef=r["coef"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default="/tmp/privatelr-outofcore", help="where the data set lives")
    ap.add_argument("--rows", type=float, default=3.5e8, help="rows of the data set")
    ap.add_argument("--sizes", type=float, nargs="+", default=[1e6, 1e7, 1e8, 3.5e8])
    ap.add_argument("--check-rows", type=float, default=1e7)
    ap.add_argument("--no-append", action="store_true")
    ap.add_argument("--child", nargs="+")
    args = ap.parse_args()
    if args.child:
        kind, files = args.child[0], args.child[1:]
        print(json.dumps(run_memory(files) if kind == "memory" else run_dask(files)))
        return
    rows = int(args.rows) // PART * PART
    sizes = sorted({min(rows, int(v) // PART * PART) for v in args.sizes})
    check = int(args.check_rows) // PART * PART
    files = ensure_data(Path(args.dir), rows)
    disk = sum(os.path.getsize(f) for f in files) / 1e9
    mem_total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 2**30
    print(f"data set: {rows:,} rows x {D} covariates in {len(files)} files, {disk:.1f} GB on "
          f"disk; X as float64 {rows * D * 8 / 1e9:.1f} GB; this machine: {mem_total:.1f} GiB",
          flush=True)
    results = []
    for n in sizes:
        r = _summary(n, child("dask", files[: n // PART]))
        results.append(r)
        print(f"n={n:,}: {r['wall']:.1f} s, {r['passes']} passes ({r['per_pass']:.2f} s a pass; "
              f"solver {r['solver']} x {r['solver_median']:.2f} s), client peak "
              f"{r['client']:.0f} MiB, workers {' / '.join(f'{w:.0f}' for w in r['workers'])} MiB",
              flush=True)
    mem = child("memory", files[: check // PART])
    same = [r for r in results if r["n"] == check]
    dask_coef = np.array(same[0]["coef"] if same else child("dask", files[: check // PART])["coef"])
    diff = float(np.max(np.abs(np.array(mem["coef"]) - dask_coef)))
    print(f"n={check:,} both ways: in memory {mem['read']:.1f} s read + {mem['fit']:.1f} s fit "
          f"(peak {mem['peak_mb']:.0f} MiB); max |coef_dask - coef_memory| = {diff:.1e}",
          flush=True)
    ns = np.array([r["n"] for r in results], dtype=float)
    walls = np.array([r["wall"] for r in results])
    slope, icpt = np.polyfit(ns / 1e6, walls, 1) if len(ns) > 1 else (walls[0] / ns[0] * 1e6, 0)
    load = os.getloadavg()[0]
    lines = [
        "",
        "## Beyond memory: dplr on Parquet through Dask, rows streamed (bench_outofcore.py)",
        "",
        f"{_dt.date.today()}, Python {platform.python_version()}, {platform.machine()}, "
        f"{os.cpu_count()} cores, {mem_total:.1f} GiB of memory (load average {load:.1f} at the "
        f"end). Data: {rows:,} rows x {D} float64 covariates + int8 response in "
        f"{len(files)} Parquet files of {PART:,} rows ({disk:.1f} GB on disk, uncompressed). "
        f"`dplr(\"{FORMULA}\", dd.read_parquet(files[:n/1e6]), eps=1, data_norm=1, "
        "random_state=7)` with `dask.config` `privatelr.persist=False` on a LocalCluster of 2 "
        "worker processes x 1 thread, 4 GiB memory limit each (spilling on). Passes over the "
        "data, each re-reading the Parquet files: the set-up's read (count, fingerprints, "
        "validation scan and the warm start's 1/16 subsample in one read; the scan reads again "
        "only when that read cannot answer it), the solver's full passes; the warm start then "
        "solves on the subsample held by the workers. Columns: set-up reads; seconds of the "
        "set-up read, of the scan, and of the warm start's solve.",
        "",
        "| n | wall (s) | reads (set-up + solver) | s / read | set-up, scan, warm start (s) "
        "| solver passes x median (s) | s per 1e6 rows | client peak RSS (MiB) | worker peak RSS (MiB) | status |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['n']:,} | {r['wall']:.1f} | {r['setup']} + {r['solver']} | {r['per_pass']:.2f} "
            f"| {r['count']:.1f}, {r['scan']:.1f}, {r['subsample']:.1f} "
            f"| {r['solver']} x {r['solver_median']:.2f} | {r['wall'] / r['n'] * 1e6:.3f} "
            f"| {r['client']:.0f} | {' / '.join(f'{w:.0f}' for w in r['workers'])} "
            f"| {r['status']} |")
    lines += [
        "",
        f"Slope of wall time against n (least squares over the sizes): {slope:.3f} s per 1e6 rows "
        f"(intercept {icpt:.1f} s). Agreement at n = {check:,}: the same `dplr` call in memory "
        f"(pandas read {mem['read']:.1f} s, fit {mem['fit']:.1f} s, peak RSS {mem['peak_mb']:.0f} "
        f"MiB) and on Dask give coefficients equal to {diff:.1e} (max abs difference).",
    ]
    publish(lines, append=not args.no_append)


if __name__ == "__main__":
    main()
