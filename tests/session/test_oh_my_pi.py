"""oh-my-pi 18 files (issue 12 §4; spec addendum QO-1..QO-11): a title slot line before the header
is accepted and kept byte for byte by every rewrite, in-place slot updates are not taken for a
rewrite of the session, and oh-my-pi's own compaction fields survive."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from compactd.session import Session, build_session_context
from compactd.session.tree import list_session_files

SLOT_BYTES = 256


def slot(title: str, updated_at: str = "2026-11-30T10:23:17.078Z", source: str | None = None) -> bytes:
    """QO-1: `{"type":"title","v":1,"title":…[,"source":…],"updatedAt":…,"pad":"   …"}` + newline,
    padded to exactly 256 UTF-8 bytes."""
    fields: dict[str, Any] = {"type": "title", "v": 1, "title": title}
    if source is not None:
        fields["source"] = source
    fields["updatedAt"] = updated_at
    fields["pad"] = ""
    bare = len(json.dumps(fields, separators=(",", ":"), ensure_ascii=False).encode()) + 1
    fields["pad"] = " " * (SLOT_BYTES - bare)
    line = (json.dumps(fields, separators=(",", ":"), ensure_ascii=False) + "\n").encode()
    assert len(line) == SLOT_BYTES
    return line


HEADER = {"type": "session", "version": 3, "id": "omp-session-1", "timestamp": "2026-11-30T10:23:17.078Z",
          "cwd": "/tmp/omp", "title": "Fix the parser"}


def omp_entries() -> list[dict[str, Any]]:
    """A short oh-my-pi session: messages, a custom tool_execution_start entry, an OMP compaction
    (o3 example fields: tokensAfter, method, fromExtension, warning) and a title_change."""
    return [
        {"type": "message", "id": "a0000001", "parentId": None, "timestamp": "2026-11-30T10:23:18.000Z",
         "message": {"role": "user", "content": [{"type": "text", "text": "read notes.md"}], "attribution": "user",
                     "timestamp": 1796033898000}},
        {"type": "message", "id": "a0000002", "parentId": "a0000001", "timestamp": "2026-11-30T10:23:19.000Z",
         "message": {"role": "assistant", "content": [{"type": "toolCall", "id": "c1", "name": "read",
                                                       "arguments": {"path": "notes.md"}}],
                     "provider": "local", "model": "fake", "stopReason": "toolUse", "timestamp": 1796033899000,
                     "duration": 12, "ttft": 3, "contextSnapshot": {"promptTokens": 900, "nonMessageTokens": 400}}},
        {"type": "custom", "id": "a0000003", "parentId": "a0000002", "timestamp": "2026-11-30T10:23:19.100Z",
         "customType": "tool_execution_start", "data": {"toolCallId": "c1", "toolName": "read", "startedAt": 1}},
        {"type": "message", "id": "a0000004", "parentId": "a0000003", "timestamp": "2026-11-30T10:23:19.200Z",
         "message": {"role": "toolResult", "toolCallId": "c1", "toolName": "read",
                     "content": [{"type": "text", "text": "the notes"}], "isError": False,
                     "timestamp": 1796033899200}},
        {"type": "compaction", "id": "a0000005", "parentId": "a0000004", "timestamp": "2026-11-30T10:23:20.000Z",
         "summary": "Done. (saw 3 msgs, 1 tool results)\n\n<files>\nnotes.md (Read)\n</files>",
         "firstKeptEntryId": "a0000004", "tokensBefore": 4477, "tokensAfter": 14722, "method": "handoff",
         "details": {"readFiles": ["notes.md"], "modifiedFiles": []}, "fromExtension": False,
         "warning": "Compaction freed too little context to make progress"},
        {"type": "title_change", "id": "a0000006", "parentId": "a0000005", "timestamp": "2026-11-30T10:23:21.000Z",
         "title": "Fix the parser", "source": "auto"},
    ]


def write_omp(path: Path, title: str = "Fix the parser") -> bytes:
    data = slot(title) + b"".join((json.dumps(o, separators=(",", ":")) + "\n").encode()
                                  for o in [HEADER, *omp_entries()])
    path.write_bytes(data)
    return data


def test_title_slot_before_the_header_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "omp.jsonl"
    write_omp(path)
    session = Session.open(path)
    assert session.warnings == [] and session.migrated_from is None
    assert session.session_id == "omp-session-1" and session.header == HEADER
    assert [e["id"] for e in session.entries] == [e["id"] for e in omp_entries()]
    assert session.leaf_id == "a0000006"
    # the OMP compaction fields are kept as written; the context starts with its summary
    compaction = session.by_id["a0000005"]
    assert {k: compaction[k] for k in ("tokensAfter", "method", "fromExtension", "warning")} == {
        "tokensAfter": 14722, "method": "handoff", "fromExtension": False,
        "warning": "Compaction freed too little context to make progress"}
    context = build_session_context(session.entries)
    assert context.messages[0]["role"] == "compactionSummary"
    assert context.messages[0]["summary"].startswith("Done. (saw 3 msgs")
    assert [m["role"] for m in context.messages[1:]] == ["toolResult"]
    # listed among session files like any Pi session
    assert [info.session_id for info in list_session_files(tmp_path)] == ["omp-session-1"]


@pytest.mark.parametrize("how", ["rewrite", "append"])
def test_rewrites_and_appends_keep_the_slot_and_omp_fields_byte_for_byte(tmp_path: Path, how: str) -> None:
    path = tmp_path / "omp.jsonl"
    original = write_omp(path)
    session = Session.open(path)
    if how == "rewrite":  # what pruning does
        session.rewrite()
        assert path.read_bytes() == original  # every byte: slot, header, OMP fields, key order
    else:
        ours = session.append_message({"role": "user", "content": "more", "timestamp": 1})
        data = path.read_bytes()
        assert data.startswith(original) and json.loads(data.splitlines()[-1])["id"] == ours
    again = Session.open(path)
    assert again.warnings == [] and again.by_id["a0000005"] == session.by_id["a0000005"]


def test_migration_rewrite_keeps_the_slot(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    header = {"type": "session", "id": "v1-with-slot", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/tmp"}
    line = {"type": "message", "timestamp": "2026-01-01T00:00:01.000Z",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "hi"}], "stopReason": "stop"}}
    original = slot("Old") + (json.dumps(header) + "\n" + json.dumps(line) + "\n").encode()
    path.write_bytes(original)
    session = Session.open(path)
    assert session.migrated_from == 1
    session.append_message({"role": "user", "content": "after migration", "timestamp": 2})
    assert path.read_bytes().startswith(slot("Old"))
    assert (tmp_path / "old.jsonl.v1.bak").read_bytes() == original
    assert json.loads(path.read_bytes().splitlines()[1])["version"] == 3
    assert len(Session.open(path).entries) == 2


def test_omp_updating_its_title_slot_in_place_is_not_a_rewrite(tmp_path: Path) -> None:
    """QO-2: on a title change OMP overwrites the 256-byte slot at offset 0 and appends a
    title_change entry. That is an append for us; the new slot is what a later rewrite keeps."""
    path = tmp_path / "omp.jsonl"
    write_omp(path)
    session = Session.open(path)
    inode = path.stat().st_ino
    fd = os.open(path, os.O_WRONLY)
    try:
        os.pwrite(fd, slot("Renamed by the user", source="user"), 0)
    finally:
        os.close(fd)
    change = {"type": "title_change", "id": "a0000007", "parentId": "a0000006",
              "timestamp": "2026-11-30T10:24:00.000Z", "title": "Renamed by the user", "previousTitle": "Fix the parser",
              "source": "user"}
    with open(path, "a") as handle:
        handle.write(json.dumps(change, separators=(",", ":")) + "\n")
    assert path.stat().st_ino == inode
    result = session.sync()
    assert result.appended == ("a0000007",) and not result.reloaded
    session.rewrite()
    data = path.read_bytes()
    assert data.startswith(slot("Renamed by the user", source="user"))
    assert json.loads(data.splitlines()[-1]) == change
