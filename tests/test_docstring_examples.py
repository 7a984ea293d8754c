"""Every docstring example of the installed package runs and prints what it shows.

The examples are collected from the modules of the *installed* privatelr (the one the other tests
import), so this checks what users get, whatever the checkout. One test per module.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import warnings

import pytest

import privatelr

MODULES = sorted(m.name for m in pkgutil.walk_packages(privatelr.__path__, "privatelr.")
                 if not m.name.endswith("__main__"))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    tests = [t for t in finder.find(module, name) if t.examples]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)   # the examples show results, not warnings
        for test in tests:
            runner.run(test, clear_globs=True)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} failing docstring example(s) in {name}"


def test_the_examples_are_found():
    assert len(MODULES) > 30 and "privatelr.design.rsyntax" in MODULES
