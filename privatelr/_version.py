"""The package's version (one home: the package, the saved-file envelope and the command line
read it from here, and the build reads it too: ``pyproject.toml`` declares ``version`` dynamic,
``attr = "privatelr._version.__version__"``, which setuptools reads from this file's text).

A static string, not ``importlib.metadata.version("privatelr")``: reading the installed
metadata imported ``importlib.metadata`` (email, zipfile, pathlib, ...) and scanned
``sys.path``, about 85 % of ``import privatelr``'s own time. ``tests/unit/test_import_contract``
checks that the string equals the installed distribution's version.
"""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
