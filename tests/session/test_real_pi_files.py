"""The four real Pi files in tests/fixtures/real-pi: load (only the malformed lines warned about),
round-trip (migration rewrite keeps every field, backup holds the original bytes), and contexts
that follow the file for a spread of leaves."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from compactd.session import Session, build_session_context

from ..conftest import REAL_PI_FILES

NAMES = sorted(REAL_PI_FILES)


def _lines(path: Path) -> list[tuple[int, dict | None]]:
    """(line number, object or None when the line is not valid JSON), for every non-blank line."""
    out: list[tuple[int, dict | None]] = []
    for number, line in enumerate(path.read_bytes().split(b"\n"), 1):
        if not line.strip():
            continue
        try:
            out.append((number, json.loads(line)))
        except ValueError:
            out.append((number, None))
    return out


def test_the_four_files_are_there() -> None:
    assert NAMES == ["pi-mono-large-session", "pi-mono-root-compact", "pi-mono-root-session",
                     "prompt-cache-replay-session"]


@pytest.mark.parametrize("name", NAMES)
def test_loads_with_warnings_only_for_malformed_lines(name: str) -> None:
    path = REAL_PI_FILES[name]
    lines = _lines(path)
    bad = [number for number, obj in lines if obj is None]
    session = Session.open(path)
    assert [w.line for w in session.warnings] == bad
    assert all("invalid JSON" in w.message for w in session.warnings)
    assert len(session.entries) == len(lines) - 1 - len(bad)
    assert session.migrated_from == 1
    assert session.leaf_id == session.entries[-1]["id"]
    # v1 is linear: each entry's parent is the previous one
    assert session.entries[0]["parentId"] is None
    for previous, current in zip(session.entries, session.entries[1:]):
        assert current["parentId"] == previous["id"]


@pytest.mark.parametrize("name", NAMES)
def test_migration_rewrite_round_trips_and_backs_up_original(name: str, tmp_path: Path) -> None:
    original = REAL_PI_FILES[name].read_bytes()
    path = tmp_path / "s.jsonl"
    shutil.copyfile(REAL_PI_FILES[name], path)
    raw = [obj for _, obj in _lines(path) if obj is not None]
    session = Session.open(path)
    session.append_label_change(session.entries[0]["id"], "first")  # first write: migrate + append
    assert (tmp_path / "s.jsonl.v1.bak").read_bytes() == original
    again = Session.open(path)
    assert again.warnings == [] and again.migrated_from is None
    assert [e["id"] for e in again.entries] == [e["id"] for e in session.entries]
    for source, entry in zip(raw[1:], again.entries):
        kept = {k: v for k, v in entry.items() if k not in ("id", "parentId", "firstKeptEntryId")}
        expected = {k: v for k, v in source.items() if k != "firstKeptEntryIndex"}
        assert kept == expected
    assert again.entries[-1]["type"] == "label" and again.get_label(again.entries[0]["id"]) == "first"
    assert {k: v for k, v in again.header.items() if k != "version"} == {
        k: v for k, v in raw[0].items() if k != "version"}


@pytest.mark.parametrize("name", NAMES)
def test_context_follows_the_file_for_a_spread_of_leaves(name: str) -> None:
    path = REAL_PI_FILES[name]
    raw = [obj for _, obj in _lines(path) if obj is not None]
    session = Session.open(path)
    entries = session.entries
    step = max(1, len(entries) // 40)
    leaves = sorted({*range(0, len(entries), step), len(entries) - 1})
    for index in leaves:
        leaf = entries[index]
        ctx = build_session_context(entries, leaf["id"], session.by_id)
        upto = raw[1:index + 2]  # raw objects on the path, header excluded
        compactions = [i for i, o in enumerate(upto) if o["type"] == "compaction"]
        if compactions:
            at = compactions[-1]
            first_kept = upto[at]["firstKeptEntryIndex"] - 1  # v1 index counts the header
            assert ctx.messages[0]["role"] == "compactionSummary"
            assert ctx.messages[0]["summary"] == upto[at]["summary"]
            assert ctx.entry_ids[0] == entries[at]["id"]
            region = upto[first_kept:at] + upto[at + 1:]
            expected = [o["message"] for o in region if o["type"] == "message"]
            assert ctx.messages[1:] == expected
        else:
            assert ctx.messages == [o["message"] for o in upto if o["type"] == "message"]
        levels = [o["thinkingLevel"] for o in upto if o["type"] == "thinking_level_change"]
        assert ctx.thinking_level == (levels[-1] if levels else "off")
        assistants = [o["message"] for o in upto if o["type"] == "message" and o["message"]["role"] == "assistant"]
        if assistants and not any(o["type"] == "model_change" for o in upto):
            assert ctx.model == {"provider": assistants[-1]["provider"], "modelId": assistants[-1]["model"]}
