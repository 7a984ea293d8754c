"""Copy README.md's manual sections into the documentation pages, then (once) shrink README.

While README.md is still the 1,000-line manual, each page of the site that holds one of its
sections marks the copy::

    <!-- README: ## Choosing ε and data_norm -->
    ... the section's text, as README has it (its subheadings one level up) ...
    <!-- /README -->

``<!-- README: ## Heading | until: ### Other -->`` stops the copy at the subheading ``Other``.
Usage (from the repository root)::

    python docs/sync_readme.py            # refresh every marked copy from README.md
    python docs/sync_readme.py --check    # exit 1 if a copy differs from README (or a section
                                          # of README is on no page)
    python docs/sync_readme.py --finalize # refresh, drop the markers, make README the front
                                          # page (FRONT_PAGE below), delete this script and
                                          # tests/docs/test_readme_sync.py

Links between README sections (``[x](#choosing-ε-and-data_norm)``) become links between pages.
``--finalize`` is the last step of the move: from then on the pages are the manual.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent

#: README sections that are not copied to a page (the front page keeps its own text)
NOT_COPIED = {"Quick start", "Contents"}

_MARK = re.compile(r"^<!-- README: (?P<head>#+ [^|\n]+?)(?: \| until: (?P<until>#+ [^\n]+?))? -->\n"
                   r"(?P<body>.*?)^<!-- /README -->\n", flags=re.S | re.M)
_FENCE = re.compile(r"^(`{3,})")


def _headings(lines: list[str]) -> list[tuple[int, int, str]]:
    """``(line index, level, title)`` of every Markdown heading outside code fences."""
    out, fence = [], None
    for i, line in enumerate(lines):
        m = _FENCE.match(line)
        if m:
            if fence is None:
                fence = m.group(1)
            elif line.strip() == fence:
                fence = None
            continue
        if fence is None:
            h = re.match(r"^(#{1,6}) (.+?)\s*$", line)
            if h:
                out.append((i, len(h.group(1)), h.group(2)))
    return out


def slug(title: str) -> str:
    """GitHub's (and MyST's) anchor of a heading: lower case, punctuation dropped, spaces -."""
    text = re.sub(r"`", "", title).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def sections(readme: str) -> dict[str, tuple[int, list[str]]]:
    """``"## Title" -> (level, body lines)`` for every heading of README (body up to the next
    heading of the same or a higher level)."""
    lines = readme.splitlines()
    heads = _headings(lines)
    out = {}
    for k, (i, level, title) in enumerate(heads):
        end = next((j for j, lev, _ in heads[k + 1:] if lev <= level), len(lines))
        out["#" * level + " " + title] = (level, lines[i + 1:end])
    return out


def _shift(body: list[str], by: int) -> list[str]:
    """Raise every heading of ``body`` (outside code) by ``by`` levels."""
    heads = {i: level for i, level, _ in _headings(body)}
    out = []
    for i, line in enumerate(body):
        if i in heads:
            line = "#" * max(1, heads[i] - by) + line[heads[i]:]
        out.append(line)
    return out


def _pages() -> dict[Path, str]:
    return {p: p.read_text() for p in sorted(DOCS.glob("*.md"))}


def _anchor_targets(pages: dict[Path, str], secs) -> dict[str, str]:
    """README anchor -> the page (and anchor on it) that now holds that heading."""
    targets = {}
    for path, text in pages.items():
        for m in _MARK.finditer(text):
            head = m.group("head")
            if head not in secs:
                continue
            targets[slug(head.lstrip("# "))] = path.name
            level, body = secs[head]
            for _, _, title in _headings(body):
                targets[slug(title)] = f"{path.name}#{slug(title)}"
    return targets


def _copy(head: str, until: str | None, secs, targets: dict[str, str]) -> str:
    if head not in secs:
        raise SystemExit(f"README.md has no section {head!r} (a page's marker names it)")
    level, body = secs[head]
    if until is not None:
        stops = [i for i, lev, title in _headings(body) if "#" * lev + " " + title == until]
        if not stops:
            raise SystemExit(f"README.md's section {head!r} has no subheading {until!r}")
        body = body[:stops[0]]
    text = "\n".join(_shift(body, level - 1)).strip("\n") + "\n"

    def link(m: re.Match) -> str:
        anchor = m.group(1)
        if anchor not in targets:
            raise SystemExit(f"{head!r} links to README's #{anchor}, which no page holds")
        return f"]({targets[anchor]})"

    return re.sub(r"\]\(#([^)\s]+)\)", link, text)


def sync(readme: str, check: bool = False) -> list[str]:
    """Refresh the marked copies; returns the pages that changed (or would change)."""
    secs = sections(readme)
    pages = _pages()
    targets = _anchor_targets(pages, secs)
    copied = set()
    changed = []
    for path, text in pages.items():
        def fill(m: re.Match) -> str:
            copied.add(m.group("head"))
            body = _copy(m.group("head"), m.group("until"), secs, targets)
            opening = m.group(0)[: m.start("body") - m.start(0)]
            return opening + body + "<!-- /README -->\n"

        new = _MARK.sub(fill, text)
        if new != text:
            changed.append(path.name)
            if not check:
                path.write_text(new)
    top = {h for h, (level, _) in secs.items() if level == 2}
    missing = sorted(h for h in top - copied if h[3:] not in NOT_COPIED)
    if missing:
        raise SystemExit(f"README sections on no documentation page: {missing}; add a marker "
                         "<!-- README: ## ... --> ... <!-- /README --> to the page for each")
    return changed


def strip_markers() -> None:
    for path, text in _pages().items():
        new = re.sub(r"^<!-- (README: [^\n]*|/README) -->\n", "", text, flags=re.M)
        if new != text:
            path.write_text(new)


FRONT_PAGE = """\
# privatelr

**What it is.** A Python package that fits logistic regression on sensitive records (health
data, ad conversions, survey answers) and releases coefficients that reveal almost nothing about
any one person: whether or not your record was in the data changes the probability of any
released model by at most a factor e^ε. You choose ε; smaller is more private and noisier.
R users find PrivateLR's `dplr()` with the same arguments; Python users a formula interface, a
scikit-learn estimator, DPpack-style models with private tuning, WALR label-private training,
a command line, and Dask for data larger than memory.

**Why trust it.** The noise follows published theorems (Chaudhuri, Monteleoni & Sarwate, NIPS
2008 and JMLR 2011), each noise scale is derived in the docstring that draws it, and the
guarantee holds by construction: everything that shapes the released model comes from what you
declare, never from the private rows, and a fit whose guarantee would not hold raises an error
instead of releasing. Statistical tests check the noise law and audit the guarantee
([privacy evidence](docs/privacy.md)); every example in the documentation runs in the test
suite, with the values it states checked.

## Quick start

```bash
pip install . && privatelr demo
pip install ".[test]" && pytest
```

## A short example

Declare what is public — ε, the columns' bounds, the factors' levels — and fit:

```python
from privatelr import dplr, public_bounds
from privatelr.datasets import load_mtcars

bounds = public_bounds({"mpg": (10, 35), "hp": (50, 350)}, levels={"cyl": [4, 6, 8]})
model = dplr("am ~ mpg + hp + factor(cyl)", load_mtcars(), eps=1, bounds=bounds,
             random_state=1)                 # a seed, for the example only: never for a release
print(model)                                 # R's summary layout, privacy fields first
model.guarantee_holds                        # True
round(model.data_norm ** 2, 9)               # 3.0
```

Each of the three terms adds at most 1 to a row's squared length once the columns are mapped
onto [−1, 1] by their public ranges, so the noise is calibrated for `data_norm` = √3; nothing
about it was read from the rows.

## Documentation

The manual is the documentation site in [`docs/`](docs/index.md) (build it with
`pip install ".[docs]"` and `python -m sphinx -b html docs docs/_build/html`):

- [Getting started](docs/getting-started.md): install, extras, a first private model
- [The dplr front end](docs/dplr.md) and the [porting guide from R](docs/porting.md)
- [Choosing ε and the bounds](docs/choosing-eps.md): `public_bounds`, the centred map, `norm="rms"`
- [Standard errors and confidence intervals](docs/inference.md), and `inference_plan`
- Front ends: [the engine](docs/engine.md), [DPpack-style models and private tuning](docs/dppack.md),
  [scikit-learn](docs/sklearn.md), [WALR](docs/walr.md), [Dask](docs/dask.md),
  [the command line](docs/cli.md)
- [Evidence that privacy holds](docs/privacy.md), [hostile inputs](docs/hostile_inputs.md),
  [vignettes and plots](docs/vignettes.md), [benchmarks](docs/benchmarks.md)
- [API reference](docs/api.rst), generated from the docstrings
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--finalize", action="store_true")
    args = parser.parse_args(argv)
    readme = (ROOT / "README.md").read_text()
    changed = sync(readme, check=args.check)
    if args.check:
        if changed:
            print("out of date with README.md: " + ", ".join(changed))
            return 1
        return 0
    print("refreshed: " + (", ".join(changed) or "nothing"))
    if args.finalize:
        if FRONT_PAGE is None:
            raise SystemExit("FRONT_PAGE is not written yet")
        strip_markers()
        (ROOT / "README.md").write_text(FRONT_PAGE)
        (ROOT / "tests" / "docs" / "test_readme_sync.py").unlink()
        Path(__file__).unlink()
        print("README.md is the front page; the markers, this script and its test are gone")
    return 0


if __name__ == "__main__":
    sys.exit(main())
