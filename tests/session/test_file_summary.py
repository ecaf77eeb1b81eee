"""The session picker's line per file (issue 27): name, first request, entry count."""

from __future__ import annotations

import json
from pathlib import Path

from compactd.session.file_summary import summarize_file


def write(path: Path, *objs: object, junk: str = "") -> Path:
    path.write_text("".join(json.dumps(o) + "\n" for o in objs) + junk)
    return path


def test_oh_my_pi_title_slot_and_title_change_name_the_session(tmp_path: Path) -> None:
    slot = {"type": "title", "v": 1, "title": "Old title", "updatedAt": "2026-11-30T10:23:17.078Z"}
    header = {"type": "session", "version": 3, "id": "s", "timestamp": "t", "cwd": "/"}
    user = {"type": "message", "id": "u", "parentId": None, "message": {"role": "user", "content": [
        {"type": "text", "text": "  fix\n the build  "}]}}
    change = {"type": "title_change", "id": "t", "parentId": "u", "title": "Build fixed"}
    summary = summarize_file(write(tmp_path / "a.jsonl", slot, header, user, change, junk="{broken\n"))
    assert (summary.name, summary.first_request, summary.entry_count) == ("Build fixed", "fix the build", 3)


def test_pi_session_info_cleared_leaves_the_first_request(tmp_path: Path) -> None:
    header = {"type": "session", "version": 3, "id": "s", "timestamp": "t", "cwd": "/"}
    named = {"type": "session_info", "id": "n", "parentId": None, "name": "x"}
    cleared = {"type": "session_info", "id": "m", "parentId": "n", "name": None}
    answer = {"type": "message", "id": "a", "parentId": "m", "message": {"role": "assistant", "content": "user"}}
    user = {"type": "message", "id": "u", "parentId": "a", "message": {"role": "user", "content": "y" * 300}}
    summary = summarize_file(write(tmp_path / "b.jsonl", header, named, cleared, answer, user))
    assert summary.name is None and summary.first_request == "y" * 119 + "…" and summary.entry_count == 4
