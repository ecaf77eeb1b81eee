"""compact() against emulated real servers (tests/support/fake_openai.py): the summarizer's
context window (checked before sending, chunked when too small, overflow reported by the server),
a single-slot server cutting parallel calls, maxConcurrency, and usage the server does not report."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from compactd.compaction.prompts import SUMMARY_PROMPT, UPDATE_SUMMARY_PROMPT
from compactd.engine.compactor import CompactionError, compact
from compactd.engine.settings import build_summarizer
from compactd.session import Session

from tests.support.fake_openai import FakeOpenAI, RecordedRequest, Reply

from .builders import HISTORY_TEXT, PREFIX_TEXT, add, assistant, call, new_session, result, settings, user
from .test_compactor import kind_of, prompt_of, split_session

WORDS = "parser lexer token grammar module import export failing passing review branch commit".split()


def varied(n: int, words: int) -> str:
    """Prose that tokenizes like prose (repeated letters would compress to a few tokens)."""
    return " ".join(f"{WORDS[(n * 7 + i) % len(WORDS)]}{(n * 31 + i) % 97}" for i in range(words))


def long_session(tmp_path: Path, turns: int = 14, words: int = 120) -> Session:
    session = new_session(tmp_path)
    for n in range(1, turns + 1):
        add(
            session,
            user(f"Request {n}: " + varied(n, words)),
            assistant(f"Reading for request {n}.", calls=[call(f"c{n}", "read", path=f"src/m{n}.py")]),
            result(f"c{n}", "read", f"Output {n}: " + varied(n + 100, words)),
            assistant(f"Done with request {n}. " + varied(n + 200, words // 4)),
        )
    return session


def numbered_summary(request: RecordedRequest, counter: list[int]) -> Reply:
    counter.append(1)
    return Reply.stream(HISTORY_TEXT.replace("Ship the feature.", f"Summary number {len(counter)}."))


SMALL = {"compaction": {"keepRecentTokens": 400, "reserveTokens": 2000}, "branchSummary": {"reserveTokens": 1000}}


def small_settings(tmp_path: Path, fake: FakeOpenAI, **summarizer: Any):
    return settings(tmp_path, fake, **SMALL, summarizer={"contextWindow": 4096, **summarizer})


# --- the window check and chunked summaries --------------------------------------------------------


async def test_history_too_large_for_the_window_is_summarized_in_chunks_oldest_first(tmp_path: Path) -> None:
    counter: list[int] = []
    with FakeOpenAI(context_window=4096) as fake:
        fake.script(lambda r: numbered_summary(r, counter))
        session = long_session(tmp_path)
        st = small_settings(tmp_path, fake)
        res = await compact(session, st, build_summarizer(st, env={}))

    requests = fake.requests
    assert fake.overflows == 0 and len(requests) >= 3
    assert all(kind_of(r) == "history" for r in requests)
    assert all(tokens < 4096 * 0.9 for tokens in fake.prompt_tokens)
    assert all(r.body["max_tokens"] == 1024 for r in requests)  # a quarter of the window
    prompts = [prompt_of(r) for r in requests]
    assert prompts[0].endswith(SUMMARY_PROMPT) and "<previous-summary>" not in prompts[0]
    for i in range(1, len(prompts)):  # each part updates the summary of the parts before it
        assert prompts[i].endswith(UPDATE_SUMMARY_PROMPT)
        assert f"Summary number {i}." in prompts[i].split("<previous-summary>")[1]
    # every summarized request is in exactly one part, in order
    summarized = sorted({int(n) for n in re.findall(r"\[User\]: Request (\d+):", "".join(prompts))})
    assert summarized == list(range(1, summarized[-1] + 1)) and len(summarized) >= 10
    firsts = [int(re.search(r"\[User\]: Request (\d+):", p).group(1)) for p in prompts if "[User]: Request" in p]
    assert firsts == sorted(firsts)
    for n in summarized:
        assert sum(f"[User]: Request {n}:" in p for p in prompts) == 1
    assert res.summary.startswith(f"## Goal\nSummary number {len(requests)}.")
    assert res.model_calls == len(requests)
    assert any(f"summarized in {len(requests)} parts" in w and "4096 tokens" in w for w in res.warnings)
    assert session.by_id[res.entry_id]["usage"]["output"] == 300 * len(requests)


async def test_prompt_that_fits_is_sent_once_with_the_output_budget_capped(tmp_path: Path) -> None:
    with FakeOpenAI(context_window=8192) as fake:
        fake.script(by_kind)
        session = long_session(tmp_path, turns=5, words=60)
        st = settings(tmp_path, fake, compaction={"keepRecentTokens": 400, "reserveTokens": 8000},
                      branchSummary={"reserveTokens": 1000}, summarizer={"contextWindow": 8192})
        res = await compact(session, st, build_summarizer(st, env={}))
    history = [i for i, r in enumerate(fake.requests) if kind_of(r) == "history"]
    assert len(history) == 1 and fake.overflows == 0 and res.warnings == []
    # floor(0.8 × 8000) = 6400 would overflow a vLLM-style server: capped to the room left
    sent = fake.requests[history[0]].body["max_tokens"]
    assert sent == int(8192 * 0.9) - fake.prompt_tokens[history[0]] < 6400


async def test_overflow_reported_in_stream_is_answered_with_chunks_for_the_named_window(tmp_path: Path) -> None:
    counter: list[int] = []
    # The settings do not know the server's small window; llama.cpp names it in its in-band error.
    with FakeOpenAI(context_window=3000, overflow_style="llama.cpp") as fake:
        fake.script(lambda r: None if counter == [] and not fake.overflows else numbered_summary(r, counter))
        session = long_session(tmp_path, turns=8, words=80)
        st = settings(tmp_path, fake, **SMALL)
        res = await compact(session, st, build_summarizer(st, env={}))
    assert fake.overflows == 1 and len(fake.requests) >= 3  # one overflow, then parts that fit
    assert all(tokens < 3000 for tokens in fake.prompt_tokens[1:])
    assert any("exceeds the available context size (3000 tokens)" in w and "3000-token window" in w
               for w in res.warnings)
    assert res.summary.startswith(f"## Goal\nSummary number {len(counter)}.")


async def test_overflow_that_names_no_window_fails_with_the_servers_words(tmp_path: Path) -> None:
    with FakeOpenAI(context_window=3000, overflow_style="llama.cpp-legacy") as fake:
        session = long_session(tmp_path, turns=8, words=80)
        before = Path(session.path).read_bytes()
        st = settings(tmp_path, fake, **SMALL)
        with pytest.raises(CompactionError) as info:
            await compact(session, st, build_summarizer(st, env={}))
    assert len(fake.requests) == 1  # an overflow is not retried as a transient error
    text = str(info.value)
    assert "the request exceeds the available context size" in text  # llama-server's own text
    assert "summarizer.contextWindow" in text and "ended" not in text
    assert Path(session.path).read_bytes() == before


async def test_window_too_small_for_any_chunk_is_a_clear_error(tmp_path: Path) -> None:
    with FakeOpenAI() as fake:
        session = long_session(tmp_path, turns=6)
        st = settings(tmp_path, fake, compaction={"keepRecentTokens": 400, "reserveTokens": 500},
                      branchSummary={"reserveTokens": 500}, summarizer={"contextWindow": 1200})
        with pytest.raises(CompactionError) as info:
            await compact(session, st, build_summarizer(st, env={}))
    assert "context window (1200 tokens) is too small" in str(info.value)
    assert fake.requests == []


# --- concurrency and a single-slot server ----------------------------------------------------------


def by_kind(request: RecordedRequest) -> Reply:
    return Reply.stream(HISTORY_TEXT if kind_of(request) == "history" else PREFIX_TEXT)


def slow_by_kind(request: RecordedRequest) -> Reply:
    text = HISTORY_TEXT if kind_of(request) == "history" else PREFIX_TEXT
    pieces = [text[i : i + 20] for i in range(0, len(text), 20)]
    return Reply.stream(pieces, chunk_delay=0.02)


async def test_parallel_call_cut_off_by_a_single_slot_server_is_run_again_alone(tmp_path: Path) -> None:
    with FakeOpenAI(single_slot=True) as fake:
        fake.script(slow_by_kind)
        session = split_session(tmp_path)
        st = settings(tmp_path, fake, compaction={"keepRecentTokens": 500, "reserveTokens": 9000})
        res = await compact(session, st, build_summarizer(st, env={}))
    assert fake.interrupted == 1 and len(fake.requests) == 3
    assert sorted(kind_of(r) for r in fake.requests).count("history") in (1, 2)
    assert HISTORY_TEXT in res.summary and PREFIX_TEXT in res.summary
    assert any("cut off" in w and "maxConcurrency" in w for w in res.warnings)


async def test_max_concurrency_1_serializes_the_split_turn_calls(tmp_path: Path) -> None:
    with FakeOpenAI(single_slot=True) as fake:
        fake.script(slow_by_kind)
        session = split_session(tmp_path)
        st = settings(tmp_path, fake, compaction={"keepRecentTokens": 500, "reserveTokens": 9000},
                      summarizer={"maxConcurrency": 1})
        res = await compact(session, st, build_summarizer(st, env={}))
    assert fake.interrupted == 0 and len(fake.requests) == 2
    assert [kind_of(r) for r in fake.requests] == ["history", "turn_prefix"]
    assert HISTORY_TEXT in res.summary and PREFIX_TEXT in res.summary and res.warnings == []


# --- usage -------------------------------------------------------------------------------------------


async def test_usage_is_estimated_and_marked_when_the_server_reports_none(tmp_path: Path) -> None:
    with FakeOpenAI(report_usage=False) as fake:
        fake.script(by_kind)
        session = long_session(tmp_path, turns=5, words=60)
        st = settings(tmp_path, fake, compaction={"keepRecentTokens": 400})
        res = await compact(session, st, build_summarizer(st, env={}))
    usage = session.by_id[res.entry_id]["usage"]
    assert usage["estimated"] is True and usage == res.usage
    assert usage["input"] > sum(fake.prompt_tokens)  # the prompts plus chat framing
    assert usage["output"] > 50 and res.model_calls == len(fake.requests)


# --- the server's words in the progress ------------------------------------------------------------


async def test_a_retried_failure_shows_the_servers_error_text_in_the_progress(tmp_path: Path) -> None:
    updates: list[str] = []
    with FakeOpenAI() as fake:
        fake.queue(Reply.error(503, "Loading model: the slot is not available yet", type="unavailable_error"))
        fake.script(lambda r: by_kind(r) if len(fake.requests) > 1 else None)
        session = long_session(tmp_path, turns=5, words=60)
        st = settings(tmp_path, fake, compaction={"keepRecentTokens": 400}, summarizer={"maxConcurrency": 1})
        await compact(session, st, build_summarizer(st, env={}), on_progress=lambda u: updates.append(u.message))
    notes = [m for m in updates if "Loading model: the slot is not available yet" in m]
    assert notes and "retrying in" in notes[0] and "(attempt 2)" in notes[0]


async def test_turn_prefix_too_large_for_the_window_is_summarized_with_the_history(tmp_path: Path) -> None:
    counter: list[int] = []
    session = new_session(tmp_path)
    add(session, user("Request 1: " + varied(1, 40)), assistant("Done with request 1."))
    add(session, user("Refactor the whole parser please."))
    for k in range(10):
        add(
            session,
            assistant(f"step {k}", calls=[call(f"s{k}", "read", path=f"src/p{k}.py")]),
            result(f"s{k}", "read", varied(k + 300, 150)),
        )
    add(session, assistant("All steps done."))
    with FakeOpenAI(context_window=4096) as fake:
        fake.script(lambda r: numbered_summary(r, counter))
        st = small_settings(tmp_path, fake)
        res = await compact(session, st, build_summarizer(st, env={}))
    assert {kind_of(r) for r in fake.requests} == {"history"} and fake.overflows == 0
    prompts = "".join(prompt_of(r) for r in fake.requests)
    assert "[User]: Request 1:" in prompts and "[User]: Refactor the whole parser please." in prompts
    assert any("summarized together with the history" in w for w in res.warnings)
    assert "Turn Context (split turn)" not in res.summary
    assert res.summary.startswith(f"## Goal\nSummary number {len(fake.requests)}.")
