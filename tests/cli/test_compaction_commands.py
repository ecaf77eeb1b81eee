"""`compactd prepare|branch|stats|prune` run as real subprocesses on real files; their --json
shapes are a contract shared with the daemon (compactd.compaction.reports)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from compactd.compaction.prepare import prepare_compaction
from compactd.compaction.serialize import serialize_messages
from compactd.compaction.settings import CompactionSettings
from compactd.compaction.tokens import estimate_tokens
from compactd.session import Session

from ..compaction.builders import Builder, tool_call, usage

PREPARE_KEYS = ["firstKeptEntryId", "isSplitTurn", "turnStartEntryId", "tokensBefore", "messagesToSummarize",
                "turnPrefixMessages", "previousSummary", "readFiles", "modifiedFiles", "conversationText",
                "turnPrefixText", "estimatedTokensAfter", "estimatedTokensSummarized", "estimatedTokensBefore",
                "estimatedTokensKept", "compat"]
STATS_KEYS = ["contextTokens", "usageTokens", "trailingTokens", "lastUsageIndex", "estimatedTokens", "exactTokens",
              "encoding", "exact", "contextWindow", "reserveTokens", "threshold", "shouldCompact", "percent",
              "usageStale", "compat"]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "compactd", *args], capture_output=True, text=True, timeout=120,
                          check=False)


def run_json(*args: str) -> Any:
    result = run(*args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def write_session(path: Path, b: Builder) -> Path:
    header = {"type": "session", "version": 3, "id": "test-session", "timestamp": "2025-01-01T00:00:00.000Z",
              "cwd": "/tmp"}
    lines = [json.dumps(obj, ensure_ascii=False, separators=(",", ":")) for obj in [header, *b.entries]]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _work_session() -> Builder:
    b = Builder()
    for i in range(4):
        b.user(f"task {i} " + "x" * 400)
        b.assistant(f"on it {i}", calls=[tool_call(f"c{i}", "edit", {"path": f"src/f{i}.py"})])
        b.tool_result(f"c{i}", "edit", "ok " * 100)
    return b


def test_prepare_json_on_the_real_fixture(pi_fixture: Path) -> None:
    report = run_json("prepare", str(pi_fixture), "--show-text")
    assert list(report) == PREPARE_KEYS
    prep = prepare_compaction(Session.open(pi_fixture).get_branch(), CompactionSettings())
    assert report["firstKeptEntryId"] == prep.first_kept_entry_id
    assert report["tokensBefore"] == prep.tokens_before
    assert report["messagesToSummarize"] == [{"role": m.message["role"], "entryId": m.entry_id}
                                             for m in prep.messages_to_summarize]
    assert report["conversationText"] == serialize_messages([m.message for m in prep.messages_to_summarize])
    assert report["previousSummary"].startswith("# Context Checkpoint")
    assert report["isSplitTurn"] is (report["turnPrefixText"] is not None)


def test_prepare_json_leaves_the_text_out_unless_asked(pi_fixture: Path) -> None:
    """The text is most of a long dry run's bytes and time: opt-in, as in the readable form."""
    without = run_json("prepare", str(pi_fixture))
    assert list(without) == PREPARE_KEYS
    assert without["conversationText"] is None and without["turnPrefixText"] is None
    with_text = run_json("prepare", str(pi_fixture), "--show-text")
    assert {k: v for k, v in with_text.items() if not k.endswith("Text")} == {
        k: v for k, v in without.items() if not k.endswith("Text")}
    assert with_text["conversationText"].startswith("[User]: ")


def test_prepare_options_and_null_result(tmp_path: Path) -> None:
    b = _work_session()
    path = write_session(tmp_path / "s.jsonl", b)
    report = run_json("prepare", str(path), "--keep-recent-tokens", "100")
    assert report["modifiedFiles"] == ["src/f0.py", "src/f1.py", "src/f2.py"]
    assert report["estimatedTokensAfter"] == sum(
        estimate_tokens(e["message"]) for e in b.entries if e["id"] >= report["firstKeptEntryId"])
    # Like with like: the estimate now is the whole context's, here (no system message, no earlier
    # summary) the kept part plus what is summarized.
    summarized = sum(estimate_tokens(e["message"]) for e in b.entries
                     if "message" in e and e["id"] < report["firstKeptEntryId"])
    assert report["estimatedTokensSummarized"] == summarized > 0
    assert report["estimatedTokensBefore"] == report["estimatedTokensAfter"] + summarized
    assert report["estimatedTokensKept"] == report["estimatedTokensAfter"]
    # at an early leaf the session is too small: null, and a readable reason without --json
    early = b.entries[2]["id"]
    assert run_json("prepare", str(path), "--leaf", early) is None
    human = run("prepare", str(path), "--leaf", early)
    assert human.returncode == 0 and "Nothing to compact (session too small)" in human.stdout
    assert run_json("prepare", str(path)) is None  # default budget keeps everything
    missing = run("prepare", str(path), "--leaf", "nope")
    assert missing.returncode == 2 and "Entry nope not found" in missing.stderr


def test_prepare_reports_already_compacted(tmp_path: Path) -> None:
    b = _work_session()
    b.compaction(b.entries[3]["id"])
    path = write_session(tmp_path / "s.jsonl", b)
    assert run_json("prepare", str(path), "--keep-recent-tokens", "10") is None
    assert "Already compacted" in run("prepare", str(path)).stdout


def test_branch_json(tmp_path: Path) -> None:
    b = Builder()
    root = b.user("root")
    fork = b.assistant("fork point")
    b.user("left " * 100)
    b.assistant("reading", calls=[tool_call("c1", "read", {"path": "left.py"})])
    b.tool_result("c1", "read", "content")
    left_leaf = b.assistant("left done")
    b.branch_from(fork)
    right = b.user("right")
    path = write_session(tmp_path / "tree.jsonl", b)
    report = run_json("branch", str(path), "--from", left_leaf, "--to", right)
    assert list(report) == ["commonAncestorId", "entryIds", "messages", "totalTokens", "readFiles", "modifiedFiles",
                            "compat"]
    assert report["compat"] == "pi"  # no title slot line: Pi's file
    assert report["commonAncestorId"] == fork
    assert report["entryIds"] == [e["id"] for e in b.entries[2:6]]
    assert [m["role"] for m in report["messages"]] == ["user", "assistant", "assistant"]  # tool result skipped
    assert report["readFiles"] == ["left.py"] and report["modifiedFiles"] == []
    small = run_json("branch", str(path), "--from", left_leaf, "--to", right, "--budget", "10")
    assert [m["entryId"] for m in small["messages"]] == [left_leaf]
    assert small["readFiles"] == ["left.py"]  # the overflowing message still contributes its files
    assert run_json("branch", str(path), "--from", left_leaf, "--to", root)["commonAncestorId"] == root
    # --budget 0 is "no limit" (Pi's prepareBranchEntries(entries, 0)), not clamped to 1024 tokens
    b.branch_from(left_leaf)
    long_leaf = b.user("long " * 3000)
    path = write_session(tmp_path / "tree2.jsonl", b)
    unlimited = run_json("branch", str(path), "--from", long_leaf, "--to", right, "--budget", "0")
    assert unlimited["totalTokens"] > 1024 and len(unlimited["messages"]) == 4
    assert run_json("branch", str(path), "--from", long_leaf, "--to", right, "--budget", "1024")["messages"] == []
    negative = run("branch", str(path), "--from", long_leaf, "--to", right, "--budget", "-1")
    assert negative.returncode == 2 and "--budget" in negative.stderr
    bad = run("branch", str(path), "--from", "zzz", "--to", right)
    assert bad.returncode == 2 and "--from: Entry zzz not found" in bad.stderr


def test_stats_json(tmp_path: Path) -> None:
    b = Builder()
    b.user("q" * 400)
    b.assistant("a", usage_=usage(120000))
    b.user("follow up " * 10)
    path = write_session(tmp_path / "s.jsonl", b)
    report = run_json("stats", str(path), "--model", "gpt-4")
    assert list(report) == STATS_KEYS
    assert report["usageTokens"] == 120000 and report["lastUsageIndex"] == 1
    assert report["trailingTokens"] == 25 and report["contextTokens"] == 120025
    assert report["estimatedTokens"] == 100 + 1 + 25
    assert (report["encoding"], report["exact"]) == ("cl100k_base", True)
    assert report["exactTokens"] > 0
    assert (report["contextWindow"], report["reserveTokens"], report["threshold"]) == (128000, 16384, 111616)
    assert report["shouldCompact"] is True
    assert report["percent"] == 93.8 and report["usageStale"] is False  # 120025 / 128000
    wide = run_json("stats", str(path), "--context-window", "200000", "--per-entry")
    assert wide["shouldCompact"] is False
    # the session's own model (gpt-4o) needs o200k: exact only when tiktoken has it cached locally
    assert wide["exact"] is (wide["encoding"] == "o200k_base")
    assert wide["perEntry"] == [
        {"entryId": e["id"], "estimate": estimate_tokens(e["message"]), "exact": row["exact"]}
        for e, row in zip(b.entries, wide["perEntry"], strict=True)]
    assert all(row["exact"] > 0 for row in wide["perEntry"])


def test_prune_requires_dry_run_and_reports(tmp_path: Path, pi_fixture: Path) -> None:
    refused = run("prune", str(pi_fixture))
    assert refused.returncode == 2 and "--dry-run" in refused.stderr
    report = run_json("prune", str(pi_fixture), "--dry-run")
    assert list(report) == ["prunedCount", "tokensSaved", "entryIds"]
    assert report["prunedCount"] == len(report["entryIds"]) > 0
    assert report["tokensSaved"] >= 20000
    b = _work_session()
    small = write_session(tmp_path / "s.jsonl", b)
    assert run_json("prune", str(small), "--dry-run") == {"prunedCount": 0, "tokensSaved": 0, "entryIds": []}
    assert "nothing to prune" in run("prune", str(small), "--dry-run").stdout


def test_prepare_json_arrives_whole_through_a_pipe_while_the_command_is_stopped_and_continued(tmp_path: Path) -> None:
    """Ctrl-Z / fg (or a debugger) stops and continues the command while it writes megabytes into
    a pipe; the buffered stdout lost the rest of an interrupted write, the JSON must stay whole."""
    import os
    import signal
    import threading
    import time

    from ..conftest import REAL_PI_FILES

    path = tmp_path / "large.jsonl"
    path.write_bytes(REAL_PI_FILES["pi-mono-large-session"].read_bytes())
    args = [sys.executable, "-m", "compactd", "prepare", str(path), "--json", "--show-text"]
    expected = json.loads(subprocess.run(args, capture_output=True, check=True, timeout=120).stdout)
    for _ in range(3):
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert proc.stdout is not None
        time.sleep(0.3)  # start-up: the output is written into the full pipe from here on
        done = threading.Event()

        def stop_and_continue(pid: int = proc.pid, done: threading.Event = done) -> None:
            while not done.is_set():
                try:
                    os.kill(pid, signal.SIGSTOP)
                    time.sleep(0.0005)
                    os.kill(pid, signal.SIGCONT)
                except ProcessLookupError:
                    return
                time.sleep(0.001)

        hammer = threading.Thread(target=stop_and_continue, daemon=True)
        hammer.start()
        chunks = []
        while chunk := proc.stdout.read(4096):  # a slow reader: the writer blocks on a full pipe
            chunks.append(chunk)
        done.set()
        hammer.join()
        proc.wait(60)
        assert json.loads(b"".join(chunks)) == expected


def test_prepare_json_with_text_is_the_bytes_of_the_whole_report_encoded_at_once(tmp_path: Path) -> None:
    """The command writes the history texts as their encoded parts (never joined): byte for byte
    what encoding the report with the texts as strings gives, on a real session and on one whose
    text holds emoji, other non-ASCII text, quotes, backslashes and control characters."""
    import orjson

    from compactd.compaction.figures import estimated_context_tokens
    from compactd.compaction.reports import preparation_json, run_prepare

    from ..conftest import REAL_PI_FILES

    b = Builder()
    odd = 'emoji 😀 é ü "quoted" back\\slash \t tab \x01 control <conversation> tag'
    for turn in range(12):
        b.user(f"request {turn}: {odd}")
        b.assistant(None, calls=[tool_call(f"c{turn}", "read", {"path": f"src/{turn}-😀.py", "note": odd})],
                    thinking=f"thinking {odd}", usage_=usage(1000 * (turn + 1)))
        b.tool_result(f"c{turn}", "read", f"output {turn} {odd}" * 20)
        b.assistant(f"answer {turn} {odd}", usage_=usage(1000 * (turn + 1) + 500))
    odd_file = write_session(tmp_path / "odd.jsonl", b)
    real = tmp_path / "large.jsonl"
    real.write_bytes(REAL_PI_FILES["pi-mono-large-session"].read_bytes())
    for path, extra in ((odd_file, ["--keep-recent-tokens", "500"]), (real, [])):
        done = subprocess.run([sys.executable, "-m", "compactd", "prepare", str(path), "--json", "--show-text", *extra],
                              capture_output=True, timeout=120, check=True)
        session = Session.open(path)
        prep = run_prepare(session, None, 500 if extra else None)
        assert prep and session.leaf_id
        context = estimated_context_tokens(session.by_id, session.leaf_id)
        expected = orjson.dumps(preparation_json(prep, context_tokens=context), option=orjson.OPT_INDENT_2) + b"\n"
        assert done.stdout == expected
        assert json.loads(done.stdout)["conversationText"]
