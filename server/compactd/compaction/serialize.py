"""serializeConversation (spec §9, Z-1..Z-6): the history as inert text for the summarizer.

Input is `convertToLlm` output (user/assistant/toolResult/developer messages). Tool results longer
than 2000 UTF-16 code units are cut (D-12); user and assistant text never is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import re
from json import dumps as _json_dumps
from json import loads as _json_loads

from orjson import JSONEncodeError
from orjson import dumps as _dumps

from compactd.session.context import PRUNED_OUTPUT_NOTICE, _text_of_blocks, convert_message, convert_to_llm

from .tokens import MessageEstimates, estimate_tokens
from .jscompat import (
    DIGITS,
    js_json_stringify,
    js_json_stringify_length,
    js_object_items,
    js_template_value,
    utf16_len,
    utf16_slice,
)

__all__ = [
    "TOOL_RESULT_MAX_CHARS",
    "truncate_for_summary",
    "serialize_conversation",
    "serialize_messages",
    "message_text",
    "SerializedTextCache",
    "EncodedJsonString",
    "json_string_body",
    "JSON_CHUNK_BYTES",
    "serialize_sourced",
    "serialize_sourced_json",
    "serialize_sourced_counted",
    "serialize_sourced_json_counted",
    "append_message_parts",
    "append_message_parts_counted",
    "escape_wrapped",
]

TOOL_RESULT_MAX_CHARS = 2000

_WRAPPER_TAG = re.compile(r"<(?=/?\s*(?:conversation|previous-summary|additional-context)\b)", re.IGNORECASE)
_ZWSP = "\u200b"


def escape_wrapped(text: str) -> str:
    """Neutralize wrapper tags inside wrapped text (`prompts`' module docstring): a zero-width
    space after the `<` of any `conversation`, `previous-summary` or `additional-context` tag,
    opening or closing, any case. Idempotent. Here, compiled, as the history's parts call it."""
    if "<" not in text:
        return text
    return _WRAPPER_TAG.sub("<" + _ZWSP, text)


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
    texts = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "text":
            text = block.get("text")
            texts.append(text if type(text) is str else _js_join_item(text))
    return texts[0] if len(texts) == 1 else "".join(texts)


_MISSING: Any = object()


def _js_join_item(value: Any) -> str:
    """How `Array.prototype.join` renders one item: null/undefined as ""."""
    if isinstance(value, str):
        return value
    return "" if value is None else js_template_value(value)


def _tool_call_text(block: Mapping[str, Any]) -> str:
    arguments = block.get("arguments")
    rendered: str | None = ""
    if type(arguments) is dict:
        rendered = _plain_arguments_text(arguments)
        if rendered is None:  # keys that look like array indices, or a lone surrogate
            rendered = ", ".join([f"{key}={js_json_stringify(value)}" for key, value in js_object_items(arguments)])
    elif isinstance(arguments, dict):
        rendered = ", ".join([f"{key}={js_json_stringify(value)}" for key, value in js_object_items(arguments)])
    elif isinstance(arguments, list):  # Object.entries of an array: its indices as keys
        rendered = ", ".join(f"{i}={js_json_stringify(v)}" for i, v in enumerate(arguments))
    # `${block.name}` renders a missing name as "undefined" and null as "null".
    name = block.get("name", _MISSING)
    if type(name) is not str:
        name = "undefined" if name is _MISSING else js_template_value(name)
    return f"{name}({rendered})"


def _plain_arguments_text(arguments: dict[Any, Any]) -> str | None:
    """`key=JSON.stringify(value)` joined by ", " in insertion order, string values (most
    arguments) straight to orjson (JSON.stringify's escaping): in one pass, as long as no key
    looks like an array index (JavaScript would list those first). None otherwise, or for a lone
    surrogate (orjson refuses it)."""
    parts = []
    try:
        for key, value in arguments.items():
            if type(key) is not str or key[:1] in DIGITS:
                return None
            parts.append(f"{key}={_dumps(value).decode() if type(value) is str else js_json_stringify(value)}")
    except JSONEncodeError:
        return None
    return ", ".join(parts)


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
            text = block.get("text")
            texts.append(text if type(text) is str else _js_join_item(text))
        elif kind == "thinking":
            text = block.get("thinking")
            thinking.append(text if type(text) is str else _js_join_item(text))
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


# --- One pass for the text and the chars/4 estimate --------------------------------------------
# A dry run sends the history text and adds up the same messages' estimates
# (`estimatedTokensSummarized`): walked once, a tool call's arguments are encoded once for both
# (JSON.stringify's length is what the estimate counts, and the text holds each value's JSON).


def _code_units(text: str) -> int:
    return len(text) if text.isascii() else utf16_len(text)


def _json_key_units(key: str) -> int:
    """`JSON.stringify(key).length`: the key and its quotes when nothing in it is escaped."""
    if key.isascii() and key.isprintable() and '"' not in key and "\\" not in key:
        return len(key) + 2
    return utf16_len(js_json_stringify(key))


def _plain_arguments_counted(arguments: dict[Any, Any]) -> tuple[str, int] | None:
    """`_plain_arguments_text(arguments)` and `JSON.stringify(arguments).length`, summed from the
    same encoded values: braces, each `"key":value`, commas. None where the former is None."""
    parts = []
    units = 2  # the braces
    try:
        for key, value in arguments.items():
            if type(key) is not str or key[:1] in DIGITS:
                return None
            encoded = _dumps(value).decode() if type(value) is str else js_json_stringify(value)
            parts.append(f"{key}={encoded}")
            units += _json_key_units(key) + 1 + _code_units(encoded)
    except JSONEncodeError:
        return None
    if len(parts) > 1:
        units += len(parts) - 1
    return ", ".join(parts), units


def _tool_call_counted(block: Mapping[str, Any]) -> tuple[str, int]:
    """`_tool_call_text(block)` and the call's share of the estimate's characters: the length of
    its arguments' JSON ("undefined" when absent) and of its name when a string."""
    arguments = block.get("arguments", _MISSING)
    name = block.get("name", _MISSING)
    counted = _plain_arguments_counted(arguments) if type(arguments) is dict else None
    if counted is None:
        text = _tool_call_text(block)
        units = len("undefined") if arguments is _MISSING else js_json_stringify_length(arguments)
    else:
        rendered, units = counted
        label = name if type(name) is str else ("undefined" if name is _MISSING else js_template_value(name))
        text = f"{label}({rendered})"
    if isinstance(name, str):
        units += _code_units(name)
    return text, units


def _assistant_parts_counted(content: Any, parts: list[str]) -> int:
    """`_assistant_parts(content)` appended to `parts`; returns the characters the chars/4
    estimate counts for the same content (`tokens._assistant_chars`)."""
    if not isinstance(content, list):
        return 0
    thinking: list[str] = []
    texts: list[str] = []
    calls: list[str] = []
    units = 0
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            text = block.get("text")
            texts.append(text if type(text) is str else _js_join_item(text))
            if isinstance(text, str):
                units += _code_units(text)
        elif kind == "thinking":
            text = block.get("thinking")
            thinking.append(text if type(text) is str else _js_join_item(text))
            if isinstance(text, str):
                units += _code_units(text)
        elif kind == "toolCall":
            call, call_units = _tool_call_counted(block)
            calls.append(call)
            units += call_units
    if thinking:
        parts.append("[Assistant thinking]: " + "\n".join(thinking))
    if texts:
        parts.append("[Assistant]: " + "\n".join(texts))
    if calls:
        parts.append("[Assistant tool calls]: " + "; ".join(calls))
    return units


def append_message_parts_counted(message: Mapping[str, Any], parts: list[str]) -> int:
    """`append_message_parts(message, parts)`, returning `estimate_tokens(message)`: an assistant
    message's blocks are read once for both (tests/compaction/test_serialize_counted.py)."""
    if message.get("role") == "assistant":
        return -(-_assistant_parts_counted(message.get("content"), parts) // 4)
    append_message_parts(message, parts)
    return estimate_tokens(message)  # type: ignore[arg-type]


def _message_parts(message: Mapping[str, Any]) -> list[str]:
    """Z-1..Z-5: the role blocks one `convertToLlm` message contributes (none, one, or up to three
    for an assistant message)."""
    role = message.get("role")
    if role == "user":
        text = _joined_text_blocks(message.get("content"))
        return [f"[User]: {text}"] if text else []
    if role == "assistant":
        return _assistant_parts(message.get("content"))
    if role == "toolResult":
        text = _joined_text_blocks(message.get("content"))
        return [f"[Tool result]: {truncate_for_summary(text)}"] if text else []
    if role == "developer":
        content = message.get("content")
        text = content if isinstance(content, str) else _joined_text_blocks(content)
        return [f"[Developer]: {text}"] if text else []
    return []


def serialize_conversation(messages: Iterable[Mapping[str, Any]]) -> str:
    """Z-1..Z-6: one part per role block, parts joined by a blank line, no trailing newline."""
    parts: list[str] = []
    for message in messages:
        parts.extend(_message_parts(message))
    return "\n\n".join(parts)


def serialize_messages(messages: Iterable[Mapping[str, Any]]) -> str:
    """S-3: agent messages → `convertToLlm` → `serializeConversation`."""
    return serialize_conversation(convert_to_llm(list(messages)))  # type: ignore[arg-type]


def message_text(message: Mapping[str, Any]) -> str:
    """One agent message's share of `serialize_messages`: its parts joined by a blank line, ""
    when it contributes none. Joining the non-empty shares by a blank line gives the whole text
    (no part is ever empty)."""
    parts: list[str] = []
    append_message_parts(message, parts)
    return "\n\n".join(parts)


def append_message_parts(message: Mapping[str, Any], parts: list[str]) -> None:
    """`_message_parts(convert_message(message))` appended to `parts`, in one dispatch on the role
    and without intermediate messages: the summarizer's text is tens of thousands of
    messages on a long path, so the per-message overhead is most of its cost. Equal to the
    composition for every message (tests/compaction/test_serialize_fast.py)."""
    role = message.get("role")
    if role == "assistant":
        parts.extend(_assistant_parts(message.get("content")))
    elif role == "toolResult":
        content = message.get("content")
        if message.get("prunedAt") is not None:
            text = _text_of_blocks(content) or PRUNED_OUTPUT_NOTICE  # what convertToLlm leaves
        else:
            text = _joined_text_blocks(content)
        if text:
            # A text of at most 1000 characters has at most 2000 UTF-16 code units.
            parts.append("[Tool result]: " + (text if len(text) <= TOOL_RESULT_MAX_CHARS // 2 else truncate_for_summary(text)))
    elif role == "user":
        text = _joined_text_blocks(message.get("content"))
        if text:
            parts.append("[User]: " + text)
    elif role == "developer":
        content = message.get("content")
        text = content if isinstance(content, str) else _joined_text_blocks(content)
        if text:
            parts.append("[Developer]: " + text)
    elif role in ("system", None):
        return
    else:
        converted = convert_message(message)  # type: ignore[arg-type]
        if converted is not None:
            parts.extend(_message_parts(converted))


def json_string_body(text: str) -> bytes:
    """`text` as the inside of a JSON string: UTF-8, escaped, without the quotes. A lone
    surrogate (from a damaged file), which UTF-8 cannot carry, is written as its `\\uXXXX`
    escape, as Python's json module does."""
    try:
        return _dumps(text)[1:-1]
    except JSONEncodeError:
        return _json_dumps(text)[1:-1].encode("ascii")


# The blank line between two messages' shares, inside a JSON string.
_JSON_BLANK_LINE = b"\\n\\n"

# Encoded shares are gathered into chunks of about this size: a writer takes each part on its own,
# and one writev buffer per message made the 200k parts of a dry run on 100k entries take 240 ms to
# write against 35 ms in chunks (the copy into chunks costs less than that).
JSON_CHUNK_BYTES = 1 << 18


class EncodedJsonString:
    """A JSON string literal given as the parts that make it up, quotes included: a dry run's
    history text for a writer that sends parts as they are. Megabytes on a long path, so neither
    the text nor its encoding is ever joined into one object: the parts are chunks of about
    JSON_CHUNK_BYTES, each the encoding of whole messages' shares."""

    def __init__(self, parts: list[bytes]) -> None:
        self.parts = parts

    def value(self) -> str:
        """The string itself (for tests and the rare reader that needs it)."""
        decoded: str = _json_loads(b"".join(self.parts))
        return decoded


class SerializedTextCache:
    """`message_text` per entry (after `escape`), kept by a caller across requests (the daemon
    keeps one per open session), so a dry run on a long uncompacted path only serializes what is
    new; and, once asked for, the same as JSON (`json_string_body`), so the dry-run answer's text
    is not encoded again either.

    It keeps each message's chars/4 estimate too (`estimate`): the dry run's
    `estimatedTokensSummarized` adds one per summarized message, so a new leaf's dry run reuses
    its parent's.

    A hit requires the very message object that was serialized: messages of stored entries are
    never changed in place (pruning replaces the message), so a replaced message is a miss."""

    def __init__(self) -> None:
        self._texts: dict[tuple[str, Callable[[str], str] | None], tuple[Mapping[str, Any], str]] = {}
        self._json: dict[tuple[str, Callable[[str], str] | None], tuple[Mapping[str, Any], bytes]] = {}
        self._estimates: dict[str, tuple[Mapping[str, Any], int]] = {}

    def estimate(self, entry_id: str, message: Mapping[str, Any]) -> int:
        """`estimate_tokens(message)`, kept per entry while its message is the same object (a
        message projected afresh on each request, as a custom message is, is never a hit)."""
        hit = self._estimates.get(entry_id)
        if hit is not None and hit[0] is message:
            return hit[1]
        value = estimate_tokens(message)  # type: ignore[arg-type]
        self._estimates[entry_id] = (message, value)
        return value

    def text(self, entry_id: str, message: Mapping[str, Any], escape: Callable[[str], str] | None = None) -> str:
        key = (entry_id, escape)
        hit = self._texts.get(key)
        if hit is not None and hit[0] is message:
            return hit[1]
        text = _escaped_text(message, escape)
        self._texts[key] = (message, text)
        return text

    def json_text(self, entry_id: str, message: Mapping[str, Any], escape: Callable[[str], str] | None = None) -> bytes:
        """`json_string_body(self.text(...))`, kept alike; the text itself is kept only when it
        was asked for (a daemon that only answers dry runs holds the encoded form alone)."""
        key = (entry_id, escape)
        hit = self._json.get(key)
        if hit is not None and hit[0] is message:
            return hit[1]
        known = self._texts.get(key)
        text = known[1] if known is not None and known[0] is message else _escaped_text(message, escape)
        encoded = json_string_body(text)
        self._json[key] = (message, encoded)
        return encoded

    def text_and_estimate(self, entry_id: str, message: Mapping[str, Any],
                          escape: Callable[[str], str] | None = None) -> tuple[str, int]:
        """`self.text(...)` and `self.estimate(...)`; a message new to both is read once for the two."""
        key = (entry_id, escape)
        hit = self._texts.get(key)
        if hit is not None and hit[0] is message:
            return hit[1], self.estimate(entry_id, message)
        text, tokens = self._fresh(entry_id, message, escape)
        self._texts[key] = (message, text)
        return text, tokens

    def json_and_estimate(self, entry_id: str, message: Mapping[str, Any],
                          escape: Callable[[str], str] | None = None) -> tuple[bytes, int]:
        """`self.json_text(...)` and `self.estimate(...)`, alike."""
        key = (entry_id, escape)
        hit = self._json.get(key)
        if hit is not None and hit[0] is message:
            return hit[1], self.estimate(entry_id, message)
        known = self._texts.get(key)
        if known is not None and known[0] is message:
            text, tokens = known[1], self.estimate(entry_id, message)
        else:
            text, tokens = self._fresh(entry_id, message, escape)
        encoded = json_string_body(text)
        self._json[key] = (message, encoded)
        return encoded, tokens

    def _fresh(self, entry_id: str, message: Mapping[str, Any], escape: Callable[[str], str] | None) -> tuple[str, int]:
        """The escaped text and the estimate from one pass (the estimate kept; the caller keeps the text)."""
        known = self._estimates.get(entry_id)
        if known is not None and known[0] is message:
            return _escaped_text(message, escape), known[1]
        text, tokens = _escaped_text_counted(message, escape)
        self._estimates[entry_id] = (message, tokens)
        return text, tokens

    def clear(self) -> None:
        self._texts.clear()
        self._json.clear()
        self._estimates.clear()

    def __len__(self) -> int:
        return len(self._texts) + len(self._json) + len(self._estimates)


def _escaped_text(message: Mapping[str, Any], escape: Callable[[str], str] | None) -> str:
    text = message_text(message)
    return escape(text) if escape is not None else text


def _escaped_text_counted(message: Mapping[str, Any], escape: Callable[[str], str] | None) -> tuple[str, int]:
    parts: list[str] = []
    tokens = append_message_parts_counted(message, parts)
    text = "\n\n".join(parts)
    return (escape(text) if escape is not None else text), tokens


def serialize_sourced(
    items: Iterable[tuple[str, Mapping[str, Any]]],
    cache: SerializedTextCache | None = None,
    escape: Callable[[str], str] | None = None,
) -> str:
    """`serialize_messages` of (entry id, agent message) pairs, through `cache` when given.

    `escape` is applied to each message's text (through the cache) or to each part: the same as
    escaping the whole text when no match of it spans the blank line between two parts (true of
    `escape_wrapped`: every part starts with "["). Parts are small and mostly ASCII; escaping the
    joined text would scan it again, and it is often four bytes a character (one emoji does it)."""
    if cache is not None:
        texts = (cache.text(entry_id, message, escape) for entry_id, message in items)
        return "\n\n".join([text for text in texts if text])
    parts: list[str] = []
    for _, message in items:
        append_message_parts(message, parts)
    if escape is not None:
        parts = [escape(part) for part in parts]
    return "\n\n".join(parts)


def serialize_sourced_json(
    items: Iterable[tuple[str, Mapping[str, Any]]],
    cache: SerializedTextCache | None = None,
    escape: Callable[[str], str] | None = None,
) -> EncodedJsonString:
    """`serialize_sourced(items, cache, escape)` as a JSON string in chunks: each message's share
    encoded once (and kept by `cache`), blank lines between them (`serialize_sourced_json_counted`)."""
    return serialize_sourced_json_counted(items, cache, escape)[0]


def _append_counted(message: Mapping[str, Any], parts: list[str], estimates: MessageEstimates | None) -> int:
    """`append_message_parts_counted`, through the request's memo of estimates when given: a
    message estimated already is only serialized; one estimated here is remembered."""
    if estimates is None:
        return append_message_parts_counted(message, parts)
    known = estimates.known(message)  # type: ignore[arg-type]
    if known is not None:
        append_message_parts(message, parts)
        return known
    tokens = append_message_parts_counted(message, parts)
    estimates.keep(message, tokens)  # type: ignore[arg-type]
    return tokens


def serialize_sourced_counted(
    items: Iterable[tuple[str, Mapping[str, Any]]],
    cache: SerializedTextCache | None = None,
    escape: Callable[[str], str] | None = None,
    estimates: MessageEstimates | None = None,
) -> tuple[str, int]:
    """`serialize_sourced(items, cache, escape)` and the chars/4 estimates of the messages added
    up, each message read once for both (a dry run's text and `estimatedTokensSummarized`); the
    estimates kept by `cache`, else by `estimates` when given."""
    tokens = 0
    if cache is not None:
        texts: list[str] = []
        for entry_id, message in items:
            text, count = cache.text_and_estimate(entry_id, message, escape)
            tokens += count
            if text:
                texts.append(text)
        return "\n\n".join(texts), tokens
    parts: list[str] = []
    for _, message in items:
        tokens += _append_counted(message, parts, estimates)
    if escape is not None:
        parts = [escape(part) for part in parts]
    return "\n\n".join(parts), tokens


def serialize_sourced_json_counted(
    items: Iterable[tuple[str, Mapping[str, Any]]],
    cache: SerializedTextCache | None = None,
    escape: Callable[[str], str] | None = None,
    estimates: MessageEstimates | None = None,
) -> tuple[EncodedJsonString, int]:
    """`serialize_sourced_json(items, cache, escape)` and the estimates added up, likewise."""
    chunks: list[bytes] = []
    run: list[bytes] = [b'"']
    size = 0
    tokens = 0
    first = True
    parts: list[str] = []
    for entry_id, message in items:
        if cache is not None:
            body, count = cache.json_and_estimate(entry_id, message, escape)
            bodies = [body]
        else:
            parts.clear()
            count = _append_counted(message, parts, estimates)
            bodies = [json_string_body(escape(part) if escape is not None else part) for part in parts]
        tokens += count
        for body in bodies:
            if not body:
                continue
            if not first:
                run.append(_JSON_BLANK_LINE)
            first = False
            run.append(body)
            size += len(body)
        if size >= JSON_CHUNK_BYTES:
            chunks.append(b"".join(run))
            run, size = [], 0
    run.append(b'"')
    chunks.append(b"".join(run))
    return EncodedJsonString(chunks), tokens
