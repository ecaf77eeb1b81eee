"""Interface helpers: labels, exact rejection messages, usage summing."""

from __future__ import annotations

from compactd.summarize.base import (
    RejectedResponseError,
    SummarizationError,
    Summarizer,
    SummaryKind,
    TransientError,
    empty_text_message,
    token_cap_message,
    tool_call_message,
    usage_add,
)
from compactd.summarize.candidates import CandidateSummarizer
from compactd.summarize.extractive import ExtractiveSummarizer
from compactd.summarize.openai_chat import OpenAIChatConfig, OpenAIChatSummarizer
from compactd.summarize.remote import RemoteSummarizer


def test_exact_messages_per_kind() -> None:
    assert token_cap_message(SummaryKind.HISTORY) == (
        "Summarization failed: generation hit the token cap and the summary is incomplete"
    )
    assert token_cap_message(SummaryKind.BRANCH) == (
        "Branch summarization failed: generation hit the token cap and the summary is incomplete"
    )
    assert tool_call_message(SummaryKind.HISTORY) == "Summarization attempted to call a tool"
    assert tool_call_message(SummaryKind.TURN_PREFIX) == "Turn prefix summarization attempted to call a tool"
    assert empty_text_message(SummaryKind.TURN_PREFIX) == (
        "Turn prefix summarization failed: response contained no summary text"
    )


def test_error_hierarchy() -> None:
    assert issubclass(RejectedResponseError, SummarizationError)
    assert TransientError("x").retryable and not SummarizationError("x").retryable
    assert TransientError("x", retry_after_ms=50).retry_after_ms == 50


def test_every_backend_satisfies_the_protocol() -> None:
    backends = [
        ExtractiveSummarizer(),
        RemoteSummarizer("http://127.0.0.1:1/x"),
        OpenAIChatSummarizer(OpenAIChatConfig(model="m"), env={}),
    ]
    backends.append(CandidateSummarizer(list(backends)))
    for backend in backends:
        assert isinstance(backend, Summarizer) and backend.name


def usage(i: int, o: int, cr: int, cw: int, cost: float) -> dict:
    return {
        "input": i,
        "output": o,
        "cacheRead": cr,
        "cacheWrite": cw,
        "totalTokens": i + o + cr + cw,
        "cost": {"input": cost, "output": cost * 2, "cacheRead": 0.0, "cacheWrite": 0.0, "total": cost * 3},
    }


def test_usage_add_sums_every_field_including_cost() -> None:
    total = usage_add(usage(100, 50, 10, 5, 0.01), usage(200, 25, 0, 1, 0.02))
    assert total["input"] == 300 and total["output"] == 75 and total["cacheRead"] == 10
    assert total["cacheWrite"] == 6 and total["totalTokens"] == 391
    assert abs(total["cost"]["input"] - 0.03) < 1e-12
    assert abs(total["cost"]["total"] - 0.09) < 1e-12


def test_usage_add_with_missing_sides_and_extra_counters() -> None:
    assert usage_add(None, None) is None
    one = usage(1, 2, 3, 4, 0.5)
    assert usage_add(one, None) == usage_add(None, one) == one
    extra = usage_add({**one, "reasoning": 7}, {**one, "reasoning": 1})
    assert extra["reasoning"] == 8
    partial = usage_add({"input": 5}, {"output": 3, "cost": {"total": 1.5}})
    assert partial["input"] == 5 and partial["output"] == 3 and partial["cost"]["total"] == 1.5
