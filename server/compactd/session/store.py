"""The JSONL session store: load (with migration), append, atomic rewrite, tree operations.

Spec §2.5–2.7 and §3, decisions D-16..D-18. Entries are kept as the plain dicts of the file so
nothing unknown is lost. Writes go to disk before the in-memory state changes, so a failed write
leaves the session exactly as it was.
"""

from __future__ import annotations

import gc
import hashlib
import os
import re
import shutil
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import orjson

from .clock import now_iso
from .model import CURRENT_SESSION_VERSION, drop_none, encode_line
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

Entry = dict[str, Any]

SESSION_ID_RE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$")

# Loader limits (documented in README "Reliability"). A line longer than MAX_LINE_BYTES is skipped
# with a warning instead of being read into memory and parsed; JSON nested deeper than orjson's
# fixed limit (1024 levels) fails to parse and is reported like any other invalid line.
MAX_LINE_BYTES = 64 * 1024 * 1024
_SKIP_CHUNK = 1024 * 1024


class SessionError(Exception):
    """Base class; `str(exc)` is the user-facing message."""


class EntryNotFoundError(SessionError):
    def __init__(self, entry_id: str | None) -> None:
        super().__init__(f"Entry {entry_id} not found")
        self.entry_id = entry_id


class InvalidSessionFileError(SessionError):
    def __init__(self, path: Path) -> None:
        super().__init__(f"Session file is not a valid pi session: {path}")
        self.path = path


class ConcurrentModificationError(SessionError):
    """Another process changed the file in a way we cannot safely merge (D-18)."""


@dataclass(frozen=True)
class LoadWarning:
    line: int
    message: str


@dataclass(frozen=True)
class ExternalAppend:
    """Entries another process appended to our file, picked up before our next write."""

    entry_ids: tuple[str, ...]
    leaf_followed: bool


def _deterministic_id(session_id: str, line_no: int, taken: set[str]) -> str:
    """D-16: ids for migrated v1 entries derive from the session id and line number, so opening
    the same file twice yields the same ids."""
    salt = 0
    while True:
        key = f"{session_id}:{line_no}:{salt}".encode()
        candidate = hashlib.blake2b(key, digest_size=4).hexdigest()
        if candidate not in taken:
            return candidate
        salt += 1


@dataclass
class _FileState:
    """What the file looked like after our last read or write (for D-18)."""

    inode: int
    size: int
    mtime_ns: int
    ends_with_newline: bool
    lines: int


class Session:
    """One session: header, entries in file order, leaf pointer, and (optionally) its file."""

    def __init__(
        self,
        header: Entry,
        entries: list[Entry] | None = None,
        path: Path | None = None,
        *,
        flushed: bool = False,
        fsync: bool = False,
    ) -> None:
        self.header = header
        self.entries: list[Entry] = entries if entries is not None else []
        self.by_id: dict[str, Entry] = {e["id"]: e for e in self.entries}
        self.leaf_id: str | None = self.entries[-1]["id"] if self.entries else None
        self.path = path
        self.warnings: list[LoadWarning] = []
        self.migrated_from: int | None = None
        self.external_appends: list[ExternalAppend] = []
        self.fsync = fsync
        self._flushed = flushed
        self._file: _FileState | None = None
        self._labels: dict[str, str] | None = None
        self._has_assistant: bool | None = None
        self._skipped_lines = False  # the loaded file had lines we could not keep: back it up before a rewrite

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
        that path; an empty file is initialised; a non-empty invalid file raises."""
        path = Path(path)
        try:
            handle = open(path, "rb")
        except FileNotFoundError:
            return cls.create(cwd or os.getcwd(), path)
        with handle, gc_paused():
            session = cls._load(handle, path)
            stat = os.fstat(handle.fileno())
        if session is None:
            if stat.st_size == 0:
                return cls.create(cwd or os.getcwd(), path)
            raise InvalidSessionFileError(path)
        return session

    @classmethod
    def _load(cls, handle: Any, path: Path) -> "Session | None":
        loads = orjson.loads
        warnings: list[LoadWarning] = []
        parsed: list[tuple[int, Entry]] = []  # (line number, object), header first
        header: Entry | None = None
        line_no = 0
        size = 0
        last_newline = True
        readline = handle.readline
        while raw := readline(MAX_LINE_BYTES + 1):
            line_no += 1
            size += len(raw)
            last_newline = raw.endswith(b"\n")
            if len(raw) > MAX_LINE_BYTES and not last_newline:
                length = len(raw)  # oversized: skip to the end of the line without keeping it
                while not last_newline and (chunk := readline(_SKIP_CHUNK)):
                    length += len(chunk)
                    last_newline = chunk.endswith(b"\n")
                size += length - len(raw)
                warnings.append(
                    LoadWarning(line_no, f"line of {length} bytes exceeds the limit of {MAX_LINE_BYTES} bytes; skipped")
                )
                continue
            if not raw.strip():
                continue
            try:
                obj = loads(raw)
            except orjson.JSONDecodeError as exc:
                if not last_newline:
                    warnings.append(LoadWarning(line_no, "incomplete final line (torn write) skipped"))
                else:
                    warnings.append(LoadWarning(line_no, f"invalid JSON skipped: {exc}"))
                continue
            if header is None:
                if not (isinstance(obj, dict) and obj.get("type") == "session" and isinstance(obj.get("id"), str)):
                    return None  # F-21: the first parsed line must be the header
                header = obj
                parsed.append((line_no, obj))
                continue
            if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
                warnings.append(LoadWarning(line_no, "not a session entry (expected an object with a string 'type'); skipped"))
                continue
            parsed.append((line_no, obj))
        if header is None:
            return None

        version = header.get("version")
        version = version if isinstance(version, int) else 1
        entries: list[Entry] = []
        if version < 2:
            entries = cls._migrate_v1(header["id"], parsed)
        else:
            seen: dict[str, int] = {}
            for line, obj in parsed[1:]:
                entry_id = obj.get("id")
                if not isinstance(entry_id, str) or not entry_id:
                    warnings.append(LoadWarning(line, "entry has no string 'id'; skipped"))
                    continue
                if entry_id in seen:
                    warnings.append(LoadWarning(line, f"duplicate id {entry_id} (first on line {seen[entry_id]}); skipped"))
                    continue
                seen[entry_id] = line
                _check_parent(obj, line, warnings)
                entries.append(obj)
        if version < 3:
            for entry in entries:  # F-26
                message = entry.get("message") if entry.get("type") == "message" else None
                if isinstance(message, dict) and message.get("role") == "hookMessage":
                    message["role"] = "custom"

        session = cls(header, entries, path, flushed=True)
        session.warnings = warnings
        session._skipped_lines = bool(warnings)
        if version < CURRENT_SESSION_VERSION:
            session.migrated_from = version
            header["version"] = CURRENT_SESSION_VERSION
        stat = os.fstat(handle.fileno())
        session._file = _FileState(stat.st_ino, size, stat.st_mtime_ns, last_newline, line_no)
        return session

    @staticmethod
    def _migrate_v1(session_id: str, parsed: list[tuple[int, Entry]]) -> list[Entry]:
        """F-25: chain entries in file order with fresh ids; compaction `firstKeptEntryIndex`
        (an index into the parsed lines, header = 0) becomes `firstKeptEntryId`."""
        taken: set[str] = set()
        entries: list[Entry] = []
        previous: str | None = None
        for line, obj in parsed[1:]:
            entry_id = _deterministic_id(session_id, line, taken)
            taken.add(entry_id)
            migrated = {"type": obj["type"], "id": entry_id, "parentId": previous}
            migrated.update((k, v) for k, v in obj.items() if k not in ("type", "id", "parentId"))
            entries.append(migrated)
            previous = entry_id
        for entry in entries:
            if entry["type"] != "compaction" or "firstKeptEntryIndex" not in entry:
                continue
            index = entry.pop("firstKeptEntryIndex")
            if isinstance(index, int) and not isinstance(index, bool) and 1 <= index < len(parsed):
                entry["firstKeptEntryId"] = entries[index - 1]["id"]
        return entries

    # --- queries ------------------------------------------------------------------------------

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

    @property
    def persisted(self) -> bool:
        """True once the file exists with our header (F-17)."""
        return self._flushed

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
        if self._labels is None:
            self._labels = resolve_labels(self.entries)
        return self._labels

    def get_label(self, entry_id: str) -> str | None:
        return self.labels().get(entry_id)

    def get_tree(self) -> list[TreeNode]:
        return build_tree(self.entries, self.labels())

    def get_session_name(self) -> str | None:
        return latest_session_name(self.entries)

    def has_assistant(self) -> bool:
        if self._has_assistant is None:
            self._has_assistant = any(_is_assistant(e) for e in self.entries)
        return self._has_assistant

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
            "fromHook": True if from_hook else None,
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
                        "fromHook": True if from_hook else None,
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
            if candidate not in self.by_id:
                return candidate
        return str(uuid.uuid4())

    def _append(self, fields: Entry) -> str:
        entry_type = fields["type"]
        if self.path is not None and self._flushed:
            self._sync_with_disk()  # adopt another writer's lines first so our parentId is right
        entry: Entry = {"type": entry_type, "id": self.new_entry_id(), "parentId": self.leaf_id, "timestamp": now_iso()}
        entry.update((k, v) for k, v in fields.items() if k != "type")
        self._persist([entry])
        self._commit(entry)
        return entry["id"]

    def _commit(self, entry: Entry) -> None:
        self.entries.append(entry)
        self.by_id[entry["id"]] = entry
        self.leaf_id = entry["id"]
        if entry.get("type") == "label":
            self._labels = None
        if self._has_assistant is False and _is_assistant(entry):
            self._has_assistant = True

    # --- persistence --------------------------------------------------------------------------

    def _persist(self, new_entries: list[Entry]) -> None:
        if self.path is None:
            return
        if not self._flushed:
            if not (self.has_assistant() or any(_is_assistant(e) for e in new_entries)):
                return  # F-17: buffered until the first assistant message
            self._write_new_file(self.entries + new_entries)
            return
        if self.migrated_from is not None:
            self._backup_original()
            self.rewrite()
        data = "".join(encode_line(e) + "\n" for e in new_entries).encode()
        assert self._file is not None
        if not self._file.ends_with_newline:
            data = b"\n" + data  # repair a torn final line before appending (D-18)
        self._append_bytes(data)

    def _write_new_file(self, entries: list[Entry]) -> None:
        assert self.path is not None
        data = "".join(encode_line(e) + "\n" for e in [self.header, *entries]).encode()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Exclusive create; an existing empty file (F-22) may be claimed too.
        if self.path.exists() and self.path.stat().st_size == 0:
            flags = os.O_WRONLY | os.O_APPEND
        else:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND
        try:
            fd = os.open(self.path, flags, 0o644)
        except FileExistsError as exc:
            raise ConcurrentModificationError(f"Cannot create session file, it already exists: {self.path}") from exc
        try:
            _write_all(fd, data)
            if self.fsync:
                os.fsync(fd)
            stat = os.fstat(fd)
        finally:
            os.close(fd)
        self._file = _FileState(stat.st_ino, stat.st_size, stat.st_mtime_ns, True, len(entries) + 1)
        self._flushed = True

    def _append_bytes(self, data: bytes) -> None:
        assert self.path is not None and self._file is not None
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        try:
            _write_all(fd, data)
            if self.fsync:
                os.fsync(fd)
            stat = os.fstat(fd)
        finally:
            os.close(fd)
        # A repaired torn line was already counted, so its newline adds no line.
        lines = self._file.lines + data.count(b"\n") - (0 if self._file.ends_with_newline else 1)
        self._file = _FileState(stat.st_ino, stat.st_size, stat.st_mtime_ns, True, lines)

    def _sync_with_disk(self) -> None:
        """D-18: before writing, make sure nobody else changed the file under us. Complete lines
        appended by another writer are adopted; anything else is refused with a clear error."""
        assert self.path is not None and self._file is not None
        try:
            stat = os.stat(self.path)
        except FileNotFoundError as exc:
            raise ConcurrentModificationError(f"Session file was removed by another process: {self.path}") from exc
        known = self._file
        if stat.st_ino == known.inode and stat.st_size == known.size and stat.st_mtime_ns == known.mtime_ns:
            return
        if stat.st_ino != known.inode or stat.st_size < known.size:
            raise ConcurrentModificationError(
                f"Session file was replaced or truncated by another process: {self.path}; reopen it"
            )
        if stat.st_size == known.size:
            self._file = _FileState(stat.st_ino, stat.st_size, stat.st_mtime_ns, known.ends_with_newline, known.lines)
            return
        with open(self.path, "rb") as handle:
            handle.seek(known.size)
            tail = handle.read(stat.st_size - known.size)
        if not tail.endswith(b"\n"):
            raise ConcurrentModificationError(
                f"Another process is writing to {self.path} (incomplete line at the end); try again"
            )
        self._adopt_external_tail(tail, known, stat)

    def _adopt_external_tail(self, tail: bytes, known: _FileState, stat: os.stat_result) -> None:
        was_at_tip = bool(self.entries) and self.leaf_id == self.entries[-1]["id"]
        line_no = known.lines
        text = tail
        if not known.ends_with_newline:
            # Our last line was torn; the other writer's first bytes continue it. Treat the joined
            # line as damaged only if it does not parse.
            line_no -= 1
        adopted: list[str] = []
        for raw in text.split(b"\n")[:-1]:
            line_no += 1
            if not raw.strip():
                continue
            try:
                obj = orjson.loads(raw)
            except orjson.JSONDecodeError:
                self.warnings.append(LoadWarning(line_no, "invalid JSON appended by another process; skipped"))
                continue
            entry_id = obj.get("id") if isinstance(obj, dict) else None
            if not isinstance(obj.get("type") if isinstance(obj, dict) else None, str) or not isinstance(entry_id, str):
                self.warnings.append(LoadWarning(line_no, "entry appended by another process has no id/type; skipped"))
                continue
            if entry_id in self.by_id:
                self.warnings.append(LoadWarning(line_no, f"duplicate id {entry_id} appended by another process; skipped"))
                continue
            _check_parent(obj, line_no, self.warnings)
            self.entries.append(obj)
            self.by_id[entry_id] = obj
            adopted.append(entry_id)
        self._labels = None
        self._has_assistant = None
        if adopted and was_at_tip:
            self.leaf_id = adopted[-1]
        self.external_appends.append(ExternalAppend(tuple(adopted), bool(adopted) and was_at_tip))
        self._file = _FileState(stat.st_ino, stat.st_size, stat.st_mtime_ns, True, known.lines + tail.count(b"\n"))

    def _backup_original(self) -> None:
        """D-16: keep the pre-migration bytes as `<file>.v<N>.bak` before the first rewrite.
        Also before rewriting a file whose load skipped lines (torn, invalid, oversized): the
        rewrite would drop them, so the original bytes go to `<file>.bak` first. The copy is
        atomic (temp file + rename), so an existing backup is always complete."""
        assert self.path is not None
        if self.migrated_from is not None:
            backup = self.path.with_name(f"{self.path.name}.v{self.migrated_from}.bak")
        elif self._skipped_lines:
            backup = self.path.with_name(f"{self.path.name}.bak")
        else:
            return
        if not backup.exists():
            temp = backup.with_name(f".{backup.name}.{os.getpid()}.tmp")
            shutil.copy2(self.path, temp)
            fd = os.open(temp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temp, backup)
            _fsync_dir(self.path.parent)
        self._skipped_lines = False

    def rewrite(self) -> None:
        """Atomically replace the file with the current header and entries (temp file, fsync,
        rename, fsync of the folder). Used for migrations and pruning."""
        if self.path is None:
            return
        old_fd: int | None = None
        if self._flushed:
            self._sync_with_disk()
            self._backup_original()
            # Keep the old file open: a line another writer appends to it between our check and the
            # rename would otherwise vanish with the old inode; we carry it over below.
            old_fd = os.open(self.path, os.O_RDONLY)
        try:
            known_size = self._file.size if self._file is not None else 0
            data = "".join(encode_line(e) + "\n" for e in [self.header, *self.entries]).encode()
            self.path.parent.mkdir(parents=True, exist_ok=True)
            temp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                _write_all(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temp, self.path)
            _fsync_dir(self.path.parent)
            stat = os.stat(self.path)
            self._file = _FileState(stat.st_ino, stat.st_size, stat.st_mtime_ns, True, len(self.entries) + 1)
            self._flushed = True
            self.migrated_from = None
            if old_fd is not None:
                self._carry_over_late_lines(old_fd, known_size)
        finally:
            if old_fd is not None:
                os.close(old_fd)

    def _carry_over_late_lines(self, old_fd: int, known_size: int) -> None:
        """Lines appended to the replaced file after our last check: append them to the new file
        unchanged and adopt them, as if they had been appended after the rewrite."""
        tail = b""
        for _ in range(50):  # a writer caught mid-line gets a moment to finish it
            size = os.fstat(old_fd).st_size
            if size <= known_size:
                return
            tail = os.pread(old_fd, size - known_size, known_size)
            if tail.endswith(b"\n"):
                break
            time.sleep(0.01)
        complete = tail[: tail.rfind(b"\n") + 1]
        if len(complete) < len(tail):
            self.warnings.append(LoadWarning(self._file.lines if self._file else 0,
                                             "another process left an incomplete line during a rewrite; dropped"))
        if not complete:
            return
        assert self._file is not None
        known = self._file
        self._append_bytes(complete)
        stat = os.stat(self.path)
        self._adopt_external_tail(complete, known, stat)

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
                label_entry = {
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
            new._write_new_file(new.entries)
        return new


@contextmanager
def gc_paused() -> Iterator[None]:
    """Suspend the cyclic garbage collector while building many containers that cannot form
    cycles (parsed JSON): otherwise its full passes re-scan the growing heap again and again,
    which costs more than the parsing itself on large files. Reference counting still frees."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _check_parent(entry: Entry, line: int, warnings: list[LoadWarning]) -> None:
    """A parentId that is not a string (or null) cannot link to anything: the entry becomes a root
    so tree walks stay well-typed; the warning names the line."""
    parent = entry.get("parentId")
    if parent is not None and not isinstance(parent, str):
        warnings.append(LoadWarning(line, f"parentId is a {type(parent).__name__}, not a string; entry treated as a root"))
        entry["parentId"] = None


def _is_assistant(entry: Entry) -> bool:
    if entry.get("type") != "message":
        return False
    message = entry.get("message")
    return isinstance(message, dict) and message.get("role") == "assistant"


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def iter_lines(session: Session) -> Iterable[str]:
    """The file content we would write for this session, line by line (header first)."""
    yield encode_line(session.header)
    for entry in session.entries:
        yield encode_line(entry)
