"""Builders shared by summarizer tests (and reusable by engine/daemon tests)."""

from __future__ import annotations

from typing import Any

from compactd.summarize.base import SummaryKind, SummaryRequest
from compactd.summarize.openai_chat import OpenAIChatConfig, OpenAIChatSummarizer
from compactd.summarize.retry import RetryPolicy

from .fake_openai import FakeOpenAI

__all__ = ["FAST_RETRY", "TEST_KEY", "TEST_KEY_ENV", "make_request", "make_openai"]

# Tiny delays so retry tests run fast; the 5 s cap keeps server-requested delays testable.
FAST_RETRY = RetryPolicy(enabled=True, max_retries=3, base_delay_ms=1, max_delay_ms=5000)
TEST_KEY = "sk-test-SECRET-0123456789"
TEST_KEY_ENV = "TEST_OPENAI_KEY"


def make_request(kind: SummaryKind = SummaryKind.HISTORY, **kw: Any) -> SummaryRequest:
    base: dict[str, Any] = {
        "kind": kind,
        "system_prompt": "You summarize coding sessions.",
        "prompt": "<conversation>\n[User]: fix the bug\n</conversation>\n\nSummarize.",
        "max_tokens": 13107,
    }
    base.update(kw)
    return SummaryRequest(**base)


def make_openai(fake: FakeOpenAI, env: dict[str, str] | None = None, **kw: Any) -> OpenAIChatSummarizer:
    """An OpenAI-compatible summarizer talking to `fake`, key in TEST_OPENAI_KEY, fast retries."""
    config: dict[str, Any] = {
        "model": "test-model",
        "base_url": fake.url,
        "api_key_env": TEST_KEY_ENV,
        "retry": FAST_RETRY,
        "timeout_seconds": 10.0,
    }
    config.update(kw)
    return OpenAIChatSummarizer(
        OpenAIChatConfig(**config), env if env is not None else {TEST_KEY_ENV: TEST_KEY}
    )
