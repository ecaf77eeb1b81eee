"""The Claude Code → Pi converter used for the external real sessions (bench/quality/claude_code.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from compactd.session import Session

from bench.quality.claude_code import convert

from ..conftest import REPO_ROOT


def _rec(uuid: str, parent: str | None, kind: str, content: Any, **extra: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": kind, "content": content}
    if kind == "assistant":
        message.update(id=extra.pop("msg_id"), model="claude-x", usage={"input_tokens": 3, "output_tokens": 2})
    return {"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": "s-1", "cwd": "/w",
            "timestamp": "2026-02-11T20:00:00.000Z", "message": message, **extra}


def transcript() -> list[dict[str, Any]]:
    return [
        {"type": "file-history-snapshot", "messageId": "x"},
        _rec("u1", None, "user", "fix the parser"),
        _rec("a1", "u1", "assistant", [{"type": "text", "text": "Reading it."}], msg_id="m1"),
        {"type": "progress", "uuid": "p1", "parentUuid": "a1"},
        _rec("a2", "p1", "assistant", [{"type": "tool_use", "id": "t1", "name": "Read",
                                         "input": {"file_path": "/w/parse.py", "limit": 20}}], msg_id="m1"),
        {"type": "queue-operation", "operation": "enqueue", "content": "also keep the old API"},
        {"type": "queue-operation", "operation": "enqueue", "content": "<task-notification>done</task-notification>"},
        {"type": "queue-operation", "operation": "remove"},
        _rec("u2", "a2", "user", [{"type": "tool_result", "tool_use_id": "t1", "content": "def parse(): ...",
                                   "is_error": False}]),
        _rec("a3", "u2", "assistant", [{"type": "tool_use", "id": "t2", "name": "Edit", "input": {
            "file_path": "/w/parse.py", "old_string": "...", "new_string": "return []", "replace_all": False}}],
             msg_id="m2"),
        _rec("u3", "a3", "user", [{"type": "tool_result", "tool_use_id": "t2",
                                   "content": [{"type": "text", "text": "updated"}], "is_error": True}]),
        _rec("side", "u3", "assistant", [{"type": "text", "text": "subagent chatter"}], msg_id="m9", isSidechain=True),
        {"type": "system", "subtype": "compact_boundary", "uuid": "b1", "parentUuid": None,
         "logicalParentUuid": "not-in-file", "compactMetadata": {"trigger": "manual"}},
        _rec("c1", "b1", "user", "This session is being continued: the parser work.", isCompactSummary=True),
        _rec("a4", "c1", "assistant", [{"type": "tool_use", "id": "t3", "name": "Bash",
                                         "input": {"command": "pytest -q", "timeout": 120000}}], msg_id="m3"),
    ]


def test_a_transcript_becomes_pi_messages_split_at_its_compaction() -> None:
    out = convert(transcript())
    assert out.summary == "This session is being continued: the parser work."
    roles = [e["message"]["role"] for e in out.before]
    assert roles == ["user", "assistant", "toolResult", "user", "assistant", "toolResult"]
    first = out.before[1]["message"]  # two records of one API message, merged; Read → Pi's read
    assert first["content"] == [{"type": "text", "text": "Reading it."},
                                {"type": "toolCall", "id": "t1", "name": "read", "arguments": {"path": "/w/parse.py", "limit": 20}}]
    assert out.before[2]["message"]["toolName"] == "read"
    # The queued prompt arrives after the tool result it came in during; a task notice is not a prompt.
    assert out.before[3]["message"]["content"] == "also keep the old API"
    edit = out.before[4]["message"]["content"][0]
    assert (edit["name"], edit["arguments"]) == ("edit", {"path": "/w/parse.py", "oldText": "...", "newText": "return []"})
    assert out.before[5]["message"]["isError"] and out.before[5]["message"]["content"][0]["text"] == "updated"
    assert "subagent chatter" not in json.dumps(out.before)
    after = out.after[0]["message"]["content"][0]
    assert (after["name"], after["arguments"]) == ("bash", {"command": "pytest -q", "timeout": 120})


def test_the_converted_file_opens_as_a_linear_pi_session(tmp_path: Path) -> None:
    source = tmp_path / "cc.jsonl"
    source.write_text("\n".join(json.dumps(r) for r in transcript()) + "\n", encoding="utf-8")
    out, summary = tmp_path / "pi.jsonl", tmp_path / "summary.txt"
    proc = subprocess.run([sys.executable, "-m", "bench.quality.claude_code", str(source), str(out), "--summary",
                           str(summary), "--after", "1"], cwd=REPO_ROOT, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert summary.read_text(encoding="utf-8").startswith("This session is being continued")
    header = json.loads(out.read_text(encoding="utf-8").splitlines()[0])
    assert header["type"] == "session" and header["version"] == 3
    branch = Session.open(out).get_branch()
    assert len(branch) == 7  # 6 before the compaction, 1 kept after it
    assert [e.get("parentId") for e in branch[1:]] == [e["id"] for e in branch[:-1]]


def test_a_subagent_transcript_is_its_own_conversation() -> None:
    # A subagent's file (`<session>/subagents/agent-*.jsonl`): every record is a sidechain.
    records = [{**r, "isSidechain": True} for r in transcript()[:9] if r.get("uuid")]
    out = convert(records)
    roles = [e["message"]["role"] for e in out.before]
    assert roles == ["user", "assistant", "toolResult"]
    assert out.before[0]["message"]["content"] == "fix the parser"
    # In a main session, a sidechain record stays out (the main-session test above checks that too).
    mixed = records[:-1] + [{**records[-1], "isSidechain": False}]
    assert "fix the parser" not in json.dumps(convert(mixed).before)
