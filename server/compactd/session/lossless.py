"""The lines of a rewrite (pruning, migration): unchanged lines keep their original bytes.

Reading a line and writing it back through Python's JSON is not the identity: a big integer
becomes a float (`123456789012345678901234567890` -> `1.2345678901234568e+29`), `-0` becomes `0`,
`1E2` becomes `100.0`, key spacing and escapes change. Those fields belong to Pi or to whoever wrote
them, so a rewrite writes every line whose entry compactd did not change byte for byte as it was,
and encodes only the changed ones (a pruned tool result, a migrated entry, the migrated header).

"Unchanged" is decided on the file as it is at the moment of the rewrite (its bytes verified by
`SessionFile.rewrite`): the first line holding an entry's id is parsed again and compared with the
entry in memory. No bookkeeping on the append or open paths.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from .lines import encode_line

Entry = dict[str, Any]


def _same(on_disk: Any, in_memory: Any) -> bool:
    try:
        return bool(on_disk == in_memory)
    except RecursionError:
        # Too deep to compare (near orjson's 1024 levels). compactd's own edits (pruning's new
        # message, a migration's renamed role) change a dict's size or an early key, which the
        # comparison finds before descending; so an entry this deep is one we did not touch.
        return True


def render(old: bytes, start: int, header: Entry, entries: Sequence[Entry], by_id: dict[str, Entry]) -> list[bytes]:
    """The new file's lines (header first, one per entry, each ending with a newline) for a file
    whose current bytes are `old`, the header line starting at `start` (after a title slot)."""
    kept = unchanged_lines(old, start, header, by_id) if old else {}
    head = kept.pop(None, None)
    lines = [head if head is not None else _encode(header)]
    for entry in entries:
        raw = kept.get(entry["id"])
        lines.append(raw if raw is not None else _encode(entry))
    return lines


def unchanged_lines(old: bytes, start: int, header: Entry, by_id: dict[str, Entry]) -> dict[str | None, bytes]:
    """Entry id (None: the header) -> its line in `old` (with the newline), for each entry whose
    line, parsed again, equals the entry in memory. Mirrors the loader: the header is the first
    line that parses; an id counts on the first line that holds it; a torn last line is never kept."""
    loads = orjson.loads
    kept: dict[str | None, bytes] = {}
    seen: set[str] = set()
    header_found = False
    pos = start
    size = len(old)
    while pos < size:
        newline = old.find(b"\n", pos)
        if newline < 0:
            break
        line_start, pos = pos, newline + 1
        if newline == line_start:
            continue
        try:
            obj = loads(old[line_start:newline])
        except orjson.JSONDecodeError:
            continue
        if not header_found:
            header_found = True
            if _same(obj, header):
                kept[None] = old[line_start:pos]
            continue
        if not isinstance(obj, dict):
            continue
        entry_id = obj.get("id")
        if not isinstance(entry_id, str) or not isinstance(obj.get("type"), str) or entry_id in seen:
            continue
        seen.add(entry_id)
        entry = by_id.get(entry_id)
        if entry is not None and _same(obj, entry):
            kept[entry_id] = old[line_start:pos]
    return kept


def _encode(obj: Entry) -> bytes:
    return (encode_line(obj) + "\n").encode()
