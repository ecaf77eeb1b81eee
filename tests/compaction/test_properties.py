"""Property tests over random well-formed sessions: whatever the session, compaction never cuts a
tool call from its result, covers the summarization window exactly once, and is deterministic."""

from __future__ import annotations

import copy

from compactd.compaction.cut_points import find_cut_point, is_valid_cut_point
from compactd.compaction.prepare import CompactionPreparation, NotPrepared, prepare_compaction
from compactd.compaction.settings import CompactionSettings
from compactd.session.context import context_from_path, convert_to_llm, project_entry
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .builders import Builder, random_session

BUDGETS = st.sampled_from([1, 50, 200, 1000, 5000, 20000])
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _compacted_context(b: Builder, prep: CompactionPreparation) -> list[dict]:
    """The context after appending the compaction this preparation describes."""
    after = copy.deepcopy(b)
    after.compaction(prep.first_kept_entry_id, summary="new summary")
    return context_from_path(after.path()).messages


@SETTINGS
@given(random_session(), BUDGETS, st.booleans())
def test_first_kept_entry_is_never_a_tool_result(b: Builder, budget: int, fallback: bool) -> None:
    prep = prepare_compaction(b.path(), CompactionSettings(keep_recent_tokens=budget), newest_cut_fallback=fallback)
    if isinstance(prep, NotPrepared):
        return
    first = b.path()[prep.first_kept_entry_index]
    assert not (first["type"] == "message" and first["message"].get("role") == "toolResult")


@SETTINGS
@given(random_session(), BUDGETS)
def test_cut_index_is_a_cut_point_or_pulled_back_metadata(b: Builder, budget: int) -> None:
    path = b.path()
    cut = find_cut_point(path, 0, len(path), budget)
    index = cut.first_kept_entry_index
    # from the cut, skipping metadata, the first visible entry is a valid cut point
    while index < len(path) and not project_entry(path[index]) and path[index]["type"] != "compaction":
        index += 1
    if index < len(path) and any(is_valid_cut_point(e) for e in path):
        assert is_valid_cut_point(path[index]) or path[index]["type"] == "compaction"


@SETTINGS
@given(random_session(), BUDGETS)
def test_every_tool_result_follows_its_tool_call_after_compaction(b: Builder, budget: int) -> None:
    prep = prepare_compaction(b.path(), CompactionSettings(keep_recent_tokens=budget))
    if not prep:
        return
    seen_calls: set[str] = set()
    for message in convert_to_llm(_compacted_context(b, prep)):
        if message["role"] == "assistant":
            seen_calls |= {blk["id"] for blk in message["content"] if blk.get("type") == "toolCall"}
        elif message["role"] == "toolResult":
            assert message["toolCallId"] in seen_calls


@SETTINGS
@given(random_session(), BUDGETS)
def test_window_is_covered_exactly_once(b: Builder, budget: int) -> None:
    path = b.path()
    prep = prepare_compaction(path, CompactionSettings(keep_recent_tokens=budget))
    if not prep:
        return
    window = [e["id"] for e in path[prep.boundary_start:] if e["type"] != "compaction" and project_entry(e)]
    summarized = [m.entry_id for m in prep.messages_to_summarize]
    prefix = [m.entry_id for m in prep.turn_prefix_messages]
    kept = [m.entry_id for m in prep.kept_messages]
    assert summarized + prefix + kept == window
    assert bool(prefix) <= prep.is_split_turn
    # and the rebuilt context is exactly the new summary followed by the kept messages
    rebuilt = _compacted_context(b, prep)
    assert rebuilt[0]["role"] == "compactionSummary"
    assert rebuilt[1:] == [m.message for m in prep.kept_messages]


@SETTINGS
@given(random_session(), BUDGETS)
def test_preparation_is_deterministic_and_pure(b: Builder, budget: int) -> None:
    path = b.path()
    snapshot = copy.deepcopy(path)
    settings_ = CompactionSettings(keep_recent_tokens=budget)
    one = prepare_compaction(path, settings_)
    two = prepare_compaction(copy.deepcopy(path), settings_)
    assert path == snapshot  # inputs untouched
    assert type(one) is type(two)
    if isinstance(one, NotPrepared):
        assert one == two
        return
    assert isinstance(two, CompactionPreparation)
    assert (one.first_kept_entry_id, one.is_split_turn, one.turn_start_entry_id, one.tokens_before,
            one.previous_summary, one.read_files, one.modified_files, one.conversation_text,
            one.turn_prefix_text, one.estimated_tokens_after) == (
        two.first_kept_entry_id, two.is_split_turn, two.turn_start_entry_id, two.tokens_before,
        two.previous_summary, two.read_files, two.modified_files, two.conversation_text,
        two.turn_prefix_text, two.estimated_tokens_after)
    assert one.messages_to_summarize == two.messages_to_summarize
    assert one.turn_prefix_messages == two.turn_prefix_messages
