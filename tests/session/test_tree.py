"""Tree operations (spec §3) and Pi's session folder layout (F-15, F-16, F-19)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from compactd.session import EntryNotFoundError, Session
from compactd.session.tree import (
    build_tree,
    encode_cwd,
    find_most_recent_session,
    list_session_files,
    path_to,
    session_file_name,
)

from .builders import assistant, entry, user


def linear(n: int) -> Session:
    session = Session.create("/w", in_memory=True)
    for i in range(n):
        session.append_message(user(f"u{i}") if i % 2 == 0 else assistant(f"a{i}"))
    return session


def test_get_branch_is_root_first_and_unknown_is_empty() -> None:
    session = linear(4)
    ids = [e["id"] for e in session.entries]
    assert [e["id"] for e in session.get_branch()] == ids
    assert [e["id"] for e in session.get_branch(ids[1])] == ids[:2]
    assert session.get_branch("missing") == []


def test_branch_moves_leaf_and_new_appends_become_children() -> None:
    session = linear(4)
    first = session.entries[0]["id"]
    session.branch(first)
    new = session.append_message(assistant("alt"))
    assert session.by_id[new]["parentId"] == first
    assert [c["id"] for c in session.get_children(first)] == [session.entries[1]["id"], new]
    with pytest.raises(EntryNotFoundError, match="Entry nope not found"):
        session.branch("nope")


def test_reset_leaf_makes_new_root() -> None:
    session = linear(2)
    session.reset_leaf()
    assert session.leaf_id is None
    root = session.append_message(user("new root"))
    assert session.by_id[root]["parentId"] is None
    assert len(session.get_tree()) == 2


def test_branch_with_summary_attaches_child_and_moves_leaf() -> None:
    session = linear(4)
    target = session.entries[1]["id"]
    summary_id = session.branch_with_summary(target, "summary text", {"readFiles": [], "modifiedFiles": []})
    summary = session.by_id[summary_id]
    assert summary["parentId"] == target and summary["fromId"] == target
    assert session.leaf_id == summary_id
    assert summary["fromHook"] is False  # D-2: always written, as Pi does
    explicit = session.branch_with_summary(target, "s2", from_id="old-leaf", from_hook=True)
    assert session.by_id[explicit]["fromId"] == "old-leaf" and session.by_id[explicit]["fromHook"] is True


def test_branch_with_summary_at_root_and_unknown() -> None:
    session = linear(2)
    root_summary = session.branch_with_summary(None, "s")
    assert session.by_id[root_summary]["parentId"] is None
    assert session.by_id[root_summary]["fromId"] == "root"
    leaf = session.leaf_id
    with pytest.raises(EntryNotFoundError):
        session.branch_with_summary("nope", "s")
    assert session.leaf_id == leaf


def test_labels_set_clear_last_wins_and_leaf_moves_to_label_entry() -> None:
    session = linear(3)
    target = session.entries[0]["id"]
    label_id = session.append_label_change(target, "start")
    assert session.leaf_id == label_id and session.by_id[label_id]["parentId"] == session.entries[2]["id"]
    assert session.get_label(target) == "start"
    session.append_label_change(target, "renamed")
    assert session.get_label(target) == "renamed"
    cleared = session.append_label_change(target, "")
    assert "label" not in session.by_id[cleared]
    assert session.get_label(target) is None
    session.append_label_change(target, "again")
    session.append_label_change(target, None)
    assert session.get_label(target) is None


def test_labels_show_in_tree_nodes() -> None:
    session = linear(2)
    target = session.entries[1]["id"]
    session.append_label_change(target, "here")
    nodes = {}
    stack = session.get_tree()
    while stack:
        node = stack.pop()
        nodes[node.entry["id"]] = node
        stack.extend(node.children)
    assert nodes[target].label == "here"
    assert len(nodes) == 3  # label entries are tree nodes too


def test_session_name_trims_folds_newlines_and_clears() -> None:
    session = linear(1)
    session.append_session_info("  my\r\n\nsession  ")
    assert session.get_session_name() == "my session"
    session.append_session_info("")
    assert session.get_session_name() is None


def test_get_tree_orders_children_by_timestamp_and_keeps_orphans() -> None:
    entries = [
        entry("r", None, ts="2025-01-01T00:00:00.000Z", message=user("r")),
        entry("late", "r", ts="2025-01-01T00:00:05.000Z", message=user("late")),
        entry("early", "r", ts="2025-01-01T00:00:01.000Z", message=user("early")),
        entry("orphan", "ghost", message=user("o")),
        entry("self", "self", message=user("s")),
    ]
    roots = build_tree(entries)
    assert [r.entry["id"] for r in roots] == ["r", "orphan", "self"]
    assert [c.entry["id"] for c in roots[0].children] == ["early", "late"]
    assert build_tree([]) == []


def test_deep_tree_has_no_recursion_limit() -> None:
    entries = [entry("e0", None, message=user("x"))]
    for i in range(1, 20000):
        entries.append(entry(f"e{i}", f"e{i-1}", message=user("x")))
    roots = build_tree(entries)
    depth, node = 0, roots[0]
    while node.children:
        node, depth = node.children[0], depth + 1
    assert depth == 19999
    by_id = {e["id"]: e for e in entries}
    assert len(path_to(by_id, "e19999")) == 20000


def test_parent_cycles_neither_hang_nor_lose_entries() -> None:
    entries = [entry("a", "b", message=user("a")), entry("b", "a", message=user("b"))]
    by_id = {e["id"]: e for e in entries}
    assert [e["id"] for e in path_to(by_id, "a")] == ["b", "a"]
    roots = build_tree(entries)
    seen, stack = set(), list(roots)
    while stack:
        node = stack.pop()
        seen.add(node.entry["id"])
        stack.extend(c for c in node.children if c.entry["id"] not in seen)
    assert seen == {"a", "b"}


def test_fork_copies_path_rechains_without_labels_and_reapplies_labels(tmp_path: Path) -> None:
    source_path = tmp_path / "src.jsonl"
    session = Session.create("/w", source_path)
    u1 = session.append_message(user("u1"))
    a1 = session.append_message(assistant("a1"))
    session.append_label_change(u1, "first")
    u2 = session.append_message(user("u2"))
    session.branch(a1)
    session.append_message(user("other branch"))
    off_path = session.leaf_id
    session.append_label_change(off_path, "not copied")
    forked = session.fork(u2, tmp_path / "fork.jsonl")
    kinds = [(e["type"], e["id"]) for e in forked.entries]
    assert kinds[:3] == [("message", u1), ("message", a1), ("message", u2)]
    assert forked.entries[2]["parentId"] == a1  # re-chained over the dropped label entry
    labels = [e for e in forked.entries if e["type"] == "label"]
    assert [(e["targetId"], e["label"]) for e in labels] == [(u1, "first")]
    assert forked.header["parentSession"] == str(source_path)
    assert forked.session_id != session.session_id
    written = [json.loads(line) for line in (tmp_path / "fork.jsonl").read_text().splitlines()]
    assert written[0]["type"] == "session" and len(written) == 1 + len(forked.entries)
    with pytest.raises(EntryNotFoundError):
        session.fork("unknown")


def test_fork_without_assistant_is_deferred_and_never_duplicates(tmp_path: Path) -> None:
    session = Session.create("/w", tmp_path / "src.jsonl")
    u1 = session.append_message(user("only user"))
    forked = session.fork(u1, tmp_path / "fork.jsonl")
    assert not (tmp_path / "fork.jsonl").exists()
    forked.append_message(assistant("now"))
    lines = [json.loads(line) for line in (tmp_path / "fork.jsonl").read_text().splitlines()]
    assert [line["type"] for line in lines] == ["session", "message", "message"]
    assert len({line.get("id") for line in lines}) == 3


def test_encode_cwd_and_file_name() -> None:
    assert encode_cwd("/Users/me/work/proj") == "--Users-me-work-proj--"
    assert encode_cwd("C:\\Users\\me") == "--C--Users-me--"
    assert session_file_name("2025-12-09T00:52:54.397Z", "abc") == "2025-12-09T00-52-54-397Z_abc.jsonl"


def test_most_recent_session_ignores_non_jsonl_and_headerless(tmp_path: Path) -> None:
    assert find_most_recent_session(tmp_path / "missing") is None
    older = tmp_path / "a.jsonl"
    older.write_text('{"type":"session","id":"a","cwd":"/w"}\n')
    newer = tmp_path / "b.jsonl"
    newer.write_text('{"type":"session","id":"b","cwd":"/elsewhere"}\n')
    headerless = tmp_path / "c.jsonl"
    headerless.write_text('{"type":"message"}\n')
    (tmp_path / "d.txt").write_text('{"type":"session","id":"d"}\n')
    now = time.time()
    os.utime(older, (now - 100, now - 100))
    os.utime(newer, (now - 50, now - 50))
    os.utime(headerless, (now, now))
    assert find_most_recent_session(tmp_path) == newer
    assert find_most_recent_session(tmp_path, cwd="/w") == older
    assert [f.session_id for f in list_session_files(tmp_path)] == ["b", "a"]
