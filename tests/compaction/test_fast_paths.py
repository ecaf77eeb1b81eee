"""The fast paths of compaction preparation give exactly the answers of the straightforward
definitions: lazy cut-point search, K-7 from the path's tail, serialized text per message through
a cache. Checked on generated sessions with branches, compactions and split turns, at every leaf."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from compactd.compaction.cut_points import (
    CutPointResult,
    entry_tokens,
    find_cut_point,
    find_turn_start_index,
    find_valid_cut_points,
    is_turn_start,
)
from compactd.compaction.prepare import messages_of, prepare_compaction
from compactd.compaction.prompts import escape_wrapped
from compactd.compaction.reports import prepare_report
from compactd.compaction.serialize import (
    JSON_CHUNK_BYTES,
    EncodedJsonString,
    SerializedTextCache,
    json_string_body,
    serialize_messages,
    serialize_sourced,
    serialize_sourced_json,
)
from compactd.compaction.settings import CompactionSettings
from compactd.compaction.tokens import estimate_context_tokens
from compactd.samples import write_session
from compactd.session import Session
from compactd.session.context import context_from_path, project_entry
from compactd.session.tree import path_to


def _eager_cut_point(entries: list[dict[str, Any]], start: int, end: int, keep: int, fallback: bool) -> CutPointResult:
    """P-7..P-13 as written in the spec: classify the whole range first."""
    cut_points = find_valid_cut_points(entries, start, end)
    if not cut_points:
        return CutPointResult(start, -1, False)
    cut_index = cut_points[0]
    accumulated = 0
    for i in range(end - 1, start - 1, -1):
        tokens = entry_tokens(entries[i])
        if tokens == 0:
            continue
        accumulated += tokens
        if accumulated >= keep:
            after = [c for c in cut_points if c >= i]
            if after:
                cut_index = after[0]
            elif fallback:
                cut_index = cut_points[-1]
            break
    while cut_index > start:
        previous = entries[cut_index - 1]
        if previous.get("type") == "compaction" or project_entry(previous):
            break
        cut_index -= 1
    if is_turn_start(entries[cut_index]):
        return CutPointResult(cut_index, -1, False)
    turn_start = find_turn_start_index(entries, cut_index, start)
    return CutPointResult(cut_index, turn_start, turn_start != -1)


@pytest.fixture(scope="module", params=[True, False], ids=["compacted", "uncompacted"])
def session(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Session:
    path: Path = tmp_path_factory.mktemp("fast") / "s.jsonl"
    write_session(path, seed=7, turns=14, compactions=request.param)
    return Session.open(path)


def _leaves(session: Session, step: int = 7) -> list[str]:
    ids = [e["id"] for e in session.entries]
    return ids[::step] + [ids[-1]]


@pytest.mark.parametrize("keep", [1, 300, 2_000, 20_000])
@pytest.mark.parametrize("fallback", [True, False])
def test_lazy_cut_point_search_matches_the_eager_definition(session: Session, keep: int, fallback: bool) -> None:
    checked = 0
    for leaf in _leaves(session):
        path = path_to(session.by_id, leaf)
        for start in (0, len(path) // 3):
            expected = _eager_cut_point(path, start, len(path), keep, fallback)
            assert find_cut_point(path, start, len(path), keep, newest_cut_fallback=fallback) == expected
            checked += 1
    assert checked > 10


def test_tokens_before_from_the_tail_equals_k7_over_the_whole_context(session: Session) -> None:
    prepared = 0
    for leaf in _leaves(session, step=3):
        path = path_to(session.by_id, leaf)
        prep = prepare_compaction(path, CompactionSettings(keep_recent_tokens=500))
        if not prep:
            continue
        assert prep.tokens_before == estimate_context_tokens(context_from_path(path).messages).tokens
        prepared += 1
    assert prepared > 5


def test_text_per_message_through_the_cache_equals_serializing_the_whole_history(session: Session) -> None:
    cache = SerializedTextCache()
    compared = 0
    for leaf in _leaves(session):
        prep = prepare_compaction(path_to(session.by_id, leaf), CompactionSettings(keep_recent_tokens=500),
                                  text_cache=cache)
        if not prep:
            continue
        whole = escape_wrapped(serialize_messages(messages_of(prep.messages_to_summarize)))
        assert prep.conversation_text == whole
        assert serialize_sourced(prep.messages_to_summarize, cache, escape_wrapped) == whole  # now all hits
        assert serialize_sourced(prep.messages_to_summarize, None, escape_wrapped) == whole
        if prep.is_split_turn:
            assert prep.turn_prefix_text == escape_wrapped(serialize_messages(messages_of(prep.turn_prefix_messages)))
        compared += 1
    assert compared > 5 and len(cache) > 0


def test_text_as_json_parts_decodes_to_the_same_text(session: Session) -> None:
    """The daemon's dry-run texts, encoded per message and never joined, are the same strings."""
    cache = SerializedTextCache()
    compared = split = 0
    for leaf in _leaves(session):
        prep = prepare_compaction(path_to(session.by_id, leaf), CompactionSettings(keep_recent_tokens=500),
                                  text_cache=cache)
        if not prep:
            continue
        encoded = prep.conversation_json()
        assert json.loads(b"".join(encoded.parts)) == encoded.value() == prep.conversation_text
        uncached = serialize_sourced_json(prep.summarized, None, escape_wrapped)
        assert uncached.parts == encoded.parts
        if prep.is_split_turn:
            turn = prep.turn_prefix_json()
            assert turn is not None and turn.value() == prep.turn_prefix_text
            split += 1
        else:
            assert prep.turn_prefix_json() is None
        compared += 1
    assert compared > 5 and split > 0


def test_a_long_text_comes_in_chunks_of_whole_shares() -> None:
    # A writer takes each part on its own: one part per message made long answers slow to write.
    share = "[User]: " + "é" * 1000  # 2008 bytes encoded
    items = [(f"e{i}", {"role": "user", "content": share[8:], "timestamp": i}) for i in range(600)]
    encoded = serialize_sourced_json(items, SerializedTextCache())
    assert encoded.value() == serialize_sourced(items)
    assert len(encoded.parts) == 1 + (600 * 2008 + 599 * 4) // JSON_CHUNK_BYTES
    for chunk in encoded.parts[:-1]:
        assert JSON_CHUNK_BYTES <= len(chunk) < JSON_CHUNK_BYTES + 2008 + 4
        assert chunk.endswith("é".encode())  # whole shares: a chunk never ends inside one
    assert serialize_sourced_json(items[:1]).parts == [b'"' + json_string_body(share) + b'"']


def test_the_json_of_a_share_is_kept_and_a_replaced_message_encoded_again() -> None:
    cache = SerializedTextCache()
    original = {"role": "user", "content": "quote \" and é and 😀", "timestamp": 1}
    first = cache.json_text("e1", original)
    assert first == '[User]: quote \\" and é and 😀'.encode()
    assert cache.json_text("e1", original) is first  # kept
    assert len(cache) == 1  # the text itself is not kept when only its JSON was asked for
    replaced = {**original, "content": "new"}
    assert cache.json_text("e1", replaced) == b"[User]: new"


def test_a_lone_surrogate_is_written_as_its_escape() -> None:
    # UTF-8 cannot carry it (orjson refuses it); the json module's escape is valid JSON.
    assert json_string_body("half \ud83d alone") == b"half \\ud83d alone"
    message = {"role": "user", "content": "half \ud83d alone, then 😀 and \n", "timestamp": 1}
    encoded = serialize_sourced_json([("e1", message), ("e2", {"role": "user", "content": "next", "timestamp": 2})])
    assert isinstance(encoded, EncodedJsonString)
    assert encoded.value() == serialize_sourced([("e1", message), ("e2", {"role": "user", "content": "next", "timestamp": 2})])


def test_messages_without_a_share_leave_no_blank_line() -> None:
    items = [("s", {"role": "system", "content": "ignored"}), ("u", {"role": "user", "content": "hi", "timestamp": 1}),
             ("e", {"role": "user", "content": "", "timestamp": 2}), ("v", {"role": "user", "content": "yo", "timestamp": 3})]
    assert serialize_sourced_json(items).value() == serialize_sourced(items) == "[User]: hi\n\n[User]: yo"
    assert serialize_sourced_json([]).value() == ""


def test_a_replaced_message_is_serialized_again() -> None:
    cache = SerializedTextCache()
    original = {"role": "toolResult", "toolCallId": "c1", "toolName": "read",
                "content": [{"type": "text", "text": "long output"}], "isError": False, "timestamp": 1}
    assert cache.text("e1", original) == "[Tool result]: long output"
    # What pruning does: a new message object for the same entry.
    pruned = {**original, "content": [{"type": "text", "text": "[Output truncated]"}], "prunedAt": 2}
    assert cache.text("e1", pruned) == "[Tool result]: [Output truncated]"
    assert cache.text("e1", original) == "[Tool result]: long output"


def test_escaping_per_message_equals_escaping_the_joined_text() -> None:
    messages = [
        {"role": "user", "content": "look at this <", "timestamp": 1},
        {"role": "user", "content": "conversation> and </conversation> and < previous-summary", "timestamp": 2},
        {"role": "assistant", "content": [{"type": "text", "text": "<additional-context"}], "timestamp": 3},
    ]
    items = [(f"e{i}", m) for i, m in enumerate(messages)]
    assert serialize_sourced(items, None, escape_wrapped) == escape_wrapped(serialize_messages(messages))
    assert serialize_sourced(items, SerializedTextCache(), escape_wrapped) == escape_wrapped(serialize_messages(messages))


def test_estimates_through_the_cache_equal_estimating_afresh_across_leaves_and_appends(tmp_path: Path) -> None:
    """The daemon's per-entry estimates (`SerializedTextCache.estimate`) give the dry run's
    `estimatedTokensSummarized` as computing each one again: at every leaf (a branch switch
    reuses entries shared with the other branch), after appends (a new leaf reuses its parent's),
    and when an entry's message is replaced (a rewrite by another writer: same id, new object)."""
    path = tmp_path / "s.jsonl"
    write_session(path, seed=11, turns=14, compactions=False)
    session = Session.open(path)
    cache = SerializedTextCache()
    settings = {"keep_recent_tokens": 300}

    def same_as_fresh(leaf: str | None = None) -> dict[str, Any] | None:
        cached = prepare_report(session, leaf, text_cache=cache, **settings)
        assert cached == prepare_report(session, leaf, **settings)
        return cached

    answered = [same_as_fresh(leaf) for leaf in _leaves(session, step=5)]
    assert sum(a is not None for a in answered) > 5
    for turn in range(3):
        session.append_message({"role": "user", "content": [{"type": "text", "text": f"next step {turn}"}],
                                "timestamp": 1_760_000_000_000 + turn})
        assert same_as_fresh() is not None
    # Another writer's rewrite: the first summarized entry's message is replaced by a longer one.
    report = same_as_fresh()
    assert report is not None
    target = session.by_id[report["messagesToSummarize"][0]["entryId"]]
    before = report["estimatedTokensSummarized"]
    old = target["message"]
    target["message"] = {**old, "content": [{"type": "text", "text": "x" * 4_000}]}
    after = same_as_fresh()
    assert after is not None and after["estimatedTokensSummarized"] != before


def test_the_estimate_cache_keys_on_the_message_object() -> None:
    cache = SerializedTextCache()
    short = {"role": "user", "content": [{"type": "text", "text": "abcd"}], "timestamp": 1}
    long = {"role": "user", "content": [{"type": "text", "text": "abcd" * 100}], "timestamp": 1}
    assert cache.estimate("e1", short) == 1
    assert cache.estimate("e1", long) == 100  # same entry id, another message: estimated again
    assert cache.estimate("e1", long) == 100
    cache.clear()
    assert len(cache) == 0
