"""§12.1–12.3 branch summarization inputs: B-1..B-9 and edge cases 57–59 (collection part),
64, 66, 67; D-6 and D-13."""

from __future__ import annotations

from compactd.compaction.branch import (
    MIN_BRANCH_TOKEN_BUDGET,
    branch_entry_message,
    branch_token_budget,
    collect_entries_for_branch_summary,
    prepare_branch_entries,
)
from compactd.compaction.prompts import NO_BRANCH_CONTENT

from .builders import Builder, tool_call


def _tree() -> tuple[Builder, dict[str, str]]:
    """root u1 → a1 → u2 → a2 (old leaf) and a second branch u1 → a1 → u3 → a3."""
    b = Builder()
    ids = {"u1": b.user("u1"), "a1": b.assistant("a1"), "u2": b.user("u2"), "a2": b.assistant("a2")}
    b.branch_from(ids["a1"])
    ids["u3"] = b.user("u3")
    ids["a3"] = b.assistant("a3")
    return b, ids


def test_no_old_leaf_collects_nothing() -> None:  # B-1, edge 67
    b, ids = _tree()
    result = collect_entries_for_branch_summary(b.by_id, None, ids["a1"])
    assert (result.entries, result.common_ancestor_id) == ([], None)


def test_switching_branches_collects_up_to_the_deepest_common_ancestor() -> None:  # B-2, B-3
    b, ids = _tree()
    result = collect_entries_for_branch_summary(b.by_id, ids["a2"], ids["a3"])
    assert result.common_ancestor_id == ids["a1"]
    assert result.entry_ids == [ids["u2"], ids["a2"]]  # chronological


def test_target_on_the_old_path_collects_entries_after_it() -> None:  # B-4, edge 67, 58/59
    b, ids = _tree()
    back_to_assistant = collect_entries_for_branch_summary(b.by_id, ids["a2"], ids["a1"])
    assert back_to_assistant.common_ancestor_id == ids["a1"]
    assert back_to_assistant.entry_ids == [ids["u2"], ids["a2"]]
    to_root_user = collect_entries_for_branch_summary(b.by_id, ids["a2"], ids["u1"])  # edge 57
    assert to_root_user.common_ancestor_id == ids["u1"]
    assert to_root_user.entry_ids == [ids["a1"], ids["u2"], ids["a2"]]


def test_target_in_another_root_tree_collects_the_whole_old_path() -> None:  # B-4
    b, ids = _tree()
    b.branch_from(None)
    other_root = b.user("another root")
    result = collect_entries_for_branch_summary(b.by_id, ids["a2"], other_root)
    assert result.common_ancestor_id is None
    assert result.entry_ids == [ids["u1"], ids["a1"], ids["u2"], ids["a2"]]


def test_collection_walks_through_compactions() -> None:  # B-3, D-6, edge 67
    b, ids = _tree()
    b.branch_from(ids["a2"])
    comp = b.compaction(ids["u2"], summary="compacted")
    tail = b.user("after")
    result = collect_entries_for_branch_summary(b.by_id, tail, ids["a3"])
    assert result.entry_ids == [ids["u2"], ids["a2"], comp, tail]


def test_branch_projection_rules() -> None:  # B-5
    b = Builder()
    u = b.user("q")
    r = b.tool_result("c", "read", "r")
    empty = b.branch_summary("")
    comp = b.compaction(u, summary="S")
    cm = b.custom_message("note")
    meta = [b.model_change(), b.thinking(), b.custom(), b.label(u)]
    e = b.by_id
    assert branch_entry_message(e[u])["role"] == "user"
    assert branch_entry_message(e[r]) is None  # tool results skipped
    assert branch_entry_message(e[empty]) == {"role": "branchSummary", "summary": "", "fromId": "root",
                                              "timestamp": branch_entry_message(e[empty])["timestamp"]}
    assert branch_entry_message(e[comp])["role"] == "compactionSummary"
    assert branch_entry_message(e[cm])["role"] == "custom"
    assert all(branch_entry_message(e[i]) is None for i in meta)


def test_budget_walk_newest_first_stops_at_first_overflow() -> None:  # B-7, edge 66
    b = Builder()
    old = b.user("o" * 400)  # 100
    mid = b.assistant("m" * 400)  # 100
    new = b.user("n" * 400)  # 100
    prep = prepare_branch_entries(b.entries, 250)
    assert [m.entry_id for m in prep.messages] == [mid, new]
    assert prep.total_tokens == 200
    assert old not in [m.entry_id for m in prep.messages]
    assert [m.entry_id for m in prepare_branch_entries(b.entries, 0).messages] == [old, mid, new]  # 0 = no limit


def test_overflowing_summary_is_kept_below_ninety_percent() -> None:  # B-7, edge 66
    for kind in ("compaction", "branch_summary"):
        b = Builder()
        first = b.user("x")
        summary = b.compaction(first, summary="s" * 800) if kind == "compaction" else b.branch_summary("s" * 800)
        recent = b.user("r" * 400)  # 100 tokens
        prep = prepare_branch_entries(b.entries, 250)  # 100 + 200 > 250, but 100 < 225
        assert [m.entry_id for m in prep.messages] == [summary, recent]
        assert prep.total_tokens == 300
        full = prepare_branch_entries(b.entries, 110)  # 100 >= 99: not below 90 % → dropped
        assert [m.entry_id for m in full.messages] == [recent]


def test_file_ops_from_nested_summaries_and_from_the_overflowing_message() -> None:  # B-6, B-8, edge 66
    b = Builder()
    b.branch_summary("older", details={"readFiles": ["nested.py"], "modifiedFiles": ["nested_mod.py"]})
    b.branch_summary("ext", details={"readFiles": ["hook.py"]}, fromHook=True)
    b.compaction(None, summary="c", details={"readFiles": ["compaction.py"]})
    b.assistant("x" * 4000, calls=[tool_call("1", "edit", {"path": "overflow.py"})])
    b.user("u" * 40)
    prep = prepare_branch_entries(b.entries, 50)
    assert len(prep.messages) == 1
    read, modified = prep.file_lists
    assert read == ["nested.py"]  # hook-made and compaction details are not harvested
    assert modified == ["nested_mod.py", "overflow.py"]


def test_nothing_to_summarize_message() -> None:  # B-10, edge 64
    b = Builder()
    b.tool_result("c", "bash", "x")
    b.model_change()
    assert prepare_branch_entries(b.entries, 1000).messages == []
    assert NO_BRANCH_CONTENT == "No content to summarize"


def test_branch_budget_defaults_and_clamp() -> None:  # B-9, D-13
    assert branch_token_budget(None) == 128000 - 16384
    assert branch_token_budget(200000, 20000) == 180000
    assert branch_token_budget(10000, 16384) == MIN_BRANCH_TOKEN_BUDGET
    assert branch_token_budget(16384, 16384) == MIN_BRANCH_TOKEN_BUDGET > 0
