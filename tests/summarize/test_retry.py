"""Retry policy and server delay hints (M-26, M-27, M-39)."""

from __future__ import annotations

import email.utils

import pytest

from compactd.summarize.base import SummarizationError, TransientError
from compactd.summarize.retry import (
    RetryPolicy,
    retry_after_ms_from_headers,
    retry_after_ms_from_text,
    run_with_retries,
)

NOW = 1_800_000_000.0


def test_header_hints() -> None:
    assert retry_after_ms_from_headers({"retry-after-ms": "250"}) == 250
    assert retry_after_ms_from_headers({"Retry-After": "3"}) == 3000
    assert retry_after_ms_from_headers({"retry-after-ms": "10", "retry-after": "9"}) == 10
    date = email.utils.formatdate(NOW + 5, usegmt=True)
    assert retry_after_ms_from_headers({"retry-after": date}, now=NOW) == pytest.approx(5000)
    assert retry_after_ms_from_headers({"retry-after": "-4"}) == 0
    assert retry_after_ms_from_headers({"retry-after": "soon"}) is None
    assert retry_after_ms_from_headers({}) is None


def test_text_hints_first_match_wins() -> None:
    assert retry_after_ms_from_text("429 rate limited, retry-after-ms=1500") == 1500
    assert retry_after_ms_from_text("please wait; retry-after: 2 seconds") == 2000
    assert retry_after_ms_from_text("x-ratelimit-reset-ms: 700") == 700
    assert retry_after_ms_from_text(
        f"x-ratelimit-reset-ms={int((NOW + 3) * 1000)}", now=NOW
    ) == pytest.approx(3000)
    assert retry_after_ms_from_text("x-ratelimit-reset: 4") == 4000
    assert retry_after_ms_from_text(f"x-ratelimit-reset={int(NOW + 6)}", now=NOW) == pytest.approx(6000)
    assert retry_after_ms_from_text(f"x-ratelimit-reset={int(NOW - 6)}", now=NOW) == 0
    assert retry_after_ms_from_text("nothing here") is None


async def test_exponential_backoff_then_success() -> None:
    delays: list[float] = []
    attempts = 0

    async def flaky() -> str:
        nonlocal attempts
        attempts += 1
        if attempts < 4:
            raise TransientError("busy")
        return "ok"

    policy = RetryPolicy(max_retries=3, base_delay_ms=1, max_delay_ms=0)
    assert await run_with_retries(flaky, policy, on_retry=lambda n, d, e: delays.append(d)) == "ok"
    assert delays == [1, 2, 4]


async def test_server_delay_replaces_backoff_and_cap_fails_fast() -> None:
    delays: list[float] = []
    calls = 0

    async def hinted() -> str:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise TransientError("slow down", retry_after_ms=3)
        return "done"

    policy = RetryPolicy(max_retries=3, base_delay_ms=10_000_000, max_delay_ms=100)
    assert await run_with_retries(hinted, policy, on_retry=lambda n, d, e: delays.append(d)) == "done"
    assert delays == [3]

    async def too_long() -> str:
        raise TransientError("slow down", retry_after_ms=500)

    with pytest.raises(SummarizationError) as info:
        await run_with_retries(too_long, policy)
    assert not isinstance(info.value, TransientError)
    assert "retry.maxDelayMs = 100ms" in str(info.value)


async def test_non_transient_errors_are_not_retried() -> None:
    calls = 0

    async def fatal() -> str:
        nonlocal calls
        calls += 1
        raise SummarizationError("bad request")

    with pytest.raises(SummarizationError):
        await run_with_retries(fatal, RetryPolicy(base_delay_ms=1))
    assert calls == 1


async def test_exhausted_retries_say_how_many_attempts() -> None:
    async def always() -> str:
        raise TransientError("503 down")

    with pytest.raises(TransientError, match=r"^503 down \(gave up after 3 attempts\)$"):
        await run_with_retries(always, RetryPolicy(max_retries=2, base_delay_ms=1))
    with pytest.raises(TransientError, match=r"^503 down$"):
        await run_with_retries(always, RetryPolicy(enabled=False))
