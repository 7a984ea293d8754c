"""Execute the vignettes and write them back with their outputs (figures at full size).

Usage::

    python vignettes/build.py                 # every notebook, full size (the committed outputs)
    python vignettes/build.py nips2008        # only notebooks whose name contains "nips2008"
    python vignettes/build.py --scale small   # quick check at reduced size (as the tests do)

Each notebook reads ``PRIVATELR_VIGNETTE_SCALE`` (``full`` or ``small``); this script sets it for
the kernel. Notebooks run in a fresh kernel with the vignettes folder as working directory.
Needs nbclient, nbformat and ipykernel (``pip install ".[test]"``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def notebooks(patterns: list[str] | None = None) -> list[Path]:
    """The vignette notebooks (sorted), optionally filtered by substrings of their names."""
    found = sorted(p for p in HERE.glob("*.ipynb") if not p.name.startswith("."))
    if patterns:
        found = [p for p in found if any(s in p.stem for s in patterns)]
    return found


def execute(path: Path, scale: str = "full", timeout: int | None = None, write: bool = True):
    """Run one notebook in a fresh kernel; returns the executed notebook."""
    import nbformat
    from nbclient import NotebookClient

    os.environ["PRIVATELR_VIGNETTE_SCALE"] = scale
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    for cell in nb.cells:              # what each stored output was computed from (tests compare)
        if cell.cell_type == "code":
            cell.metadata["privatelr_source_sha256"] = source_hash(cell.source)
    if write:
        nbformat.write(nb, path)
    return nb


def source_hash(source: str) -> str:
    """SHA-256 of a code cell's source: stored next to its outputs by :func:`execute`, so a
    test can tell a cell edited after the last build (stale outputs) from a built one."""
    import hashlib

    return hashlib.sha256(source.encode("utf-8")).hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="substrings of notebook names (default: all)")
    parser.add_argument("--scale", default="full", choices=("full", "small"))
    parser.add_argument("--no-write", action="store_true", help="do not write the outputs back")
    args = parser.parse_args(argv)
    paths = notebooks(args.names)
    if not paths:
        print("no notebook matches", args.names, file=sys.stderr)
        return 2
    for path in paths:
        t0 = time.perf_counter()
        execute(path, scale=args.scale, write=not args.no_write)
        print(f"{path.name}: executed at scale {args.scale} in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
