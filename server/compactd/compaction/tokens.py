"""Token accounting (spec §5, K-1..K-8): Pi's chars/4 heuristic and provider usage.

Every "character" is a UTF-16 code unit (D-12), so estimates match Pi's bit for bit, emoji and
other non-BMP text included. These numbers drive cut points and thresholds; exact tokenizer
counts (D-22) live in `exact_tokens` and are reported beside them only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .jscompat import js_json_stringify, js_json_stringify_length, utf16_len
from .settings import CompactionSettings

__all__ = [
    "ESTIMATED_IMAGE_CHARS",
    "ContextUsageEstimate",
    "estimate_tokens",
    "estimate_chars",
    "sum_estimates",
    "MessageEstimates",
    "calculate_context_tokens",
    "has_valid_usage",
    "get_last_assistant_usage",
    "estimate_context_tokens",
    "compaction_threshold",
    "should_compact",
]

Message = Mapping[str, Any]

# K-2: an image is counted as 4800 characters (about 1200 tokens).
ESTIMATED_IMAGE_CHARS = 4800


def _number(value: Any) -> int | float:
    """A usage field as a number; absent or non-numeric fields count as 0. Integral floats become
    ints (JavaScript has one number type, so `150.0` prints as `150` there too)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _text_len(value: Any) -> int:
    # `isascii` first: most text is ASCII, where code units are characters (no call to utf16_len).
    if isinstance(value, str):
        return len(value) if value.isascii() else utf16_len(value)
    return 0


def _content_chars(content: Any) -> int:
    """Text and image characters of a string-or-blocks content (user, toolResult, custom)."""
    if isinstance(content, str):
        return utf16_len(content)
    if not isinstance(content, list):
        return 0
    chars = 0
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            text = block.get("text")
            if isinstance(text, str):
                chars += len(text) if text.isascii() else utf16_len(text)
        elif kind == "image":
            chars += ESTIMATED_IMAGE_CHARS
    return chars


def _assistant_chars(content: Any) -> int:
    # A non-list content yields no blocks (JavaScript iterates a string's characters, none of
    # which is a block), so it counts 0.
    if not isinstance(content, list):
        return 0
    chars = 0
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            text = block.get("text")
        elif kind == "thinking":
            text = block.get("thinking")
        elif kind == "toolCall":
            # Missing arguments stringify as "undefined" (what String(JSON.stringify(undefined)) is).
            chars += js_json_stringify_length(block["arguments"]) if "arguments" in block else len("undefined")
            text = block.get("name")
        else:
            continue
        if isinstance(text, str):
            chars += len(text) if text.isascii() else utf16_len(text)
    return chars


def _system_chars(message: Message) -> int:
    """Q16-8: text content (images 4800), every non-null section value and the compact JSON of
    `toolsAdded`; `toolsRemoved` is not counted."""
    chars = _content_chars(message.get("content"))
    sections = message.get("sections")
    if isinstance(sections, dict):
        chars += sum(_text_len(value) for value in sections.values())
    if "toolsAdded" in message and message["toolsAdded"] is not None:
        chars += utf16_len(js_json_stringify(message["toolsAdded"]))
    return chars


def estimate_chars(message: Message) -> int:
    """The character count behind K-1 for one (agent) message; 0 for roles Pi does not count."""
    role = message.get("role")
    if role == "assistant":
        return _assistant_chars(message.get("content"))
    if role == "toolResult" or role == "user" or role == "custom":
        # [PI-NEW] images count in user messages too (K-1).
        return _content_chars(message.get("content"))
    if role == "bashExecution":
        # Counted even when excluded from context (`!!` commands), as Pi does.
        return _text_len(message.get("command")) + _text_len(message.get("output"))
    if role in ("branchSummary", "compactionSummary"):
        return _text_len(message.get("summary"))
    if role == "system":
        return _system_chars(message)
    if role == "developer":
        content = message.get("content")
        # Pi takes `content.length`: a string's code units (an array's item count if malformed).
        if isinstance(content, list):
            return len(content)
        return _text_len(content)
    return 0


def estimate_tokens(message: Message) -> int:
    """K-1: `ceil(chars / 4)` for one agent message (before or after convertToLlm)."""
    return -(-estimate_chars(message) // 4)


def sum_estimates(messages: Iterable[Message]) -> int:
    return sum(estimate_tokens(m) for m in messages)


class MessageEstimates:
    """`estimate_tokens` remembered per message object for one request: a dry run estimates the
    newest messages for its cut point and kept tokens, every summarized message for its
    `estimatedTokensSummarized` and every context message for `estimatedTokensBefore`, mostly the
    same messages (on a long uncompacted path, tens of thousands of them, three times over).
    Each message is held, so one made on the fly (a projection) cannot be freed and its address
    reused by another while the memo lives: make one per request, never keep it."""

    __slots__ = ("_memo",)

    def __init__(self) -> None:
        self._memo: dict[int, tuple[Message, int]] = {}

    def of(self, message: Message) -> int:
        key = id(message)
        hit = self._memo.get(key)
        if hit is not None and hit[0] is message:
            return hit[1]
        value = estimate_tokens(message)
        self._memo[key] = (message, value)
        return value

    def known(self, message: Message) -> int | None:
        """The estimate of `message` if made already, else None (nothing computed)."""
        hit = self._memo.get(id(message))
        return hit[1] if hit is not None and hit[0] is message else None

    def keep(self, message: Message, value: int) -> None:
        """Remember `value` as `estimate_tokens(message)`, made by a caller on its own way."""
        self._memo[id(message)] = (message, value)


def calculate_context_tokens(usage: Mapping[str, Any]) -> int | float:
    """K-3: `totalTokens` when non-zero, else input + output + cacheRead + cacheWrite."""
    total = _number(usage.get("totalTokens"))
    if total:
        return total
    return (
        _number(usage.get("input"))
        + _number(usage.get("output"))
        + _number(usage.get("cacheRead"))
        + _number(usage.get("cacheWrite"))
    )


def has_valid_usage(message: Message) -> bool:
    """K-5 [PI-NEW]: an assistant message that did not abort or fail and whose usage totals > 0."""
    if message.get("role") != "assistant" or message.get("stopReason") in ("aborted", "error"):
        return False
    usage = message.get("usage")
    return isinstance(usage, dict) and calculate_context_tokens(usage) > 0


def get_last_assistant_usage(entries: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """K-6: usage of the newest `message` entry with valid usage, scanning newest → oldest."""
    listed = list(entries)
    for index in range(len(listed) - 1, -1, -1):  # (mypyc cannot compile reversed() over this list)
        entry = listed[index]
        if entry.get("type") != "message":
            continue
        message = entry.get("message")
        if isinstance(message, dict) and has_valid_usage(message):
            return message["usage"]
    return None


@dataclass(frozen=True)
class ContextUsageEstimate:
    """K-7. `last_usage_index` indexes the message list given to `estimate_context_tokens`."""

    tokens: int | float
    usage_tokens: int | float
    trailing_tokens: int
    last_usage_index: int | None

    def to_json(self) -> dict[str, Any]:
        return {
            "tokens": self.tokens,
            "usageTokens": self.usage_tokens,
            "trailingTokens": self.trailing_tokens,
            "lastUsageIndex": self.last_usage_index,
        }


def estimate_context_tokens(messages: Sequence[Message]) -> ContextUsageEstimate:
    """K-7: the newest valid provider usage plus chars/4 estimates of the messages after it; with
    no valid usage anywhere, the estimates of all messages."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if has_valid_usage(message):
            usage_tokens = calculate_context_tokens(message["usage"])
            trailing = sum_estimates(messages[index + 1 :])
            return ContextUsageEstimate(usage_tokens + trailing, usage_tokens, trailing, index)
    estimated = sum_estimates(messages)
    return ContextUsageEstimate(estimated, 0, estimated, None)


def compaction_threshold(context_window: int, settings: CompactionSettings) -> int:
    """Context size above which compaction triggers: window − reserve."""
    return context_window - settings.reserve_tokens


def should_compact(context_tokens: int | float, context_window: int, settings: CompactionSettings) -> bool:
    """K-8: enabled and strictly above `window − reserveTokens`."""
    return settings.enabled and context_tokens > compaction_threshold(context_window, settings)
