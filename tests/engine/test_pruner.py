"""Applying the pruning plan (D-19, N-5, N-6): originals archived (fsynced) before the atomic
rewrite, notices in the file and in what the model sees, undo from the archive."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from compactd.engine.pruner import archive_path, prune, restore_pruned
from compactd.session import Session, build_session_context, convert_to_llm

from .builders import add, assistant, call, new_session, result, settings, user

PRUNING = {"protectTokens": 600, "minimumSavings": 300}


def build(session: Session, steps: int = 6, tool: str = "bash") -> list[str]:
    """One turn with `steps` tool calls, each result 1200 chars (300 tokens)."""
    result_ids = []
    add(session, user("run the checks"))
    for k in range(steps):
        add(session, assistant(f"step {k}", calls=[call(f"t{k}", tool, command=f"check {k}")]))
        result_ids += add(session, result(f"t{k}", tool, f"output {k} " + "o" * 1191))
    add(session, assistant("all done"))
    return result_ids


def messages(path: Path) -> dict[str, dict[str, Any]]:
    lines = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    return {e["id"]: e["message"] for e in lines if e["type"] == "message"}


def test_prune_archives_then_rewrites(tmp_path: Path) -> None:
    session = new_session(tmp_path)
    ids = build(session)
    originals = {i: session.by_id[i]["message"]["content"] for i in ids}
    res = prune(session, settings(tmp_path, pruning=PRUNING))

    # the two newest results are inside the 600-token protection window (the crossing one included)
    assert res.entry_ids == ids[:4] and res.pruned_count == 4
    assert res.tokens_saved == 4 * (300 - 8)  # notice "[Output truncated - 300 tokens]" ≈ 8 tokens
    archived = [json.loads(line) for line in archive_path(session.path).read_text().splitlines()]
    assert [a["entryId"] for a in archived] == ids[:4]
    assert all(a["content"] == originals[a["entryId"]] for a in archived)
    stamp = archived[0]["prunedAt"]
    assert all(a["prunedAt"] == stamp for a in archived)

    on_disk = messages(session.path)
    for entry_id in ids[:4]:
        assert on_disk[entry_id]["content"] == [{"type": "text", "text": "[Output truncated - 300 tokens]"}]
        assert on_disk[entry_id]["prunedAt"] == stamp
    for entry_id in ids[4:]:
        assert on_disk[entry_id]["content"] == originals[entry_id] and "prunedAt" not in on_disk[entry_id]
    # reopened: the model sees the notice
    reopened = Session.open(session.path)
    llm = convert_to_llm(build_session_context(reopened.entries).messages)
    texts = [m["content"][0]["text"] for m in llm if m["role"] == "toolResult"]
    assert texts[:4] == ["[Output truncated - 300 tokens]"] * 4 and texts[4].startswith("output 4")

    # nothing more to gain: a second prune does nothing and does not re-archive
    assert prune(session, settings(tmp_path, pruning=PRUNING)).pruned_count == 0
    assert len(archive_path(session.path).read_text().splitlines()) == 4


def test_archive_is_written_before_the_rewrite(tmp_path: Path) -> None:
    session = new_session(tmp_path)
    ids = build(session)
    before = session.path.read_bytes()
    original = session.by_id[ids[0]]["message"]

    def failing_rewrite() -> None:
        raise OSError("disk full")

    session.rewrite = failing_rewrite  # type: ignore[method-assign]
    with pytest.raises(OSError, match="disk full"):
        prune(session, settings(tmp_path, pruning=PRUNING))
    assert session.path.read_bytes() == before  # the file is untouched
    assert len(archive_path(session.path).read_text().splitlines()) == 4  # the originals are safe already
    assert session.by_id[ids[0]]["message"] is original  # memory restored


def test_dry_run_and_small_savings_change_nothing(tmp_path: Path) -> None:
    session = new_session(tmp_path)
    build(session)
    before = session.path.read_bytes()
    res = prune(session, settings(tmp_path, pruning=PRUNING), dry_run=True)
    assert res.pruned_count == 4 and session.path.read_bytes() == before
    assert not archive_path(session.path).exists()
    res = prune(session, settings(tmp_path, pruning={**PRUNING, "minimumSavings": 5000}))
    assert res.pruned_count == 0 and res.tokens_saved == 0 and session.path.read_bytes() == before


def test_protected_tools_are_never_pruned(tmp_path: Path) -> None:
    session = new_session(tmp_path)
    build(session, tool="read")
    assert prune(session, settings(tmp_path, pruning=PRUNING)).pruned_count == 0


def test_in_memory_session_is_pruned_in_memory_only(tmp_path: Path) -> None:
    session = new_session(tmp_path, in_memory=True)
    ids = build(session)
    res = prune(session, settings(tmp_path, pruning=PRUNING))
    assert res.pruned_count == 4
    assert session.by_id[ids[0]]["message"]["content"][0]["text"] == "[Output truncated - 300 tokens]"
    assert list(tmp_path.iterdir()) == []


def test_restore_from_archive(tmp_path: Path) -> None:
    session = new_session(tmp_path)
    ids = build(session)
    original = dict(session.by_id[ids[1]]["message"])
    prune(session, settings(tmp_path, pruning=PRUNING))
    assert restore_pruned(session, [ids[1]]) == [ids[1]]
    assert messages(session.path)[ids[1]] == original
    assert messages(session.path)[ids[0]]["prunedAt"]  # the others stay pruned
    assert sorted(restore_pruned(session)) == sorted([ids[0], ids[2], ids[3]])
    assert all("prunedAt" not in m for m in messages(session.path).values())
