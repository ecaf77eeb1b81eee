"""`compactd info|context|tree` run as real subprocesses; their --json shapes are a contract."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from compactd.session import Session


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "compactd", *args], capture_output=True, text=True, timeout=120)


def test_info_json_on_fixture(pi_fixture: Path) -> None:
    result = run("info", str(pi_fixture), "--json")
    assert result.returncode == 0, result.stderr
    info = json.loads(result.stdout)
    session = Session.open(pi_fixture)
    assert {k: info[k] for k in ("sessionId", "version", "migratedFrom", "entryCount", "leafId", "warnings")} == {
        "sessionId": "ffae836b-9420-4060-ac13-7745215f90ff",
        "version": 3,
        "migratedFrom": 1,
        "entryCount": 1002,
        "leafId": session.leaf_id,
        "warnings": [],
    }


def test_info_reports_malformed_lines(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text('{"type":"session","version":3,"id":"x","timestamp":"t","cwd":"/"}\nnope\n')
    result = run("info", str(path), "--json")
    assert json.loads(result.stdout)["warnings"][0]["line"] == 2
    assert f"{path}:2: warning" in result.stderr


def test_context_json_shape_and_leaf(pi_fixture: Path) -> None:
    session = Session.open(pi_fixture)
    result = json.loads(run("context", str(pi_fixture), "--json").stdout)
    assert set(result) == {"leafId", "model", "thinkingLevel", "messages"}
    assert result["messages"][0]["role"] == "compactionSummary"
    assert len(result["messages"]) == 446
    assert result["model"] == {"provider": "anthropic", "modelId": "claude-opus-4-5"}
    early = session.entries[10]["id"]
    at_early = json.loads(run("context", str(pi_fixture), "--leaf", early, "--json").stdout)
    assert at_early["leafId"] == early
    assert [m["entryId"] for m in at_early["messages"]] == [
        e["id"] for e in session.entries[:11] if e["type"] == "message"
    ]


def test_tree_json_shape(tmp_path: Path) -> None:
    session = Session.create("/w", tmp_path / "t.jsonl")
    u = session.append_message({"role": "user", "content": "hi", "timestamp": 1})
    a = session.append_message({"role": "assistant", "content": [], "stopReason": "stop", "timestamp": 2})
    session.branch(u)
    b = session.append_message({"role": "assistant", "content": [{"type": "text", "text": "alt"}], "timestamp": 3})
    session.append_label_change(u, "start")
    tree = json.loads(run("tree", str(tmp_path / "t.jsonl"), "--json").stdout)
    assert tree["leafId"] == session.leaf_id
    nodes = {n["id"]: n for n in tree["nodes"]}
    assert set(nodes[u]) == {"id", "parentId", "type", "role", "children", "label"}
    assert nodes[u]["children"] == [a, b] and nodes[u]["label"] == "start" and nodes[u]["role"] == "user"
    label_node = nodes[session.leaf_id]
    assert label_node["type"] == "label" and label_node["role"] is None


def test_tree_text_is_flat_for_linear_runs(pi_fixture: Path) -> None:
    result = run("tree", str(pi_fixture))
    lines = result.stdout.splitlines()[:-2]
    assert len(lines) == 1002
    assert all(not line.startswith((" ", "├", "└")) for line in lines)


def test_errors_are_clear(tmp_path: Path) -> None:
    missing = run("info", str(tmp_path / "nope.jsonl"))
    assert missing.returncode == 2 and "no such session file" in missing.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text("garbage\n")
    invalid = run("context", str(bad))
    assert invalid.returncode == 2 and "not a valid pi session" in invalid.stderr
    unknown_leaf = run("context", str(bad.with_name("x")), "--leaf", "zz")
    assert unknown_leaf.returncode == 2


def test_a_path_that_is_not_a_regular_file_is_refused_at_once(tmp_path: Path) -> None:
    """/dev/zero never ends and a FIFO blocks until someone writes: both used to hang forever."""
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    for path, kind in (("/dev/zero", "device"), (str(fifo), "FIFO"), (str(tmp_path), "directory")):
        for command in ("info", "compact", "tree"):
            done = subprocess.run([sys.executable, "-m", "compactd", command, path], capture_output=True, text=True,
                                  timeout=60)  # a regression fails here instead of hanging the suite
            assert done.returncode == 2, (command, path, done.stderr)
            assert f"{path} is a {kind}" in done.stderr and "not a session file" in done.stderr


def test_a_command_process_exits_with_its_output_whole_and_its_code(pi_fixture: Path, tmp_path: Path, capsys) -> None:
    """`python -m compactd` ends without freeing what it loaded (`compactd.cli.run`): everything
    printed, buffered text and warnings included, is out first, and the exit code is the command's."""
    from compactd.cli import main

    assert main(["tree", str(pi_fixture)]) == 0  # in process: the ordinary way
    expected = capsys.readouterr().out
    result = run("tree", str(pi_fixture))
    assert result.returncode == 0 and result.stdout == expected and len(expected.splitlines()) > 1000

    damaged = tmp_path / "damaged.jsonl"
    damaged.write_bytes(pi_fixture.read_bytes() + b"{not json\n")
    result = run("info", str(damaged))
    assert result.returncode == 0
    assert "warning: invalid JSON skipped" in result.stderr and "1002" in result.stdout

    result = run("prepare", str(tmp_path / "missing.jsonl"))
    assert result.returncode == 2 and "no such session file" in result.stderr and result.stdout == ""
