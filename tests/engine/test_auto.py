"""The automatic compaction policy (M-1..M-23, D-7, D-11, D-19, D-24; edge cases 48–54)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from compactd.engine.auto import CONTINUE_PROMPT, OVERFLOW_RETRY_EXHAUSTED, AutoCompactor
from compactd.engine.compactor import compact
from compactd.engine.hooks import Hooks
from compactd.engine.settings import Settings, build_summarizer
from compactd.session import Session
from compactd.session.clock import iso_to_ms
from compactd.summarize.extractive import ExtractiveSummarizer

from tests.support.fake_openai import FakeOpenAI, Reply

from .builders import add, assistant, call, earlier, later, new_session, result, settings, turn, usage, user

WINDOW = 2000
COMPACTION = {"reserveTokens": 1000, "keepRecentTokens": 250}  # threshold 1000
OVERFLOW_TEXT = "prompt is too long: 250000 tokens > 200000 maximum"
ZERO = usage(0, input=0)


class Events:
    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, name: str, payload: dict[str, Any]) -> None:
        self.seen.append((name, payload))

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.seen]

    @property
    def end(self) -> dict[str, Any]:
        ends = [p for n, p in self.seen if n == "compactionEnd"]
        assert len(ends) == 1
        return ends[0]


def conf(tmp_path: Path, **extra: Any) -> Settings:
    sections: dict[str, Any] = {"compaction": dict(COMPACTION), "pruning": {"enabled": False}}
    for key, value in extra.items():
        sections[key] = {**sections.get(key, {}), **value}
    return settings(tmp_path, **sections)


def base(tmp_path: Path) -> Session:
    session = new_session(tmp_path)
    for n in range(1, 4):
        turn(session, n)
    return session


def entry(session: Session, message: dict[str, Any]) -> dict[str, Any]:
    return session.by_id[session.append_message(message)]


def compactions(session: Session) -> int:
    return sum(1 for e in session.entries if e["type"] == "compaction")


async def check(
    auto: AutoCompactor,
    session: Session,
    entries: list[dict[str, Any]],
    st: Settings,
    events: Events,
    summarizer: Any = None,
    hooks: Hooks | None = None,
) -> Any:
    return await auto.after_append(session, entries, st, summarizer or ExtractiveSummarizer(), hooks, events)


# --- threshold ----------------------------------------------------------------------------------


async def test_threshold_compaction_with_continue_prompt(tmp_path: Path) -> None:
    session = base(tmp_path)
    st = conf(tmp_path)
    auto, events = AutoCompactor(context_window=WINDOW), Events()
    last = entry(session, assistant("done", use=usage(1500), at=earlier()))
    outcome = await check(auto, session, [last], st, events)
    assert events.names == ["compactionStart", "compactionEnd"]
    assert events.seen[0][1] == {"reason": "threshold"}
    end = events.end
    assert end["reason"] == "threshold" and end["aborted"] is False and end["willRetry"] is False
    assert end["continuePrompt"] == CONTINUE_PROMPT and "errorMessage" not in end
    assert end["result"]["entryId"] == outcome.result.entry_id == session.leaf_id
    assert compactions(session) == 1
    # the same answer again is stale now: exactly one compaction and one continuation (case 48)
    assert await check(auto, session, [last], st, Events()) is None
    assert compactions(session) == 1


async def test_no_continue_prompt_when_disabled_and_nothing_below_threshold(tmp_path: Path) -> None:
    session = base(tmp_path)
    events = Events()
    await check(
        AutoCompactor(context_window=WINDOW),
        session,
        [entry(session, assistant("d", use=usage(1500)))],
        conf(tmp_path, compaction={"autoContinue": False}),
        events,
    )
    assert "continuePrompt" not in events.end and events.end["result"] is not None

    quiet = Events()
    assert (
        await check(
            AutoCompactor(context_window=WINDOW),
            session,
            [entry(session, assistant("d", use=usage(1000)))],
            conf(tmp_path),
            quiet,
        )
        is None
    )
    assert quiet.seen == []  # 1000 is not above the threshold (strict, K-8)


async def test_disabled_tool_use_and_aborted_answers_are_not_checked(tmp_path: Path) -> None:
    session = base(tmp_path)
    auto, events = AutoCompactor(context_window=WINDOW), Events()
    high = usage(1500)
    assert (
        await check(
            auto,
            session,
            [entry(session, assistant("d", use=high))],
            conf(tmp_path, compaction={"enabled": False}),
            events,
        )
        is None
    )
    tool_use = entry(session, assistant("", calls=[call("x", "read", path="a")], use=high))
    assert await check(auto, session, [tool_use], conf(tmp_path), events) is None
    add(session, result("x", "read", "A"))
    aborted = entry(session, assistant("partial", stop="aborted", use=high))
    assert await check(auto, session, [aborted], conf(tmp_path), events) is None  # M-5
    assert events.seen == [] and compactions(session) == 0

    # before the next prompt the aborted answer is checked too (M-2)
    outcome = await check(auto, session, [entry(session, user("next"))], conf(tmp_path), events)
    assert outcome.reason == "threshold" and compactions(session) == 1
    assert "continuePrompt" not in events.end  # a prompt is on its way: no continue advice


async def test_stale_answer_is_ignored(tmp_path: Path) -> None:
    session = base(tmp_path)
    st = conf(tmp_path)
    await compact(session, st, ExtractiveSummarizer())
    compacted_ms = iso_to_ms(session.get_leaf_entry()["timestamp"])
    events = Events()
    stale = entry(
        session, assistant("late", use=usage(90000), at=compacted_ms)
    )  # same ms counts as stale (D-11)
    assert await check(AutoCompactor(context_window=WINDOW), session, [stale], st, events) is None
    assert events.seen == [] and compactions(session) == 1


async def test_error_answer_uses_the_estimate(tmp_path: Path) -> None:
    # earlier successful usage over the threshold → threshold compaction (case 51)
    session = base(tmp_path)
    add(session, user("go on"), assistant("big", use=usage(1500)), user("and?"))
    events = Events()
    failed = entry(session, assistant("", stop="error", error="internal server error", use=ZERO))
    outcome = await check(AutoCompactor(context_window=WINDOW), session, [failed], conf(tmp_path), events)
    assert outcome.reason == "threshold" and events.end["result"] is not None

    # no valid usage anywhere → nothing
    quiet = new_session(tmp_path, "quiet.jsonl")
    for n in range(6):
        add(quiet, user(f"q{n} " + "x" * 2000), assistant(f"a{n}", use=ZERO))
    failed = entry(quiet, assistant("", stop="error", error="boom", use=ZERO))
    assert (
        await check(AutoCompactor(context_window=WINDOW), quiet, [failed], conf(tmp_path), Events()) is None
    )

    # the only usage is from a kept answer older than the compaction → nothing
    kept = new_session(tmp_path, "kept.jsonl")
    for n in range(1, 4):
        turn(kept, n)
    add(kept, user("last"), assistant("kept answer", use=usage(1500), at=earlier()))
    await compact(kept, conf(tmp_path, compaction={"keepRecentTokens": 50}), ExtractiveSummarizer())
    failed = entry(kept, assistant("", stop="error", error="boom", use=ZERO, at=later()))
    assert await check(AutoCompactor(context_window=WINDOW), kept, [failed], conf(tmp_path), Events()) is None
    assert compactions(kept) == 1


# --- overflow -----------------------------------------------------------------------------------


async def test_overflow_recovery_once_then_one_shot_message(tmp_path: Path) -> None:
    session = base(tmp_path)
    st = conf(tmp_path)
    auto = AutoCompactor(context_window=WINDOW)
    events = Events()
    failed = entry(session, assistant("", stop="error", error=OVERFLOW_TEXT, use=ZERO))
    outcome = await check(auto, session, [failed], st, events)
    end = events.end
    assert end["reason"] == "overflow" and end["willRetry"] is True
    assert end["dropLastAssistant"] is True and end["droppedEntryId"] == failed["id"]  # D-7
    assert "continuePrompt" not in end
    # the failed answer stays in the file but not in the context to retry with (case 52)
    assert failed["id"] in session.by_id
    assert (
        outcome.retry_messages[-1]["role"] != "assistant"
        or outcome.retry_messages[-1].get("stopReason") != "error"
    )
    assert outcome.retry_messages[0]["role"] == "compactionSummary"
    assert "retryMessages" not in outcome.to_json()

    again = Events()
    failed2 = entry(session, assistant("", stop="error", error=OVERFLOW_TEXT, use=ZERO, at=later()))
    outcome = await check(auto, session, [failed2], st, again)  # case 49
    assert again.names == ["compactionEnd"]
    assert again.end == {
        "reason": "overflow",
        "result": None,
        "aborted": False,
        "willRetry": False,
        "errorMessage": OVERFLOW_RETRY_EXHAUSTED,
    }
    assert compactions(session) == 1

    # a new user turn resets the guard (M-9): the next overflowing answer gets its own recovery
    appended = [session.by_id[i] for i in turn(session, 4)]
    assert await check(auto, session, appended, st, Events()) is None
    assert auto.overflow_recovery_attempted is False
    third = Events()
    failed3 = assistant("", stop="error", error=OVERFLOW_TEXT, use=ZERO)
    await check(auto, session, [entry(session, failed3)], st, third)
    assert third.end["willRetry"] is True and compactions(session) == 2


async def test_overflow_found_before_a_prompt_is_compacted_without_retry(tmp_path: Path) -> None:
    session = base(tmp_path)
    auto = AutoCompactor(context_window=WINDOW)
    add(
        session, user("more"), assistant("", stop="error", error=OVERFLOW_TEXT, use=ZERO)
    )  # not checked at run end
    events = Events()
    outcome = await check(auto, session, [entry(session, user("new prompt"))], conf(tmp_path), events)
    assert outcome.reason == "overflow" and events.end["willRetry"] is False
    assert "dropLastAssistant" not in events.end and "continuePrompt" not in events.end
    assert auto.overflow_recovery_attempted is False  # the new prompt keeps its own recovery


async def test_silent_overflow_compacts_without_retry(tmp_path: Path) -> None:
    session = base(tmp_path)
    events = Events()
    answer = entry(session, assistant("fine", stop="stop", use=usage(3100, input=3000, output=100)))
    outcome = await check(AutoCompactor(context_window=WINDOW), session, [answer], conf(tmp_path), events)
    assert outcome.reason == "overflow"  # case 53
    assert events.end["willRetry"] is False and "continuePrompt" not in events.end
    assert "dropLastAssistant" not in events.end


async def test_overflow_of_another_model_is_not_recovered(tmp_path: Path) -> None:
    session = base(tmp_path)
    failed = session.by_id[session.append_message(assistant("", stop="error", error=OVERFLOW_TEXT, use=ZERO))]
    switched = session.by_id[session.append_model_change("anthropic", "claude-sonnet-4")]
    events = Events()
    assert (
        await check(AutoCompactor(context_window=WINDOW), session, [failed, switched], conf(tmp_path), events)
        is None
    )
    assert events.seen == [] and compactions(session) == 0  # case 54


async def test_report_overflow(tmp_path: Path) -> None:
    session = base(tmp_path)
    auto = AutoCompactor(context_window=WINDOW)
    events = Events()
    outcome = await auto.report_overflow(
        session, conf(tmp_path), ExtractiveSummarizer(), None, events, error_message="context_length_exceeded"
    )
    assert outcome.reason == "overflow" and outcome.will_retry is True and compactions(session) == 1
    assert events.names == ["compactionStart", "compactionEnd"]
    second = await auto.report_overflow(session, conf(tmp_path), ExtractiveSummarizer(), None, Events())
    assert second.error_message == OVERFLOW_RETRY_EXHAUSTED and compactions(session) == 1


# --- failures, cancel, silence --------------------------------------------------------------------


async def test_failure_messages(tmp_path: Path, fake: FakeOpenAI) -> None:
    session = base(tmp_path)
    st = settings(tmp_path, fake, compaction=COMPACTION, pruning={"enabled": False})
    fake.default = Reply.error(400, "nope")
    events = Events()
    outcome = await check(
        AutoCompactor(context_window=WINDOW),
        session,
        [entry(session, assistant("d", use=usage(1500)))],
        st,
        events,
        build_summarizer(st, env={}),
    )
    assert events.end["errorMessage"] == "Auto-compaction failed: Summarization failed: 400 nope"
    assert events.end["result"] is None and outcome.result is None and compactions(session) == 0

    events = Events()
    await check(
        AutoCompactor(context_window=WINDOW),
        session,
        [entry(session, assistant("", stop="error", error=OVERFLOW_TEXT, use=ZERO))],
        st,
        events,
        build_summarizer(st, env={}),
    )
    assert events.end["errorMessage"] == "Context overflow recovery failed: Summarization failed: 400 nope"
    assert events.end["willRetry"] is False


async def test_hook_cancel_and_task_cancel_report_aborted(tmp_path: Path, fake: FakeOpenAI) -> None:
    class Cancel(Hooks):
        async def before_compact(self, event: dict[str, Any]) -> Any:
            assert event["reason"] == "threshold" and event["customInstructions"] is None
            return {"cancel": True}

    session = base(tmp_path)
    events = Events()
    await check(
        AutoCompactor(context_window=WINDOW),
        session,
        [entry(session, assistant("d", use=usage(1500)))],
        conf(tmp_path),
        events,
        hooks=Cancel(),
    )
    assert events.end["aborted"] is True and events.end["result"] is None and compactions(session) == 0

    st = settings(tmp_path, fake, compaction=COMPACTION, pruning={"enabled": False})
    fake.queue(Reply.stream(["## Goal\n", "x"], hang_after_chunks=1))
    events = Events()
    answer = entry(session, assistant("d", use=usage(1500)))
    before = session.path.read_bytes()
    task = asyncio.create_task(
        check(
            AutoCompactor(context_window=WINDOW), session, [answer], st, events, build_summarizer(st, env={})
        )
    )
    for _ in range(1000):
        if fake.requests:
            break
        await asyncio.sleep(0.01)
    assert fake.requests and not task.done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await fake.wait_disconnected_async(10)
    assert events.names == ["compactionStart", "compactionEnd"]
    assert events.end["aborted"] is True and events.end["willRetry"] is False
    assert session.path.read_bytes() == before


async def test_nothing_to_compact_is_silent(tmp_path: Path) -> None:
    session = new_session(tmp_path)
    add(session, user("hi"))
    events = Events()
    outcome = await check(
        AutoCompactor(context_window=WINDOW),
        session,
        [entry(session, assistant("hello", use=usage(1500)))],
        conf(tmp_path),
        events,
    )
    assert events.seen == []  # M-12: no start, no end
    assert outcome.result is None and outcome.note == "Nothing to compact (session too small)"


# --- pruning (D-19, N-8) and loops (D-24) --------------------------------------------------------


def tool_heavy(tmp_path: Path, name: str) -> Session:
    session = new_session(tmp_path, name)
    add(session, user("run the checks"))
    for k in range(6):
        add(
            session,
            assistant(f"step {k}", calls=[call(f"t{k}", "bash", command="c")]),
            result(f"t{k}", "bash", "o" * 1200),
        )
    return session


async def test_pruning_runs_first_and_its_savings_count(tmp_path: Path) -> None:
    pruning = {"enabled": True, "protectTokens": 600, "minimumSavings": 300}
    window = {"reserveTokens": 1000, "keepRecentTokens": 250}
    session = tool_heavy(tmp_path, "pruned.jsonl")
    events = Events()
    outcome = await check(
        AutoCompactor(context_window=4000),
        session,
        [entry(session, assistant("done", use=usage(3100)))],
        conf(tmp_path, pruning=pruning, compaction=window),
        events,
    )
    assert outcome.pruned.pruned_count == 4 and outcome.reason is None
    assert events.seen == [] and compactions(session) == 0  # 3100 − 1168 saved is below 3000

    unpruned = tool_heavy(tmp_path, "unpruned.jsonl")
    outcome = await check(
        AutoCompactor(context_window=4000),
        unpruned,
        [entry(unpruned, assistant("done", use=usage(3100)))],
        conf(tmp_path, compaction=window),
        Events(),
    )
    assert outcome.reason == "threshold" and compactions(unpruned) == 1


async def test_ineffective_compaction_does_not_loop(tmp_path: Path) -> None:
    session = new_session(tmp_path)
    for n in range(1, 6):
        turn(session, n)
    st = conf(tmp_path, compaction={"reserveTokens": 1000, "keepRecentTokens": 600})  # threshold 500 < kept
    auto = AutoCompactor(context_window=1500)
    events = Events()
    big = usage(2000, input=400, output=1600)  # above the threshold, not an overflow of the 1500 window
    outcome = await check(auto, session, [entry(session, assistant("d", use=big, at=earlier()))], st, events)
    end = events.end
    assert end["reason"] == "threshold"
    assert end["result"] is not None and "continuePrompt" not in end
    assert "still above the compaction threshold" in end["note"] and outcome.note == end["note"]

    turn(session, 6)
    again = Events()
    answer = assistant("d2", use=usage(2100, input=400, output=1700), at=later())
    outcome = await check(auto, session, [entry(session, answer)], st, again)
    assert again.seen == [] and compactions(session) == 1  # D-24: same state, no second compaction
    assert "Automatic compaction skipped" in outcome.note

    # a silent overflow in that state is not compacted again either (no retry involved)
    silent = assistant("d3", use=usage(2200, input=2100, output=100), at=later())
    outcome = await check(auto, session, [entry(session, silent)], st, Events())
    assert compactions(session) == 1 and "Automatic compaction skipped" in outcome.note
