"""§6 cut points: P-1..P-13 ([PI-NEW] projection rules), edge cases 6–12, D-3 and D-14."""

from __future__ import annotations

from compactd.compaction.cut_points import (
    entry_tokens,
    find_cut_point,
    find_turn_start_index,
    find_valid_cut_points,
    is_turn_start,
    is_valid_cut_point,
)

from .builders import Builder, tool_call


def test_valid_cut_points_follow_projection() -> None:  # P-1, P-2, edge 12
    b = Builder()
    u = b.user()
    a = b.assistant(calls=[tool_call("c1", "read", {"path": "x"})])
    r = b.tool_result("c1", "read")
    cm = b.custom_message("ext note")
    bs = b.branch_summary("went elsewhere")
    empty_bs = b.branch_summary("")
    bash = b.bash()
    dev = b.message({"role": "developer", "content": "rules", "timestamp": 1})
    comp = b.compaction(u)
    mc = b.model_change()
    lbl = b.label(u)
    cu = b.custom()
    e = b.by_id
    assert [i for i in (u, a, cm, bs, bash, dev) if is_valid_cut_point(e[i])] == [u, a, cm, bs, bash, dev]
    assert not any(is_valid_cut_point(e[i]) for i in (r, empty_bs, comp, mc, lbl, cu))
    assert find_valid_cut_points(b.entries, 0, len(b.entries)) == [0, 1, 3, 4, 6, 7]


def test_turn_starts_exclude_assistant_and_tool_results() -> None:  # P-4
    b = Builder()
    ids = [b.user(), b.assistant(), b.tool_result("c", "x"), b.bash(), b.custom_message(), b.branch_summary("s"),
           b.branch_summary(""), b.compaction(None), b.message({"role": "developer", "content": "d", "timestamp": 1})]
    starts = [is_turn_start(b.by_id[i]) for i in ids]
    assert starts == [True, False, False, True, True, True, False, False, True]


def test_find_turn_start_index_scans_back_inclusive() -> None:  # P-6
    b = Builder()
    b.user()
    b.assistant()
    b.user()
    b.assistant()
    b.assistant()
    assert find_turn_start_index(b.entries, 4, 0) == 2
    assert find_turn_start_index(b.entries, 2, 0) == 2
    assert find_turn_start_index(b.entries, 1, 1) == -1


def test_no_valid_cut_point_returns_start() -> None:  # P-7, edge 6
    b = Builder()
    b.model_change()
    b.tool_result("c", "bash", "x" * 100)
    b.thinking()
    result = find_cut_point(b.entries, 1, 3, 1)
    assert (result.first_kept_entry_index, result.turn_start_index, result.is_split_turn) == (1, -1, False)


def test_budget_larger_than_everything_keeps_from_first_cut_point() -> None:  # P-8, edge 7
    b = Builder()
    b.user("hello")
    b.assistant("hi")
    result = find_cut_point(b.entries, 0, 2, 100000)
    assert (result.first_kept_entry_index, result.is_split_turn) == (0, False)


def test_split_turn_points_at_the_turn_opening_user_message() -> None:  # P-12, edge 8
    b = Builder()
    b.user("u1")
    b.assistant("a1")
    b.user("u2")
    b.assistant("x" * 400)
    b.assistant("y" * 400)
    b.assistant("z" * 400)  # 100 tokens each
    result = find_cut_point(b.entries, 0, 6, 150)
    assert (result.first_kept_entry_index, result.turn_start_index, result.is_split_turn) == (4, 2, True)


def test_cut_picks_nearest_cut_point_at_or_after_the_crossing_entry() -> None:  # P-10
    b = Builder()
    b.user("u" * 400)  # 0
    b.assistant(None, calls=[tool_call("c1", "bash")])  # 1
    b.tool_result("c1", "bash", "r" * 4000)  # 2: 1000 tokens, crosses the budget
    b.tool_result("c1", "bash", "s" * 40)  # 3
    b.user("v" * 40)  # 4
    b.assistant("w" * 40)  # 5
    result = find_cut_point(b.entries, 0, 6, 500)
    assert result.first_kept_entry_index == 4  # first cut point >= 2
    assert not result.is_split_turn


def test_trailing_huge_tool_result_keeps_everything_in_pi_and_cuts_newest_with_d14() -> None:  # edge 9, D-14
    b = Builder()
    b.user("u" * 400)  # 0
    b.assistant("a" * 400)  # 1
    b.user("v" * 400)  # 2
    b.assistant(None, calls=[tool_call("c1", "read", {"path": "big"})])  # 3
    b.tool_result("c1", "read", "r" * 400000)  # 4: alone crosses the budget
    pi = find_cut_point(b.entries, 0, 5, 20000, newest_cut_fallback=False)
    assert (pi.first_kept_entry_index, pi.is_split_turn) == (0, False)
    ours = find_cut_point(b.entries, 0, 5, 20000)
    assert ours.first_kept_entry_index == 3  # the tool call stays with its result
    assert (ours.turn_start_index, ours.is_split_turn) == (2, True)


def test_metadata_before_the_cut_is_kept_and_compaction_stops_pull_back() -> None:  # P-11, edge 10
    b = Builder()
    b.user("u" * 400)  # 0
    b.assistant("a" * 400)  # 1
    b.model_change()  # 2
    b.thinking()  # 3
    b.label("e001")  # 4
    b.user("v" * 400)  # 5
    b.assistant("w" * 400)  # 6
    result = find_cut_point(b.entries, 0, 7, 150)
    assert result.first_kept_entry_index == 2
    # Pi's quirk (P-12 looks at the entry after pull-back): a metadata entry is not a turn start,
    # so the cut is reported as splitting the previous turn.
    assert (result.turn_start_index, result.is_split_turn) == (0, True)

    c = Builder()
    c.user("u" * 400)  # 0
    c.compaction("e001")  # 1
    c.model_change()  # 2
    c.user("v" * 400)  # 3
    c.assistant("w" * 400)  # 4
    kept = find_cut_point(c.entries, 0, 5, 150)
    assert kept.first_kept_entry_index == 2  # pulled back over the model change, not past the compaction


def test_never_cuts_at_tool_results_even_in_long_runs() -> None:  # P-1, edge 11
    b = Builder()
    b.user("u")
    b.assistant(None, calls=[tool_call(f"c{i}", "bash") for i in range(5)])
    for i in range(5):
        b.tool_result(f"c{i}", "bash", "x" * 4000)
    for budget in (1, 500, 1000, 2500, 4000, 6000):
        result = find_cut_point(b.entries, 0, len(b.entries), budget)
        kept = b.entries[result.first_kept_entry_index]
        assert kept["message"]["role"] != "toolResult"


def test_empty_branch_summary_is_neither_cut_point_nor_counted() -> None:  # edge 12
    b = Builder()
    b.user("u" * 400)  # 0
    b.assistant("a" * 400)  # 1
    b.branch_summary("")  # 2
    b.user("v" * 400)  # 3
    assert entry_tokens(b.entries[2]) == 0
    result = find_cut_point(b.entries, 0, 4, 100)
    assert result.first_kept_entry_index == 2  # cut at 3, empty summary pulled back as metadata
    assert b.entries[3]["message"]["role"] == "user"


def test_custom_message_and_branch_summary_count_toward_budget() -> None:  # P-9 [PI-NEW]
    b = Builder()
    b.user("u" * 400)  # 0: 100
    b.assistant("a" * 400)  # 1: 100
    b.custom_message("c" * 400)  # 2: 100
    b.branch_summary("s" * 400)  # 3: 100
    result = find_cut_point(b.entries, 0, 4, 200)
    assert result.first_kept_entry_index == 2
    assert not result.is_split_turn  # custom_message starts a turn


def test_compaction_entries_weigh_nothing_in_the_walk() -> None:  # D-3
    b = Builder()
    b.user("u" * 400)  # 0: 100
    b.assistant("a" * 400)  # 1: 100
    b.compaction("e001", summary="s" * 40000)  # 2: would be 10000 tokens if counted
    b.user("v" * 400)  # 3: 100
    assert entry_tokens(b.entries[2]) == 0
    result = find_cut_point(b.entries, 0, 4, 150)
    assert result.first_kept_entry_index == 1  # crossing at entry 1, not at the compaction
