"""compact() against the real local OpenAI-compatible server: request assembly, budgets, parallel
split-turn calls, retries, rejections, usage on the entry, cancellation leaving the file
byte-for-byte unchanged, hooks, D-20 and D-23."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from compactd.compaction.prepare import prepare_compaction
from compactd.compaction.prompts import (
    SPLIT_TURN_SEPARATOR,
    SUMMARIZATION_SYSTEM_PROMPT,
    SUMMARY_PROMPT,
    TURN_PREFIX_PROMPT,
    UPDATE_SUMMARY_PROMPT,
)
from compactd.engine.busy import BusyError, busy_reason
from compactd.engine.compactor import CompactionError, compact, pending_tool_call_ids
from compactd.engine.hooks import Hooks
from compactd.engine.navigator import navigate
from compactd.engine.progress import ProgressUpdate
from compactd.engine.settings import build_summarizer
from compactd.session import Session, build_session_context
from compactd.session.model import parse_entry
from compactd.summarize.extractive import ExtractiveSummarizer

from tests.support.fake_openai import DEFAULT_USAGE, FakeOpenAI, RecordedRequest, Reply

from .builders import (
    HISTORY_TEXT,
    PREFIX_TEXT,
    add,
    assistant,
    call,
    new_session,
    result,
    settings,
    turn,
    user,
)

KEEP_SMALL = {"keepRecentTokens": 250}  # cuts at the user message of the last turn


def prompt_of(request: RecordedRequest) -> str:
    messages = request.body["messages"]
    assert [m["role"] for m in messages] == ["system", "user"]
    return messages[1]["content"]


def kind_of(request: RecordedRequest) -> str:
    return request.headers["x-compactd-request-kind"]


def four_turns(tmp_path: Path, **kw: Any) -> Session:
    session = new_session(tmp_path, **kw)
    for n in range(1, 5):
        turn(session, n)
    return session


def split_session(tmp_path: Path, *, with_history: bool = True, in_memory: bool = False) -> Session:
    """An optional small first turn, then one long turn of many tool steps (the cut lands inside)."""
    session = new_session(tmp_path, in_memory=in_memory)
    if with_history:
        turn(session, 1, size=100, path="src/first.py")
    add(session, user("Refactor the whole parser please."))
    for k in range(8):
        name = "edit" if k == 2 else "read"
        args = (
            {"path": f"src/p{k}.py", "oldText": "a", "newText": "b"}
            if name == "edit"
            else {"path": f"src/p{k}.py"}
        )
        add(
            session,
            assistant(f"step {k}", calls=[call(f"s{k}", name, **args)]),
            result(f"s{k}", name, "r" * 800),
        )
    add(session, assistant("All steps done."))
    return session


async def wait_until(predicate: Any, timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError("condition not reached")
        await asyncio.sleep(0.01)


# --- request assembly ---------------------------------------------------------------------------


async def test_history_request_body(tmp_path: Path, fake: FakeOpenAI) -> None:
    session = four_turns(tmp_path)
    st = settings(tmp_path, fake, compaction={**KEEP_SMALL, "reserveTokens": 10000})
    fake.queue(Reply.stream(HISTORY_TEXT))
    result_ = await compact(session, st, build_summarizer(st, env={}))

    assert len(fake.requests) == 1
    body = fake.requests[0].body
    assert body["messages"][0] == {"role": "system", "content": SUMMARIZATION_SYSTEM_PROMPT}
    prompt = prompt_of(fake.requests[0])
    assert prompt.startswith("<conversation>\n[User]: Request 1: please work on src/mod1.py.")
    assert "\n</conversation>\n\n" in prompt
    assert prompt.endswith(SUMMARY_PROMPT)  # initial prompt, no custom focus
    assert "<previous-summary>" not in prompt
    assert "Request 4" not in prompt  # the last turn is kept, not summarized
    assert body["max_tokens"] == 8000  # floor(0.8 × 10000)
    assert "tools" not in body and body["stream"] is True
    assert kind_of(fake.requests[0]) == "history"
    assert result_.summary.startswith(HISTORY_TEXT)


async def test_update_prompt_carries_previous_summary_and_focus(tmp_path: Path, fake: FakeOpenAI) -> None:
    session = four_turns(tmp_path)
    st = settings(tmp_path, fake, compaction=KEEP_SMALL)
    summarizer = build_summarizer(st, env={})
    fake.queue(Reply.stream("First pass.\n" + HISTORY_TEXT), Reply.stream(HISTORY_TEXT))
    first = await compact(session, st, summarizer)
    turn(session, 5)
    turn(session, 6)
    await compact(session, st, summarizer, custom_instructions="the parser bug")

    prompt = prompt_of(fake.requests[1])
    assert f"<previous-summary>\n{first.summary}\n</previous-summary>\n\n" in prompt
    assert prompt.endswith(UPDATE_SUMMARY_PROMPT + "\n\nAdditional focus: the parser bug")
    # R-3 [PI-NEW]: what the first compaction kept is summarized again now
    assert "Request 4" in prompt


async def test_split_turn_runs_both_calls_in_parallel_with_budgets(tmp_path: Path, fake: FakeOpenAI) -> None:
    session = split_session(tmp_path)
    st = settings(tmp_path, fake, compaction={"keepRecentTokens": 500, "reserveTokens": 9000})
    prep = prepare_compaction(session.get_branch(), st.compaction_settings())
    assert prep and prep.is_split_turn and prep.messages_to_summarize

    seen: list[str] = []

    def script(request: RecordedRequest) -> Reply:
        seen.append(kind_of(request))
        text = HISTORY_TEXT if kind_of(request) == "history" else PREFIX_TEXT
        # The first answer stalls, so the second request can only arrive if the calls run concurrently.
        return Reply.stream(
            [text[:10], text[10:]], hang_after_chunks=1, hang_seconds=0.05 if len(seen) >= 2 else 30
        )

    fake.script(script)
    task = asyncio.create_task(
        compact(session, st, build_summarizer(st, env={}), custom_instructions="focus X")
    )
    await wait_until(lambda: len(fake.requests) == 2)
    assert not task.done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    by_kind = {kind_of(r): r for r in fake.requests}
    assert by_kind["history"].body["max_tokens"] == 7200  # floor(0.8 × 9000)
    assert by_kind["turn_prefix"].body["max_tokens"] == 4500  # floor(0.5 × 9000)
    prefix_prompt = prompt_of(by_kind["turn_prefix"])
    assert prefix_prompt.startswith("<conversation>\n[User]: Refactor the whole parser please.")
    assert prefix_prompt.endswith(TURN_PREFIX_PROMPT)
    assert "Additional focus" not in prefix_prompt  # S-2: custom instructions only in the history prompt
    assert prompt_of(by_kind["history"]).endswith("Additional focus: focus X")
    # isolation: a fresh request id per call, also as the cache key / user
    ids = {r.headers["x-compactd-request-id"] for r in fake.requests}
    assert len(ids) == 2
    keys = {r.body["prompt_cache_key"] for r in fake.requests}
    assert len(keys) == 2 and all(k.startswith("compactd-") for k in keys)


async def test_split_turn_merge_usage_and_file_tags(tmp_path: Path, fake: FakeOpenAI) -> None:
    session = split_session(tmp_path)
    st = settings(tmp_path, fake, compaction={"keepRecentTokens": 500})
    fake.script(lambda r: Reply.stream(HISTORY_TEXT if kind_of(r) == "history" else PREFIX_TEXT))
    res = await compact(session, st, build_summarizer(st, env={}))

    assert res.summary.startswith(HISTORY_TEXT + SPLIT_TURN_SEPARATOR + PREFIX_TEXT)
    # S-12: lists computed by code, read-and-edited only under modified, sorted; prefix tool calls count (16)
    details = res.details
    assert "src/p2.py" in details["modifiedFiles"] and "src/p2.py" not in details["readFiles"]
    assert details["readFiles"] == sorted(details["readFiles"])
    assert "src/first.py" in details["readFiles"] and "src/p0.py" in details["readFiles"]
    assert res.summary.endswith(
        "\n\n<read-files>\n"
        + "\n".join(details["readFiles"])
        + "\n</read-files>\n\n<modified-files>\n"
        + "\n".join(details["modifiedFiles"])
        + "\n</modified-files>"
    )
    # S-13: usage of both calls summed on the entry (OpenAI usage: 1200 prompt incl. 200 cached, 300 out)
    entry = session.by_id[res.entry_id]
    assert entry["usage"]["input"] == 2 * 1000 and entry["usage"]["cacheRead"] == 2 * 200
    assert entry["usage"]["output"] == 2 * 300 and entry["usage"]["totalTokens"] == 2 * 1500
    assert res.usage == entry["usage"]
    parse_entry(entry)


async def test_split_turn_without_history_says_no_prior_history(tmp_path: Path, fake: FakeOpenAI) -> None:
    session = split_session(tmp_path, with_history=False)
    st = settings(tmp_path, fake, compaction={"keepRecentTokens": 500})
    fake.queue(Reply.stream(PREFIX_TEXT))
    res = await compact(session, st, build_summarizer(st, env={}))
    assert [kind_of(r) for r in fake.requests] == ["turn_prefix"]  # no history call at all
    assert res.summary.startswith("No prior history." + SPLIT_TURN_SEPARATOR + PREFIX_TEXT)
    assert session.by_id[res.entry_id]["usage"]["output"] == 300  # the prefix call alone


async def test_reasoning_follows_thinking_level(tmp_path: Path, fake: FakeOpenAI) -> None:
    session = new_session(tmp_path)
    session.append_thinking_level_change("medium")
    for n in range(1, 5):
        turn(session, n)
    st = settings(tmp_path, fake, compaction=KEEP_SMALL, summarizer={"reasoning": True})
    fake.queue(Reply.stream(HISTORY_TEXT), Reply.stream(HISTORY_TEXT))
    await compact(session, st, build_summarizer(st, env={}))
    assert fake.requests[0].body["reasoning_effort"] == "medium"

    session.append_thinking_level_change("off")
    turn(session, 5)
    turn(session, 6)
    await compact(session, st, build_summarizer(st, env={}))
    assert "reasoning_effort" not in fake.requests[1].body


# --- failures -----------------------------------------------------------------------------------


async def test_transient_error_is_retried(tmp_path: Path, fake: FakeOpenAI) -> None:
    session = four_turns(tmp_path)
    st = settings(tmp_path, fake, compaction=KEEP_SMALL)
    fake.queue(Reply.error(503, "overloaded"), Reply.stream(HISTORY_TEXT))
    res = await compact(session, st, build_summarizer(st, env={}))
    assert len(fake.requests) == 2
    assert res.summary.startswith(HISTORY_TEXT)


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (
            Reply.stream("## Goal\ncut", finish_reason="length"),
            "Compaction failed: Summarization failed: generation hit the token cap and the summary is incomplete",
        ),
        (
            Reply.stream(
                "",
                tool_calls=[{"id": "t", "type": "function", "function": {"name": "x", "arguments": "{}"}}],
                finish_reason="tool_calls",
            ),
            "Compaction failed: Summarization attempted to call a tool",
        ),
        (
            Reply.error(400, "bad request body"),
            "Compaction failed: Summarization failed: 400 bad request body",
        ),
    ],
)
async def test_rejected_responses_write_nothing(
    tmp_path: Path, fake: FakeOpenAI, reply: Reply, message: str
) -> None:
    session = four_turns(tmp_path)
    before = session.path.read_bytes()
    count = len(session.entries)
    st = settings(tmp_path, fake, compaction=KEEP_SMALL)
    fake.queue(reply)
    with pytest.raises(CompactionError) as info:
        await compact(session, st, build_summarizer(st, env={}))
    assert str(info.value) == message
    assert info.value.code == "failed"
    assert session.path.read_bytes() == before and len(session.entries) == count
    assert busy_reason(session) is None


async def test_split_turn_failure_of_one_call_stops_the_other(tmp_path: Path, fake: FakeOpenAI) -> None:
    session = split_session(tmp_path)
    before = session.path.read_bytes()
    st = settings(tmp_path, fake, compaction={"keepRecentTokens": 500})

    arrived: list[str] = []

    def script(request: RecordedRequest) -> Reply:
        # The first request to arrive hangs; the second (so both are in flight) fails at once.
        arrived.append(kind_of(request))
        if len(arrived) == 2:
            return Reply.error(400, "this call broke")
        return Reply.stream(["## Original", " Request"], hang_after_chunks=1)

    fake.script(script)
    with pytest.raises(CompactionError, match="400 this call broke"):
        await compact(session, st, build_summarizer(st, env={}))
    assert await fake.wait_disconnected_async(10)  # the hanging prefix stream was closed
    assert session.path.read_bytes() == before


# --- cancellation -------------------------------------------------------------------------------


async def test_cancel_mid_stream_closes_connection_and_leaves_file(tmp_path: Path, fake: FakeOpenAI) -> None:
    session = four_turns(tmp_path)
    before = session.path.read_bytes()
    entries, leaf = list(session.entries), session.leaf_id
    st = settings(tmp_path, fake, compaction=KEEP_SMALL)
    fake.queue(Reply.stream(["## Goal\n", "never sent"], hang_after_chunks=1))
    streamed = asyncio.Event()

    def on_progress(update: ProgressUpdate) -> None:
        if update.text:
            streamed.set()

    task = asyncio.create_task(compact(session, st, build_summarizer(st, env={}), on_progress=on_progress))
    await asyncio.wait_for(streamed.wait(), 10)
    assert busy_reason(session) == "compaction in progress"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await fake.wait_disconnected_async(10)
    assert session.path.read_bytes() == before
    assert session.entries == entries and session.leaf_id == leaf
    assert busy_reason(session) is None


async def test_cancel_split_turn_closes_both_streams(tmp_path: Path, fake: FakeOpenAI) -> None:
    session = split_session(tmp_path)
    before = session.path.read_bytes()
    st = settings(tmp_path, fake, compaction={"keepRecentTokens": 500})
    fake.script(lambda r: Reply.stream(["## Goal\n", "x"], hang_after_chunks=1))
    task = asyncio.create_task(compact(session, st, build_summarizer(st, env={})))
    await wait_until(lambda: len(fake.requests) == 2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await wait_until(lambda: fake.disconnects == 2)
    assert session.path.read_bytes() == before


async def test_leaf_moves_are_refused_while_compacting(tmp_path: Path, fake: FakeOpenAI) -> None:
    session = four_turns(tmp_path)
    st = settings(tmp_path, fake, compaction=KEEP_SMALL)
    fake.queue(Reply.stream(["## Goal\n", "x"], hang_after_chunks=1))
    task = asyncio.create_task(compact(session, st, build_summarizer(st, env={})))
    await wait_until(lambda: len(fake.requests) == 1)
    with pytest.raises(BusyError, match=f"Session {session.session_id} is busy: compaction in progress"):
        await navigate(session, session.entries[0]["id"], st, None)
    with pytest.raises(BusyError):
        await compact(session, st, ExtractiveSummarizer())
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


# --- progress -----------------------------------------------------------------------------------


async def test_progress_percentage_is_monotonic_and_below_100_until_done(
    tmp_path: Path, fake: FakeOpenAI
) -> None:
    session = four_turns(tmp_path)
    st = settings(tmp_path, fake, compaction={**KEEP_SMALL, "reserveTokens": 200})  # 160-token budget
    chunks = [HISTORY_TEXT[i : i + 40] for i in range(0, len(HISTORY_TEXT), 40)]
    fake.queue(Reply.stream(chunks))
    updates: list[ProgressUpdate] = []
    await compact(session, st, build_summarizer(st, env={}), on_progress=updates.append)
    streamed = [u for u in updates if u.text and u.percentage is not None and u.percentage < 100]
    assert len(streamed) >= len(chunks) - 1
    percentages = [u.percentage for u in updates if u.percentage is not None]
    assert percentages == sorted(percentages)
    assert percentages[-1] == 100 and max(u.percentage for u in streamed) <= 99
    assert streamed[-1].text == HISTORY_TEXT
    assert updates[-1].text.startswith(HISTORY_TEXT)  # final: the stored summary


# --- D-23 summary check -------------------------------------------------------------------------


async def test_incomplete_summary_is_retried_once_with_a_reminder(tmp_path: Path, fake: FakeOpenAI) -> None:
    session = four_turns(tmp_path)
    st = settings(tmp_path, fake, compaction=KEEP_SMALL)
    fake.queue(Reply.stream("Just some prose without headings."), Reply.stream(HISTORY_TEXT))
    res = await compact(session, st, build_summarizer(st, env={}))
    assert len(fake.requests) == 2
    second = prompt_of(fake.requests[1])
    assert second.startswith(prompt_of(fake.requests[0]))
    assert "Reminder:" in second and "## Critical Context" in second.split("Reminder:")[1]
    assert res.summary.startswith(HISTORY_TEXT) and res.warnings == []
    assert session.by_id[res.entry_id]["usage"]["output"] == 600  # both calls counted


async def test_still_incomplete_summary_is_replaced_by_the_embedded_summary(tmp_path: Path, fake: FakeOpenAI) -> None:
    session = four_turns(tmp_path)
    st = settings(tmp_path, fake, compaction=KEEP_SMALL)
    partial = "## Goal\nShip it.\n\n## Next Steps\n1. Go"
    fake.queue(Reply.stream("prose"), Reply.stream(partial))
    res = await compact(session, st, build_summarizer(st, env={}))
    assert len(fake.requests) == 2
    assert "Ship it." not in res.summary and "prose" not in res.summary  # the model's reply is not written
    assert "src/mod1.py" in res.summary and "<read-files>" in res.summary  # the embedded summarizer's evidence
    for heading in ("## Goal", "## Progress", "## Key Decisions", "## Next Steps", "## Critical Context"):
        assert heading in res.summary
    assert len(res.warnings) == 1
    warning = res.warnings[0]
    assert "openai:" in warning and "## Critical Context" in warning and "## Goal" not in warning
    assert "extractive" in warning and "written instead" in warning
    assert res.model_calls == 2
    assert session.by_id[res.entry_id]["usage"]["output"] == 600  # both model calls were paid for
    assert session.by_id[res.entry_id]["summary"] == res.summary


async def test_still_incomplete_summary_fails_when_strict(tmp_path: Path, fake: FakeOpenAI) -> None:
    session = four_turns(tmp_path)
    before = Path(session.path).read_bytes()
    st = settings(tmp_path, fake, compaction=KEEP_SMALL, summarizer={"strictHeadings": True})
    fake.queue(Reply.stream("prose"), Reply.stream("## Goal\nShip it."))
    with pytest.raises(CompactionError) as info:
        await compact(session, st, build_summarizer(st, env={}))
    assert "missing required headings even after a reminder" in str(info.value)
    assert "strictHeadings" in str(info.value)
    assert Path(session.path).read_bytes() == before


# --- hooks (§15, cases 43–47) -------------------------------------------------------------------


class Recorder(Hooks):
    def __init__(self, name: str, log: list[str], before: Any = None, compacting: Any = None) -> None:
        self.name, self.log, self.before, self.compacting_answer = name, log, before, compacting
        self.events: dict[str, dict[str, Any]] = {}

    async def before_compact(self, event: dict[str, Any]) -> Any:
        self.log.append(f"{self.name}:before")
        self.events["before"] = event
        return self.before

    async def compacting(self, event: dict[str, Any]) -> Any:
        self.log.append(f"{self.name}:compacting")
        self.events["compacting"] = event
        return self.compacting_answer

    async def after_compact(self, event: dict[str, Any]) -> None:
        self.log.append(f"{self.name}:after")
        self.events["after"] = event


async def test_hooks_see_events_once_each_and_default_summary_is_not_from_hook(tmp_path: Path) -> None:
    session = four_turns(tmp_path)
    st = settings(tmp_path, compaction=KEEP_SMALL)
    log: list[str] = []
    hook = Recorder("h", log)
    res = await compact(session, st, ExtractiveSummarizer(), hooks=hook, custom_instructions="look at X")
    assert log == ["h:before", "h:compacting", "h:after"]
    before = hook.events["before"]
    assert before["reason"] == "manual" and before["willRetry"] is False
    assert before["customInstructions"] == "look at X"
    assert before["branchEntryIds"] == [e["id"] for e in session.get_branch()[:-1]]
    assert before["preparation"]["firstKeptEntryId"] == res.first_kept_entry_id
    assert before["preparation"]["conversationText"].startswith("[User]: Request 1")
    assert all(set(m) == {"role", "entryId"} for m in hook.events["compacting"]["messages"])
    after = hook.events["after"]
    assert after["compactionEntry"] == session.by_id[res.entry_id] and after["fromHook"] is False
    assert session.by_id[res.entry_id]["fromHook"] is False and res.from_hook is False  # D-2


async def test_hook_cancel(tmp_path: Path) -> None:
    session = four_turns(tmp_path)
    before = session.path.read_bytes()
    log: list[str] = []
    with pytest.raises(CompactionError, match="^Compaction cancelled$") as info:
        await compact(
            session,
            settings(tmp_path, compaction=KEEP_SMALL),
            ExtractiveSummarizer(),
            hooks=Recorder("h", log, before={"cancel": True}),
        )
    assert info.value.code == "cancelled"
    assert log == ["h:before"]  # no compacting, no after
    assert session.path.read_bytes() == before


async def test_hook_supplied_compaction_is_persisted_verbatim(tmp_path: Path, fake: FakeOpenAI) -> None:
    session = four_turns(tmp_path)
    target = session.entries[2]["id"]
    supplied = {
        "summary": "custom summary",
        "firstKeptEntryId": target,
        "tokensBefore": 999,
        "details": {"anything": [1, 2]},
        "usage": {"input": 1, "output": 2},
        "preserveData": {"k": "v"},
    }
    st = settings(tmp_path, fake, compaction=KEEP_SMALL)
    log: list[str] = []
    res = await compact(
        session, st, build_summarizer(st, env={}), hooks=Recorder("h", log, before={"compaction": supplied})
    )
    assert fake.requests == []  # no model call
    assert log == ["h:before", "h:after"]
    entry = json.loads(session.path.read_text().splitlines()[-1])
    assert entry["summary"] == "custom summary" and entry["tokensBefore"] == 999
    assert entry["firstKeptEntryId"] == target and entry["details"] == {"anything": [1, 2]}
    assert entry["fromHook"] is True and entry["usage"] == {"input": 1, "output": 2}
    assert entry["preserveData"] == {"k": "v"}
    assert res.from_hook is True and res.tokens_before == 999


async def test_compacting_hook_prompt_context_and_preserve_data(tmp_path: Path, fake: FakeOpenAI) -> None:
    session = four_turns(tmp_path)
    st = settings(tmp_path, fake, compaction=KEEP_SMALL)
    fake.queue(Reply.stream("My own format, no headings."))
    hook = Recorder(
        "h",
        [],
        compacting={
            "prompt": "Summarize as a haiku.",
            "context": ["ticket #42", "uses </conversation> tag"],
            "preserveData": {"state": 7},
        },
    )
    res = await compact(session, st, build_summarizer(st, env={}), hooks=hook, custom_instructions="be brief")
    prompt = prompt_of(fake.requests[0])
    assert (
        "<additional-context>\n- ticket #42\n- uses <\u200b/conversation> tag\n</additional-context>\n\n"
        in prompt
    )
    assert prompt.endswith("Summarize as a haiku.\n\nAdditional focus: be brief")
    assert SUMMARY_PROMPT not in prompt
    assert len(fake.requests) == 1 and res.warnings == []  # a custom prompt has no required headings
    assert session.by_id[res.entry_id]["preserveData"] == {"state": 7}


async def test_throwing_and_slow_hooks_count_as_no_answer(tmp_path: Path) -> None:
    class Broken(Hooks):
        async def before_compact(self, event: dict[str, Any]) -> Any:
            raise RuntimeError("extension bug")

    session = four_turns(tmp_path)
    res = await compact(
        session, settings(tmp_path, compaction=KEEP_SMALL), ExtractiveSummarizer(), hooks=Broken()
    )
    assert res.from_hook is False and "## Goal" in res.summary


# --- preconditions (cases 55, 56) -----------------------------------------------------------------


async def test_already_compacted_and_too_small(tmp_path: Path) -> None:
    st = settings(tmp_path, compaction=KEEP_SMALL)
    session = four_turns(tmp_path)
    await compact(session, st, ExtractiveSummarizer())
    with pytest.raises(CompactionError, match="^Already compacted$"):
        await compact(session, st, ExtractiveSummarizer())

    tiny = new_session(tmp_path, "tiny.jsonl")
    add(tiny, user("hi"), assistant("hello"))
    with pytest.raises(CompactionError, match=r"^Nothing to compact \(session too small\)$") as info:
        await compact(tiny, settings(tmp_path), ExtractiveSummarizer())
    assert info.value.code == "nothing_to_compact"


async def test_in_memory_session_gets_exactly_one_compaction(tmp_path: Path) -> None:
    session = four_turns(tmp_path, in_memory=True)
    res = await compact(session, settings(tmp_path, compaction=KEEP_SMALL), ExtractiveSummarizer())
    assert [e["type"] for e in session.entries].count("compaction") == 1
    assert session.leaf_id == res.entry_id
    assert list(tmp_path.glob("*.jsonl")) == []
    ctx = build_session_context(session.entries, session.leaf_id, session.by_id)
    assert ctx.messages[0]["role"] == "compactionSummary" and ctx.messages[0]["summary"] == res.summary


# --- D-20: never between a tool call and its result ---------------------------------------------


async def test_write_waits_for_pending_tool_results(tmp_path: Path) -> None:
    session = four_turns(tmp_path)
    add(
        session,
        user("one more"),
        assistant("", calls=[call("k1", "read", path="a.py"), call("k2", "read", path="b.py")]),
    )
    assert pending_tool_call_ids(session) == ["k1", "k2"]
    waiting = asyncio.Event()

    def on_progress(update: ProgressUpdate) -> None:
        if update.message.startswith("Waiting for the results"):
            waiting.set()

    task = asyncio.create_task(
        compact(
            session,
            settings(tmp_path, compaction=KEEP_SMALL),
            ExtractiveSummarizer(),
            on_progress=on_progress,
        )
    )
    await asyncio.wait_for(waiting.wait(), 10)
    first = session.append_message(result("k1", "read", "A"))
    await asyncio.sleep(0.1)
    assert not task.done()  # one result is not enough
    second = session.append_message(result("k2", "read", "B"))
    res = await asyncio.wait_for(task, 10)
    entry = session.by_id[res.entry_id]
    assert entry["parentId"] == second and session.by_id[second]["parentId"] == first
    # the results arrived during the compaction and are kept after the summary
    ctx = build_session_context(session.entries, session.leaf_id, session.by_id)
    assert [m["role"] for m in ctx.messages[-3:]] == ["assistant", "toolResult", "toolResult"]


async def test_pending_tool_results_without_waiting_is_an_error(tmp_path: Path) -> None:
    session = four_turns(tmp_path)
    add(session, assistant("", calls=[call("k1", "read", path="a.py")]))
    before = session.path.read_bytes()
    with pytest.raises(CompactionError, match="waiting for the results of tool calls k1"):
        await compact(
            session, settings(tmp_path, compaction=KEEP_SMALL), ExtractiveSummarizer(), tool_results_timeout=0
        )
    assert session.path.read_bytes() == before


# --- S-16 remote endpoint -----------------------------------------------------------------------


async def test_remote_endpoint_gets_history_and_turn_prefix_stays_local(
    tmp_path: Path, fake: FakeOpenAI
) -> None:
    session = split_session(tmp_path)
    st = settings(
        tmp_path,
        fake,
        compaction={"keepRecentTokens": 500, "remoteEndpoint": fake.base + "/remote"},
        summarizer={"backend": "auto"},
    )

    def script(request: RecordedRequest) -> Reply:
        if request.path == "/remote":
            return Reply.json({"summary": HISTORY_TEXT, "shortSummary": "ignored"})
        return Reply.stream(PREFIX_TEXT)

    fake.script(script)
    res = await compact(session, st, build_summarizer(st, env={}))
    paths = sorted(r.path for r in fake.requests)
    assert paths == ["/remote", "/v1/chat/completions"]
    remote = next(r for r in fake.requests if r.path == "/remote")
    assert set(remote.body) == {"systemPrompt", "prompt"}
    assert remote.body["systemPrompt"] == SUMMARIZATION_SYSTEM_PROMPT
    assert remote.body["prompt"].startswith("<conversation>\n") and remote.body["prompt"].endswith(
        SUMMARY_PROMPT
    )
    local = next(r for r in fake.requests if r.path != "/remote")
    assert kind_of(local) == "turn_prefix"
    assert res.summary.startswith(HISTORY_TEXT + SPLIT_TURN_SEPARATOR + PREFIX_TEXT)
    assert (
        res.usage is not None and res.usage["output"] == DEFAULT_USAGE["completion_tokens"]
    )  # local prefix only


async def test_split_turn_at_window_start_keeps_the_previous_summary(tmp_path: Path) -> None:
    """The window of a second compaction starts at the first one's kept turn; when the new cut
    splits that very turn there is no history to summarize, and the previous summary stands in
    for it (Pi would write `No prior history.` and lose it)."""
    session = four_turns(tmp_path)
    st = settings(tmp_path, compaction=KEEP_SMALL)
    first = await compact(session, st, ExtractiveSummarizer())
    for k in range(6):  # the kept turn goes on with many tool steps
        add(
            session,
            assistant(f"more {k}", calls=[call(f"m{k}", "read", path=f"src/m{k}.py")]),
            result(f"m{k}", "read", "q" * 800),
        )
    prep = prepare_compaction(session.get_branch(), st.compaction_settings())
    assert prep and prep.is_split_turn and not prep.messages_to_summarize
    res = await compact(session, st, ExtractiveSummarizer())
    history, prefix = res.summary.split(SPLIT_TURN_SEPARATOR)
    assert first.summary.startswith(history) and "<read-files>" in first.summary
    assert history == first.summary[: first.summary.index("\n\n<read-files>")]  # its old tags are dropped
    assert prefix.startswith("## Original Request") and res.summary.endswith("</read-files>")
    assert "src/m3.py" in res.details["readFiles"] and "src/mod1.py" in res.details["readFiles"]  # cumulative
