"""Remote summary endpoint (S-16) against a real local HTTP server."""

from __future__ import annotations

import asyncio

import pytest

from compactd.summarize.base import SummarizationError, SummaryKind, TransientError
from compactd.summarize.extractive import ExtractiveSummarizer
from compactd.summarize.remote import RemoteHistorySummarizer, RemoteSummarizer
from compactd.summarize.retry import RetryPolicy
from tests.support.fake_openai import FakeOpenAI, Reply
from tests.support.summarizers import FAST_RETRY, make_request


def remote(fake: FakeOpenAI, **kw) -> RemoteSummarizer:
    kw.setdefault("retry", FAST_RETRY)
    return RemoteSummarizer(f"{fake.base}/compact", **kw)


async def test_posts_system_prompt_and_prompt_and_returns_summary(fake: FakeOpenAI) -> None:
    fake.queue(Reply.json({"summary": "## Goal\nRemote summary", "shortSummary": "ignored"}))
    seen: list[str] = []
    req = make_request(system_prompt="SYS", prompt="<conversation>\n[User]: ü\n</conversation>")
    result = await asyncio.wait_for(remote(fake).summarize(req, seen.append), 30)
    assert result.text == "## Goal\nRemote summary"
    assert result.usage is None
    assert seen == ["## Goal\nRemote summary"]
    rec = fake.requests[0]
    assert rec.method == "POST" and rec.path == "/compact"
    assert rec.headers["content-type"] == "application/json"
    assert rec.body == {"systemPrompt": "SYS", "prompt": "<conversation>\n[User]: ü\n</conversation>"}


@pytest.mark.parametrize(
    ("status", "text"), [(400, "400 Bad Request"), (404, "404 Not Found"), (401, "401 Unauthorized")]
)
async def test_client_errors_are_reported_with_status_text(fake: FakeOpenAI, status: int, text: str) -> None:
    fake.queue(Reply.json({"error": "nope"}, status=status))
    with pytest.raises(SummarizationError) as info:
        await asyncio.wait_for(remote(fake).summarize(make_request()), 30)
    assert str(info.value) == f"Remote compaction failed ({text})"
    assert not isinstance(info.value, TransientError)
    assert len(fake.requests) == 1


async def test_server_errors_retried(fake: FakeOpenAI) -> None:
    fake.queue(Reply.json({"error": "busy"}, status=503), Reply.json({"summary": "second try"}))
    result = await asyncio.wait_for(remote(fake).summarize(make_request()), 30)
    assert result.text == "second try" and len(fake.requests) == 2


async def test_persistent_server_error_keeps_the_spec_message(fake: FakeOpenAI) -> None:
    fake.default = Reply.json({"error": "down"}, status=500)
    with pytest.raises(TransientError) as info:
        await asyncio.wait_for(
            remote(fake, retry=RetryPolicy(max_retries=1, base_delay_ms=1)).summarize(make_request()), 30
        )
    assert str(info.value).startswith("Remote compaction failed (500 Internal Server Error)")
    assert len(fake.requests) == 2


@pytest.mark.parametrize("body", [{"text": "no summary key"}, {"summary": 42}, [1, 2], "not json at all"])
async def test_missing_summary(fake: FakeOpenAI, body: object) -> None:
    fake.queue(Reply.json(body))
    with pytest.raises(SummarizationError) as info:
        await asyncio.wait_for(remote(fake).summarize(make_request()), 30)
    assert str(info.value) == "Remote compaction response missing summary"


async def test_cancel_closes_the_connection(fake: FakeOpenAI) -> None:
    fake.queue(Reply.json({"summary": "late"}, hang_before_headers=3600))
    task = asyncio.create_task(remote(fake).summarize(make_request()))
    for _ in range(1000):
        if fake.requests:
            break
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await fake.wait_disconnected_async(10)


async def test_history_goes_remote_everything_else_stays_local(fake: FakeOpenAI) -> None:
    fake.default = Reply.json({"summary": "from remote"})
    routed = RemoteHistorySummarizer(remote(fake), ExtractiveSummarizer())
    history = await routed.summarize(make_request(kind=SummaryKind.HISTORY))
    assert history.text == "from remote" and len(fake.requests) == 1
    msgs = [{"role": "user", "content": "Refactor src/app.py"}]
    prefix = await routed.summarize(make_request(kind=SummaryKind.TURN_PREFIX, messages=msgs))
    branch = await routed.summarize(make_request(kind=SummaryKind.BRANCH, messages=msgs))
    assert prefix.text.startswith("## Original Request\nRefactor src/app.py")
    assert branch.text.startswith("## Goal\nRefactor src/app.py")
    assert len(fake.requests) == 1  # turn prefix and branch never went to the endpoint
