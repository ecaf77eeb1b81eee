"""Loading, migration, appends and rewrites of session files (spec §2.5–2.7, D-16..D-18)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from compactd.session import ConcurrentModificationError, InvalidSessionFileError, Session, SessionError
from compactd.session.store import EntryNotFoundError

from .builders import assistant, user

HEADER_V3 = {"type": "session", "version": 3, "id": "sess-1", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"}


def write_lines(path: Path, objs: list, tail: str = "") -> None:
    path.write_text("".join(json.dumps(o) + "\n" for o in objs) + tail, encoding="utf-8")


def v3_entry(entry_id: str, parent: str | None, text: str) -> dict:
    return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": "2025-01-01T00:00:01.000Z",
            "message": user(text)}


# --- loading -----------------------------------------------------------------------------------


def test_nonexistent_path_starts_new_session_without_writing(tmp_path: Path) -> None:
    path = tmp_path / "new.jsonl"
    session = Session.open(path, cwd="/w")
    assert session.entries == [] and session.leaf_id is None
    session.append_message(user("hi"))
    assert not path.exists()  # F-17: nothing until the first assistant message


def test_empty_file_is_initialised(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    session = Session.open(path, cwd="/w")
    assert session.entries == []
    session.append_message(user("hi"))
    session.append_message(assistant("hello"))
    lines = path.read_text().splitlines()
    assert json.loads(lines[0])["type"] == "session" and len(lines) == 3


def test_non_empty_invalid_file_raises_and_is_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"type":"message"}\nnot json\n')
    before = path.read_bytes()
    with pytest.raises(InvalidSessionFileError, match="Session file is not a valid pi session: .*bad.jsonl"):
        Session.open(path)
    assert path.read_bytes() == before


def test_all_malformed_file_is_invalid(tmp_path: Path) -> None:
    path = tmp_path / "garbage.jsonl"
    path.write_text("garbage\n{broken\n")
    with pytest.raises(InvalidSessionFileError):
        Session.open(path)


def test_malformed_lines_are_skipped_and_reported_with_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(
        json.dumps(HEADER_V3) + "\n"
        + json.dumps(v3_entry("a1", None, "one")) + "\n"
        + "{this is not json\n"
        + "\n"
        + "[1,2]\n"
        + json.dumps(v3_entry("a2", "a1", "two")) + "\n"
    )
    session = Session.open(path)
    assert [e["id"] for e in session.entries] == ["a1", "a2"]
    assert [w.line for w in session.warnings] == [3, 5]
    assert "invalid JSON" in session.warnings[0].message


def test_torn_final_line_is_tolerated_and_repaired_before_append(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write_lines(path, [HEADER_V3, v3_entry("a1", None, "one")], tail='{"type":"message","id":"a2","par')
    session = Session.open(path)
    assert [e["id"] for e in session.entries] == ["a1"]
    assert session.warnings[-1].line == 3 and "torn" in session.warnings[-1].message
    new_id = session.append_message(user("after"))
    lines = path.read_text().split("\n")
    assert lines[2] == '{"type":"message","id":"a2","par'  # damaged line kept as its own line
    assert json.loads(lines[3])["id"] == new_id
    reloaded = Session.open(path)
    assert [e["id"] for e in reloaded.entries] == ["a1", new_id]
    assert len(reloaded.warnings) == 1 and reloaded.warnings[0].line == 3


def test_complete_final_line_without_newline_gets_one_before_append(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(HEADER_V3) + "\n" + json.dumps(v3_entry("a1", None, "x")))
    session = Session.open(path)
    assert session.warnings == []
    new_id = session.append_message(user("y"))
    reloaded = Session.open(path)
    assert [e["id"] for e in reloaded.entries] == ["a1", new_id] and reloaded.warnings == []


def test_entries_without_id_or_duplicate_ids_are_reported(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    no_id = v3_entry("x", None, "x")
    del no_id["id"]
    write_lines(path, [HEADER_V3, v3_entry("a1", None, "one"), no_id, v3_entry("a1", None, "dup")])
    session = Session.open(path)
    assert [e["message"]["content"][0]["text"] for e in session.entries] == ["one"]
    assert [w.line for w in session.warnings] == [3, 4]
    assert "duplicate id a1" in session.warnings[1].message


def test_leaf_is_last_entry_in_file_order(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write_lines(path, [HEADER_V3, v3_entry("a", None, "1"), v3_entry("b", "a", "2"), v3_entry("c", "a", "3")])
    assert Session.open(path).leaf_id == "c"  # F-24: not the deepest node


def test_unknown_fields_and_entry_types_survive(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    odd = {"type": "ttsr_injection", "id": "t1", "parentId": None, "timestamp": "2025-01-01T00:00:00.000Z",
           "payload": {"deep": [1, {"x": None}]}}
    extra = v3_entry("m1", "t1", "hi")
    extra["futureField"] = {"kept": True}
    extra["message"]["alsoKept"] = "yes"
    header = dict(HEADER_V3, title="custom title")
    write_lines(path, [header, odd, extra])
    session = Session.open(path)
    session.rewrite()
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines == [header, odd, extra]


# --- migration ----------------------------------------------------------------------------------


def test_v2_keeps_ids_and_renames_hook_messages(tmp_path: Path) -> None:
    path = tmp_path / "v2.jsonl"
    header = dict(HEADER_V3, version=2)
    hook = {"type": "message", "id": "h1", "parentId": None, "timestamp": "2025-01-01T00:00:00.000Z",
            "message": {"role": "hookMessage", "customType": "x", "content": "c", "display": True, "timestamp": 1}}
    write_lines(path, [header, hook, v3_entry("u1", "h1", "hi")])
    session = Session.open(path)
    assert session.migrated_from == 2
    assert [e["id"] for e in session.entries] == ["h1", "u1"]
    assert session.entries[0]["message"]["role"] == "custom"


def test_v3_file_is_not_migrated(tmp_path: Path) -> None:
    path = tmp_path / "v3.jsonl"
    write_lines(path, [HEADER_V3, v3_entry("a", None, "x")])
    session = Session.open(path)
    assert session.migrated_from is None
    before = path.read_bytes()
    session.append_message(user("y"))
    assert path.read_bytes().startswith(before)
    assert not list(tmp_path.glob("*.bak"))


def test_v1_first_write_backs_up_and_rewrites_atomically(tmp_path: Path) -> None:
    path = tmp_path / "v1.jsonl"
    header = {"type": "session", "id": "old-1", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"}
    m1 = {"type": "message", "timestamp": "2025-01-01T00:00:01.000Z", "message": user("a")}
    m2 = {"type": "message", "timestamp": "2025-01-01T00:00:02.000Z", "message": assistant("b")}
    comp = {"type": "compaction", "timestamp": "2025-01-01T00:00:03.000Z", "summary": "s",
            "firstKeptEntryIndex": 2, "tokensBefore": 10}
    write_lines(path, [header, m1, m2, comp])
    original = path.read_bytes()
    session = Session.open(path)
    assert session.entries[2]["firstKeptEntryId"] == session.entries[1]["id"]
    assert path.read_bytes() == original  # nothing written on open
    new_id = session.append_message(user("c"))
    assert (tmp_path / "v1.jsonl.v1.bak").read_bytes() == original
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[0]["version"] == 3
    assert [line.get("id") for line in lines[1:]] == [e["id"] for e in session.entries]
    assert lines[-1]["id"] == new_id
    again = Session.open(path)
    assert again.migrated_from is None and [e["id"] for e in again.entries] == [e["id"] for e in session.entries]


def test_v1_compaction_index_pointing_at_header_or_beyond_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "v1.jsonl"
    header = {"type": "session", "id": "old-2", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"}
    m1 = {"type": "message", "timestamp": "2025-01-01T00:00:01.000Z", "message": user("a")}
    c0 = {"type": "compaction", "timestamp": "t", "summary": "s", "firstKeptEntryIndex": 0, "tokensBefore": 1}
    c9 = {"type": "compaction", "timestamp": "t", "summary": "s", "firstKeptEntryIndex": 9, "tokensBefore": 1}
    write_lines(path, [header, m1, c0, c9])
    session = Session.open(path)
    for entry in session.entries[1:]:
        assert "firstKeptEntryIndex" not in entry and "firstKeptEntryId" not in entry


# --- appends ------------------------------------------------------------------------------------


def test_append_writes_compact_single_lines_with_pi_key_order(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    session = Session.create("/w", path)
    session.append_message(user("héllo ✓"))
    session.append_message(assistant("ok"))
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n") and "\\u" not in text and "héllo ✓" in text
    lines = text.splitlines()
    assert len(lines) == 3
    for line in lines:
        assert ": " not in line and ", " not in line.replace("héllo ✓", "")
    entry = json.loads(lines[1])
    assert list(entry)[:4] == ["type", "id", "parentId", "timestamp"]
    assert entry["parentId"] is None
    assert json.loads(lines[2])["parentId"] == entry["id"]
    import re
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", entry["timestamp"])
    assert re.fullmatch(r"[0-9a-f]{8}", entry["id"])


def test_lazy_creation_writes_header_and_buffer_at_first_assistant(tmp_path: Path) -> None:
    path = tmp_path / "lazy.jsonl"
    session = Session.create("/w", path)
    session.append_model_change("openai", "gpt-4o")
    session.append_message(user("hi"))
    assert not path.exists()
    session.append_message(assistant("yo"))
    types = [json.loads(line)["type"] for line in path.read_text().splitlines()]
    assert types == ["session", "model_change", "message", "message"]
    session.append_message(user("more"))
    assert len(path.read_text().splitlines()) == 5


def test_default_path_follows_pi_folder_layout(tmp_path: Path) -> None:
    session = Session.create("/home/me/proj", agent_dir=tmp_path)
    assert session.path is not None
    assert session.path.parent == tmp_path / "sessions" / "--home-me-proj--"
    assert session.path.name.endswith(f"_{session.session_id}.jsonl")
    assert ":" not in session.path.name and session.path.name.count(".") == 1


def test_custom_session_id_is_validated_and_written(tmp_path: Path) -> None:
    session = Session.create("/w", tmp_path / "c.jsonl", session_id="my.session-1")
    session.append_message(assistant("x"))
    assert json.loads((tmp_path / "c.jsonl").read_text().splitlines()[0])["id"] == "my.session-1"
    with pytest.raises(SessionError, match="Session id must be non-empty"):
        Session.create("/w", session_id="-bad")


def test_in_memory_session_behaves_the_same_without_files(tmp_path: Path) -> None:
    session = Session.create("/w", in_memory=True)
    a = session.append_message(user("u"))
    b = session.append_message(assistant("a"))
    assert session.get_branch() == [session.by_id[a], session.by_id[b]]
    assert session.path is None and list(tmp_path.iterdir()) == []


def test_failed_write_leaves_memory_unchanged_when_file_is_replaced(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    session = Session.create("/w", path)
    session.append_message(assistant("x"))
    leaf = session.leaf_id
    replacement = tmp_path / "other.jsonl"
    replacement.write_text(path.read_text())
    os.replace(replacement, path)
    with pytest.raises(ConcurrentModificationError, match="replaced by another process.*nothing was written"):
        session.append_message(user("y"))
    assert session.leaf_id == leaf and len(session.entries) == 1


def test_external_appends_are_adopted_not_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    session = Session.create("/w", path)
    first = session.append_message(assistant("x"))
    other = Session.open(path)
    theirs = other.append_message(user("from pi"))
    ours = session.append_message(user("from us"))
    ids = [json.loads(line).get("id") for line in path.read_text().splitlines()[1:]]
    assert ids == [first, theirs, ours]
    assert session.external_appends[-1].entry_ids == (theirs,)
    assert session.by_id[ours]["parentId"] == theirs  # we were at the tip, so we followed


def test_name_labels_and_assistant_flag_follow_appends_from_both_sides(tmp_path: Path) -> None:
    """They are kept between requests (each would otherwise rescan every entry on the event
    loop); appends made here and by another process must update them."""
    path = tmp_path / "s.jsonl"
    session = Session.create("/w", path)
    first = session.append_message(assistant("x"))
    assert session.get_session_name() is None and session.labels() == {} and session.has_assistant()
    session.append_session_info("ours")
    assert session.get_session_name() == "ours"
    other = Session.open(path)
    other.append_session_info("theirs")
    other.append_label_change(first, "pinned")
    session.sync()
    assert session.get_session_name() == "theirs"
    assert session.labels() == {first: "pinned"}
    other.append_message(user("no name here"))
    session.sync()
    assert session.get_session_name() == "theirs"
    assert Session.open(path).get_session_name() == "theirs"


def test_external_partial_line_refuses_to_interleave(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    session = Session.create("/w", path)
    session.append_message(assistant("x"))
    with open(path, "a") as handle:
        handle.write('{"type":"message","id":"zz"')
    before = path.read_bytes()
    with pytest.raises(ConcurrentModificationError, match="incomplete line"):
        session.append_message(user("y"))
    assert path.read_bytes() == before


def test_truncated_file_is_detected(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    session = Session.create("/w", path)
    session.append_message(assistant("x"))
    session.append_message(user("y"))
    path.write_text(path.read_text().splitlines()[0] + "\n")
    with pytest.raises(ConcurrentModificationError):
        session.append_message(user("z"))


def test_rewrite_is_atomic_and_leaves_no_temp_files(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    session = Session.create("/w", path)
    session.append_message(assistant("x"))
    inode = path.stat().st_ino
    session.entries[0]["message"]["content"][0]["text"] = "changed"
    session.rewrite()
    assert "changed" in path.read_text()
    assert path.stat().st_ino != inode  # replaced by rename, never truncated in place
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.jsonl"]
    session.append_message(user("after rewrite"))
    assert len(Session.open(path).entries) == 2


def test_label_on_unknown_target_is_an_error(tmp_path: Path) -> None:
    session = Session.create("/w", in_memory=True)
    with pytest.raises(EntryNotFoundError, match="Entry nope not found"):
        session.append_label_change("nope", "x")
