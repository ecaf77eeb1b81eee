"""Which compactd modules run compiled, and the guard that keeps stale compiled code from running.

`setup.py` compiles the modules below with mypyc, from the same source, into extension modules
beside their `.py` files (one shared library, `compactd/native__mypyc…`, holds their code). Python
prefers an extension module to a source file of the same name, so a source edited after the last
build would silently not run. Importing `compactd` therefore checks, with one `stat` per module:
when any source is newer than its compiled module, or COMPACTD_PURE=1 is set, every compiled
module of the group is hidden and the sources run (they call each other inside the shared
library, so it is all or none). `pip install -e .` compiles them again.

Standalone on purpose (no compactd imports): `setup.py` reads COMPILED_MODULES from this file.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Sequence
from types import ModuleType

COMPILED_MODULES = (
    "compactd.compaction.cut_points",
    "compactd.compaction.file_ops",
    "compactd.compaction.jscompat",
    "compactd.compaction.prepare",
    "compactd.compaction.reports",
    "compactd.compaction.serialize",
    "compactd.compaction.tokens",
    "compactd.session.context",
    "compactd.session.file",
    "compactd.session.gc_pause",
    "compactd.session.migrate",
    "compactd.session.steps",
    "compactd.session.views",
)
# mypyc's name for the group; its shared library is the last part + "__mypyc" (compactd/native__mypyc…).
GROUP_NAME = "compactd.native"
_SHARED_LIBRARY = GROUP_NAME.rsplit(".", 1)[1] + "__mypyc"

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_compiled = False


def _source_path(module: str) -> str:
    return os.path.join(_PACKAGE_DIR, *module.split(".")[1:]) + ".py"


def _built_mtime(stem: str) -> float | None:
    """The modification time of the extension module `stem` + a platform suffix, if built."""
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        try:
            return os.stat(stem + suffix).st_mtime
        except OSError:
            continue
    return None


def _compiled_and_fresh() -> bool:
    """True when the shared library and every module are built and newer than their sources."""
    if _built_mtime(os.path.join(_PACKAGE_DIR, _SHARED_LIBRARY)) is None:
        return False
    for module in COMPILED_MODULES:
        source = _source_path(module)
        built = _built_mtime(source[: -len(".py")])
        try:
            edited = os.stat(source).st_mtime
        except OSError:
            return False
        if built is None or built < edited:
            return False
    return True


class _SourcesFirst(importlib.abc.MetaPathFinder):
    """Loads the listed modules from their `.py` files, ahead of the extension modules."""

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in COMPILED_MODULES:
            return None
        return importlib.util.spec_from_file_location(fullname, _source_path(fullname))


def install_guard() -> None:
    """Called once by `compactd/__init__.py`, before any compiled module can be imported. Unless
    the whole group is fresh, the sources load (also when nothing is compiled, and when a build
    stopped half way and left modules without their shared library)."""
    global _compiled
    if os.environ.get("COMPACTD_PURE") != "1" and _compiled_and_fresh():
        _compiled = True
        return
    sys.meta_path.insert(0, _SourcesFirst())


def compiled() -> bool:
    """True when the modules in COMPILED_MODULES run compiled in this process."""
    return _compiled
