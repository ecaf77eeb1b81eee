"""Applying a tool-output pruning plan (spec §13.1, N-5/N-6; decision D-19).

The plan (which results, what they save) is pure (`compaction.prune`). Applying it:
1. the original contents are appended to the sidecar archive `<file>.pruned.jsonl`, one line
   `{"entryId", "content", "prunedAt"}` each, and fsynced — before anything else changes, so a
   crash at any later point loses nothing (`restore_pruned` puts them back);
2. each pruned result gets the notice `[Output truncated - N tokens]` as its content and one shared
   `prunedAt` (ms);
3. the session file is rewritten atomically (temp file, fsync, rename).
If the rewrite fails, the in-memory entries are restored. In-memory sessions only do step 2.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson
from pydantic import Field

from ..compaction.prune import PrunePlan, PruneSettings, plan_prune
from ..session import Session
from ..session.clock import now_ms
from ..session.lines import encode_line
from ..session.store import pruned_archive_path
from ._model import EngineModel
from .settings import Settings

__all__ = ["PruneResult", "archive_path", "prune", "prune_settings", "restore_pruned"]


class PruneResult(EngineModel):
    pruned_count: int = 0
    tokens_saved: int = 0
    entry_ids: list[str] = Field(default_factory=list)


def prune_settings(settings: Settings) -> PruneSettings:
    p = settings.pruning
    return PruneSettings(
        protect_tokens=p.protect_tokens,
        minimum_savings=p.minimum_savings,
        protected_tools=tuple(p.protected_tools),
    )


def archive_path(session_path: Path) -> Path:
    return pruned_archive_path(session_path)  # (the session layer looks for it too, on open)


def _append_archive(path: Path, lines: Iterable[str]) -> None:
    data = "".join(line + "\n" for line in lines).encode()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        before = os.fstat(fd).st_size
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        except BaseException:
            os.ftruncate(fd, before)  # a full disk keeps no half-written archive line
            raise
    finally:
        os.close(fd)


def _result(plan: PrunePlan) -> PruneResult:
    return PruneResult(
        pruned_count=plan.pruned_count, tokens_saved=plan.tokens_saved, entry_ids=plan.entry_ids
    )


def prune(session: Session, settings: Settings, *, dry_run: bool = False) -> PruneResult:
    """Prune old tool outputs on the current path when that saves enough (N-3..N-5)."""
    plan = plan_prune(session.get_branch(), prune_settings(settings))
    if dry_run or not plan.candidates:
        return _result(plan)

    pruned_at = now_ms()
    originals: dict[str, dict[str, Any]] = {}
    for candidate in plan.candidates:
        originals[candidate.entry_id] = session.by_id[candidate.entry_id]["message"]
    writes_file = session.path is not None and session.persisted
    if writes_file:
        assert session.path is not None
        _append_archive(
            archive_path(session.path),
            (
                encode_line({"entryId": entry_id, "content": message.get("content"), "prunedAt": pruned_at})
                for entry_id, message in originals.items()
            ),
        )

    replacements = plan.replacements()
    for entry_id, message in originals.items():
        # A new message dict: anyone holding the old one (a snapshot, a running summary) keeps it.
        session.by_id[entry_id]["message"] = {
            **message,
            "content": replacements[entry_id],
            "prunedAt": pruned_at,
        }
    if writes_file:
        try:
            session.rewrite()
        except BaseException:
            for entry_id, message in originals.items():
                session.by_id[entry_id]["message"] = message
            raise
    return _result(plan)


def restore_pruned(session: Session, entry_ids: Iterable[str] | None = None) -> list[str]:
    """Undo pruning from the archive: put the archived contents back (the latest archived line per
    entry wins), drop `prunedAt`, rewrite the file. Returns the restored entry ids."""
    if session.path is None:
        return []
    archive = archive_path(session.path)
    if not archive.exists():
        return []
    wanted = set(entry_ids) if entry_ids is not None else None
    contents: dict[str, Any] = {}
    for raw in archive.read_bytes().splitlines():
        if not raw.strip():
            continue
        try:
            line = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue  # a torn last line: its entry was never pruned
        entry_id = line.get("entryId") if isinstance(line, dict) else None
        if isinstance(entry_id, str) and (wanted is None or entry_id in wanted):
            contents[entry_id] = line.get("content")
    restored: list[str] = []
    previous: dict[str, dict[str, Any]] = {}
    for entry_id, content in contents.items():
        entry = session.by_id.get(entry_id)
        message = entry.get("message") if entry is not None else None
        if not isinstance(message, dict) or message.get("prunedAt") is None:
            continue
        previous[entry_id] = message
        assert entry is not None
        entry["message"] = {k: v for k, v in message.items() if k != "prunedAt"} | {"content": content}
        restored.append(entry_id)
    if restored and session.persisted:
        try:
            session.rewrite()
        except BaseException:
            for entry_id, message in previous.items():
                session.by_id[entry_id]["message"] = message
            raise
    return restored
