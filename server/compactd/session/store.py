"""The session: header, entries in file order, leaf pointer — the in-memory tree and its appends.

Spec §2.5–2.7 and §3, decisions D-16..D-18. Entries are kept as the plain dicts of the file so
nothing unknown is lost. Every file rule (reading, appending, staying in step with other writers,
atomic rewrites, backups) lives in `file.SessionFile`; this class decides *what* to write and
writes to disk before the in-memory state changes, so a failed write leaves the session exactly as
it was. Worker threads get a frozen `SessionView` (`snapshot()`), never the live session.
"""

from __future__ import annotations

import gc
import os
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import orjson

from .clock import iso_to_ms, now_iso
from .errors import (
    ConcurrentModificationError,
    EntryNotFoundError,
    FileRewrittenError,
    InvalidSessionFileError,
    LoadWarning,
    NotARegularFileError,
    SessionError,
)
from .file import MAX_LINE_BYTES, Landed, RawFile, SessionFile, Tail, remove_stale_temps
from .lossless import render
from .gc_pause import gc_paused
from .migrate import build_entries, check_parent
from .lines import CURRENT_SESSION_VERSION, drop_none, encode_line
from .tree import (
    TreeNode,
    build_tree,
    clean_session_name,
    latest_session_name,
    path_to,
    resolve_labels,
    session_dir_for_cwd,
    session_file_name,
)

_UNKNOWN = object()  # a cached value not computed yet

__all__ = [
    "MAX_LINE_BYTES",
    "ConcurrentModificationError",
    "EntryNotFoundError",
    "ExternalAppend",
    "FileRewrittenError",
    "InvalidSessionFileError",
    "LoadWarning",
    "NotARegularFileError",
    "Session",
    "SessionError",
    "SessionView",
    "SyncResult",
]

Entry = dict[str, Any]

SESSION_ID_RE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$")


@dataclass(frozen=True)
class ExternalAppend:
    """Entries another process appended to our file, picked up before our next write."""

    entry_ids: tuple[str, ...]
    leaf_followed: bool


@dataclass(frozen=True)
class SyncResult:
    """What `Session.sync()` found: `appended` (entries adopted from another writer), `reloaded`
    (the file was rewritten by another program and read again), `stale` (it was, but the caller
    asked not to reload yet) or nothing (all falsy)."""

    appended: tuple[str, ...] = ()
    reloaded: bool = False
    stale: bool = False
    reason: str | None = None

    def __bool__(self) -> bool:
        return bool(self.appended) or self.reloaded or self.stale


class TreeQueries:
    """Read-only questions about the tree, shared by the live `Session` and its frozen
    `SessionView` (spec §3, T-2..T-4, T-9, T-10)."""

    header: Entry
    entries: list[Entry]
    by_id: dict[str, Entry]
    leaf_id: str | None
    path: Path | None

    @property
    def session_id(self) -> str:
        return str(self.header["id"])

    @property
    def cwd(self) -> str | None:
        cwd = self.header.get("cwd")
        return cwd if isinstance(cwd, str) else None

    @property
    def in_memory(self) -> bool:
        return self.path is None

    def get_entry(self, entry_id: str) -> Entry | None:
        return self.by_id.get(entry_id)

    def require_entry(self, entry_id: str) -> Entry:
        entry = self.by_id.get(entry_id)
        if entry is None:
            raise EntryNotFoundError(entry_id)
        return entry

    def get_leaf_entry(self) -> Entry | None:
        return self.by_id.get(self.leaf_id) if self.leaf_id is not None else None

    def get_branch(self, from_id: str | None = None) -> list[Entry]:
        """T-3: root-first path to `from_id` (default: the leaf)."""
        return path_to(self.by_id, self.leaf_id if from_id is None else from_id)

    def get_children(self, entry_id: str) -> list[Entry]:
        return [e for e in self.entries if e.get("parentId") == entry_id]

    def labels(self) -> dict[str, str]:
        return resolve_labels(self.entries)

    def get_label(self, entry_id: str) -> str | None:
        return self.labels().get(entry_id)

    def get_tree(self) -> list[TreeNode]:
        return build_tree(self.entries, self.labels())

    def get_session_name(self) -> str | None:
        return latest_session_name(self.entries)

    def has_assistant(self) -> bool:
        return any(_is_assistant(e) for e in self.entries)


@dataclass(frozen=True, eq=False)
class SessionView(TreeQueries):
    """A frozen copy of a session's state for worker threads: appends, leaf moves and reloads on
    the live session do not disturb it. Entry dicts are shared (copying them would cost more than
    most answers); the only in-place change is pruning's swap of an entry's `message` for a new
    dict, a single atomic assignment."""

    header: Entry
    entries: list[Entry]
    by_id: dict[str, Entry]
    leaf_id: str | None
    path: Path | None
    warnings: tuple[LoadWarning, ...]
    migrated_from: int | None
    persisted: bool
    generation: int
    _labels: dict[str, str]

    def labels(self) -> dict[str, str]:
        return self._labels


class Session(TreeQueries):
    """One session: header, entries in file order, leaf pointer, and (optionally) its file."""

    def __init__(
        self,
        header: Entry,
        entries: list[Entry] | None = None,
        path: Path | None = None,
        *,
        fsync: bool = False,
    ) -> None:
        self.header = header
        self.entries: list[Entry] = entries if entries is not None else []
        self.by_id: dict[str, Entry] = {e["id"]: e for e in self.entries}
        self.leaf_id: str | None = self.entries[-1]["id"] if self.entries else None
        self.warnings: list[LoadWarning] = []
        self.migrated_from: int | None = None
        self.external_appends: list[ExternalAppend] = []
        self.generation = 0  # bumped each time the file is reloaded after another program rewrote it
        self.file: SessionFile | None = SessionFile(path, fsync=fsync) if path is not None else None
        self._labels: dict[str, str] | None = None
        self._has_assistant: bool | None = None
        self._name: str | None | object = _UNKNOWN  # latest_session_name, kept up to date by appends
        self._skipped_lines = False  # the file has lines we could not keep: back it up before a rewrite
        self._staged: list[Entry] | None = None  # entries of a batch, written together (`batch()`)

    # --- construction -------------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        cwd: str,
        path: Path | str | None = None,
        *,
        in_memory: bool = False,
        session_id: str | None = None,
        parent_session: str | None = None,
        agent_dir: Path | None = None,
    ) -> "Session":
        """A new session. Without `path` (and not in memory) the file goes to Pi's default folder
        for `cwd` (F-15/F-16). The file is only written once there is an assistant message (F-17)."""
        if session_id is not None and not SESSION_ID_RE.match(session_id):
            raise SessionError(
                "Session id must be non-empty, contain only alphanumeric characters, '-', '_', and '.', "
                "and start and end with an alphanumeric character"
            )
        sid = session_id or str(uuid.uuid4())
        timestamp = now_iso()
        header = drop_none(
            {
                "type": "session",
                "version": CURRENT_SESSION_VERSION,
                "id": sid,
                "timestamp": timestamp,
                "cwd": cwd,
                "parentSession": parent_session,
            }
        )
        if in_memory:
            file_path = None
        elif path is not None:
            file_path = Path(path)
        else:
            file_path = session_dir_for_cwd(cwd, agent_dir) / session_file_name(timestamp, sid)
        return cls(header, [], file_path)

    @classmethod
    def open(cls, path: Path | str, *, cwd: str | None = None) -> "Session":
        """Open a session file (F-20..F-27, D-16, D-17). A missing file starts a new session at
        that path; an empty file is initialised; a non-empty invalid file raises; a path that is
        not a regular file (directory, device, FIFO) is refused before anything is read."""
        path = path if isinstance(path, Path) else Path(path)
        file = SessionFile(path)
        try:
            with gc_paused():
                raw = file.read()
                if raw.state.size >= PROMOTE_MIN_BYTES:
                    promote_young_objects()
        except FileNotFoundError:
            return cls.create(cwd or os.getcwd(), path)
        if raw.header is None:
            if raw.state.size == 0:
                return cls.create(cwd or os.getcwd(), path)
            raise InvalidSessionFileError(path)
        session = cls(raw.header, None, None)
        session.file = file
        session._take(raw)
        if session.warnings or session.migrated_from is not None or os.path.exists(f"{path}.pruned.jsonl"):
            # Only a file compactd rewrites or backs up (migrated, damaged, pruned: the archive is
            # written before the rewrite) can have a temp file of a killed compactd beside it; the
            # folder is listed only then (a listing of a few hundred names costs ~100 us; the
            # archive's name is `pruned_archive_path`, spelled out here to spare an open the Path).
            remove_stale_temps(path)
        return session

    def _take(self, raw: RawFile) -> None:
        """Make this session what `raw` says (a fresh load or a reload)."""
        assert raw.header is not None and self.file is not None
        warnings = list(raw.warnings)
        entries, migrated_from = build_entries(raw.header, raw.parsed, warnings)
        warnings.sort(key=lambda w: w.line)
        self.header = raw.header
        self.entries = entries
        self.by_id = {e["id"]: e for e in entries}
        self.leaf_id = entries[-1]["id"] if entries else None
        self.warnings = warnings
        self.migrated_from = migrated_from
        self._skipped_lines = bool(warnings)
        self._labels = None
        self._has_assistant = None
        self._name = _UNKNOWN
        self.file.adopt_read(raw)

    # --- queries ------------------------------------------------------------------------------

    @property
    def path(self) -> Path | None:
        return self.file.path if self.file is not None else None

    @path.setter
    def path(self, value: Path | None) -> None:
        self.file = SessionFile(Path(value), fsync=self.fsync) if value is not None else None

    @property
    def fsync(self) -> bool:
        return self.file.fsync if self.file is not None else False

    @fsync.setter
    def fsync(self, value: bool) -> None:
        if self.file is not None:
            self.file.fsync = value

    @property
    def persisted(self) -> bool:
        """True once the file exists with our header (F-17)."""
        return self.file is not None and self.file.written

    def labels(self) -> dict[str, str]:
        if self._labels is None:
            self._labels = resolve_labels(self.entries)
        return self._labels

    def has_assistant(self) -> bool:
        if self._has_assistant is None:
            self._has_assistant = any(_is_assistant(e) for e in self.entries)
        return self._has_assistant

    def get_session_name(self) -> str | None:
        # Asked by every session report (open, list), on the event loop: scan once.
        if self._name is _UNKNOWN:
            self._name = latest_session_name(self.entries)
        return self._name  # type: ignore[return-value]

    def snapshot(self) -> SessionView:
        """The frozen read-only view worker threads get."""
        return SessionView(
            header=dict(self.header),
            entries=list(self.entries),
            by_id=dict(self.by_id),
            leaf_id=self.leaf_id,
            path=self.path,
            warnings=tuple(self.warnings),
            migrated_from=self.migrated_from,
            persisted=self.persisted,
            generation=self.generation,
            _labels=dict(self.labels()),
        )

    # --- leaf moves ---------------------------------------------------------------------------

    def branch(self, entry_id: str) -> None:
        """T-5: move the leaf; nothing is written."""
        self.require_entry(entry_id)
        self.leaf_id = entry_id

    def reset_leaf(self) -> None:
        """T-6: the next append creates a new root."""
        self.leaf_id = None

    # --- appends (T-1) ------------------------------------------------------------------------

    def append_message(self, message: dict[str, Any]) -> str:
        return self._append({"type": "message", "message": message})

    def append_thinking_level_change(self, thinking_level: str) -> str:
        return self._append({"type": "thinking_level_change", "thinkingLevel": thinking_level})

    def append_model_change(self, provider: str, model_id: str) -> str:
        return self._append({"type": "model_change", "provider": provider, "modelId": model_id})

    def append_compaction(
        self,
        summary: str,
        first_kept_entry_id: str,
        tokens_before: int,
        details: Any = None,
        from_hook: bool | None = None,
        usage: dict[str, Any] | None = None,
        **extra: Any,
    ) -> str:
        fields = {
            "type": "compaction",
            "summary": summary,
            "firstKeptEntryId": first_kept_entry_id,
            "tokensBefore": tokens_before,
            "details": details,
            "fromHook": bool(from_hook),  # D-2: always written, as Pi does
            "usage": usage,
        }
        fields.update(extra)
        return self._append(drop_none(fields))

    def append_custom_entry(self, custom_type: str, data: Any = None) -> str:
        return self._append(drop_none({"type": "custom", "customType": custom_type, "data": data}))

    def append_custom_message_entry(
        self, custom_type: str, content: Any, display: bool, details: Any = None
    ) -> str:
        return self._append(
            drop_none(
                {
                    "type": "custom_message",
                    "customType": custom_type,
                    "content": content,
                    "display": display,
                    "details": details,
                }
            )
        )

    def append_session_info(self, name: str) -> str:
        return self._append({"type": "session_info", "name": clean_session_name(name)})

    def append_label_change(self, target_id: str, label: str | None) -> str:
        """T-8: a real `label` entry, child of the leaf; empty/None clears."""
        self.require_entry(target_id)
        return self._append(drop_none({"type": "label", "targetId": target_id, "label": label or None}))

    def branch_with_summary(
        self,
        attach_to: str | None,
        summary: str,
        details: Any = None,
        from_hook: bool | None = None,
        usage: dict[str, Any] | None = None,
        *,
        from_id: str | None = None,
    ) -> str:
        """T-7: move the leaf to `attach_to` (None = a new root) and append a `branch_summary`
        there. `fromId` defaults to the attachment point ("root" for None); the navigator passes the
        entry the user left instead (D-5)."""
        if attach_to is not None:
            self.require_entry(attach_to)
        previous_leaf = self.leaf_id
        self.leaf_id = attach_to
        try:
            return self._append(
                drop_none(
                    {
                        "type": "branch_summary",
                        "fromId": from_id if from_id is not None else (attach_to or "root"),
                        "summary": summary,
                        "details": details,
                        "fromHook": bool(from_hook),  # D-2: always written, as Pi does
                        "usage": usage,
                    }
                )
            )
        except BaseException:
            self.leaf_id = previous_leaf
            raise

    def append_entry(self, entry: Entry) -> str:
        """Append a client-built entry of any type (unknown types included); base fields are ours."""
        body = {k: v for k, v in entry.items() if k not in ("id", "parentId", "timestamp")}
        return self._append(body)

    def new_entry_id(self) -> str:
        """F-7: first 8 hex chars of a random UUID, retried on collision; full UUID after 100."""
        for _ in range(100):
            candidate = uuid.uuid4().hex[:8]
            if candidate not in self.by_id and (self._staged is None or all(e["id"] != candidate for e in self._staged)):
                return candidate
        return str(uuid.uuid4())

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Appends made inside are written together with one write when the block ends, or not at
        all: if any of them or the write fails, the file and the session are as before."""
        if self._staged is not None:
            raise SessionError("appends are already being batched")
        if self.persisted:
            self._check_disk()
        leaf = self.leaf_id
        self._staged = []
        try:
            yield
            staged, self._staged = self._staged, None
            self.leaf_id = leaf
            if staged:
                self._write_and_commit(staged)
        except BaseException:
            self._staged = None
            self.leaf_id = leaf
            raise

    def _append(self, fields: Entry) -> str:
        entry_type = fields["type"]
        if self.persisted and self._staged is None:
            self._check_disk()  # adopt another writer's lines first so our parentId is right
        entry: Entry = {"type": entry_type, "id": self.new_entry_id(), "parentId": self.leaf_id, "timestamp": now_iso()}
        entry.update((k, v) for k, v in fields.items() if k != "type")
        checkpoint = entry.get("systemMessage")
        if entry_type == "compaction" and isinstance(checkpoint, dict):
            # Q16-14: the checkpoint carries the compaction entry's own time.
            entry["systemMessage"] = {**checkpoint, "timestamp": iso_to_ms(entry["timestamp"])}
        if self._staged is not None:
            self._staged.append(entry)
            self.leaf_id = entry["id"]  # the next entry of the batch is its child
            return entry["id"]
        self._write_and_commit([entry])
        return entry["id"]

    def _commit(self, entry: Entry) -> None:
        self.entries.append(entry)
        self.by_id[entry["id"]] = entry
        self.leaf_id = entry["id"]
        entry_type = entry.get("type")
        if entry_type == "label":
            self._labels = None
        elif entry_type == "session_info":
            self._name = latest_session_name([entry])  # the newest one decides
        if self._has_assistant is False and _is_assistant(entry):
            self._has_assistant = True

    # --- persistence (the rules live in file.SessionFile) ---------------------------------------

    def _write_and_commit(self, new_entries: list[Entry]) -> None:
        """Write `new_entries` (one write), then take them into the session, in file order with
        whatever another writer appended just before them. On failure nothing changes here."""
        if self.file is not None and not self.file.written:
            if self.has_assistant() or any(_is_assistant(e) for e in new_entries):
                self.file.create(_encode([self.header, *self.entries, *new_entries]))
            # else F-17: buffered until the first assistant message
        elif self.file is not None:
            if self.migrated_from is not None:
                self.rewrite(checked=True)
            landed = self.file.append(_encode(new_entries))
            if landed is None:  # only ours landed
                for entry in new_entries:
                    self._commit(entry)
                return
            foreign: list[str] = []
            for item in landed:
                if item.ours >= 0:
                    self._commit(new_entries[item.ours])
                else:
                    adopted = self._adopt_line(item.raw, item.line)
                    if adopted is not None:
                        foreign.append(adopted)
            if foreign:
                self.external_appends.append(ExternalAppend(tuple(foreign), False))
            return
        for entry in new_entries:
            self._commit(entry)

    def sync(self, *, reload: bool = True) -> SyncResult:
        """Catch up with the file on disk: adopt complete lines another writer appended, or — when
        the bytes we know changed (Pi migrating the file in place, a rename over it, truncation) —
        read the whole file again (`reload=False`: only report it as `stale`). Never writes.
        Raises ConcurrentModificationError when the file was removed or a line is half written
        (nothing changes then)."""
        if not self.persisted:
            return SyncResult()
        try:
            return SyncResult(appended=self._check_disk())
        except FileRewrittenError as exc:
            if not reload:
                return SyncResult(stale=True, reason=str(exc))
            self.reload()
            return SyncResult(reloaded=True, reason=str(exc))

    def changed_on_disk(self) -> bool:
        """A cheap test (one stat) for "sync() may have something to do"."""
        return self.file is not None and self.file.changed()

    def reload(self, raw: RawFile | None = None) -> None:
        """Take the file as it is now (after another program rewrote it); `raw` may come from
        `self.file.read()` run in a worker thread. The leaf stays where it was if that entry still
        exists and was not the tip; otherwise it is the file's last entry."""
        assert self.file is not None
        old_leaf, old_tip = self.leaf_id, (self.entries[-1]["id"] if self.entries else None)
        if raw is None:
            with gc_paused():
                raw = self.file.read()
        if raw.header is None and raw.state.size == 0:
            self._emptied()  # truncated to nothing: as an empty file is opened (F-22)
            return
        if raw.header is None:
            raise InvalidSessionFileError(self.file.path)
        if raw.header.get("id") != self.session_id:
            raise ConcurrentModificationError(
                f"{self.file.path} now holds another session ({raw.header.get('id')}); close and open it again")
        self._take(raw)
        if old_leaf is not None and old_leaf != old_tip and old_leaf in self.by_id:
            self.leaf_id = old_leaf
        self.generation += 1

    def _emptied(self) -> None:
        """The file was truncated to 0 bytes by another program: the session becomes what opening
        an empty file gives (same id and header, no entries; written again from the first assistant
        message on, F-17/F-22). What was in the file is gone from it, not something we could keep."""
        assert self.file is not None
        self.entries = []
        self.by_id = {}
        self.leaf_id = None
        self.warnings = []
        self.migrated_from = None
        self._skipped_lines = False
        self._labels = None
        self._has_assistant = False
        self._name = None
        self.file = SessionFile(self.file.path, fsync=self.file.fsync)
        self.header["version"] = CURRENT_SESSION_VERSION
        self.generation += 1

    def _check_disk(self) -> tuple[str, ...]:
        """D-18, before every write: complete lines appended by another writer are adopted; a file
        whose known bytes changed raises FileRewrittenError and nothing here changes (never write
        on a stale view); a half-written line raises ConcurrentModificationError."""
        assert self.file is not None
        tail = self.file.check()
        if tail is None:
            return ()
        return self._adopt(tail)

    def _adopt(self, tail: Tail) -> tuple[str, ...]:
        assert self.file is not None
        was_at_tip = bool(self.entries) and self.leaf_id == self.entries[-1]["id"]
        line_no = tail.first_line - 1
        adopted: list[str] = []
        for raw in tail.data.split(b"\n")[:-1]:
            line_no += 1
            entry_id = self._adopt_line(raw, line_no)
            if entry_id is not None:
                adopted.append(entry_id)
        if adopted and was_at_tip:
            self.leaf_id = adopted[-1]
        self.external_appends.append(ExternalAppend(tuple(adopted), bool(adopted) and was_at_tip))
        self.file.accept(tail)
        return tuple(adopted)

    def _adopt_landed(self, landed: list[Landed]) -> tuple[str, ...]:
        """Lines another writer appended, found by a write of ours (all foreign)."""
        was_at_tip = bool(self.entries) and self.leaf_id == self.entries[-1]["id"]
        adopted = [entry_id for item in landed if (entry_id := self._adopt_line(item.raw, item.line)) is not None]
        if adopted and was_at_tip:
            self.leaf_id = adopted[-1]
        if adopted:
            self.external_appends.append(ExternalAppend(tuple(adopted), was_at_tip))
        return tuple(adopted)

    def _adopt_line(self, raw: bytes, line_no: int) -> str | None:
        """One line another writer appended: the entry's id once adopted, None when skipped (the
        line stays in the file; a later rewrite backs the file up first, as it would drop it)."""
        if not raw.strip():
            return None
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError:
            self._skip_line(line_no, "invalid JSON appended by another process; skipped")
            return None
        entry_id = obj.get("id") if isinstance(obj, dict) else None
        if not isinstance(obj.get("type") if isinstance(obj, dict) else None, str) or not isinstance(entry_id, str):
            self._skip_line(line_no, "entry appended by another process has no id/type; skipped")
            return None
        if entry_id in self.by_id:
            self._skip_line(line_no, f"duplicate id {entry_id} appended by another process; skipped")
            return None
        check_parent(obj, line_no, self.warnings)
        self.entries.append(obj)
        self.by_id[entry_id] = obj
        # What is derived from every entry follows the new ones (a rescan would run on the loop).
        entry_type = obj.get("type")
        if entry_type == "label":
            self._labels = None
        elif entry_type == "session_info":
            self._name = latest_session_name([obj])
        if self._has_assistant is False and _is_assistant(obj):
            self._has_assistant = True
        return entry_id

    def _skip_line(self, line_no: int, message: str) -> None:
        self.warnings.append(LoadWarning(line_no, message))
        self._skipped_lines = True

    def _backup_original(self) -> None:
        """D-16: keep the pre-migration bytes as `<file>.v<N>.bak` before the first rewrite.
        Also before rewriting a file whose load skipped lines (torn, invalid, oversized): the
        rewrite would drop them, so the original bytes go to `<file>.bak` first."""
        assert self.file is not None
        path = self.file.path
        if self.migrated_from is not None:
            self.file.backup(path.with_name(f"{path.name}.v{self.migrated_from}.bak"))
        elif self._skipped_lines:
            self.file.backup(path.with_name(f"{path.name}.bak"))
        self._skipped_lines = False

    def rewrite(self, *, checked: bool = False) -> None:
        """Atomically replace the file with the current header and entries (temp file, fsync,
        rename, fsync of the folder). Used for migrations and pruning. Refused (FileRewrittenError,
        nothing written, nothing changed) when another program rewrote the file since we read it."""
        if self.file is None:
            return
        if self.file.written:
            if not checked:
                self._check_disk()
            self._backup_original()
        late = self.file.rewrite(lambda old, start: render(old, start, self.header, self.entries, self.by_id))
        self.migrated_from = None
        if late:
            self._adopt_landed(late)

    # --- forks (T-11) -------------------------------------------------------------------------

    def fork(self, leaf_id: str, path: Path | str | None = None, *, in_memory: bool | None = None) -> "Session":
        """createBranchedSession: a new session holding the path to `leaf_id` (labels dropped and
        the rest re-chained), then the resolved labels of path entries re-applied. Written at once
        when the path holds an assistant message, else lazily (F-17)."""
        branch = self.get_branch(leaf_id)
        if not branch:
            raise EntryNotFoundError(leaf_id)
        in_memory = self.in_memory if in_memory is None else in_memory
        kept: list[Entry] = []
        previous: str | None = None
        for entry in branch:
            if entry.get("type") == "label":
                continue
            copy = dict(entry)
            copy["parentId"] = previous
            kept.append(copy)
            previous = copy["id"]
        on_path = {e["id"] for e in kept}
        label_times = {}
        for entry in self.entries:
            if entry.get("type") == "label" and isinstance(entry.get("targetId"), str):
                label_times[entry["targetId"]] = entry.get("timestamp")
        new = Session.create(
            self.cwd or os.getcwd(),
            None if in_memory else path,
            in_memory=in_memory,
            parent_session=str(self.path) if self.path is not None else None,
        )
        if not in_memory and path is None and self.path is not None:
            new.path = self.path.parent / session_file_name(new.header["timestamp"], new.session_id)
        new.entries = kept
        new.by_id = {e["id"]: e for e in kept}
        for target, label in self.labels().items():
            if target in on_path:
                label_entry: dict[str, Any] = {
                    "type": "label",
                    "id": new.new_entry_id(),
                    "parentId": previous,
                    "timestamp": label_times.get(target) or now_iso(),
                    "targetId": target,
                    "label": label,
                }
                new.entries.append(label_entry)
                new.by_id[label_entry["id"]] = label_entry
                previous = label_entry["id"]
        new.leaf_id = previous
        if new.path is not None and new.has_assistant():
            assert new.file is not None
            new.file.create(_encode([new.header, *new.entries]))
        return new


# From this size on, a read leaves enough young containers for the collector's passes to matter.
PROMOTE_MIN_BYTES = 4 * 1024 * 1024


def promote_young_objects() -> None:
    """Move every young container (after a read, mostly the parsed file) straight to the oldest
    generation: `freeze` + `unfreeze`, two list splices. Left young, the collector's first passes
    would scan them all, and again when they age a generation: on a 20k-entry file that tripled
    the time of an open. They stay collectable like any old object. Only for large reads, since
    young cyclic garbage is promoted too and then waits for a full pass. Skipped when something
    is frozen already (the daemon freezes long sessions, `rpc/heap.py`): `unfreeze` would hand
    that back to the collector."""
    if gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()


def pruned_archive_path(path: Path) -> Path:
    """Pruning's archive beside the file, `<file>.pruned.jsonl` (`engine.pruner.archive_path`)."""
    return path.with_name(path.name + ".pruned.jsonl")


def _is_assistant(entry: Entry) -> bool:
    if entry.get("type") != "message":
        return False
    message = entry.get("message")
    return isinstance(message, dict) and message.get("role") == "assistant"


def _encode(objs: Iterable[Entry]) -> list[bytes]:
    try:
        return [(encode_line(obj) + "\n").encode() for obj in objs]
    except UnicodeEncodeError as exc:  # a lone surrogate ("\ud800" in the JSON received): no UTF-8 form
        bad = exc.object[exc.start : exc.end].encode("unicode_escape", "backslashreplace").decode()
        raise SessionError(f"An entry holds text that is not valid Unicode ({bad}); nothing was written") from None


def iter_lines(session: Session) -> Iterable[str]:
    """The file content we would write for this session, line by line (header first)."""
    yield encode_line(session.header)
    for entry in session.entries:
        yield encode_line(entry)
