"""Preparation without context edits works on the listed entries directly (no projected object
per entry, file operations collected while listing the messages to summarize); it must give
exactly what the general preparation on `project_path` gives, on sessions with compactions
(with and without a checkpoint system message, kept ranges holding system messages and older
compactions), system messages, null contents, usage that a later compaction makes stale, and
cuts that split a turn."""

from __future__ import annotations

from typing import Any

import pytest
from compactd.compaction.prepare import (
    CompactionPreparation,
    NoCompactionReason,
    NotPrepared,
    _prepare,
    prepare_compaction,
)
from compactd.compaction.settings import CompactionSettings
from compactd.session.context import project_path, unedited_context_entries
from hypothesis import given, settings
from hypothesis import strategies as st

from .builders import Builder, assistant_msg, random_session


@st.composite
def sessions(draw: Any) -> Builder:
    b = draw(random_session(max_turns=14))
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["system", "null", "no_usage", "aborted", "checkpoint", "compact"]))
        if kind == "system":
            b.message({"role": "system", "content": "be brief", "sections": {"a": "x"}, "timestamp": 1})
        elif kind == "null":
            b.message({"role": draw(st.sampled_from(["user", "assistant", "toolResult", "developer"])),
                       "content": None})
        elif kind == "no_usage":
            b.message(assistant_msg("w" * draw(st.sampled_from([10, 4000])), usage_={}))
        elif kind == "aborted":
            b.message(assistant_msg("partial", stop="aborted"))
        else:
            path_ids = [e["id"] for e in b.path()]
            extra: dict[str, Any] = {}
            if kind == "checkpoint":
                extra["systemMessage"] = {"role": "system", "content": "replayed", "timestamp": 2}
            b.compaction(draw(st.sampled_from(path_ids)), **extra)
        b.user("w" * draw(st.sampled_from([5, 3000])))
        if draw(st.booleans()):
            b.assistant("done " + "w" * draw(st.sampled_from([5, 3000])))
    return b


def _general(path: list[dict[str, Any]], keep: int, fallback: bool) -> Any:
    if path[-1]["type"] == "compaction":
        return NotPrepared(NoCompactionReason.ALREADY_COMPACTED)
    return _prepare(path, project_path(path), CompactionSettings(keep_recent_tokens=keep), fallback, None)


def _same(fast: Any, general: Any) -> None:
    assert type(fast) is type(general)
    assert fast == general  # every field: ids, indexes, messages, file operations, cut
    if isinstance(fast, CompactionPreparation):
        assert fast.conversation_text == general.conversation_text
        assert fast.turn_prefix_text == general.turn_prefix_text
        assert fast.estimated_tokens_after == general.estimated_tokens_after
        assert (fast.read_files, fast.modified_files) == (general.read_files, general.modified_files)


@settings(max_examples=400, deadline=None)
@given(sessions(), st.sampled_from([1, 50, 400, 2000, 20000]), st.booleans(), st.data())
def test_unedited_preparation_equals_the_general_one(b: Builder, keep: int, fallback: bool, data: Any) -> None:
    leaf = data.draw(st.sampled_from([e["id"] for e in b.entries]))
    path = b.path(leaf)
    assert unedited_context_entries(path) is not None  # no context edits: the fast path runs
    fast = prepare_compaction(path, CompactionSettings(keep_recent_tokens=keep), newest_cut_fallback=fallback)
    _same(fast, _general(path, keep, fallback))


def _turns(b: Builder, count: int, size: int) -> None:
    for i in range(count):
        b.user(f"question {i} " + "w" * size)
        b.assistant(f"answer {i} " + "w" * size)


def test_a_split_turn_after_a_compaction_with_a_checkpoint() -> None:
    b = Builder()
    _turns(b, 3, 400)
    kept = b.user("kept question")
    b.message({"role": "system", "content": "dropped from the kept range", "timestamp": 1})
    b.assistant("kept answer " + "w" * 400)
    b.compaction(kept, systemMessage={"role": "system", "content": "replayed", "timestamp": 2})
    b.user("a long turn")
    for _ in range(8):
        b.assistant("step " + "w" * 400)
    path = b.path()
    fast = prepare_compaction(path, CompactionSettings(keep_recent_tokens=300))
    assert isinstance(fast, CompactionPreparation) and fast.is_split_turn
    assert "system" not in {m.message["role"] for m in fast.messages_to_summarize}
    assert fast.messages_to_summarize[0].entry_id == kept
    _same(fast, _general(path, 300, True))


@pytest.mark.parametrize("keep", [10, 100_000])
def test_stale_usage_before_a_compaction_falls_back_to_the_estimate(keep: int) -> None:
    b = Builder()
    _turns(b, 4, 100)
    b.compaction(b.path()[2]["id"])  # the usage of every answer is older than the compaction
    b.user("after")
    path = b.path()
    fast = prepare_compaction(path, CompactionSettings(keep_recent_tokens=keep))
    general = _general(path, keep, True)
    _same(fast, general)
    if isinstance(fast, CompactionPreparation):
        assert fast.tokens_before != 150  # not the stale provider usage (builders' USAGE total)
