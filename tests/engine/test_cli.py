"""`compactd compact|navigate|demo` as real subprocesses, offline (no model configured)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from compactd.compaction.prompts import BRANCH_SUMMARY_PREAMBLE, SUMMARY_HEADINGS
from compactd.session import Session, build_session_context, convert_to_llm
from compactd.session.model import parse_entry

from .builders import add, assistant, call, new_session, result, user

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURE = REPO_ROOT / "tests" / "fixtures" / "pi-before-compaction.v1.jsonl"
_MODEL_ENV = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "COMPACTD_MODEL",
    "COMPACTD_SUMMARIZER",
    "PI_CODING_AGENT_DIR",
)


def run_cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in _MODEL_ENV}
    env["HOME"] = str(tmp_path / "home")  # no global settings file
    env["PYTHONPATH"] = str(REPO_ROOT / "server")
    return subprocess.run(
        [sys.executable, "-m", "compactd", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def has_heading(text: str, heading: str) -> bool:
    return re.search(rf"^{re.escape(heading)}$", text, re.MULTILINE) is not None


def expected_file_lists(
    path: list[dict[str, Any]], compaction: dict[str, Any]
) -> tuple[list[str], list[str]]:
    """O-2/O-3/R-14 computed independently from the compacted file: the previous pi-made
    compaction's lists plus read/write/edit calls of everything summarized."""
    index = {e["id"]: i for i, e in enumerate(path)}
    end = index[compaction["firstKeptEntryId"]]
    previous = [i for i, e in enumerate(path[:-1]) if e["type"] == "compaction"]
    read: set[str] = set()
    modified: set[str] = set()
    start = 0
    if previous:
        prev = path[previous[-1]]
        start = index.get(prev.get("firstKeptEntryId"), previous[-1] + 1)
        details = prev.get("details") if not prev.get("fromHook") else None
        if isinstance(details, dict):
            read |= set(details.get("readFiles") or [])
            modified |= set(details.get("modifiedFiles") or [])
    for entry in path[start:end]:
        message = entry.get("message") if entry["type"] == "message" else None
        if not message or message.get("role") != "assistant":
            continue
        for block in message.get("content") or []:
            if block.get("type") == "toolCall" and isinstance(block.get("arguments"), dict):
                file = block["arguments"].get("path")
                if isinstance(file, str) and file:
                    if block.get("name") == "read":
                        read.add(file)
                    elif block.get("name") in ("write", "edit"):
                        modified.add(file)
    return sorted(read - modified), sorted(modified)


def test_compact_real_fixture_offline(tmp_path: Path) -> None:
    assert FIXTURE.exists(), f"missing fixture {FIXTURE}"
    fixture_hash = hashlib.sha256(FIXTURE.read_bytes()).hexdigest()
    copy = tmp_path / "work" / "session.jsonl"
    copy.parent.mkdir()
    shutil.copyfile(FIXTURE, copy)

    proc = run_cli(tmp_path, "compact", str(copy), "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    summary = out["summary"]
    for heading in SUMMARY_HEADINGS:
        assert has_heading(summary, heading), heading
    assert out["usage"] is None and out["fromHook"] is False and out["warnings"] == []

    session = Session.open(copy)
    entry = session.entries[-1]
    assert entry["type"] == "compaction" and entry["id"] == out["entryId"]
    parse_entry(entry)
    assert entry["summary"] == summary and entry["firstKeptEntryId"] == out["firstKeptEntryId"]
    assert entry["tokensBefore"] == out["tokensBefore"] > out["estimatedTokensAfter"] > 0
    assert entry["details"] == out["details"]

    read_files, modified_files = expected_file_lists(session.get_branch(), entry)
    assert entry["details"] == {"readFiles": read_files, "modifiedFiles": modified_files}
    assert modified_files  # the fixture edits files
    tags = "\n\n<read-files>\n" + "\n".join(read_files) + "\n</read-files>" if read_files else ""
    tags += "\n\n<modified-files>\n" + "\n".join(modified_files) + "\n</modified-files>"
    assert summary.endswith(tags)

    context = build_session_context(session.entries)
    assert context.messages[0]["role"] == "compactionSummary" and context.messages[0]["summary"] == summary
    first_llm = convert_to_llm(context.messages)[0]["content"][0]["text"]
    assert f"<summary>\n{summary}\n</summary>" in first_llm
    assert context.entry_ids[1] == entry["firstKeptEntryId"]

    # a second run refuses: the path already ends with a compaction
    again = run_cli(tmp_path, "compact", str(copy))
    assert again.returncode == 2 and again.stderr.strip() == "compactd: Already compacted"
    assert hashlib.sha256(FIXTURE.read_bytes()).hexdigest() == fixture_hash  # the fixture is untouched


def test_navigate_with_summary(tmp_path: Path) -> None:
    session = new_session(tmp_path)
    _, a1, u2, _, _, a3 = add(
        session,
        user("first"),
        assistant("answer one"),
        user("please edit the parser"),
        assistant("editing", calls=[call("c", "edit", path="src/parser.py")]),
        result("c", "edit", "ok"),
        assistant("parser edited"),
    )
    proc = run_cli(
        tmp_path, "navigate", str(session.path), "--to", u2, "--summarize", "--label", "tried", "--json"
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["editorText"] == "please edit the parser" and out["oldLeafId"] == a3
    reopened = Session.open(session.path)
    summary = reopened.by_id[out["summaryEntryId"]]
    assert summary["parentId"] == a1 and summary["fromId"] == a3
    assert summary["summary"].startswith(BRANCH_SUMMARY_PREAMBLE + "## Goal")
    assert summary["details"] == {"readFiles": [], "modifiedFiles": ["src/parser.py"]}
    assert reopened.get_label(summary["id"]) == "tried" and out["writtenEntryIds"] == [
        summary["id"],
        reopened.leaf_id,
    ]

    missing = run_cli(tmp_path, "navigate", str(session.path), "--to", "nope")
    assert missing.returncode == 2 and "Entry nope not found" in missing.stderr


def test_demo_runs_offline(tmp_path: Path) -> None:
    proc = run_cli(tmp_path, "demo")
    assert proc.returncode == 0, proc.stderr
    for text in (
        "Tree before compaction",
        "Context before:",
        "Context after:",
        "## Goal",
        "## Critical Context",
    ):
        assert text in proc.stdout
    out = run_cli(tmp_path, "demo", "--json")
    data = json.loads(out.stdout)
    assert data["after"]["estimatedTokens"] < data["before"]["estimatedTokens"]
    assert not Path(data["file"]).exists()  # the temporary folder is removed
