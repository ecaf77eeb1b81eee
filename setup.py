"""Build step beside pyproject.toml: compiles compactd's per-message hot paths with mypyc.

mypyc (part of mypy, pinned in pyproject's build requirements) turns these typed Python modules
into C extensions: the same source, no hand-written C, about 1.5x faster on a session's walks,
projections and serialization. Everything else stays interpreted.

The build falls back to plain Python, saying why, when mypyc or a C compiler is missing, and
when COMPACTD_PURE=1 is set. At run time `compactd._native` hides compiled modules that are older
than their source (an edit after the last build), so an edited checkout never runs stale code.
"""

from __future__ import annotations

import os
import runpy
import sys

from setuptools import setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
NATIVE = runpy.run_path(os.path.join(HERE, "server", "compactd", "_native.py"))


def compiled_extensions() -> list:
    if os.environ.get("COMPACTD_PURE") == "1":
        print("compactd: COMPACTD_PURE=1, building without compiled modules", file=sys.stderr)
        return []
    try:
        from mypyc.build import mypycify
    except ImportError as exc:
        print(f"compactd: mypyc unavailable ({exc}), building without compiled modules", file=sys.stderr)
        return []
    try:
        paths = ["server/" + module.replace(".", "/") + ".py" for module in NATIVE["COMPILED_MODULES"]]
        # The isolated build environment has none of the runtime dependencies (orjson, tiktoken…):
        # their calls compile as ordinary Python calls either way.
        return mypycify(["--ignore-missing-imports", *paths], opt_level="3", group_name=NATIVE["GROUP_NAME"])
    except (Exception, SystemExit) as exc:  # mypy reports type errors by exiting
        print(f"compactd: compiling failed ({exc}), building without compiled modules", file=sys.stderr)
        return []


class BuildOrSkip(build_ext):
    """Without a working C compiler the package is installed interpreted, not refused."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:
            print(f"compactd: compiling failed ({exc}), installing without compiled modules", file=sys.stderr)


setup(ext_modules=compiled_extensions(), cmdclass={"build_ext": BuildOrSkip})
