"""The one-dispatch serializer (`append_message_parts`, used by `message_text` and
`serialize_sourced`) equals its definition: `convert_message` (convertToLlm) followed by the
per-role parts of serializeConversation, for every message shape — the real Pi sessions in
tests/fixtures and generated odd ones (pruned, null and non-string texts, index-like argument
keys, lone surrogates, long non-ASCII tool output, unknown roles)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from compactd.compaction.prompts import escape_wrapped
from compactd.compaction.jscompat import js_json_stringify, js_object_keys
from compactd.compaction.serialize import _message_parts, _tool_call_text, append_message_parts, serialize_sourced
from compactd.session.context import convert_message
from hypothesis import given, settings
from hypothesis import strategies as st

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _reference(message: dict[str, Any]) -> list[str]:
    converted = convert_message(message)
    return _message_parts(converted) if converted is not None else []


def _fast(message: dict[str, Any]) -> list[str]:
    parts: list[str] = []
    append_message_parts(message, parts)
    return parts


def _fixture_messages() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for path in [FIXTURES / "pi-before-compaction.v1.jsonl", *sorted((FIXTURES / "real-pi").glob("*.jsonl"))]:
        for line in path.read_text().splitlines():
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                continue  # the fixtures keep a few damaged lines on purpose
            if isinstance(obj.get("message"), dict):
                out.append(obj["message"])
    return out


def test_real_session_messages_serialize_as_defined() -> None:
    messages = _fixture_messages()
    assert len(messages) > 1000
    roles = {m.get("role") for m in messages}
    assert {"user", "assistant", "toolResult"} <= roles
    for message in messages:
        assert _fast(message) == _reference(message)
    items = [(str(i), m) for i, m in enumerate(messages)]
    whole = "\n\n".join(p for m in messages for p in _reference(m))
    assert serialize_sourced(items) == whole
    assert serialize_sourced(items, None, escape_wrapped) == escape_wrapped(whole)


_text = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["", "<conversation>", "é" * 1500, "x" * 2500, "\ud800 lone", "😀" * 1001, "a\nb"]),
)
_scalar = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=True), _text)
_value = st.recursive(_scalar, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
                      max_leaves=6)
_key = st.sampled_from(["path", "command", "0", "1", "10", "01", "x", "é"])
_block = st.one_of(
    st.fixed_dictionaries({"type": st.just("text")}, optional={"text": _scalar}),
    st.fixed_dictionaries({"type": st.just("thinking")}, optional={"thinking": _scalar}),
    st.fixed_dictionaries(
        {"type": st.just("toolCall")},
        optional={"name": _scalar, "arguments": st.one_of(st.dictionaries(_key, _value, max_size=4),
                                                          st.lists(_value, max_size=3), _scalar)},
    ),
    st.fixed_dictionaries({"type": st.just("image"), "data": st.just("AAAA")}),
    _scalar,
)
_content = st.one_of(st.none(), _text, st.lists(_block, max_size=4), st.integers())
_role = st.sampled_from(["user", "assistant", "toolResult", "developer", "system", "bashExecution", "custom",
                         "hookMessage", "compactionSummary", "branchSummary", "mystery", None])


@st.composite
def messages(draw: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": draw(_role), "timestamp": 1}
    if draw(st.booleans()):
        message["content"] = draw(_content)
    if draw(st.booleans()):
        message["prunedAt"] = draw(st.sampled_from([None, 5]))
    message.update(draw(st.fixed_dictionaries({}, optional={
        "summary": _text, "command": _text, "output": _text, "exitCode": st.sampled_from([0, 1, 2.5, None]),
        "cancelled": st.booleans(), "excludeFromContext": st.booleans(),
    })))
    return message


@settings(max_examples=600, deadline=None)
@given(messages())
def test_generated_messages_serialize_as_defined(message: dict[str, Any]) -> None:
    try:
        expected: list[str] | type[Exception] = _reference(message)
    except Exception as exc:  # a shape the definition cannot serialize must fail the same way
        expected = type(exc)
    if isinstance(expected, list):
        assert _fast(message) == expected
    else:
        try:
            _fast(message)
        except expected:
            pass
        else:
            raise AssertionError(f"expected {expected.__name__}")


def _tool_call_definition(block: dict[str, Any]) -> str:
    """Z-3's `name(key=JSON.stringify(value), ...)` written plainly: JavaScript key order, every
    value through `js_json_stringify` (itself checked against Node in test_jscompat.py)."""
    arguments = block["arguments"]
    rendered = ", ".join(f"{key}={js_json_stringify(arguments[key])}" for key in js_object_keys(arguments))
    return f"{block['name']}({rendered})"


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=8), st.dictionaries(_key | st.text(max_size=4), _value, max_size=5))
def test_tool_call_text_equals_its_definition(name: str, arguments: dict[str, Any]) -> None:
    """The one-pass rendering of plain arguments (string values to orjson) against the
    definition, index-like keys, lone surrogates and non-string values included."""
    block = {"type": "toolCall", "name": name, "arguments": arguments}
    assert _tool_call_text(block) == _tool_call_definition(block)


def test_real_tool_calls_render_as_defined() -> None:
    blocks = [b for m in _fixture_messages() if m.get("role") == "assistant" and isinstance(m.get("content"), list)
              for b in m["content"] if isinstance(b, dict) and b.get("type") == "toolCall"]
    assert len(blocks) > 500
    for block in blocks:
        assert _tool_call_text(block) == _tool_call_definition(block)
