"""The real Pi v1 session (tests/fixtures) opens losslessly, migrated, with the right context."""

from __future__ import annotations

import json
import re
from pathlib import Path

from compactd.session import Session, build_session_context
from compactd.session.model import parse_entry


def _raw_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_fixture_opens_migrated_without_warnings(pi_fixture: Path) -> None:
    session = Session.open(pi_fixture)
    assert session.warnings == []
    assert session.migrated_from == 1
    assert session.header["version"] == 3
    assert len(session.entries) == 1002
    ids = [e["id"] for e in session.entries]
    assert all(re.fullmatch(r"[0-9a-f]{8}", i) for i in ids)
    assert len(set(ids)) == len(ids)
    # v1 is linear: each entry's parent is the previous one
    assert session.entries[0]["parentId"] is None
    for previous, current in zip(session.entries, session.entries[1:]):
        assert current["parentId"] == previous["id"]
    assert session.leaf_id == ids[-1]


def test_fixture_compactions_get_first_kept_entry_id(pi_fixture: Path) -> None:
    raw = _raw_lines(pi_fixture)  # raw[0] is the header: the index space of firstKeptEntryIndex
    session = Session.open(pi_fixture)
    compactions = [e for e in session.entries if e["type"] == "compaction"]
    assert len(compactions) == 2
    raw_compactions = [o for o in raw if o["type"] == "compaction"]
    for entry, original in zip(compactions, raw_compactions):
        assert "firstKeptEntryIndex" not in entry
        kept = session.by_id[entry["firstKeptEntryId"]]
        # the kept entry is the one at that raw index (header = 0), i.e. entries[index - 1]
        assert kept is session.entries[original["firstKeptEntryIndex"] - 1]
        assert kept["message"] == raw[original["firstKeptEntryIndex"]]["message"]


def test_fixture_round_trip_loses_and_invents_nothing(pi_fixture: Path) -> None:
    raw = _raw_lines(pi_fixture)
    session = Session.open(pi_fixture)
    for original, entry in zip(raw[1:], session.entries):
        reserialized = json.loads(json.dumps(entry))
        for key in ("id", "parentId", "firstKeptEntryId"):
            reserialized.pop(key, None)
        expected = dict(original)
        expected.pop("firstKeptEntryIndex", None)
        assert reserialized == expected
    header = dict(session.header)
    assert header.pop("version") == 3
    assert header == {k: v for k, v in raw[0].items() if k != "version"}


def test_fixture_entries_validate_against_the_typed_model(pi_fixture: Path) -> None:
    session = Session.open(pi_fixture)
    for entry in session.entries:
        parse_entry(entry)


def test_fixture_ids_are_stable_across_loads(pi_fixture: Path) -> None:
    first = [e["id"] for e in Session.open(pi_fixture).entries]
    second = [e["id"] for e in Session.open(pi_fixture).entries]
    assert first == second


def test_fixture_context_starts_with_latest_summary_then_kept_messages(pi_fixture: Path) -> None:
    raw = _raw_lines(pi_fixture)
    session = Session.open(pi_fixture)
    ctx = build_session_context(session.entries)
    latest_index = max(i for i, o in enumerate(raw) if o["type"] == "compaction")
    latest = raw[latest_index]
    kept_raw = raw[latest["firstKeptEntryIndex"]:latest_index] + raw[latest_index + 1:]
    expected_roles = [o["message"]["role"] for o in kept_raw if o["type"] == "message"]
    assert ctx.messages[0]["role"] == "compactionSummary"
    assert ctx.messages[0]["summary"] == latest["summary"]
    assert ctx.messages[0]["tokensBefore"] == latest["tokensBefore"]
    assert [m["role"] for m in ctx.messages[1:]] == expected_roles
    assert len(ctx.messages) == 1 + len(expected_roles) == 446
    compaction_entry = session.entries[latest_index - 1]
    assert ctx.entry_ids[0] == compaction_entry["id"]
    assert ctx.entry_ids[1] == compaction_entry["firstKeptEntryId"]
    # the last model/thinking settings on the path win
    last_assistant = next(o["message"] for o in reversed(raw) if o["type"] == "message" and o["message"]["role"] == "assistant")
    assert ctx.model == {"provider": last_assistant["provider"], "modelId": last_assistant["model"]}
    levels = [o["thinkingLevel"] for o in raw if o["type"] == "thinking_level_change"]
    assert ctx.thinking_level == levels[-1]
