"""The OpenAI-compatible client against hostile or broken servers (issue 26 §6, §11), each a real
local HTTP server: the API key in what the server sends back, a redirect to another origin, an
event stream that closes without a single event."""

from __future__ import annotations

import asyncio

import pytest

from compactd.summarize.base import ContextOverflowError, SummarizationError
from compactd.summarize.masking import KeyMask
from compactd.summarize.retry import RetryPolicy
from tests.support.fake_openai import FakeOpenAI, Reply
from tests.support.summarizers import make_openai, make_request

KEY = "sk-live-Zq7Xv2Lm9Pa4Rt6Yw8Nb3Kc5Jd1Hf0Gs"


def fragments_in(text: str) -> list[str]:
    """Every 8-character piece of the key found in `text`."""
    return [KEY[i:i + 8] for i in range(len(KEY) - 7) if KEY[i:i + 8] in text]


async def run(coro, timeout: float = 30.0):
    return await asyncio.wait_for(coro, timeout)


def client(fake: FakeOpenAI, **kw):
    return make_openai(fake, env={"TEST_OPENAI_KEY": KEY}, **kw)


@pytest.mark.parametrize("offset", [470, 480, 490, 499])
async def test_plain_text_error_with_the_key_across_the_500_character_cut(fake: FakeOpenAI, offset: int) -> None:
    body = "x" * (offset - len("Bearer ")) + "Bearer " + KEY + " was refused by the upstream proxy"
    fake.queue(Reply(status=400, body=body))
    with pytest.raises(SummarizationError) as info:
        await run(client(fake).summarize(make_request()))
    message = str(info.value)
    assert fake.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert fragments_in(message) == [], message[-120:]  # before: 27 of the key's characters
    assert "Bearer *" in message  # the mask itself may be what is cut


async def test_completion_echoing_the_authorization_header(fake: FakeOpenAI) -> None:
    fake.queue(Reply.stream(["## Goal\n", "Fix the parser."], echo_authorization=True))
    streamed: list[str] = []
    result = await run(client(fake).summarize(make_request(), streamed.append))
    assert "Bearer ***" in result.text and result.text.startswith("## Goal\nFix the parser.")
    assert fragments_in(result.text) == []
    assert fragments_in("".join(streamed)) == [] and "".join(streamed) == result.text
    assert all(fragments_in(piece) == [] for piece in streamed)


def test_stream_mask_never_shows_a_piece_split_across_deltas() -> None:
    mask = KeyMask(KEY)
    text = f"a {KEY[3:20]} b {KEY} c {KEY[10:]}{KEY[:9]} end"
    for size in (1, 2, 3, 7, 11):
        stream = mask.stream()
        shown = [stream.feed(text[i:i + size]) for i in range(0, len(text), size)] + [stream.flush()]
        assert fragments_in("".join(shown)) == []
        assert "".join(shown) == mask.text(text)
    assert mask.stream().feed("partial ") == "partial "  # ordinary text is not held back


async def test_redirect_to_another_origin_is_not_followed(fake: FakeOpenAI) -> None:
    with FakeOpenAI() as elsewhere:
        fake.queue(Reply(status=307, body="", headers={"location": f"{elsewhere.url}/chat/completions"}))
        with pytest.raises(SummarizationError) as info:
            await run(client(fake).summarize(make_request()))
        assert elsewhere.requests == []  # before: the conversation was sent there
    message = str(info.value)
    assert "redirecting to another origin" in message and f"127.0.0.1:{elsewhere.port}" in message
    assert "not followed" in message and len(fake.requests) == 1


async def test_redirect_within_the_same_origin_is_followed(fake: FakeOpenAI) -> None:
    fake.queue(Reply(status=307, body="", headers={"location": "/v1/chat/completions?moved=1"}),
               Reply.stream("## Goal\nMoved."))
    result = await run(client(fake).summarize(make_request()))
    assert result.text == "## Goal\nMoved." and fake.requests[1].path.endswith("?moved=1")


async def test_event_stream_without_any_event_is_an_overflow_not_retried(fake: FakeOpenAI) -> None:
    fake.default = Reply(no_events=True)
    summarizer = client(fake, retry=RetryPolicy(max_retries=3, base_delay_ms=1))
    with pytest.raises(ContextOverflowError) as info:
        await run(summarizer.summarize(make_request(prompt="word " * 3000)))
    message = str(info.value)
    assert len(fake.requests) == 1  # before: 4 (retried 3 times as a cut-off stream)
    assert "closed the response stream without sending anything" in message
    assert "about 30" in message and "tokens (estimated)" in message  # ~3000 words + the system prompt
    assert "set summarizer.contextWindow" in message
