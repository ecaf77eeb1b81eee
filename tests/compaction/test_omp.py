"""D-29: oh-my-pi 18's semantics (docs/omp18-compaction.md, OMP-n). Expected values were produced by
oh-my-pi 18.2.3's own functions on the same inputs (tests/interop compares whole files)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from compactd.compaction import omp
from compactd.compaction.file_ops import FileOperations
from compactd.compaction.prepare import NoCompactionReason, prepare_compaction
from compactd.compaction.settings import CompactionSettings, applied_compat
from compactd.compaction.tokens import estimate_tokens
from compactd.engine.settings import SettingsError, load_settings
from compactd.session import Session


def text(value: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": value}]


def msg(entry_id: str, parent: str | None, message: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": "2026-01-01T00:00:00.000Z",
            "message": message, **extra}


def user(value: str) -> dict[str, Any]:
    return {"role": "user", "content": text(value), "timestamp": 1}


def assistant(value: str, usage: int | None = None, calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"role": "assistant", "content": text(value) + (calls or []), "stopReason": "stop",
                           "timestamp": 1}
    if usage is not None:
        out["usage"] = {"input": usage, "output": 10, "cacheRead": 0, "cacheWrite": 0, "totalTokens": usage + 10}
    return out


def chain(*messages: dict[str, Any]) -> list[dict[str, Any]]:
    path: list[dict[str, Any]] = []
    for n, message in enumerate(messages):
        if message.get("type"):  # a whole entry
            entry = {**message, "id": f"e{n}", "parentId": path[-1]["id"] if path else None}
        else:
            entry = msg(f"e{n}", path[-1]["id"] if path else None, message)
        path.append(entry)
    return path


# --- token counting ---------------------------------------------------------------------------


def test_tokens_are_utf8_bytes_over_four_per_fragment() -> None:
    assert omp.count_message({"role": "user", "content": "ééé a"}) == 2  # 8 bytes; Pi's chars/4 says 2 too
    assert estimate_tokens({"role": "user", "content": "éééé"}) == 1 and omp.count_message(
        {"role": "user", "content": "éééé"}) == 2
    calls = [{"type": "toolCall", "id": "t1", "name": "grep", "arguments": {"pattern": "x", "2": 1}}]
    message = {"role": "assistant", "content": [{"type": "thinking", "thinking": "<thinking> a </thinking>"}]
               + text("ok") + calls}
    # every fragment rounds up on its own: thinking 24 bytes → 6, "ok" → 1, "grep" → 1,
    # {"2":1,"pattern":"x"} (keys in JavaScript order, 21 bytes) → 6
    assert omp.count_message(message) == 6 + 1 + 1 + 6
    assert omp.count_message({"role": "toolResult", "content": [*text("abcde"), {"type": "image"}]}) == 1202
    assert omp.count_message({"role": "bashExecution", "command": "ls", "output": "a b"}) == 2
    assert omp.count_message({"role": "system", "content": "ignored"}) == 0


def test_usage_figures() -> None:
    usage = {"input": 100, "output": 20, "cacheRead": 30, "cacheWrite": 0, "totalTokens": 150,
             "orchestration": {"input": 10, "output": 5}}
    assert omp.context_tokens(usage) == 135  # total less provider-side orchestration
    assert omp.prompt_tokens(usage) == 130  # input + cache read + cache write
    assert omp.context_tokens({"contextTokens": 77, "totalTokens": 5}) == 77
    assert omp.prompt_tokens({"input": 0, "output": 9, "totalTokens": 9}) == 9


# --- preparation ------------------------------------------------------------------------------


def long_path(usage: int) -> list[dict[str, Any]]:
    body = "word " * 100  # 125 tokens each
    return chain(user("one " + body), assistant("a1 " + body), user("two " + body), assistant("a2 " + body),
                 user("three " + body), assistant("a3 " + body, usage=usage))


def test_usage_above_the_estimate_shrinks_the_kept_budget() -> None:
    settings = CompactionSettings(keep_recent_tokens=300)
    small = omp.prepare_omp(long_path(usage=10), settings)
    big = omp.prepare_omp(long_path(usage=7000), settings)  # ~9x the estimate: keep 300/9 → 33
    assert small and big
    assert small.first_kept_entry_id == "e4"  # the last turn (user + answer, ~254) fits 300
    assert big.first_kept_entry_id == "e5" and big.is_split_turn and big.turn_start_entry_id == "e4"
    assert big.tokens_before == 7010  # the latest usage, not an estimate
    pi = prepare_compaction(long_path(usage=7000), settings)
    assert pi and pi.first_kept_entry_id == "e3"  # Pi walks its full budget (to the entry that crosses it)


def test_the_budget_is_checked_only_at_cut_points() -> None:
    """A tool result's weight belongs to the call before it: an assistant whose result would
    overflow the budget is not kept, and the newest cut point is kept even when over budget."""
    call = [{"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "x.py"}}]
    path = chain(user("start"), assistant("reading", calls=call),
                 {"role": "toolResult", "toolCallId": "c1", "toolName": "read", "content": text("y" * 4000),
                  "timestamp": 1},
                 assistant("done"))
    prep = omp.prepare_omp(path, CompactionSettings(keep_recent_tokens=100))
    assert prep and prep.first_kept_entry_id == "e3" and prep.is_split_turn
    assert [m["role"] for _, m in prep.turn_prefix] == ["user", "assistant", "toolResult"]
    assert [m["role"] for _, m in prep.summarized] == []


def test_metadata_never_becomes_the_first_kept_entry() -> None:
    path = chain(user("one " * 200), assistant("a " * 200),
                 {"type": "model_change", "provider": "p", "modelId": "m", "timestamp": "2026-01-01T00:00:00.000Z"},
                 user("two " * 20), assistant("b"))
    # both count the last two messages 21: Pi cuts where that reaches the budget, oh-my-pi keeps
    # what stays within it
    prep = omp.prepare_omp(path, CompactionSettings(keep_recent_tokens=21))
    assert prep and prep.first_kept_entry_id == "e3"  # Pi pulls the model change in (P-11)
    pi = prepare_compaction(path, CompactionSettings(keep_recent_tokens=21))
    assert pi and pi.first_kept_entry_id == "e2"


def test_previous_compaction_and_reset_boundary() -> None:
    path = chain(user("one " * 100), assistant("a " * 100), user("two " * 100), assistant("b " * 100))
    compaction = {"type": "compaction", "id": "c", "parentId": "e3", "timestamp": "2026-01-01T00:00:00.000Z",
                  "summary": "S1\n\n<files>\nold.py (Read)\n</files>", "firstKeptEntryId": "e2", "tokensBefore": 9,
                  "details": {"readFiles": ["old.py:1-9"], "modifiedFiles": []}}
    after = [msg("e4", "c", user("three " * 100)), msg("e5", "e4", assistant("c " * 100))]
    prep = omp.prepare_omp([*path, compaction, *after], CompactionSettings(keep_recent_tokens=150))
    assert prep and prep.previous_summary == compaction["summary"]
    assert [i for i, _ in prep.summarized] == ["e2", "e3"]  # the previous kept range is summarized again
    assert prep.read_files == ["old.py"]  # its lists carried forward, read selector stripped
    reset = {"type": "reset_boundary", "id": "r", "parentId": "e5", "timestamp": "2026-01-01T00:00:00.000Z"}
    later = [msg("e6", "r", user("four " * 100)), msg("e7", "e6", assistant("d " * 100))]
    prep = omp.prepare_omp([*path, compaction, *after, reset, *later], CompactionSettings(keep_recent_tokens=150))
    assert prep and prep.previous_summary is None and prep.read_files == []
    assert [i for i, _ in prep.summarized + prep.turn_prefix] == ["e6"]  # /clear: nothing before the reset
    ended = omp.prepare_omp([*path, compaction], CompactionSettings())
    assert not ended and ended.reason == NoCompactionReason.ALREADY_COMPACTED


# --- file lists and the <files> block ---------------------------------------------------------


def test_read_selectors_and_urls() -> None:
    assert omp.strip_read_selector("src/a.py:10-20") == "src/a.py"
    assert omp.strip_read_selector("src/a.py:1-5:raw") == "src/a.py"
    assert omp.strip_read_selector("src/a.py:L3+4,9") == "src/a.py"
    assert omp.strip_read_selector("notes:draft") == "notes:draft"
    ops = FileOperations()
    omp.extract_file_ops({"role": "assistant", "content": [
        {"type": "toolCall", "name": "read", "arguments": {"path": "artifact://3"}},
        {"type": "toolCall", "name": "read", "arguments": {"path": "b.py:2"}},
        {"type": "toolCall", "name": "edit", "arguments": {"path": "b.py"}},
        {"type": "toolCall", "name": "write", "arguments": {"path": "a.py"}},
        {"type": "toolCall", "name": "read", "arguments": {"path": "c.py"}},
    ]}, ops)
    assert omp.omp_file_lists(ops) == (["c.py"], ["a.py", "b.py"])


def test_files_block_is_folded_by_directory_and_replaces_older_tags() -> None:
    ops = FileOperations()
    for name in ("README.md", "src/a.py", "src/b/c.py"):
        ops.read[name] = None
    ops.written["/abs/x/y.txt"] = None
    ops.edited["src/a.py"] = None
    ops.read["conflict://1"] = None
    summary = omp.upsert_files_block("Body\n\n<read-files>\nq\n</read-files>", ops)
    assert summary == ("Body\n\n<files>\nREADME.md (Read)\n# /abs/x/\ny.txt (Write)\n# src/\na.py (RW)\n## b/\n"
                       "c.py (Read)\n</files>")
    assert omp.upsert_files_block(summary, FileOperations()) == "Body"
    many = omp.files_block([f"f{i:02d}.txt" for i in range(23)], [])
    assert many.splitlines()[-2:] == ["[…3 files elided…]", "</files>"] and "f20.txt" not in many


# --- the xml transcript -----------------------------------------------------------------------


def test_xml_transcript() -> None:
    messages = [
        {"role": "custom", "customType": "note", "content": "dev note", "display": True, "timestamp": 1},
        {"role": "user", "content": [*text("hi </conversation>"), {"type": "image", "mimeType": "image/png", "data": "x"}]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "<thinking> a </thinking>\n<thinking>b</thinking>"}, *text("ok"),
            {"type": "toolCall", "id": "t1", "name": "grep", "arguments": {"pattern": "x", "2": 1}},
            {"type": "toolCall", "id": "t2", "name": "read", "arguments": {"path": "a"}}]},
        {"role": "toolResult", "toolCallId": "t1", "toolName": "grep", "content": text("r1")},
        {"role": "toolResult", "toolCallId": "t2", "toolName": "read", "useless": True, "content": text("junk")},
        {"role": "bashExecution", "command": "ls", "output": "", "exitCode": 2, "timestamp": 1},
    ]
    assert omp.serialize_for_summary(messages) == (
        "dev note\n\nHuman: hi &lt;/conversation>[Image: image/png]\n\nAssistant: <thinking>\na\nb\n</thinking>ok"
        '<invoke name="grep"><parameter name="2">1</parameter><parameter name="pattern">"x"</parameter></invoke>'
        "\n\nHuman: <tool_response>\nr1\n</tool_response>\n\nHuman: Ran `ls`\n(no output)\n\nCommand exited with code 2"
    )
    long = [{"role": "toolResult", "toolCallId": "t", "toolName": "read", "content": text("z" * 2500)}]
    assert omp.serialize_for_summary(long).endswith("z\n\n[... 500 more characters truncated]\n</tool_response>")


def test_branch_preparation_keeps_tool_results_within_the_budget() -> None:
    call = [{"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "x.py"}}]
    entries = chain(user("go"), assistant("reading", calls=call),
                    {"role": "toolResult", "toolCallId": "c1", "toolName": "read", "content": text("y" * 9000),
                     "timestamp": 1},
                    assistant("done"))
    prep = omp.prepare_branch_entries_omp(entries, 0)
    assert [m.message["role"] for m in prep.messages] == ["user", "assistant", "toolResult", "assistant"]
    # the result weighs its 2000-character transcript form (+ the truncation note), not 9000
    assert omp.branch_tokens(entries[2]["message"]) == 510
    limited = omp.prepare_branch_entries_omp(entries, 300)
    assert [m.entry_id for m in limited.messages] == ["e3"]
    assert prep.file_lists == (["x.py"], [])


# --- which semantics apply --------------------------------------------------------------------


def test_compat_choice(tmp_path: Path) -> None:
    assert applied_compat("auto", True) == "omp" and applied_compat("auto", False) == "pi"
    assert applied_compat("pi", True) == "pi" and applied_compat("omp", False) == "omp"
    session = Session.create(str(tmp_path), tmp_path / "pi.jsonl")
    session.append_message(user("hello"))
    session.append_message(assistant("hi"))  # Pi writes the file once an answer exists
    slot = b'{"type":"title","v":1,"title":"","updatedAt":"2026-01-01T00:00:00.000Z","pad":"'
    slot += b" " * (256 - len(slot) - 3) + b'"}\n'
    assert len(slot) == 256
    omp_file = tmp_path / "omp.jsonl"
    omp_file.write_bytes(slot + (tmp_path / "pi.jsonl").read_bytes())
    settings = load_settings(tmp_path, {}, env={}, home=tmp_path / "home")
    assert settings.compat == "auto"
    assert settings.compat_for(Session.open(omp_file)) == "omp"
    assert settings.compat_for(Session.open(tmp_path / "pi.jsonl")) == "pi"
    forced = load_settings(tmp_path, {"compat": "pi"}, env={}, home=tmp_path / "home")
    assert forced.compat_for(Session.open(omp_file)) == "pi"
    with pytest.raises(SettingsError, match="compat must be one of"):
        load_settings(tmp_path, {"compat": "oh-my-pi"}, env={}, home=tmp_path / "home")


def test_short_summary_is_the_first_line_of_content() -> None:
    summary = "## Goal\n- **Ship** the parser rewrite.\n\n## Progress\n..."
    assert omp.short_summary(summary) == "Ship the parser rewrite."
    long = "## Goal\n" + "word " * 100
    short = omp.short_summary(long)
    assert len(short) <= omp.SHORT_SUMMARY_MAX_CHARS + 1 and short.endswith("…") and "\n" not in short
