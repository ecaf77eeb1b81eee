"""(a) For every session file a real Pi wrote, and every entry taken as the leaf, compactd's
context equals the one Pi's own `buildSessionContext` builds, message for message, field for
field, along with the thinking level and model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from compactd.compaction.branch import collect_entries_for_branch_summary, prepare_branch_entries
from compactd.compaction.prepare import prepare_compaction
from compactd.compaction.settings import CompactionSettings
from compactd.session import Session, build_session_context
from compactd.session.tree import path_to
from compactd.session.model import parse_entry

from .conftest import session_files
from .harness import PiHome


def normalized(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Through JSON, as Pi's output is; keys JavaScript would drop (undefined) are dropped."""
    return [{k: v for k, v in m.items() if v is not None} for m in json.loads(json.dumps(messages))]


def compactd_contexts(path: Path) -> dict[str, dict[str, Any]]:
    session = Session.open(path)
    out: dict[str, dict[str, Any]] = {}
    for entry in session.entries:
        ctx = build_session_context(session.entries, entry["id"], session.by_id)
        out[entry["id"]] = {"messages": ctx.messages, "thinkingLevel": ctx.thinking_level, "model": ctx.model}
    return out


def test_scenario_wrote_what_it_should(pi_written: dict[str, Any]) -> None:
    entries = [json.loads(line) for line in Path(pi_written["sessionFile"]).read_text().splitlines()]
    kinds = [e["type"] for e in entries]
    assert kinds.count("compaction") >= 3  # two manual, one at the threshold
    assert "branch_summary" in kinds and "label" in kinds
    roles = {e["message"]["role"] for e in entries if e["type"] == "message"}
    assert {"user", "assistant", "toolResult"} <= roles
    assert len(pi_written["forks"]) == 1 and Path(pi_written["forks"][0]).exists()
    for entry in entries[1:]:
        parse_entry(entry)  # every entry Pi wrote conforms to compactd's typed description
    if pi_written["sessionFile"] and "system" in roles:  # Pi 1.6: the format of issue 12 §3
        assert "context_edit" in kinds
        assert all("systemMessage" in e for e in entries if e["type"] == "compaction")


def test_context_of_every_leaf_equals_pi(pi_home: PiHome, pi_written: dict[str, Any]) -> None:
    files = session_files(pi_written)
    theirs = pi_home.contexts(*files)
    compared = 0
    for path in files:
        ours = compactd_contexts(path)
        pi_contexts = theirs[str(path)]
        assert set(ours) == set(pi_contexts)
        for leaf, pi_ctx in pi_contexts.items():
            mine = ours[leaf]
            assert normalized(mine["messages"]) == normalized(pi_ctx["messages"]), f"{path.name} leaf {leaf}"
            assert mine["thinkingLevel"] == pi_ctx["thinkingLevel"]
            assert mine["model"] == pi_ctx["model"]
            compared += 1
    assert compared > 40


def test_compactd_prepares_the_compactions_pi_made(pi_written: dict[str, Any]) -> None:
    """Cut point, split turn, token estimate and file lists: for every compaction the real Pi wrote
    (manual, threshold, split turn, after an omitted answer), compactd's preparation of the same path
    chooses the same first kept entry, counts the same `tokensBefore` and lists the same files."""
    session = Session.open(Path(pi_written["sessionFile"]))
    compactions = [e for e in session.entries if e["type"] == "compaction"]
    assert len(compactions) >= 4
    for entry in compactions:
        prep = prepare_compaction(path_to(session.by_id, entry["parentId"]), CompactionSettings(keep_recent_tokens=300))
        assert prep, entry["id"]
        assert prep.first_kept_entry_id == entry["firstKeptEntryId"]
        assert prep.tokens_before == entry["tokensBefore"]
        assert {"readFiles": prep.read_files, "modifiedFiles": prep.modified_files} == entry["details"]


def test_compactd_collects_the_branch_pi_summarized(pi_written: dict[str, Any]) -> None:
    """Tree navigation with a summary: the entries compactd would summarize for the same move
    (old leaf → target) yield the file lists Pi stored on its branch summary."""
    session = Session.open(Path(pi_written["sessionFile"]))
    navigation = next(r for r in pi_written["results"] if r["op"] == "navigate")
    summary = session.by_id[navigation["summaryId"]]
    old_leaf = next(r for r in pi_written["results"] if r["op"] == "label")["id"]  # the leaf before moving
    collection = collect_entries_for_branch_summary(session.by_id, old_leaf, navigation["target"])
    assert collection.entries
    prep = prepare_branch_entries(collection.entries, 0)
    read_files, modified_files = prep.file_lists
    assert {"readFiles": read_files, "modifiedFiles": modified_files} == summary["details"]
