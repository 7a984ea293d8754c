"""Every public name's docstring stands on its own, as ``help(name)`` shows it.

``help(public_bounds)`` once said little more than "(module docstring)": a reader of
``help()`` or of the API reference sees the function, not its module. So for every name of
``privatelr.__all__``: a docstring of some substance, every parameter mentioned, and no bare
pointer to "the module docstring" (name the module, ``:mod:`privatelr.bounds```, instead).
"""

from __future__ import annotations

import inspect
import pydoc

import pytest

import privatelr

NAMES = [n for n in privatelr.__all__ if n != "__version__"]


@pytest.mark.parametrize("name", NAMES)
def test_docstring_stands_on_its_own(name):
    obj = getattr(privatelr, name)
    doc = inspect.getdoc(obj) or ""
    assert len(doc) >= 150, (name, doc)
    assert "module docstring" not in doc, (
        f"{name}: say what it does, or name the module (:mod:`privatelr.x`), not "
        "'the module docstring'")
    assert doc.splitlines()[0].strip() in pydoc.render_doc(obj, renderer=pydoc.plaintext)
    if inspect.ismodule(obj):
        return
    func = obj.__init__ if inspect.isclass(obj) else obj
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):            # a builtin's signature: nothing to check
        return
    text = doc + (inspect.getdoc(func) or "")
    silent = [p for p in params if p not in ("self", "args", "kwargs") and p not in text]
    assert not silent, f"{name}: the docstring does not mention {silent}"
