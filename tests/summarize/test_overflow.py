"""Context-overflow detection, M-22 / M-23 (compaction/overflow.py)."""

from __future__ import annotations

import pytest

from compactd.compaction.overflow import is_context_overflow, is_overflow_error_text

OVERFLOW_TEXTS = [
    "prompt is too long: 213462 tokens > 200000 maximum",  # Anthropic
    '413 {"error":{"type":"request_too_large","message":"Request exceeds the maximum size"}}',
    "Input is too long for requested model.",  # Bedrock
    "The input token count (1196265) exceeds the maximum number of tokens allowed (1048575).",  # Gemini
    "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",
    "Your input exceeds the context window of this model.",  # OpenAI responses
    "This endpoint's maximum context length is 32768 tokens. Please reduce the length of the messages.",
    "Please reduce the length of the messages or completion.",  # Groq
    "Prompt contains 140000 tokens and 0 draft tokens, "
    "too large for model with 131072 maximum context length",
    "This model's maximum prompt length is 131072 but the request contains 140000 tokens.",  # xAI
    "the request exceeds the available context size, try increasing it",  # llama.cpp
    "Trying to keep the first 9000 tokens when context the overflows. However, the model is loaded with "
    "context length of only 8192 tokens, which is not enough. greater than the context length",  # LM Studio
    "Requested token count exceeds the model's maximum context length of 8192 tokens",
    "input (9000 tokens) is longer than the model's context length (8192 tokens)",
    "Request exceeds the limit of 128000 tokens",
    "context window exceeds limit",  # MiniMax
    "exceeded model token limit: 32000",  # Kimi
    "model_context_window_exceeded",
    "prompt too long; exceeded max context length by 120 tokens",  # Ollama
    "context_length_exceeded",
    "context length exceeded",
    "too many tokens in request",
    "Token limit exceeded for this request",
    "400 status code (no body)",  # Cerebras
    "413 (no body)",
    "Input exceeds maximum allowed input length of 100,000 tokens",
    "You requested 5000 output tokens and your prompt contains at least 130000 input tokens, for a total of "
    "at least 135000 tokens",
]

NOT_OVERFLOW_TEXTS = [
    "Throttling error: Too many tokens, please wait before trying again.",  # Bedrock throttling
    "Service unavailable: context window exceeds limit while the service is overloaded",
    "Rate limit reached for gpt-4o: too many tokens per minute",
    "429 Too Many Requests: token limit exceeded for this minute",
    "Internal server error",
    "Incorrect API key provided",
    "overloaded_error",
    "401 status code (no body)",
    "The model `gpt-9` does not exist",
    "",
]


@pytest.mark.parametrize("text", OVERFLOW_TEXTS)
def test_overflow_texts(text: str) -> None:
    assert is_overflow_error_text(text)
    assert is_context_overflow({"role": "assistant", "stopReason": "error", "errorMessage": text})


@pytest.mark.parametrize("text", NOT_OVERFLOW_TEXTS)
def test_non_overflow_texts(text: str) -> None:
    assert not is_overflow_error_text(text)
    assert not is_context_overflow({"role": "assistant", "stopReason": "error", "errorMessage": text}, 100000)


def test_case_insensitive() -> None:
    assert is_overflow_error_text("PROMPT IS TOO LONG")
    assert not is_overflow_error_text(None)


def usage(inp: int, cache_read: int = 0, output: int = 10) -> dict:
    return {
        "input": inp,
        "output": output,
        "cacheRead": cache_read,
        "cacheWrite": 0,
        "totalTokens": inp + output,
    }


def test_silent_overflow_on_stop() -> None:
    msg = {"role": "assistant", "stopReason": "stop", "usage": usage(90000, 10001)}
    assert is_context_overflow(msg, 100000)
    assert not is_context_overflow({**msg, "usage": usage(90000, 10000)}, 100000)  # equal is not over
    assert not is_context_overflow(msg)  # needs a window
    assert not is_context_overflow(msg, 0)


def test_length_with_no_output_near_the_window() -> None:
    msg = {"role": "assistant", "stopReason": "length", "usage": usage(98000, 1000, output=0)}
    assert is_context_overflow(msg, 100000)  # 99000 >= 0.99 * 100000
    assert not is_context_overflow({**msg, "usage": usage(98000, 999, output=0)}, 100000)
    assert not is_context_overflow({**msg, "usage": usage(99500, 0, output=5)}, 100000)
    assert not is_context_overflow(msg)


def test_other_stop_reasons_and_missing_fields() -> None:
    assert not is_context_overflow({"stopReason": "aborted", "usage": usage(10**6)}, 1000)
    assert not is_context_overflow({"stopReason": "toolUse", "usage": usage(10**6)}, 1000)
    assert not is_context_overflow({"stopReason": "error"}, 1000)
    assert not is_context_overflow({"stopReason": "stop"}, 1000)
    # An error message that is not an overflow is not rescued by usage.
    assert not is_context_overflow(
        {"stopReason": "error", "errorMessage": "boom", "usage": usage(10**6)}, 1000
    )
