"""The fused pass (each message serialized and estimated in one walk over its blocks, a tool call's
arguments encoded once for both) equals the two computations done apart: per message on the real
Pi sessions and on generated odd shapes, per tool call, through the daemon's per-session cache, and
as the dry run's texts and `estimatedTokensSummarized` at many leaves of real sessions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compactd.compaction.jscompat import js_json_stringify_length
from compactd.compaction.prepare import CompactionPreparation, prepare_compaction
from compactd.compaction.reports import preparation_json, prepare_report
from compactd.compaction.serialize import (
    SerializedTextCache,
    _tool_call_counted,
    _tool_call_text,
    append_message_parts,
    append_message_parts_counted,
    escape_wrapped,
    message_text,
    serialize_sourced,
    serialize_sourced_counted,
    serialize_sourced_json,
    serialize_sourced_json_counted,
)
from compactd.compaction.tokens import estimate_tokens
from compactd.session import Session
from compactd.session.tree import path_to

from .test_serialize_fast import _key, _value, _fixture_messages, messages

REAL_PI = Path(__file__).resolve().parents[1] / "fixtures" / "real-pi"


def _apart(message: dict[str, Any]) -> tuple[list[str], int]:
    parts: list[str] = []
    append_message_parts(message, parts)
    return parts, estimate_tokens(message)


def _fused(message: dict[str, Any]) -> tuple[list[str], int]:
    parts: list[str] = []
    tokens = append_message_parts_counted(message, parts)
    return parts, tokens


def test_real_session_messages_fused_equal_apart() -> None:
    listed = _fixture_messages()
    calls = sum(1 for m in listed if m.get("role") == "assistant" and isinstance(m.get("content"), list)
                for b in m["content"] if isinstance(b, dict) and b.get("type") == "toolCall")
    assert len(listed) > 1000 and calls > 500
    for message in listed:
        assert _fused(message) == _apart(message)


@settings(max_examples=600, deadline=None)
@given(messages())
def test_generated_messages_fused_equal_apart(message: dict[str, Any]) -> None:
    try:
        expected: tuple[list[str], int] | type[Exception] = _apart(message)
    except Exception as exc:  # a shape either computation refuses must be refused the same way
        expected = type(exc)
    if isinstance(expected, tuple):
        assert _fused(message) == expected
    else:
        with pytest.raises(expected):
            _fused(message)


_arguments = st.one_of(st.dictionaries(_key | st.text(max_size=4), _value, max_size=5),
                       st.lists(_value, max_size=3), _value)


@settings(max_examples=600, deadline=None)
@given(st.one_of(st.text(max_size=8), st.none(), st.integers()), _arguments, st.booleans(), st.booleans())
def test_tool_call_fused_equals_apart(name: Any, arguments: Any, with_name: bool, with_arguments: bool) -> None:
    """Index-like and escaped keys, lone surrogates, nested and non-string values, absent fields:
    the text is `_tool_call_text` and the count JSON.stringify's length plus a string name's."""
    block: dict[str, Any] = {"type": "toolCall"}
    if with_name:
        block["name"] = name
    if with_arguments:
        block["arguments"] = arguments
    units = js_json_stringify_length(arguments) if with_arguments else len("undefined")
    if with_name and isinstance(name, str):
        units += len(name.encode("utf-16-le", "surrogatepass")) // 2
    assert _tool_call_counted(block) == (_tool_call_text(block), units)


def test_escaped_argument_keys_are_counted_as_encoded() -> None:
    for key in ['say "hi"', "back\\slash", "tab\there", "\x7f", "é", "😀", "\ud800"]:
        block = {"type": "toolCall", "name": "t", "arguments": {key: "v", "path": 1}}
        assert _tool_call_counted(block) == (_tool_call_text(block), js_json_stringify_length(block["arguments"]) + 1)


def _sourced() -> list[tuple[str, dict[str, Any]]]:
    return [(f"e{i}", m) for i, m in enumerate(_fixture_messages())]


def test_serializers_fused_equal_apart_with_and_without_cache() -> None:
    items = _sourced()
    tokens = sum(estimate_tokens(m) for _, m in items)
    for escape in (None, escape_wrapped):
        text = serialize_sourced(items, None, escape)
        assert serialize_sourced_counted(items, None, escape) == (text, tokens)
        encoded, counted = serialize_sourced_json_counted(items, None, escape)
        assert (encoded.value(), counted) == (text, tokens)
        cache = SerializedTextCache()
        for _ in range(2):  # cold, then every message a hit
            assert serialize_sourced_counted(items, cache, escape) == (text, tokens)
            encoded, counted = serialize_sourced_json_counted(items, cache, escape)
            assert (encoded.value(), counted) == (text, tokens)
        assert serialize_sourced_json(items, cache, escape).parts == encoded.parts


def test_cache_pairs_follow_the_message_object() -> None:
    """Kept per entry while its message is the same object: a message replaced under the same id
    (a rewrite) gets its own text and estimate, in either order of asking."""
    cache = SerializedTextCache()
    short = {"role": "user", "content": [{"type": "text", "text": "x" * 40}]}
    longer = {**short, "content": [{"type": "text", "text": "y" * 400}]}
    assert cache.text_and_estimate("a", short) == (message_text(short), 10)
    assert cache.json_and_estimate("a", short) == (b"[User]: " + b"x" * 40, 10)
    assert cache.json_and_estimate("a", longer) == (b"[User]: " + b"y" * 400, 100)
    assert cache.text_and_estimate("a", longer) == (message_text(longer), 100)
    assert cache.estimate("a", longer) == 100
    assert cache.text_and_estimate("a", short) == (message_text(short), 10)


@pytest.mark.parametrize("name", ["pi-mono-root-compact.jsonl", "pi-mono-large-session.jsonl"])
def test_dry_run_texts_and_summarized_fused_equal_apart_at_many_leaves(pi_fixture: Path, name: str) -> None:
    """At every 17th message leaf of two real sessions, forwards and back (cache hits): the dry
    run's texts and `estimatedTokensSummarized`, fused, equal the texts serialized and every
    message estimated apart — as text, as encoded JSON, cold and through the daemon's cache."""
    checked = splits = 0
    for session in (Session.open(pi_fixture), Session.open(REAL_PI / name)):
        cache = SerializedTextCache()
        leaves = [e["id"] for e in session.entries if e.get("type") == "message"][::17]
        for leaf in leaves + leaves[::-1]:
            prep = prepare_compaction(path_to(session.by_id, leaf))
            if not isinstance(prep, CompactionPreparation):
                assert prepare_report(session, leaf) is None
                continue
            text = serialize_sourced(prep.summarized, None, escape_wrapped)
            prefix = serialize_sourced(prep.turn_prefix, None, escape_wrapped) if prep.is_split_turn else None
            summarized = sum(estimate_tokens(m) for _, m in [*prep.summarized, *prep.turn_prefix])
            for report in (prepare_report(session, leaf), prepare_report(session, leaf, text_cache=cache)):
                assert report is not None
                assert (report["conversationText"], report["turnPrefixText"]) == (text, prefix)
                assert report["estimatedTokensSummarized"] == summarized
            encoded = prepare_report(session, leaf, text_cache=cache, text_as_json=True)
            assert encoded is not None
            assert encoded["conversationText"].value() == text
            assert (encoded["turnPrefixText"].value() if prefix is not None else encoded["turnPrefixText"]) == prefix
            assert encoded["estimatedTokensSummarized"] == summarized
            bare = preparation_json(prep, context_tokens=0, include_text=False)
            assert bare["estimatedTokensSummarized"] == summarized
            checked += 1
            splits += prep.is_split_turn
    assert checked > 40 and splits > 0
