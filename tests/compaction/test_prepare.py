"""§7 prepareCompaction: R-1..R-15 [PI-NEW], edge cases 13–16, D-3/D-14/D-25, and the real Pi
session fixture."""

from __future__ import annotations

from compactd.compaction.cut_points import entry_tokens, is_valid_cut_point
from compactd.compaction.prepare import NoCompactionReason, NotPrepared, messages_of, prepare_compaction
from compactd.compaction.serialize import serialize_messages
from compactd.compaction.settings import CompactionSettings
from compactd.compaction.tokens import estimate_context_tokens, estimate_tokens
from compactd.session import Session
from compactd.session.context import context_from_path

from ..conftest import PI_FIXTURE
from .builders import Builder, tool_call, usage

SMALL = CompactionSettings(keep_recent_tokens=150)


def _turns(b: Builder, n: int, size: int = 400) -> list[str]:
    ids = []
    for i in range(n):
        ids.append(b.user(f"u{i}" + "x" * size))
        ids.append(b.assistant(f"a{i}" + "y" * size))
    return ids


def test_last_entry_compaction_means_already_compacted() -> None:  # R-1, edge 13
    b = Builder()
    first = b.user()
    b.assistant()
    b.compaction(first)
    result = prepare_compaction(b.path(), SMALL)
    assert isinstance(result, NotPrepared) and not result
    assert result.reason is NoCompactionReason.ALREADY_COMPACTED
    assert result.message == "Already compacted"


def test_tiny_session_has_nothing_to_compact() -> None:  # R-12, edge 7
    b = Builder()
    b.user("hello")
    b.assistant("hi")
    result = prepare_compaction(b.path(), CompactionSettings())
    assert not result and result.reason is NoCompactionReason.NOTHING_TO_COMPACT
    assert result.message == "Nothing to compact (session too small)"
    assert prepare_compaction([], CompactionSettings()).reason is NoCompactionReason.NOTHING_TO_COMPACT


def test_basic_preparation_summarizes_older_turns_with_source_ids() -> None:
    b = Builder()
    ids = _turns(b, 4)
    prep = prepare_compaction(b.path(), SMALL)
    assert prep
    assert prep.first_kept_entry_id == ids[-2]  # last user message: 2 × ~100 tokens ≥ 150
    assert not prep.is_split_turn and prep.turn_start_entry_id is None
    assert [m.entry_id for m in prep.messages_to_summarize] == ids[:-2]
    assert [m.message["role"] for m in prep.messages_to_summarize] == ["user", "assistant"] * 3
    assert prep.turn_prefix_messages == [] and prep.turn_prefix_text is None
    assert prep.previous_summary is None
    assert [m.entry_id for m in prep.kept_messages] == ids[-2:]
    assert prep.settings is SMALL


def test_tokens_before_is_the_estimate_of_the_rebuilt_context() -> None:  # R-5 [PI-NEW]
    b = Builder()
    first = b.user("x" * 4000)
    b.assistant("old", usage_=usage(50000))
    b.compaction(first, summary="s" * 400)
    b.user("y" * 400)
    b.assistant("z", usage_=usage(7000))
    b.user("w" * 41)  # trailing: ceil(41/4) = 11 tokens after the usage
    path = b.path()
    prep = prepare_compaction(path, CompactionSettings(keep_recent_tokens=5))
    assert prep.tokens_before == 7011
    assert prep.tokens_before == estimate_context_tokens(context_from_path(path).messages).tokens


def test_split_turn_prefix_and_history() -> None:  # edge 8, edge 16
    b = Builder()
    u1 = b.user("u1")
    a1 = b.assistant(None, calls=[tool_call("c0", "read", {"path": "hist.py"})])
    r1 = b.tool_result("c0", "read", "h")
    u2 = b.user("u2")
    a2 = b.assistant(None, calls=[tool_call("c1", "edit", {"path": "prefix.py"})])
    r2 = b.tool_result("c1", "edit", "p" * 2000)
    a3 = b.assistant("k" * 400)
    a4 = b.assistant("l" * 400)
    prep = prepare_compaction(b.path(), SMALL)
    assert prep.is_split_turn
    assert prep.first_kept_entry_id == a3
    assert prep.turn_start_entry_id == u2
    assert [m.entry_id for m in prep.messages_to_summarize] == [u1, a1, r1]
    assert [m.entry_id for m in prep.turn_prefix_messages] == [u2, a2, r2]
    assert [m.entry_id for m in prep.kept_messages] == [a3, a4]
    assert prep.read_files == ["hist.py"]
    assert prep.modified_files == ["prefix.py"]  # edge 16: from the turn prefix
    assert prep.turn_prefix_text == serialize_messages(messages_of(prep.turn_prefix_messages))
    assert prep.turn_prefix_text.startswith("[User]: u2")


def test_split_turn_without_earlier_history() -> None:  # edge 15 (prepare side)
    b = Builder()
    u = b.user("start")
    b.assistant("a" * 400)
    b.assistant("b" * 400)
    b.assistant("c" * 400)
    prep = prepare_compaction(b.path(), SMALL)
    assert prep.is_split_turn and prep.turn_start_entry_id == u
    assert prep.messages_to_summarize == []
    assert prep.conversation_text == ""
    assert len(prep.turn_prefix_messages) == 2


def test_second_compaction_resummarizes_previously_kept_messages() -> None:  # R-2, R-3 [PI-NEW], edge 14
    b = Builder()
    ids = _turns(b, 2)
    comp = b.compaction(ids[2], summary="first summary",
                        details={"readFiles": ["r.py", "both.py"], "modifiedFiles": ["m.py"]})
    new = _turns(b, 3)
    path = b.path()
    prep = prepare_compaction(path, SMALL)
    assert prep.previous_summary == "first summary"
    assert prep.boundary_start == b.index(ids[2])
    summarized = [m.entry_id for m in prep.messages_to_summarize]
    assert summarized[:2] == ids[2:4]  # kept by the first compaction, now summarized
    assert comp not in summarized  # compaction entries excluded
    assert summarized[2:] == new[:4]
    assert prep.read_files == ["both.py", "r.py"] and prep.modified_files == ["m.py"]


def test_second_compaction_falls_back_to_after_the_previous_one() -> None:  # R-3, edge 14
    b = Builder()
    _turns(b, 2)
    comp = b.compaction("gone", summary="first")
    new = _turns(b, 3)
    prep = prepare_compaction(b.path(), SMALL)
    assert prep.boundary_start == b.index(comp) + 1
    assert [m.entry_id for m in prep.messages_to_summarize] == new[:4]


def test_extension_made_previous_details_are_not_harvested() -> None:  # R-14, O-5, edge 14
    for flag in ("fromHook", "fromExtension"):
        b = Builder()
        ids = _turns(b, 2)
        b.compaction(ids[2], summary="ext", details={"readFiles": ["x.py"], "modifiedFiles": ["y.py"]}, **{flag: True})
        _turns(b, 3)
        prep = prepare_compaction(b.path(), SMALL)
        assert prep.read_files == [] and prep.modified_files == []


def test_older_compaction_inside_kept_region_is_not_reemitted() -> None:  # D-3
    b = Builder()
    ids = _turns(b, 3)
    old = b.compaction(ids[0], summary="older")
    more = _turns(b, 1, size=40)
    prep = prepare_compaction(b.path(), CompactionSettings(keep_recent_tokens=120))
    # the cut lands before the older compaction (the window starts at its firstKeptEntryId)
    assert prep.first_kept_entry_index < b.index(old)
    assert old not in [m.entry_id for m in prep.kept_messages]
    assert all(m.message["role"] != "compactionSummary" for m in prep.kept_messages)
    assert [m.entry_id for m in prep.kept_messages][-2:] == more


def test_estimated_tokens_after_counts_the_kept_messages() -> None:
    b = Builder()
    _turns(b, 4)
    prep = prepare_compaction(b.path(), SMALL)
    assert prep.estimated_tokens_after == sum(estimate_tokens(m.message) for m in prep.kept_messages)
    everything = sum(estimate_tokens(m) for m in context_from_path(b.path()).messages)
    assert 0 < prep.estimated_tokens_after < everything


def test_only_the_first_projected_message_and_visible_entries_are_summarized() -> None:
    b = Builder()
    u = b.user("u" * 400)
    b.model_change()
    b.custom("state")
    e = b.branch_summary("")
    cm = b.custom_message("note")
    b.user("v" * 400)
    b.assistant("w" * 400)
    prep = prepare_compaction(b.path(), SMALL)
    ids = [m.entry_id for m in prep.messages_to_summarize]
    assert ids == [u, cm]
    assert e not in ids
    assert prep.messages_to_summarize[1].message["role"] == "custom"


def test_d14_lets_a_huge_trailing_tool_result_be_compacted() -> None:  # D-14
    b = Builder()
    _turns(b, 3)
    b.user("now read")
    call = b.assistant(None, calls=[tool_call("c1", "read", {"path": "huge.txt"})])
    b.tool_result("c1", "read", "r" * 200000)
    pi = prepare_compaction(b.path(), CompactionSettings(), newest_cut_fallback=False)
    assert not pi and pi.reason is NoCompactionReason.NOTHING_TO_COMPACT
    ours = prepare_compaction(b.path(), CompactionSettings())
    assert ours and ours.first_kept_entry_id == call
    assert len(ours.messages_to_summarize) == 6


def test_conversation_text_is_the_exact_serialized_history() -> None:  # S-3, D-25
    b = Builder()
    b.user("fix the bug")
    b.assistant("Looking.", calls=[tool_call("c1", "read", {"path": "src/a.ts"})])
    b.tool_result("c1", "read", "code")
    _turns(b, 2)
    prep = prepare_compaction(b.path(), SMALL)
    assert prep.conversation_text.startswith(
        '[User]: fix the bug\n\n[Assistant]: Looking.\n\n[Assistant tool calls]: read(path="src/a.ts")'
        "\n\n[Tool result]: code")
    assert prep.conversation_text == serialize_messages(messages_of(prep.messages_to_summarize))


def test_preparation_is_deterministic() -> None:
    b = Builder()
    _turns(b, 5)
    one, two = prepare_compaction(b.path(), SMALL), prepare_compaction(b.path(), SMALL)
    assert one.messages_to_summarize == two.messages_to_summarize
    assert (one.first_kept_entry_id, one.tokens_before, one.conversation_text) == (
        two.first_kept_entry_id, two.tokens_before, two.conversation_text)


def test_real_pi_session_fixture() -> None:
    session = Session.open(PI_FIXTURE)
    path = session.get_branch()
    prep = prepare_compaction(path, CompactionSettings())
    assert prep
    compactions = [i for i, e in enumerate(path) if e["type"] == "compaction"]
    latest = path[compactions[-1]]
    # window starts at the latest compaction's first kept entry (R-3 [PI-NEW])
    assert path[prep.boundary_start]["id"] == latest["firstKeptEntryId"]
    assert prep.previous_summary == latest["summary"]
    # tokensBefore is K-7 over the context rebuilt from the path
    ctx = context_from_path(path)
    assert prep.tokens_before == estimate_context_tokens(ctx.messages).tokens
    # the cut is a valid cut point and the budget was crossed between it and the previous cut point
    first_kept = path[prep.first_kept_entry_index]
    assert first_kept["id"] == prep.first_kept_entry_id
    assert is_valid_cut_point(first_kept)
    previous_cut = max(i for i in range(prep.boundary_start, prep.first_kept_entry_index)
                       if is_valid_cut_point(path[i]))
    assert sum(entry_tokens(e) for e in path[previous_cut:]) >= CompactionSettings().keep_recent_tokens
    assert sum(entry_tokens(e) for e in path[prep.first_kept_entry_index:]) < CompactionSettings().keep_recent_tokens
    # every visible window entry is summarized, in the prefix, or kept — exactly once
    window = [e["id"] for e in path[prep.boundary_start:] if e["type"] != "compaction"
              and (e["type"] != "message" or e["message"])]
    covered = ([m.entry_id for m in prep.messages_to_summarize] + [m.entry_id for m in prep.turn_prefix_messages]
               + [m.entry_id for m in prep.kept_messages])
    assert covered == [i for i in window if i in set(covered)]
    assert len(covered) == len(set(covered))
    # file lists are sorted and disjoint; the previous compaction's lists are not in this v1 file
    assert prep.read_files == sorted(prep.read_files)
    assert not set(prep.read_files) & set(prep.modified_files)
    assert prep.conversation_text == serialize_messages(messages_of(prep.messages_to_summarize))
    assert "[Tool result]: " in prep.conversation_text
