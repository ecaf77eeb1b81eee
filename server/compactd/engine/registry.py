"""Open sessions held by the daemon, keyed by session id.

A `SessionHandle` bundles what the daemon needs per session: the `Session`, a lock that
serializes writes (appends, compaction entries, leaf moves, rewrites all happen on the event
loop thread while holding it), the running summarization tasks (for `session/abort` and the
"busy" rule of D-20), the per-session auto-compaction policy and the entries already announced
to the client. Nothing here does I/O.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compactd.compaction.context_totals import TotalsCache
from compactd.compaction.exact_tokens import ExactTokenCache
from compactd.compaction.serialize import SerializedTextCache
from compactd.session import Session
from compactd.session.context_cache import ContextReportCache

from .busy import BusyError, busy_reason
from .tree_panel import TreePanel


class UnknownSessionError(Exception):
    def __init__(self, session_id: str) -> None:
        super().__init__(f"Unknown session: {session_id} (not open; call session/open or session/create first)")
        self.session_id = session_id


class SessionConflictError(Exception):
    """Another file with the same session id is already open."""


@dataclass(eq=False)
class SessionHandle:
    session: Session
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    # Running summarization tasks of this session and what each one is ("compaction", ...).
    tasks: dict[asyncio.Task[Any], str] = field(default_factory=dict)
    auto: Any | None = None  # engine.auto.AutoCompactor, created by the daemon
    # How many entries of `session.entries` the client has already been told about, and the
    # session's reload generation it was last told about.
    announced: int = 0
    generation: int = 0
    # Exact (tiktoken) counts per entry, reused across token-stat requests.
    token_cache: ExactTokenCache = field(default_factory=ExactTokenCache)
    # Token totals of the latest contexts, extended by appends; cleared when entries change in place.
    totals: TotalsCache = field(default_factory=TotalsCache)
    # session/context reports of the latest leaves, extended by appends; cleared like `totals`.
    context_cache: ContextReportCache = field(default_factory=ContextReportCache)
    # Serialized history text per entry, reused across dry runs (session/prepareCompaction).
    text_cache: SerializedTextCache = field(default_factory=SerializedTextCache)
    # The side panel's tree index (paged session/tree); follows appends, rebuilt after a reload.
    tree_panel: TreePanel = field(default_factory=TreePanel)
    # The daemon's latest answers by method, JSON-encoded: (what the answer depends on, encoding).
    # Only what changes in place (prunes, reloads) invalidates them: `forget_derived` clears them.
    encoded_answers: dict[str, tuple[object, object]] = field(default_factory=dict)
    # Counts `forget_derived` calls: work started before one must not store what it derived.
    derived_epoch: int = 0

    def __post_init__(self) -> None:
        self.announced = len(self.session.entries)
        self.generation = self.session.generation

    def forget_derived(self, *, token_counts: bool = False) -> None:
        """Drop what was derived from entries that have since changed in place (pruned) or been
        replaced (file reloaded: the same ids may now hold other content)."""
        self.totals.clear()
        self.context_cache.clear()
        self.text_cache = SerializedTextCache()
        self.tree_panel.forget_figures()
        self.encoded_answers.clear()
        self.derived_epoch += 1
        if token_counts:
            self.token_cache = ExactTokenCache()
            self.tree_panel.forget()  # reloaded: the index would keep the old entries alive

    @property
    def session_id(self) -> str:
        return self.session.session_id

    @property
    def busy(self) -> bool:
        return bool(self.running()) or busy_reason(self.session) is not None

    def running(self) -> list[str]:
        return [kind for task, kind in self.tasks.items() if not task.done()]

    def ensure_idle(self, action: str) -> None:
        """D-20: refuse leaf moves and a second summarization while one runs."""
        running = self.running()
        reason = busy_reason(self.session)
        if running or reason is not None:
            what = f"{' and '.join(running)} in progress" if running else str(reason)
            raise BusyError(self.session_id, f"{what}; cannot {action} now (session/abort or wait)")

    def track(self, task: asyncio.Task[Any], kind: str) -> None:
        self.tasks[task] = kind
        task.add_done_callback(lambda done: self.tasks.pop(done, None))

    def cancel_all(self, msg: str | None = None) -> int:
        """Cancel every running summarization; returns how many were running."""
        count = 0
        for task in list(self.tasks):
            if not task.done():
                task.cancel(msg)
                count += 1
        return count


def _path_key(path: Path | None) -> str | None:
    return os.path.realpath(path) if path is not None else None


class SessionRegistry:
    def __init__(self) -> None:
        self._handles: dict[str, SessionHandle] = {}

    def __iter__(self) -> Iterator[SessionHandle]:
        return iter(list(self._handles.values()))

    def __len__(self) -> int:
        return len(self._handles)

    def find_path(self, path: Path) -> SessionHandle | None:
        key = _path_key(path)
        for handle in self._handles.values():
            if _path_key(handle.session.path) == key:
                return handle
        return None

    def add(self, session: Session) -> SessionHandle:
        """Register a session. Opening the same file twice returns the existing handle."""
        existing = self._handles.get(session.session_id)
        if existing is not None:
            if session.path is not None and _path_key(existing.session.path) == _path_key(session.path):
                return existing
            where = existing.session.path or "memory"
            raise SessionConflictError(
                f"Session id {session.session_id} is already open from {where}; close it first"
            )
        handle = SessionHandle(session)
        self._handles[session.session_id] = handle
        return handle

    def find(self, session_id: str) -> SessionHandle | None:
        return self._handles.get(session_id)

    def get(self, session_id: str) -> SessionHandle:
        handle = self._handles.get(session_id)
        if handle is None:
            raise UnknownSessionError(session_id)
        return handle

    def remove(self, session_id: str) -> SessionHandle:
        handle = self.get(session_id)
        del self._handles[session_id]
        return handle
