"""Context-overflow detection (spec §14.4, M-22/M-23), Pi's rules ([PI-NEW]).

Pure functions: they look at an error text or an assistant message dict and decide whether the
provider rejected (or silently truncated) the request because the context was too large.
Overflow errors are never retried as transient failures; they trigger compaction instead.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = [
    "OVERFLOW_PATTERNS",
    "NON_OVERFLOW_PATTERNS",
    "is_overflow_error_text",
    "is_context_overflow",
    "context_window_from_error_text",
]


def _compile(*patterns: str) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p, re.IGNORECASE) for p in patterns)


# Messages that mention limits but are throttling, not context size (checked first).
NON_OVERFLOW_PATTERNS: tuple[re.Pattern[str], ...] = _compile(
    r"^(Throttling error|Service unavailable):",
    r"rate limit",
    r"too many requests",
)

# Provider phrasings of "the prompt does not fit" (Anthropic, OpenAI, Google, Bedrock, Mistral,
# xAI, Groq, OpenRouter, llama.cpp, LM Studio, vLLM, Ollama, Cerebras, ...).
OVERFLOW_PATTERNS: tuple[re.Pattern[str], ...] = _compile(
    r"prompt is too long",
    r"request_too_large",
    r"input is too long for requested model",
    r"exceeds the context window",
    r"exceeds (?:the )?(?:model'?s )?maximum context length(?: of [\d,]+ tokens?|\s*\([\d,]+\))",
    r"input token count.*exceeds the maximum",
    r"maximum prompt length is \d+",
    r"reduce the length of the messages",
    r"maximum context length is \d+ tokens",
    r"exceeds (?:the )?maximum allowed input length of [\d,]+ tokens?",
    r"input \(\d+ tokens\) is longer than the model'?s context length \(\d+ tokens\)",
    r"exceeds the limit of \d+",
    r"exceeds the available context size",
    r"greater than the context length",
    r"context window exceeds limit",
    r"exceeded model token limit",
    r"too large for model with \d+ maximum context length",
    r"model_context_window_exceeded",
    r"prompt too long; exceeded (?:max )?context length",
    r"this model.?s maximum context length is \d+",
    r"requested \d+ output tokens",
    r"prompt contains.*\d+ input tokens",
    r"for a total of.*\d+ tokens",
    r"context[_ ]length[_ ]exceeded",
    r"too many tokens",
    r"token limit exceeded",
    r"^4(?:00|13)\s*(?:status code)?\s*\(no body\)",
    # compactd addition: llama-cpp-python's own text when it reaches the client unformatted.
    r"requested tokens \(\d+\) exceed context window",
)

# Where servers name the window in their overflow text (llama.cpp, llama-cpp-python, vLLM, OpenAI).
_WINDOW_IN_TEXT: tuple[re.Pattern[str], ...] = _compile(
    r"available context size \((\d+) tokens?\)",
    r"exceeds? context window of (\d+)",
    r"maximum context length is (\d+) tokens",
    r"\bn_ctx\W+(\d+)",
)


def is_overflow_error_text(text: str | None) -> bool:
    """True when an error message reports a context overflow (M-22, case 1 text test)."""
    if not text:
        return False
    if any(p.search(text) for p in NON_OVERFLOW_PATTERNS):
        return False
    return any(p.search(text) for p in OVERFLOW_PATTERNS)


def context_window_from_error_text(text: str | None) -> int | None:
    """The context window an overflow error names ("... context size (4096 tokens)"), if any."""
    for pattern in _WINDOW_IN_TEXT:
        m = pattern.search(text or "")
        if m and int(m.group(1)) > 0:
            return int(m.group(1))
    return None


def _num(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def is_context_overflow(message: dict[str, Any], context_window: int | None = None) -> bool:
    """Pi's `isContextOverflow(message, contextWindow?)` for an assistant message dict.

    Case 1: stopReason "error" with an overflow-looking errorMessage.
    Case 2 (silent overflow): the provider answered ("stop") although input + cacheRead exceeded
    the window. Case 3: stopped on "length" with zero output while the input filled >= 99% of the
    window. Cases 2 and 3 need a positive context window.
    """
    stop_reason = message.get("stopReason")
    if stop_reason == "error":
        error_message = message.get("errorMessage")
        if isinstance(error_message, str) and error_message and is_overflow_error_text(error_message):
            return True
    if not context_window or context_window <= 0:
        return False
    usage = message.get("usage")
    if not isinstance(usage, dict):
        return False
    prompt_tokens = _num(usage.get("input")) + _num(usage.get("cacheRead"))
    if stop_reason == "stop":
        return prompt_tokens > context_window
    if stop_reason == "length":
        return _num(usage.get("output")) == 0 and prompt_tokens >= 0.99 * context_window
    return False
