"""From parsed file lines to v3 entries (F-23..F-27, D-16, D-17): pure, no I/O.

v1 entries get ids and a linear parent chain, v1 compaction indexes become ids, v2 hook messages
become custom messages. Entries that cannot join the tree (no id, duplicate id) are reported with
their line number and left out.
"""

from __future__ import annotations

import hashlib
from typing import Any

from .errors import LoadWarning
from .lines import CURRENT_SESSION_VERSION

Entry = dict[str, Any]


def file_version(header: Entry) -> int:
    version = header.get("version")
    return version if isinstance(version, int) and not isinstance(version, bool) else 1


def build_entries(header: Entry, parsed: list[tuple[int, Entry]], warnings: list[LoadWarning]) -> tuple[list[Entry], int | None]:
    """Entries in file order and the version migrated from (None: already current). `header`
    gets the current version when migrated; `warnings` receives one item per dropped line."""
    version = file_version(header)
    if version < 2:
        entries = _migrate_v1(str(header["id"]), parsed)
    else:
        entries = []
        first_line: dict[str, int] = {}  # id -> the line it was first seen on
        for line, obj in parsed:
            entry_id = obj.get("id")
            if not isinstance(entry_id, str) or not entry_id:
                warnings.append(LoadWarning(line, "entry has no string 'id'; skipped"))
                continue
            if entry_id in first_line:
                warnings.append(LoadWarning(line, f"duplicate id {entry_id} (first on line {first_line[entry_id]}); skipped"))
                continue
            first_line[entry_id] = line
            parent = obj.get("parentId")
            if parent is not None and parent.__class__ is not str:  # inlined `check_parent`: 100k calls at open
                check_parent(obj, line, warnings)
            entries.append(obj)
    if version < 3:
        for entry in entries:  # F-26
            message = entry.get("message") if entry.get("type") == "message" else None
            if isinstance(message, dict) and message.get("role") == "hookMessage":
                message["role"] = "custom"
    if version < CURRENT_SESSION_VERSION:
        header["version"] = CURRENT_SESSION_VERSION
        return entries, version
    return entries, None


def check_parent(entry: Entry, line: int, warnings: list[LoadWarning]) -> None:
    """A parentId that is not a string (or null) cannot link to anything: the entry becomes a root
    so tree walks stay well-typed; the warning names the line."""
    parent = entry.get("parentId")
    if parent is not None and not isinstance(parent, str):
        warnings.append(LoadWarning(line, f"parentId is a {type(parent).__name__}, not a string; entry treated as a root"))
        entry["parentId"] = None


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


def _migrate_v1(session_id: str, parsed: list[tuple[int, Entry]]) -> list[Entry]:
    """F-25: chain entries in file order with fresh ids; compaction `firstKeptEntryIndex`
    (an index into the parsed lines, header = 0) becomes `firstKeptEntryId`."""
    taken: set[str] = set()
    entries: list[Entry] = []
    previous: str | None = None
    for line, obj in parsed:
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
        if isinstance(index, int) and not isinstance(index, bool) and 1 <= index <= len(entries):
            entry["firstKeptEntryId"] = entries[index - 1]["id"]
    return entries
