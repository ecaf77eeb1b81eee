"""serializeConversation (spec §9, Z-1..Z-6): the history as inert text for the summarizer.

Input is `convertToLlm` output (user/assistant/toolResult/developer messages). Tool results longer
than 2000 UTF-16 code units are cut (D-12); user and assistant text never is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from compactd.session.context import convert_to_llm

from .jscompat import js_json_stringify, js_object_keys, js_template_value, utf16_len, utf16_slice

__all__ = [
    "TOOL_RESULT_MAX_CHARS",
    "truncate_for_summary",
    "serialize_conversation",
    "serialize_messages",
]

TOOL_RESULT_MAX_CHARS = 2000


def truncate_for_summary(text: str, max_chars: int = TOOL_RESULT_MAX_CHARS) -> str:
    """Z-4: keep the first `max_chars` code units and say how many were dropped. A surrogate pair
    split by the cut keeps its length but its half becomes U+FFFD (see `utf16_slice`)."""
    length = utf16_len(text)
    if length <= max_chars:
        return text
    return f"{utf16_slice(text, max_chars)}\n\n[... {length - max_chars} more characters truncated]"


def _joined_text_blocks(content: Any) -> str:
    """Text blocks concatenated without a separator; images and other blocks ignored."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(
        _js_join_item(block.get("text"))
        for block in content
        if isinstance(block, dict) and block.get("type") == "text"
    )


def _js_join_item(value: Any) -> str:
    """How `Array.prototype.join` renders one item: null/undefined as ""."""
    if isinstance(value, str):
        return value
    return "" if value is None else js_template_value(value)


def _tool_call_text(block: Mapping[str, Any]) -> str:
    arguments = block.get("arguments")
    rendered = ""
    if isinstance(arguments, dict):
        rendered = ", ".join(f"{key}={js_json_stringify(arguments[key])}" for key in js_object_keys(arguments))
    elif isinstance(arguments, list):  # Object.entries of an array: its indices as keys
        rendered = ", ".join(f"{i}={js_json_stringify(v)}" for i, v in enumerate(arguments))
    # `${block.name}` renders a missing name as "undefined" and null as "null".
    name_text = js_template_value(block["name"]) if "name" in block else "undefined"
    return f"{name_text}({rendered})"


def _assistant_parts(content: Any) -> list[str]:
    if not isinstance(content, list):
        return []
    thinking: list[str] = []
    texts: list[str] = []
    calls: list[str] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            # Z-3: an empty text block still counts (JavaScript joins a missing text as "").
            texts.append(_js_join_item(block.get("text")))
        elif kind == "thinking":
            thinking.append(_js_join_item(block.get("thinking")))
        elif kind == "toolCall":
            calls.append(_tool_call_text(block))
    parts: list[str] = []
    if thinking:
        parts.append("[Assistant thinking]: " + "\n".join(thinking))
    if texts:
        parts.append("[Assistant]: " + "\n".join(texts))
    if calls:
        parts.append("[Assistant tool calls]: " + "; ".join(calls))
    return parts


def serialize_conversation(messages: Iterable[Mapping[str, Any]]) -> str:
    """Z-1..Z-6: one part per role block, parts joined by a blank line, no trailing newline."""
    parts: list[str] = []
    for message in messages:
        role = message.get("role")
        if role == "user":
            text = _joined_text_blocks(message.get("content"))
            if text:
                parts.append(f"[User]: {text}")
        elif role == "assistant":
            parts.extend(_assistant_parts(message.get("content")))
        elif role == "toolResult":
            text = _joined_text_blocks(message.get("content"))
            if text:
                parts.append(f"[Tool result]: {truncate_for_summary(text)}")
        elif role == "developer":
            content = message.get("content")
            text = content if isinstance(content, str) else _joined_text_blocks(content)
            if text:
                parts.append(f"[Developer]: {text}")
    return "\n\n".join(parts)


def serialize_messages(messages: Iterable[Mapping[str, Any]]) -> str:
    """S-3: agent messages → `convertToLlm` → `serializeConversation`."""
    return serialize_conversation(convert_to_llm(list(messages)))  # type: ignore[arg-type]
