"""Names a package exports from submodules that load on first use (PEP 562), so that a process
importing the package pays only for what it touches (a lane host must not build the judge's
models; the CLI must not import Flask to print ``--help``)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """A module-level ``__getattr__`` for ``package``: ``name`` is looked up in the submodule
    ``exports[name]`` when first asked for, then kept in the package. Names not in ``exports``
    raise ``AttributeError``; a submodule that fails to import raises its own error."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
