"""The package's import contract: data flows one way.

Read from the source (AST), so nothing is imported or run:

* no import cycle between the package's modules (imports inside functions count too: a cycle
  hidden in a function is still a cycle);
* no private name (``_x``) imported from another module of the package;
* optional dependencies are imported by one module each: dask only by the Dask backend,
  matplotlib only by the plots, scikit-learn only by its front end (``privatelr.sklearn``);
* no module is named like the function it exports (``privatelr.dplr`` must be the function).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import privatelr

ROOT = Path(privatelr.__file__).parent
OPTIONAL = {"dask": {"privatelr.backends.dask"}, "distributed": {"privatelr.backends.dask"},
            "matplotlib": {"privatelr.report.plots"},
            "sklearn": {f"privatelr.sklearn{m}" for m in ("", ".bounds", ".estimator",
                                                          ".pipeline")}}


def _modules() -> dict[str, Path]:
    out = {}
    for path in ROOT.rglob("*.py"):
        parts = ("privatelr",) + path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _imports(name: str, path: Path, modules: dict) -> list[tuple[str, list[str]]]:
    """(imported module, names imported from it) for every import in the file."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = [a.name for a in node.names]
            for n in names:                         # "from . import erm" imports a module
                if f"{target}.{n}" in modules:
                    found.append((f"{target}.{n}", []))
            found.append((target, names))
    return found


def _graph():
    modules = _modules()
    edges, private, optional = {}, [], {}
    for name, path in modules.items():
        deps = set()
        for target, names in _imports(name, path, modules):
            top = target.split(".")[0]
            if top in OPTIONAL:
                optional.setdefault(top, set()).add(name)
            if target in modules and target != name:
                deps.add(target)
                private += [f"{name} takes {n} from {target}" for n in names
                            if n.startswith("_") and not n.startswith("__")]
        edges[name] = deps
    return modules, edges, private, optional


def _cycles(edges: dict) -> list[list[str]]:
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):                                   # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in edges:
        if v not in index:
            visit(v)
    return out


def _without_package_init(edges: dict) -> dict:
    # the package's __init__ re-exports the public API: it imports everything and nothing
    # imports it back, except through "from . import x" of subpackages, which are separate nodes
    return {k: {d for d in v if d != "privatelr"} for k, v in edges.items()}


def test_no_import_cycles():
    _, edges, _, _ = _graph()
    assert _cycles(_without_package_init(edges)) == []


def test_no_private_names_across_modules():
    _, _, private, _ = _graph()
    assert private == []


def test_optional_dependencies_stay_in_their_module():
    _, _, _, optional = _graph()
    for dep, users in optional.items():
        assert users <= OPTIONAL[dep], (dep, users - OPTIONAL[dep])


@pytest.mark.heavy
def test_no_module_is_named_like_a_function_it_exports():
    modules, _, _, _ = _graph()
    clashes = []
    for name in modules:
        if name.count(".") != 1:
            continue
        short = name.split(".")[1]
        if short in privatelr.__all__ and callable(getattr(privatelr, short)) and \
                not isinstance(getattr(privatelr, short), type(privatelr)):
            clashes.append(name)
    assert clashes == []


def test_every_subpackage_is_shipped():
    # pyproject lists the packages explicitly (the data folder is mapped into privatelr._data):
    # a new subpackage missing from the list installs without it and fails on a clean machine.
    # The source tree is found next to the tests (the package under test may be installed).
    import tomllib

    repo = Path(__file__).resolve().parents[2]
    listed = set(tomllib.loads((repo / "pyproject.toml").read_text())
                 ["tool"]["setuptools"]["packages"])
    source = {"privatelr." + ".".join(p.parent.relative_to(repo / "privatelr").parts)
              if p.parent != repo / "privatelr" else "privatelr"
              for p in (repo / "privatelr").rglob("__init__.py")}
    assert source - {"privatelr._data"} <= listed
    installed = {name for name, path in _modules().items() if path.name == "__init__.py"}
    assert source <= installed | {"privatelr._data"}


# ---- lazy imports: a quick start for the command line and for `import privatelr` -------------

def _modules_after(code: str) -> set:
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", code + "\nimport sys\nprint(' '.join(sorted("
                          "m for m in sys.modules)))"], capture_output=True, text=True,
                         check=True)
    return set(out.stdout.split())


HEAVY = {"numpy", "pandas", "scipy", "formulaic"}


def test_import_and_cli_help_load_no_heavy_dependency():
    # `privatelr --help` builds the parser from privatelr.cli: nothing numeric is needed
    assert not HEAVY & _modules_after("import privatelr, privatelr.cli\n"
                                      "privatelr.cli.build_parser().format_help()")
    # a name is imported when used, with what it needs
    assert {"numpy", "pandas"} <= _modules_after("from privatelr import dplr")


def test_every_public_name_resolves_and_is_listed():
    import importlib

    fresh = importlib.reload(privatelr)
    for name in fresh.__all__:
        assert getattr(fresh, name) is not None, name
        assert name in dir(fresh), name
    assert fresh.erm.fit is not None and fresh.design.DesignSpec is not None   # submodules too
    try:
        fresh.no_such_name
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("an unknown attribute must raise AttributeError")


def test_plain_import_loads_nothing_numeric_and_names_are_cached():
    # `import privatelr` alone (the version, dir()) loads no numeric or formula package, and
    # the CLI module not pyarrow either (Parquet is read only when a .parquet file is given);
    # the engine brings scipy only when it is asked for
    assert not (HEAVY | {"pyarrow"}) & _modules_after(
        "import privatelr, privatelr.cli\nprivatelr.__version__\ndir(privatelr)")
    assert "scipy" in _modules_after("from privatelr import erm")
    # a name is resolved once: later look-ups return the same object
    assert privatelr.dplr is privatelr.dplr and privatelr.plot is privatelr.plot
    assert privatelr.plot.__name__ == "privatelr.report.plots"


def test_version_is_static_and_matches_the_installed_distribution():
    # `import privatelr` reads no package metadata (importlib.metadata was ~85 % of its own
    # import time): the version is a literal in privatelr/_version.py, which the build reads
    # (pyproject.toml: dynamic version, attr privatelr._version.__version__)
    bare = _modules_after("")
    assert "importlib.metadata" not in _modules_after(
        "import privatelr, privatelr.cli\nprivatelr.__version__\n"
        "privatelr.cli.build_parser().format_help()") - bare
    import re
    from importlib.metadata import PackageNotFoundError, version

    assert re.fullmatch(r"\d+\.\d+\.\d+\S*", privatelr.__version__)
    try:
        installed = version("privatelr")
    except PackageNotFoundError:  # a source tree that was never installed
        return
    assert installed == privatelr.__version__
    pyproject = ROOT.parent / "pyproject.toml"
    if pyproject.exists():   # a source checkout: the build reads the version from _version.py
        text = pyproject.read_text()
        assert 'dynamic = ["version"]' in text
        assert 'attr = "privatelr._version.__version__"' in text
