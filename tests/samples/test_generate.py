"""The session generator: determinism, v3 shape, tree/compaction/branch invariants, size control."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import subprocess
import sys
from datetime import datetime
from functools import cache
from typing import Any

import pytest
from compactd.samples import generate_session, sample_session_text, write_session
from compactd.samples.generate import SAMPLE_PATH
from compactd.session.model import SessionHeader, parse_entry

ID_RE = re.compile(r"^[0-9a-f]{8}$")
TS_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
SUMMARY_HEADINGS = ("## Goal", "## Constraints & Preferences", "## Progress", "### Done", "### In Progress",
                    "### Blocked", "## Key Decisions", "## Next Steps", "## Critical Context")
BRANCH_HEADINGS = SUMMARY_HEADINGS[:-1]

# A spread of configurations; generated once per test session (each is a few hundred KB).
CONFIGS: dict[str, dict[str, Any]] = {
    **{f"seed{s}": {"seed": s, "target_bytes": 800_000} for s in range(8)},
    "no-split": {"seed": 3, "target_bytes": 350_000, "split_turns": False},
    "plain": {"seed": 4, "target_bytes": 200_000, "branches": False, "compactions": False},
}


@cache
def lines_for(name: str) -> tuple[str, ...]:
    return tuple(generate_session(**CONFIGS[name]))


def entries_for(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in lines_for(name)[1:]]


def ms(iso: str) -> int:
    return int(datetime.strptime(iso, "%Y-%m-%dT%H:%M:%S.%f%z").timestamp() * 1000)


def ancestors(by_id: dict[str, dict[str, Any]], entry_id: str | None) -> list[str]:
    out = []
    while entry_id is not None:
        out.append(entry_id)
        entry_id = by_id[entry_id]["parentId"]
    return out


# ------------------------------------------------------------------------------------ determinism


def test_same_seed_gives_identical_bytes_and_different_seeds_differ() -> None:
    a = list(generate_session(seed=11, target_bytes=120_000))
    b = list(generate_session(seed=11, target_bytes=120_000))
    c = list(generate_session(seed=12, target_bytes=120_000))
    assert a == b
    assert a != c
    assert a[0] != c[0]  # even the header (session id, start time) depends on the seed


def test_output_does_not_depend_on_hash_randomization() -> None:
    """Separate interpreters with different PYTHONHASHSEED produce the same bytes."""
    code = ("import hashlib,sys\nfrom compactd.samples import generate_session\n"
            "h=hashlib.sha256()\nfor l in generate_session(seed=5, target_bytes=150_000): h.update(l.encode()+b'\\n')\n"
            "print(h.hexdigest())")
    here = hashlib.sha256()
    for line in generate_session(seed=5, target_bytes=150_000):
        here.update(line.encode() + b"\n")
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        assert out.stdout.strip() == here.hexdigest()


# ------------------------------------------------------------------------------------ file format


@pytest.mark.parametrize("name", list(CONFIGS))
def test_every_line_is_a_valid_v3_entry(name: str) -> None:
    lines = lines_for(name)
    header = json.loads(lines[0])
    assert header["type"] == "session" and header["version"] == 3 and header["cwd"] == "/home/dev/project"
    assert TS_RE.match(header["timestamp"])
    SessionHeader.model_validate(header)
    seen: set[str] = set()
    last_ms = ms(header["timestamp"])
    for line in lines:
        obj = json.loads(line)
        # E-1: compact separators, literal non-ASCII, key order kept -> re-encoding is identical
        assert json.dumps(obj, separators=(",", ":"), ensure_ascii=False) == line
    for line in lines[1:]:
        e = json.loads(line)
        parse_entry(e)  # the session layer's pydantic description accepts it
        assert ID_RE.match(e["id"]) and e["id"] not in seen
        assert e["parentId"] is None or e["parentId"] in seen, "parentId must refer to an earlier entry"
        seen.add(e["id"])
        assert TS_RE.match(e["timestamp"])
        assert ms(e["timestamp"]) > last_ms, "entry timestamps strictly increase"
        last_ms = ms(e["timestamp"])
        if e["type"] == "message":
            m = e["message"]
            assert isinstance(m["timestamp"], int) and m["timestamp"] <= last_ms  # E-2: epoch ms
            if m["role"] == "assistant":
                u = m["usage"]
                assert set(u) >= {"input", "output", "cacheRead", "cacheWrite", "totalTokens", "cost"}
                assert u["totalTokens"] == u["input"] + u["output"] + u["cacheRead"] + u["cacheWrite"]
                assert m["stopReason"] in ("toolUse", "stop", "aborted", "error")


def test_content_is_realistic_coding_agent_traffic() -> None:
    roles: dict[str, int] = {}
    tools: set[str] = set()
    types: set[str] = set()
    text = ""
    sizes: list[int] = []
    errors: list[str] = []
    for name in CONFIGS:
        for e in entries_for(name):
            types.add(e["type"])
            if e["type"] != "message":
                continue
            m = e["message"]
            roles[m["role"]] = roles.get(m["role"], 0) + 1
            if m["role"] == "assistant":
                for b in m["content"]:
                    if b["type"] == "toolCall":
                        tools.add(b["name"])
                        if "path" in b["arguments"] and b["name"] != "grep":
                            assert re.match(r"^(src|tests)/", b["arguments"]["path"])
            elif m["role"] == "user":
                text += m["content"] if isinstance(m["content"], str) else m["content"][0]["text"]
            elif m["role"] == "toolResult":
                sizes.append(len(m["content"][0]["text"]))
                if m["isError"]:
                    errors.append(m["content"][0]["text"])
    assert {"read", "edit", "write", "bash", "grep"} <= tools
    assert {"user", "assistant", "toolResult", "bashExecution"} <= set(roles)
    assert {"model_change", "thinking_level_change", "compaction", "branch_summary", "custom",
            "custom_message", "label"} <= types
    assert "Don't change the public API." in text
    assert any(ord(ch) > 0x1F000 for ch in text), "some requests carry emoji"
    assert re.search(r"[éöü€Ελ日]", text), "some requests carry accented / non-Latin text"
    assert min(sizes) < 100 and max(sizes) > 20_000, "tool outputs range from tiny to tens of KB"
    assert any(t.startswith("Traceback") or "Traceback (most recent call last)" in t for t in errors)


def test_assistant_usage_grows_with_the_context_between_compactions() -> None:
    entries = entries_for("plain")  # no compaction, no branch: one growing context
    prompts = [e["message"]["usage"]["input"] + e["message"]["usage"]["cacheRead"]
               + e["message"]["usage"]["cacheWrite"]
               for e in entries if e["type"] == "message" and e["message"]["role"] == "assistant"
               and e["message"]["stopReason"] in ("toolUse", "stop")]
    assert len(prompts) > 20
    assert all(b >= a for a, b in itertools.pairwise(prompts)), "the prompt only grows without compaction"
    assert prompts[-1] > 3 * prompts[0]


# ------------------------------------------------------------------------------- tree invariants


@pytest.mark.parametrize("name", list(CONFIGS))
def test_tool_results_follow_their_tool_call_on_the_path(name: str) -> None:
    entries = entries_for(name)
    by_id = {e["id"]: e for e in entries}
    for e in entries:
        if e["type"] != "message" or e["message"]["role"] != "toolResult":
            continue
        # walk up over sibling results: only toolResults may sit between a call and its result (D-20)
        p = by_id[e["parentId"]]
        while p["type"] == "message" and p["message"]["role"] == "toolResult":
            p = by_id[p["parentId"]]
        assert p["type"] == "message" and p["message"]["role"] == "assistant"
        calls = {b["id"]: b["name"] for b in p["message"]["content"] if b["type"] == "toolCall"}
        assert calls.get(e["message"]["toolCallId"]) == e["message"]["toolName"]
    # and every toolUse message gets exactly one result per call, right after it
    children: dict[str | None, list[dict[str, Any]]] = {}
    for e in entries:
        children.setdefault(e["parentId"], []).append(e)
    for e in entries:
        m = e.get("message", {})
        if m.get("role") == "assistant" and m["stopReason"] == "toolUse":
            ids = [b["id"] for b in m["content"] if b["type"] == "toolCall"]
            got, cur = [], e["id"]
            for _ in ids:
                (nxt,) = [c for c in children[cur] if c["type"] == "message"][:1]
                got.append(nxt["message"].get("toolCallId"))
                cur = nxt["id"]
            assert got == ids


@pytest.mark.parametrize("name", list(CONFIGS))
def test_compactions_keep_a_valid_cut_point_on_their_path(name: str) -> None:
    entries = entries_for(name)
    by_id = {e["id"]: e for e in entries}
    for e in entries:
        if e["type"] != "compaction":
            continue
        kept = by_id[e["firstKeptEntryId"]]
        assert kept["id"] in ancestors(by_id, e["parentId"]), "firstKeptEntryId lies on the compaction's path"
        assert kept["type"] == "message" and kept["message"]["role"] in ("user", "assistant")
        assert kept["message"]["role"] != "toolResult"
        summary = e["summary"]
        positions = [summary.find(h + "\n") for h in SUMMARY_HEADINGS]
        assert -1 not in positions and positions == sorted(positions), "structured format, in order"
        assert isinstance(e["tokensBefore"], int) and e["tokensBefore"] > 0
        details = e["details"]
        assert details["readFiles"] == sorted(details["readFiles"])
        assert details["modifiedFiles"] == sorted(details["modifiedFiles"])
        assert not set(details["readFiles"]) & set(details["modifiedFiles"])
        if details["modifiedFiles"]:
            assert "<modified-files>\n" + "\n".join(details["modifiedFiles"]) + "\n</modified-files>" in summary


def test_compactions_happen_and_some_cut_inside_a_turn() -> None:
    kept_roles = []
    splits = 0
    for name in CONFIGS:
        entries = entries_for(name)
        by_id = {e["id"]: e for e in entries}
        for e in entries:
            if e["type"] == "compaction":
                role = by_id[e["firstKeptEntryId"]]["message"]["role"]
                kept_roles.append((name, role))
                if "**Turn Context (split turn):**" in e["summary"]:
                    splits += 1
                    assert role == "assistant", "a split turn is cut at an assistant message"
    assert len(kept_roles) >= 5
    assert splits >= 2, "some compactions cut inside a long turn"
    assert {r for n, r in kept_roles if n == "no-split"} == {"user"}, "split_turns=False cuts at turn starts"
    assert not [1 for n, _ in kept_roles if n == "plain"]


def test_branch_summaries_record_the_abandoned_leaf() -> None:
    found = 0
    for name in CONFIGS:
        entries = entries_for(name)
        by_id = {e["id"]: e for e in entries}
        order = {e["id"]: i for i, e in enumerate(entries)}
        for e in entries:
            if e["type"] != "branch_summary":
                continue
            found += 1
            old_leaf = e["fromId"]
            # D-5: fromId is the entry navigated away from: the entry written just before, not on the new path
            assert order[old_leaf] == order[e["id"]] - 1
            assert old_leaf not in ancestors(by_id, e["parentId"])
            # D-4: the summary hangs off an earlier entry of the old path (the position navigated to)
            assert e["parentId"] in ancestors(by_id, old_leaf)
            assert e["parentId"] != old_leaf
            positions = [e["summary"].find(h + "\n") for h in BRANCH_HEADINGS]
            assert -1 not in positions and positions == sorted(positions)
            assert "## Critical Context" not in e["summary"]
            assert set(e["details"]) == {"readFiles", "modifiedFiles"}
    assert found >= 2


def test_switches_turn_branches_and_compactions_off() -> None:
    entries = entries_for("plain")
    types = {e["type"] for e in entries}
    assert "branch_summary" not in types and "compaction" not in types
    # one linear chain: every entry's parent is the entry before it
    assert all(b["parentId"] == a["id"] for a, b in itertools.pairwise(entries))


# -------------------------------------------------------------------------------- size and turns


@pytest.mark.parametrize("target", [40_000, 250_000, 900_000])
def test_target_size_is_roughly_respected(target: int) -> None:
    size = sum(len(line.encode()) + 1 for line in generate_session(seed=21, target_bytes=target))
    assert target <= size <= target * 1.2 + 8_000


def test_turns_limit_counts_user_turns() -> None:
    entries = [json.loads(line) for line in generate_session(seed=2, turns=4)][1:]
    users = [e for e in entries if e["type"] == "message" and e["message"]["role"] == "user"]
    assert len(users) == 4
    assert entries[-1]["type"] == "message" and entries[-1]["message"]["role"] == "assistant"


def test_custom_cwd_and_session_id_are_used() -> None:
    header = json.loads(next(iter(generate_session(seed=1, turns=1, cwd="/srv/app", session_id="my-session.1"))))
    assert header["cwd"] == "/srv/app" and header["id"] == "my-session.1"


# -------------------------------------------------------------------------------------- sample


def test_sample_is_small_with_one_branch_and_matches_the_shipped_file() -> None:
    text = sample_session_text()
    assert text == sample_session_text()
    assert SAMPLE_PATH.read_text(encoding="utf-8") == text, "run: compactd sample server/compactd/samples/sample.jsonl"
    entries = [json.loads(line) for line in text.splitlines()[1:]]
    assert 40 <= len(entries) <= 80
    assert [e["type"] for e in entries].count("branch_summary") == 1
    assert not [e for e in entries if e["type"] == "compaction"]


def test_sample_gives_a_compaction_with_keep_2000_something_to_summarize(tmp_path) -> None:
    from compactd.compaction.prepare import prepare_compaction
    from compactd.compaction.settings import CompactionSettings
    from compactd.session import Session

    path = tmp_path / "sample.jsonl"
    path.write_text(sample_session_text(), encoding="utf-8")
    session = Session.open(path)
    assert session.warnings == []
    branch = session.get_branch()
    assert branch[-1]["id"] == json.loads(path.read_text().splitlines()[-1])["id"]
    assert any(e["type"] == "branch_summary" for e in branch)
    prep = prepare_compaction(branch, CompactionSettings(keep_recent_tokens=2000))
    assert prep, getattr(prep, "reason", None)
    assert len(prep.messages_to_summarize) >= 10
    assert prep.kept_messages


def test_write_session_writes_the_generated_lines(tmp_path) -> None:
    out = write_session(tmp_path / "nested" / "s.jsonl", seed=9, turns=2)
    assert out.read_text(encoding="utf-8") == "".join(line + "\n" for line in generate_session(seed=9, turns=2))
