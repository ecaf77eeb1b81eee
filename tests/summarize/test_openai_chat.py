"""OpenAI-compatible backend against a real local HTTP server speaking SSE."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from compactd.summarize.base import (
    ContextOverflowError,
    RejectedResponseError,
    SummarizationError,
    SummaryKind,
    TransientError,
)
from compactd.summarize.openai_chat import (
    OpenAIChatConfig,
    OpenAIChatSummarizer,
    map_reasoning_effort,
    usage_from_openai,
)
from compactd.summarize.retry import RetryPolicy
from tests.support.fake_openai import FakeOpenAI, Reply
from tests.support.summarizers import TEST_KEY, TEST_KEY_ENV, make_openai, make_request

LABELS = {
    SummaryKind.HISTORY: "Summarization",
    SummaryKind.TURN_PREFIX: "Turn prefix summarization",
    SummaryKind.BRANCH: "Branch summarization",
}


async def run(coro, timeout: float = 30.0):
    """Guard against hangs (a broken retry/cancel path must fail, not stall the suite)."""
    return await asyncio.wait_for(coro, timeout)


# -- request shape ---------------------------------------------------------------------------
async def test_request_has_system_and_one_user_message_and_no_tools(fake: FakeOpenAI) -> None:
    req = make_request(
        system_prompt="SYS PROMPT", prompt="<conversation>\n[User]: hi\n</conversation>\n\nGo."
    )
    result = await run(make_openai(fake).summarize(req))
    assert result.text == "Summary text."
    body = fake.requests[0].body
    assert fake.requests[0].path == "/v1/chat/completions"
    assert body["messages"] == [
        {"role": "system", "content": "SYS PROMPT"},
        {"role": "user", "content": "<conversation>\n[User]: hi\n</conversation>\n\nGo."},
    ]
    assert body["model"] == "test-model"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert "tools" not in body and "tool_choice" not in body and "functions" not in body
    assert body["max_tokens"] == 13107
    assert "reasoning_effort" not in body and "max_completion_tokens" not in body


async def test_api_key_comes_from_the_named_env_var(fake: FakeOpenAI) -> None:
    summarizer = make_openai(fake, env={TEST_KEY_ENV: TEST_KEY, "OPENAI_API_KEY": "sk-other"})
    await run(summarizer.summarize(make_request()))
    assert fake.requests[0].headers["authorization"] == f"Bearer {TEST_KEY}"
    assert TEST_KEY not in repr(summarizer)
    assert TEST_KEY_ENV in repr(summarizer)


async def test_local_server_without_key_gets_a_placeholder(fake: FakeOpenAI) -> None:
    await run(make_openai(fake, env={}).summarize(make_request()))
    assert fake.requests[0].headers["authorization"] == "Bearer compactd-no-key"


async def test_missing_key_for_public_openai_names_the_variable() -> None:
    summarizer = OpenAIChatSummarizer(OpenAIChatConfig(model="gpt-4o", api_key_env="MY_KEY_VAR"), env={})
    with pytest.raises(SummarizationError) as info:
        await run(summarizer.summarize(make_request()))
    assert "MY_KEY_VAR" in str(info.value)


@pytest.mark.parametrize(
    ("cap", "requested", "sent"),
    [(0, 13107, 13107), (4096, 13107, 4096), (128000, 13107, 13107), (128000, 400000, 128000)],
)
async def test_max_tokens_capped_by_model_max_output(
    fake: FakeOpenAI, cap: int, requested: int, sent: int
) -> None:
    await run(make_openai(fake, max_output_tokens=cap).summarize(make_request(max_tokens=requested)))
    assert fake.requests[0].body["max_tokens"] == sent


async def test_reasoning_model_gets_effort_and_max_completion_tokens(fake: FakeOpenAI) -> None:
    summarizer = make_openai(fake, reasoning=True, max_output_tokens=5000)
    await run(summarizer.summarize(make_request(reasoning="medium")))
    await run(summarizer.summarize(make_request(reasoning=None)))
    await run(summarizer.summarize(make_request(reasoning="off")))
    first, second, third = (r.body for r in fake.requests)
    assert first["reasoning_effort"] == "medium"
    assert first["max_completion_tokens"] == 5000 and "max_tokens" not in first
    assert "reasoning_effort" not in second and second["max_completion_tokens"] == 5000
    assert "reasoning_effort" not in third


async def test_non_reasoning_model_never_gets_effort(fake: FakeOpenAI) -> None:
    await run(make_openai(fake, reasoning=False).summarize(make_request(reasoning="high")))
    assert "reasoning_effort" not in fake.requests[0].body


async def test_effort_clamped_to_levels_the_server_knows(fake: FakeOpenAI) -> None:
    summarizer = make_openai(fake, reasoning=True, reasoning_efforts=("low", "medium", "high"))
    await run(summarizer.summarize(make_request(reasoning="xhigh")))
    await run(summarizer.summarize(make_request(reasoning="minimal")))
    assert [r.body["reasoning_effort"] for r in fake.requests] == ["high", "low"]


def test_reasoning_effort_mapping() -> None:
    assert [map_reasoning_effort(x) for x in ("minimal", "low", "medium", "high", "xhigh")] == [
        "minimal",
        "low",
        "medium",
        "high",
        "xhigh",
    ]
    assert map_reasoning_effort(None) is None and map_reasoning_effort("off") is None
    assert map_reasoning_effort("medium", ("low", "high")) == "high"  # ties go to the stronger level
    assert map_reasoning_effort("xhigh", ("medium",)) == "medium"


async def test_each_request_carries_a_fresh_isolated_id(fake: FakeOpenAI) -> None:
    summarizer = make_openai(fake)
    await run(summarizer.summarize(make_request(kind=SummaryKind.HISTORY)))
    await run(summarizer.summarize(make_request(kind=SummaryKind.TURN_PREFIX)))
    ids = [r.headers["x-compactd-request-id"] for r in fake.requests]
    assert ids[0] != ids[1]
    for rec, rid in zip(fake.requests, ids, strict=True):
        assert str(uuid.UUID(rid)) == rid
        assert rec.body["user"] == f"compactd-{rid}"
        assert rec.body["prompt_cache_key"] == f"compactd-{rid}"
    assert [r.headers["x-compactd-request-kind"] for r in fake.requests] == ["history", "turn_prefix"]


async def test_isolation_fields_can_be_turned_off_but_header_stays(fake: FakeOpenAI) -> None:
    await run(make_openai(fake, isolation_fields=False).summarize(make_request()))
    rec = fake.requests[0]
    assert "user" not in rec.body and "prompt_cache_key" not in rec.body
    assert uuid.UUID(rec.headers["x-compactd-request-id"])


# -- streaming and usage ---------------------------------------------------------------------
async def test_streamed_deltas_reach_on_text_and_usage_is_converted(fake: FakeOpenAI) -> None:
    fake.queue(
        Reply.stream(
            ["## Goal\n", "Fix `src/a.py`", " now."],
            reasoning_chunks=["thinking..."],
            usage={
                "prompt_tokens": 1200,
                "completion_tokens": 300,
                "total_tokens": 1500,
                "prompt_tokens_details": {"cached_tokens": 200},
            },
        )
    )
    deltas: list[str] = []
    result = await run(make_openai(fake).summarize(make_request(), deltas.append))
    assert deltas == ["## Goal\n", "Fix `src/a.py`", " now."]
    assert result.text == "## Goal\nFix `src/a.py` now."
    assert result.usage == {
        "input": 1000,
        "output": 300,
        "cacheRead": 200,
        "cacheWrite": 0,
        "totalTokens": 1500,
        "cost": {"input": 0.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0, "total": 0.0},
    }


async def test_cost_computed_from_configured_rates(fake: FakeOpenAI) -> None:
    rates = {"input": 2.0, "output": 8.0, "cacheRead": 0.5, "cacheWrite": 0.0}
    result = await run(make_openai(fake, cost_per_million=rates).summarize(make_request()))
    cost = result.usage["cost"]
    assert cost["input"] == pytest.approx(1000 * 2.0 / 1e6)
    assert cost["output"] == pytest.approx(300 * 8.0 / 1e6)
    assert cost["cacheRead"] == pytest.approx(200 * 0.5 / 1e6)
    assert cost["total"] == pytest.approx(cost["input"] + cost["output"] + cost["cacheRead"])


def test_usage_conversion_edge_cases() -> None:
    assert usage_from_openai(None) is None
    u = usage_from_openai({"prompt_tokens": 10, "completion_tokens": 5})
    assert (u["input"], u["output"], u["cacheRead"], u["totalTokens"]) == (10, 5, 0, 15)


async def test_missing_usage_chunk_gives_an_estimate(fake: FakeOpenAI) -> None:
    fake.queue(Reply.stream("text", usage=None))
    result = await run(make_openai(fake).summarize(make_request()))
    assert result.text == "text" and result.model_called
    assert result.usage is not None and result.usage["estimated"] is True


# -- rejected responses (S-14 / B-13) --------------------------------------------------------
@pytest.mark.parametrize("kind", list(SummaryKind))
async def test_length_stop_is_rejected(fake: FakeOpenAI, kind: SummaryKind) -> None:
    fake.queue(Reply.stream("partial summ", finish_reason="length"))
    with pytest.raises(RejectedResponseError) as info:
        await run(make_openai(fake).summarize(make_request(kind=kind)))
    assert (
        str(info.value)
        == f"{LABELS[kind]} failed: generation hit the token cap and the summary is incomplete"
    )
    assert len(fake.requests) == 1


@pytest.mark.parametrize("kind", list(SummaryKind))
async def test_tool_call_is_rejected(fake: FakeOpenAI, kind: SummaryKind) -> None:
    call = {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": '{"path":"a"}'}}
    fake.queue(Reply.stream([], tool_calls=[call], finish_reason="tool_calls"))
    with pytest.raises(RejectedResponseError) as info:
        await run(make_openai(fake).summarize(make_request(kind=kind)))
    assert str(info.value) == f"{LABELS[kind]} attempted to call a tool"


async def test_tool_call_delta_rejected_even_with_stop(fake: FakeOpenAI) -> None:
    call = {"id": "c", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
    fake.queue(Reply.stream("## Goal\nx", tool_calls=[call], finish_reason="stop"))
    with pytest.raises(RejectedResponseError, match="^Summarization attempted to call a tool$"):
        await run(make_openai(fake).summarize(make_request()))


@pytest.mark.parametrize("kind", list(SummaryKind))
async def test_empty_text_is_rejected(fake: FakeOpenAI, kind: SummaryKind) -> None:
    fake.queue(Reply.stream(["", "  \n"]))
    with pytest.raises(RejectedResponseError) as info:
        await run(make_openai(fake).summarize(make_request(kind=kind)))
    assert str(info.value) == f"{LABELS[kind]} failed: response contained no summary text"


# -- retries -----------------------------------------------------------------------------------
async def test_429_retried_honouring_retry_after_ms(fake: FakeOpenAI) -> None:
    # Base delay of 10 minutes: only an honoured Retry-After lets this finish (wait_for guards).
    slow = RetryPolicy(max_retries=3, base_delay_ms=600_000, max_delay_ms=60_000)
    fake.queue(
        Reply.error(429, "Rate limit reached", type="rate_limit_error", headers={"retry-after-ms": "20"}),
        Reply.stream("ok after 429"),
    )
    result = await run(make_openai(fake, retry=slow).summarize(make_request()), timeout=30)
    assert result.text == "ok after 429"
    assert len(fake.requests) == 2


async def test_retry_after_seconds_header(fake: FakeOpenAI) -> None:
    slow = RetryPolicy(max_retries=2, base_delay_ms=600_000, max_delay_ms=60_000)
    fake.queue(
        Reply.error(503, "Service Unavailable", type="server_error", headers={"retry-after": "0"}),
        Reply.stream("ok"),
    )
    result = await run(make_openai(fake, retry=slow).summarize(make_request()), timeout=30)
    assert result.text == "ok" and len(fake.requests) == 2


async def test_retry_after_above_cap_fails_immediately(fake: FakeOpenAI) -> None:
    capped = RetryPolicy(max_retries=3, base_delay_ms=1, max_delay_ms=1000)
    fake.queue(Reply.error(429, "Rate limit reached", headers={"retry-after": "120"}))
    with pytest.raises(SummarizationError) as info:
        await run(make_openai(fake, retry=capped).summarize(make_request()))
    assert not isinstance(info.value, TransientError)
    assert "120s" in str(info.value) and "retry.maxDelayMs" in str(info.value)
    assert len(fake.requests) == 1


@pytest.mark.parametrize("status", [500, 502, 503, 504, 408])
async def test_server_errors_retried(fake: FakeOpenAI, status: int) -> None:
    fake.queue(Reply.error(status, "upstream trouble", type="server_error"), Reply.stream("recovered"))
    result = await run(make_openai(fake).summarize(make_request()))
    assert result.text == "recovered" and len(fake.requests) == 2


async def test_dropped_stream_retried_and_new_attempt_streams_again(fake: FakeOpenAI) -> None:
    fake.queue(Reply.stream(["first ", "attempt"], drop_after_chunks=1), Reply.stream(["second"]))
    deltas: list[str] = []
    result = await run(make_openai(fake).summarize(make_request(), deltas.append))
    assert result.text == "second"
    assert deltas == ["first ", "second"]
    assert len(fake.requests) == 2


async def test_stream_without_finish_reason_is_incomplete_and_retried(fake: FakeOpenAI) -> None:
    fake.queue(Reply.stream("cut short", finish_reason=None), Reply.stream("complete"))
    result = await run(make_openai(fake).summarize(make_request()))
    assert result.text == "complete" and len(fake.requests) == 2


async def test_in_stream_overloaded_error_retried(fake: FakeOpenAI) -> None:
    fake.queue(
        Reply.stream(
            "x", finish_reason=None, stream_error={"message": "Overloaded", "type": "overloaded_error"}
        ),
        Reply.stream("fine"),
    )
    result = await run(make_openai(fake).summarize(make_request()))
    assert result.text == "fine" and len(fake.requests) == 2


async def test_read_timeout_retried(fake: FakeOpenAI) -> None:
    fake.queue(Reply.stream(["a", "b"], hang_after_chunks=1), Reply.stream("after timeout"))
    result = await run(make_openai(fake, timeout_seconds=0.5).summarize(make_request()))
    assert result.text == "after timeout" and len(fake.requests) == 2


async def test_gives_up_after_max_retries(fake: FakeOpenAI) -> None:
    fake.default = Reply.error(500, "boom", type="server_error")
    with pytest.raises(TransientError) as info:
        await run(make_openai(fake).summarize(make_request()))
    assert len(fake.requests) == 4  # 1 + maxRetries (3)
    assert "gave up after 4 attempts" in str(info.value)
    assert str(info.value).startswith("Summarization failed: 500 boom")


async def test_retry_disabled_means_one_attempt(fake: FakeOpenAI) -> None:
    fake.default = Reply.error(503, "down", type="server_error")
    with pytest.raises(TransientError):
        await run(make_openai(fake, retry=RetryPolicy(enabled=False)).summarize(make_request()))
    assert len(fake.requests) == 1


# -- non-retryable errors ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "reply",
    [
        Reply.error(
            400,
            "This model's maximum context length is 8192 tokens. However, your messages resulted in "
            "9000 tokens. Please reduce the length of the messages.",
            code="context_length_exceeded",
        ),
        Reply.error(400, "prompt is too long: 213462 tokens > 200000 maximum"),
        Reply.error(413, "request_too_large"),
        Reply.no_body(400),
    ],
    ids=["openai", "anthropic", "413", "cerebras-no-body"],
)
async def test_overflow_not_retried(fake: FakeOpenAI, reply: Reply) -> None:
    fake.queue(reply)
    with pytest.raises(ContextOverflowError) as info:
        await run(make_openai(fake).summarize(make_request()))
    assert str(info.value).startswith("Summarization failed: ")
    assert len(fake.requests) == 1


async def test_in_stream_overflow_error_not_retried(fake: FakeOpenAI) -> None:
    fake.queue(
        Reply.stream(
            [],
            finish_reason=None,
            stream_error={"message": "Input is too long for requested model.", "type": "invalid"},
        )
    )
    with pytest.raises(ContextOverflowError):
        await run(make_openai(fake).summarize(make_request()))
    assert len(fake.requests) == 1


async def test_401_not_retried_and_names_the_env_var_not_the_key(fake: FakeOpenAI) -> None:
    fake.queue(Reply.error(401, f"Incorrect API key provided: {TEST_KEY}", code="invalid_api_key"))
    with pytest.raises(SummarizationError) as info:
        await run(make_openai(fake).summarize(make_request(kind=SummaryKind.BRANCH)))
    text = str(info.value)
    assert not isinstance(info.value, TransientError)
    assert text == (
        f"Branch summarization failed: authentication failed at {fake.url} "
        f"(check the API key environment variable {TEST_KEY_ENV})"
    )
    assert len(fake.requests) == 1


async def test_404_names_the_model(fake: FakeOpenAI) -> None:
    fake.queue(Reply.error(404, "The model `test-model` does not exist", code="model_not_found"))
    with pytest.raises(SummarizationError) as info:
        await run(make_openai(fake).summarize(make_request()))
    assert str(info.value) == f"Summarization failed: model 'test-model' not found at {fake.url}"
    assert len(fake.requests) == 1


async def test_key_echoed_by_server_is_scrubbed(fake: FakeOpenAI) -> None:
    fake.queue(Reply.error(422, f"bad request from key {TEST_KEY}"))
    with pytest.raises(SummarizationError) as info:
        await run(make_openai(fake).summarize(make_request()))
    assert TEST_KEY not in str(info.value) and "***" in str(info.value)


async def test_quota_exhaustion_not_retried(fake: FakeOpenAI) -> None:
    fake.queue(
        Reply.error(
            429, "You exceeded your current quota", type="insufficient_quota", code="insufficient_quota"
        )
    )
    with pytest.raises(SummarizationError) as info:
        await run(make_openai(fake).summarize(make_request()))
    assert not isinstance(info.value, TransientError)
    assert len(fake.requests) == 1


async def test_malformed_stream_is_an_error_not_a_retry(fake: FakeOpenAI) -> None:
    fake.queue(Reply.stream(["a", "b"], malformed_after_chunks=1))
    with pytest.raises(SummarizationError, match="malformed streaming data"):
        await run(make_openai(fake).summarize(make_request()))
    assert len(fake.requests) == 1


# -- cancellation ------------------------------------------------------------------------------
async def test_cancel_mid_stream_closes_the_connection(fake: FakeOpenAI) -> None:
    fake.queue(Reply.stream(["first chunk", "never sent"], hang_after_chunks=1))
    got_first = asyncio.Event()
    task = asyncio.create_task(make_openai(fake).summarize(make_request(), lambda _t: got_first.set()))
    await asyncio.wait_for(got_first.wait(), 10)
    assert not fake.disconnected.is_set()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await fake.wait_disconnected_async(10)
    assert fake.completed == 0
    assert len(fake.requests) == 1  # cancellation is never retried


async def test_cancel_before_headers_closes_the_connection(fake: FakeOpenAI) -> None:
    fake.queue(Reply.stream("late", hang_before_headers=3600))
    task = asyncio.create_task(make_openai(fake).summarize(make_request()))
    for _ in range(1000):
        if fake.requests:
            break
        await asyncio.sleep(0.01)
    assert fake.requests
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await fake.wait_disconnected_async(10)


async def test_cancel_during_backoff_stops_retrying(fake: FakeOpenAI) -> None:
    slow = RetryPolicy(max_retries=3, base_delay_ms=600_000, max_delay_ms=0)
    fake.default = Reply.error(500, "boom", type="server_error")
    task = asyncio.create_task(make_openai(fake, retry=slow).summarize(make_request()))
    for _ in range(1000):
        if fake.requests:
            break
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 10)
    assert len(fake.requests) == 1
