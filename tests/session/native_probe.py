"""Run by tests/session/test_native_build.py in a child process, once interpreted (COMPACTD_PURE=1)
and once compiled: every view the compiled modules compute, for each session file given, as
one JSON line per file. An exception is recorded by type and message, so a compiled module
that rejects a value the source accepts (mypyc checks declared types) shows up as a difference.

    python tests/session/native_probe.py FILE...
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from compactd._native import compiled
from compactd.compaction.reports import branch_report, prepare_report, stats_report
from compactd.compaction.serialize import serialize_messages
from compactd.session import Session, build_session_context
from compactd.session.views import context_report, entry_kind, entry_preview, tree_report


def _attempt(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - the difference is what is compared
        return {"raised": type(exc).__name__, "message": str(exc)}


def views(path: Path) -> dict[str, Any]:
    session = Session.open(path)
    ids = [e["id"] for e in session.entries if isinstance(e.get("id"), str)]
    leaves = ids[-3:] + ids[:: max(1, len(ids) // 7)]
    out: dict[str, Any] = {"tree": _attempt(lambda: tree_report(session)),
                           "kinds": _attempt(lambda: [[entry_kind(e), entry_preview(e)] for e in session.entries])}
    for leaf in leaves:
        out[leaf] = {
            "context": _attempt(lambda: context_report(session, leaf)),
            "prepare": _attempt(lambda: prepare_report(session, leaf, 2000, 1000)),
            "stats": _attempt(lambda: stats_report(session, leaf)),
            "text": _attempt(lambda: serialize_messages(build_session_context(session.entries, leaf,
                                                                              session.by_id).messages)),
            "branch": _attempt(lambda: branch_report(session, leaf, ids[0])),
        }
    return out


def main(files: list[str]) -> int:
    sys.stdout.buffer.write(orjson.dumps({"compiled": compiled()}) + b"\n")
    for name in files:
        sys.stdout.buffer.write(orjson.dumps(_attempt(lambda: views(Path(name))), default=str) + b"\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
