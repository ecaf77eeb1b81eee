"""Ordered fallback over summarizers (M-25, simplified)."""

from __future__ import annotations

import asyncio

import pytest

from compactd.summarize.base import ContextOverflowError, SummarizationError, SummaryRequest, SummaryResult
from compactd.summarize.candidates import CandidateSummarizer
from compactd.summarize.extractive import ExtractiveSummarizer
from tests.support.fake_openai import FakeOpenAI, Reply
from tests.support.summarizers import make_openai, make_request


class Recording:
    """A real (non-network) summarizer that records whether it was asked."""

    def __init__(self, name: str, text: str = "recorded") -> None:
        self.name = name
        self.text = text
        self.calls = 0

    async def summarize(self, request: SummaryRequest, on_text=None) -> SummaryResult:
        self.calls += 1
        return SummaryResult(text=self.text, usage=None)


async def test_falls_back_to_the_next_candidate(fake: FakeOpenAI) -> None:
    fake.queue(Reply.error(404, "no such model"))
    second = Recording("second", "from second")
    chain = CandidateSummarizer([make_openai(fake, model="missing-model"), second])
    result = await asyncio.wait_for(chain.summarize(make_request()), 30)
    assert result.text == "from second"
    assert second.calls == 1 and len(fake.requests) == 1
    assert chain.failures == [
        ("openai:missing-model", f"Summarization failed: model 'missing-model' not found at {fake.url}")
    ]


async def test_overflow_moves_on_to_a_candidate_with_a_bigger_window(fake: FakeOpenAI) -> None:
    fake.queue(
        Reply.error(400, "This model's maximum context length is 4096 tokens"), Reply.stream("big window")
    )
    chain = CandidateSummarizer([make_openai(fake, model="small"), make_openai(fake, model="large")])
    result = await asyncio.wait_for(chain.summarize(make_request()), 30)
    assert result.text == "big window"
    assert [r.body["model"] for r in fake.requests] == ["small", "large"]


async def test_all_fail_raises_the_last_error(fake: FakeOpenAI) -> None:
    fake.queue(
        Reply.error(404, "gone"), Reply.error(400, "prompt is too long: 300000 tokens > 200000 maximum")
    )
    chain = CandidateSummarizer([make_openai(fake, model="a"), make_openai(fake, model="b")])
    with pytest.raises(ContextOverflowError) as info:
        await asyncio.wait_for(chain.summarize(make_request()), 30)
    assert "prompt is too long" in str(info.value)
    assert len(chain.failures) == 2


async def test_first_success_wins() -> None:
    first, second = Recording("first", "one"), Recording("second", "two")
    result = await CandidateSummarizer([first, second]).summarize(make_request())
    assert result.text == "one" and (first.calls, second.calls) == (1, 0)


async def test_cancellation_propagates_and_skips_remaining_candidates(fake: FakeOpenAI) -> None:
    fake.queue(Reply.stream(["partial"], hang_after_chunks=1))
    later = Recording("later")
    chain = CandidateSummarizer([make_openai(fake), later])
    started = asyncio.Event()
    task = asyncio.create_task(chain.summarize(make_request(), lambda _t: started.set()))
    await asyncio.wait_for(started.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert later.calls == 0
    assert await fake.wait_disconnected_async(10)


async def test_extractive_as_last_resort(fake: FakeOpenAI) -> None:
    fake.default = Reply.error(401, "bad key")
    msgs = [{"role": "user", "content": "Add caching to src/cache.py"}]
    chain = CandidateSummarizer([make_openai(fake), ExtractiveSummarizer()])
    result = await asyncio.wait_for(chain.summarize(make_request(messages=msgs)), 30)
    assert result.text.startswith("## Goal\nAdd caching to src/cache.py")


def test_needs_at_least_one_candidate() -> None:
    with pytest.raises(ValueError):
        CandidateSummarizer([])


async def test_non_summarization_exception_is_wrapped() -> None:
    class Broken:
        name = "broken"

        async def summarize(self, request, on_text=None):
            raise RuntimeError("kaput")

    with pytest.raises(SummarizationError, match="kaput"):
        await CandidateSummarizer([Broken()]).summarize(make_request())
