"""navigate() (B-15..B-27, D-4, D-5, edge cases 57–67) with branch summaries from the real local
OpenAI-compatible server."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from compactd.compaction.prompts import BRANCH_SUMMARY_PREAMBLE, BRANCH_SUMMARY_PROMPT, NO_BRANCH_CONTENT
from compactd.engine.busy import BusyError, busy_reason
from compactd.engine.hooks import Hooks
from compactd.engine.navigator import NavigationError, navigate
from compactd.engine.progress import ProgressUpdate
from compactd.engine.settings import build_summarizer
from compactd.session import EntryNotFoundError, Session, build_session_context
from compactd.session.model import parse_entry
from compactd.summarize.base import SummarizationError
from compactd.summarize.extractive import ExtractiveSummarizer

from tests.support.fake_openai import FakeOpenAI, RecordedRequest, Reply

from .builders import BRANCH_TEXT, add, assistant, call, new_session, result, settings, user


def prompt_of(request: RecordedRequest) -> str:
    return request.body["messages"][1]["content"]


def tree(tmp_path: Path) -> tuple[Session, dict[str, str]]:
    """u1 → a1 → u2 → a2(read+edit) → r2 → r2b → a3 (leaf)."""
    session = new_session(tmp_path)
    ids: dict[str, str] = {}
    ids["u1"], ids["a1"], ids["u2"] = add(
        session, user("first question"), assistant("first answer"), user("second question")
    )
    ids["a2"], ids["r2"], ids["r2b"], ids["a3"] = add(
        session,
        assistant(
            "working", calls=[call("c1", "read", path="src/b.py"), call("c2", "edit", path="src/a.py")]
        ),
        result("c1", "read", "file b"),
        result("c2", "edit", "edited a"),
        assistant("finished the second task"),
    )
    return session, ids


def new_entries(session: Session, count: int) -> list[dict[str, Any]]:
    return session.entries[count:]


async def test_navigate_to_root_user_message(tmp_path: Path, fake: FakeOpenAI) -> None:
    session, ids = tree(tmp_path)
    st = settings(tmp_path, fake)
    count = len(session.entries)
    res = await navigate(session, ids["u1"], st, None)
    assert res.editor_text == "first question" and res.cancelled is False
    assert session.leaf_id is None and res.new_leaf_id is None and res.old_leaf_id == ids["a3"]
    assert len(session.entries) == count  # case 61: no summary → nothing written

    session.branch(ids["a3"])
    fake.queue(Reply.stream(BRANCH_TEXT))
    res = await navigate(session, ids["u1"], st, build_summarizer(st, env={}), summarize=True)
    entry = session.by_id[res.summary_entry_id]
    assert (
        entry["parentId"] is None and session.leaf_id == entry["id"]
    )  # case 57: a root summary, now the leaf
    assert entry["fromId"] == ids["a3"]  # D-5: the entry navigated away from
    assert res.editor_text == "first question"
    parse_entry(entry)


async def test_navigate_to_nested_user_message_with_summary(tmp_path: Path, fake: FakeOpenAI) -> None:
    session, ids = tree(tmp_path)
    st = settings(tmp_path, fake)
    fake.queue(Reply.stream(BRANCH_TEXT))
    res = await navigate(session, ids["u2"], st, build_summarizer(st, env={}), summarize=True)
    entry = session.by_id[res.summary_entry_id]
    assert entry["parentId"] == ids["a1"]  # case 58: sibling of the user message
    assert res.editor_text == "second question"
    # B-4: target on the old path → only what came after it is summarized; tool results excluded (B-5)
    prompt = prompt_of(fake.requests[0])
    assert "second question" not in prompt and "first answer" not in prompt
    assert "[Assistant]: working" in prompt and "finished the second task" in prompt
    assert "[Tool result]" not in prompt
    # B-12/B-14: fixed budget, branch prompt, preamble, file tags, usage
    assert fake.requests[0].body["max_tokens"] == 2048
    assert fake.requests[0].headers["x-compactd-request-kind"] == "branch"
    assert prompt.startswith("<conversation>\n") and prompt.endswith(BRANCH_SUMMARY_PROMPT)
    assert entry["summary"] == (
        BRANCH_SUMMARY_PREAMBLE
        + BRANCH_TEXT
        + "\n\n<read-files>\nsrc/b.py\n</read-files>\n\n<modified-files>\nsrc/a.py\n</modified-files>"
    )
    assert entry["details"] == {"readFiles": ["src/b.py"], "modifiedFiles": ["src/a.py"]}
    assert entry["usage"]["output"] == 300 and entry["fromHook"] is False  # D-2
    # the context now ends with the summary
    ctx = build_session_context(session.entries, session.leaf_id, session.by_id)
    assert [m["role"] for m in ctx.messages] == ["user", "assistant", "branchSummary"]


async def test_navigate_to_assistant(tmp_path: Path, fake: FakeOpenAI) -> None:
    session, ids = tree(tmp_path)
    st = settings(tmp_path, fake)
    res = await navigate(session, ids["a1"], st, None)
    assert session.leaf_id == ids["a1"] and res.editor_text is None  # case 59

    session.branch(ids["a3"])
    fake.queue(Reply.stream(BRANCH_TEXT))
    res = await navigate(session, ids["a2"], st, build_summarizer(st, env={}), summarize=True)
    assert session.by_id[res.summary_entry_id]["parentId"] == ids["a2"]


async def test_label_without_and_with_summary(tmp_path: Path) -> None:
    session, ids = tree(tmp_path)
    st = settings(tmp_path)
    count = len(session.entries)
    await navigate(session, ids["a1"], st, None, label="checkpoint")
    label = new_entries(session, count)
    assert [e["type"] for e in label] == ["label"] and label[0]["targetId"] == ids["a1"]
    assert session.leaf_id == label[0]["id"] and label[0]["parentId"] == ids["a1"]  # B-23: leaf on the label
    assert session.get_label(ids["a1"]) == "checkpoint"

    count = len(session.entries)
    res = await navigate(session, ids["a3"], st, ExtractiveSummarizer(), summarize=True, label="explored")
    written = new_entries(session, count)
    assert [e["type"] for e in written] == ["branch_summary", "label"]
    assert (
        written[1]["targetId"] == res.summary_entry_id
        and session.get_label(res.summary_entry_id) == "explored"
    )


async def test_navigate_to_current_leaf_is_a_no_op(tmp_path: Path) -> None:
    session, ids = tree(tmp_path)
    before = session.path.read_bytes()
    log: list[str] = []

    class Spy(Hooks):
        async def before_tree(self, event: dict[str, Any]) -> Any:
            log.append("before")

    res = await navigate(
        session, ids["a3"], settings(tmp_path), ExtractiveSummarizer(), summarize=True, hooks=Spy()
    )
    assert res.cancelled is False and res.summary_entry_id is None and log == []  # case 62: no events
    assert session.path.read_bytes() == before and session.leaf_id == ids["a3"]


async def test_unknown_target_and_missing_model(tmp_path: Path) -> None:
    session, ids = tree(tmp_path)
    with pytest.raises(EntryNotFoundError, match="^Entry nope not found$"):
        await navigate(session, "nope", settings(tmp_path), None)
    with pytest.raises(NavigationError, match="^No model available for summarization$"):
        await navigate(session, ids["u1"], settings(tmp_path), None, summarize=True)


async def test_custom_instructions_append_or_replace(tmp_path: Path, fake: FakeOpenAI) -> None:
    session, ids = tree(tmp_path)
    st = settings(tmp_path, fake)
    fake.queue(Reply.stream(BRANCH_TEXT), Reply.stream("free-form summary"))
    await navigate(
        session,
        ids["a1"],
        st,
        build_summarizer(st, env={}),
        summarize=True,
        custom_instructions="mention the edit",
    )
    assert prompt_of(fake.requests[0]).endswith(
        BRANCH_SUMMARY_PROMPT + "\n\nAdditional focus: mention the edit"
    )

    session.branch(ids["a3"])
    res = await navigate(
        session,
        ids["a1"],
        st,
        build_summarizer(st, env={}),
        summarize=True,
        custom_instructions="Just list the files.",
        replace_instructions=True,
    )
    prompt = prompt_of(fake.requests[1])
    assert prompt.endswith("</conversation>\n\nJust list the files.") and BRANCH_SUMMARY_PROMPT not in prompt
    # replacement instructions define their own format: no heading retry (D-23)
    assert len(fake.requests) == 2 and res.warnings == []


async def test_no_content_to_summarize(tmp_path: Path, fake: FakeOpenAI) -> None:
    session, ids = tree(tmp_path)
    session.append_model_change("openai", "gpt-4o-mini")  # the abandoned part has no message
    st = settings(tmp_path, fake)
    res = await navigate(session, ids["a3"], st, build_summarizer(st, env={}), summarize=True)
    assert fake.requests == []  # case 64: no model call
    assert session.by_id[res.summary_entry_id]["summary"] == NO_BRANCH_CONTENT

    # target below the old leaf: nothing is abandoned, so no summary at all (B-21)
    count = len(session.entries)
    session.branch(ids["a1"])
    res = await navigate(session, ids["a3"], st, build_summarizer(st, env={}), summarize=True)
    assert res.summary_entry_id is None and len(session.entries) == count and session.leaf_id == ids["a3"]


async def test_before_tree_hook_cancel_overrides_and_summary(tmp_path: Path, fake: FakeOpenAI) -> None:
    session, ids = tree(tmp_path)
    st = settings(tmp_path, fake)
    events: list[dict[str, Any]] = []

    class Hook(Hooks):
        def __init__(self, answer: Any) -> None:
            self.answer = answer

        async def before_tree(self, event: dict[str, Any]) -> Any:
            events.append(event)
            return self.answer

        async def after_tree(self, event: dict[str, Any]) -> None:
            events.append({"after": event})

    before = session.path.read_bytes()
    res = await navigate(session, ids["u2"], st, None, hooks=Hook({"cancel": True}))
    assert res.cancelled is True and res.aborted is False  # case 65
    assert session.leaf_id == ids["a3"] and session.path.read_bytes() == before
    prep = events[0]["preparation"]
    assert prep == {
        "targetId": ids["u2"],
        "oldLeafId": ids["a3"],
        "commonAncestorId": ids["u2"],
        "entryIds": [ids["a2"], ids["r2"], ids["r2b"], ids["a3"]],
        "userWantsSummary": False,
        "customInstructions": None,
        "replaceInstructions": False,
        "label": None,
    }
    assert len(events) == 1  # no after_tree when cancelled

    # a hook summary is ignored when no summary was requested
    count = len(session.entries)
    await navigate(session, ids["a1"], st, None, hooks=Hook({"summary": {"summary": "from hook"}}))
    assert len(session.entries) == count

    # ... and used (fromHook) when one was; overrides of instructions and label apply
    session.branch(ids["a3"])
    res = await navigate(
        session,
        ids["a1"],
        st,
        build_summarizer(st, env={}),
        summarize=True,
        hooks=Hook({"summary": {"summary": "from hook", "details": {"x": 1}}, "label": "hooked"}),
    )
    entry = session.by_id[res.summary_entry_id]
    assert entry["summary"] == "from hook" and entry["fromHook"] is True and entry["details"] == {"x": 1}
    assert fake.requests == [] and session.get_label(entry["id"]) == "hooked"
    assert events[-1] == {
        "after": {
            "sessionId": session.session_id,
            "newLeafId": session.leaf_id,
            "oldLeafId": ids["a3"],
            "summaryEntryId": entry["id"],
            "fromHook": True,
        }
    }

    session.branch(ids["a3"])
    fake.queue(Reply.stream(BRANCH_TEXT))
    await navigate(
        session,
        ids["a1"],
        st,
        build_summarizer(st, env={}),
        summarize=True,
        hooks=Hook({"customInstructions": "hook focus"}),
    )
    assert len(fake.requests) == 1 and prompt_of(fake.requests[0]).endswith("Additional focus: hook focus")


async def test_abort_during_summarization(tmp_path: Path, fake: FakeOpenAI) -> None:
    session, ids = tree(tmp_path)
    before = session.path.read_bytes()
    count = len(session.entries)
    st = settings(tmp_path, fake)
    fake.queue(Reply.stream(["## Goal\n", "x"], hang_after_chunks=1))
    streamed = asyncio.Event()

    def on_progress(update: ProgressUpdate) -> None:
        if update.text:
            streamed.set()

    task = asyncio.create_task(
        navigate(
            session, ids["u2"], st, build_summarizer(st, env={}), summarize=True, on_progress=on_progress
        )
    )
    await asyncio.wait_for(streamed.wait(), 10)
    assert busy_reason(session) == "branch summarization in progress"  # case 60: busy while summarizing
    with pytest.raises(BusyError):
        await navigate(session, ids["a1"], st, None)
    task.cancel()
    res = await task
    assert res.cancelled is True and res.aborted is True
    assert await fake.wait_disconnected_async(10)  # the stream was closed
    assert len(session.entries) == count and session.leaf_id == ids["a3"]
    assert session.path.read_bytes() == before and busy_reason(session) is None


async def test_summarizer_error_leaves_session_unchanged(tmp_path: Path, fake: FakeOpenAI) -> None:
    session, ids = tree(tmp_path)
    before = session.path.read_bytes()
    st = settings(tmp_path, fake)
    fake.queue(Reply.stream("## Goal\ncut", finish_reason="length"))
    with pytest.raises(
        SummarizationError,
        match="^Branch summarization failed: generation hit the token cap and the summary is incomplete$",
    ):
        await navigate(session, ids["u2"], st, build_summarizer(st, env={}), summarize=True)
    assert session.leaf_id == ids["a3"] and session.path.read_bytes() == before


async def test_compactions_in_the_abandoned_branch_are_included(tmp_path: Path, fake: FakeOpenAI) -> None:
    session, ids = tree(tmp_path)
    session.append_compaction("EARLIER WORK SUMMARY", ids["a3"], 1234)  # case 67 / D-6
    add(session, user("after the compaction"), assistant("ok then"))
    st = settings(tmp_path, fake)
    fake.queue(Reply.stream(BRANCH_TEXT))
    await navigate(session, ids["a1"], st, build_summarizer(st, env={}), summarize=True)
    prompt = prompt_of(fake.requests[0])
    assert "EARLIER WORK SUMMARY" in prompt and "after the compaction" in prompt


async def test_budget_from_summarizer_window_and_branch_reserve(tmp_path: Path, fake: FakeOpenAI) -> None:
    session = new_session(tmp_path)
    first = add(session, user("root"), assistant("root answer"))
    for n in range(6):
        add(session, user(f"old message {n} " + "w" * 400), assistant(f"reply {n}"))
    st = settings(
        tmp_path,
        fake,
        summarizer={"contextWindow": 20000},
        compaction={"reserveTokens": 1000},
        branchSummary={"reserveTokens": 19700},
    )  # B-9: budget 300 tokens
    fake.queue(Reply.stream(BRANCH_TEXT))
    await navigate(session, first[1], st, build_summarizer(st, env={}), summarize=True)
    prompt = prompt_of(fake.requests[0])
    assert "old message 5" in prompt and "reply 5" in prompt  # newest first until the budget is used
    assert "old message 0" not in prompt and "old message 3" not in prompt


async def test_custom_message_target_and_missing_old_leaf(tmp_path: Path) -> None:
    session, ids = tree(tmp_path)
    custom = session.append_custom_message_entry(
        "note", [{"type": "text", "text": "reminder "}, {"type": "text", "text": "text"}], True
    )
    add(session, assistant("after the note"))
    res = await navigate(session, custom, settings(tmp_path), None)
    assert res.editor_text == "reminder text" and session.leaf_id == ids["a3"]  # B-22: its parent

    # no old leaf (B-1): nothing is abandoned, so no summary even when asked
    session.reset_leaf()
    count = len(session.entries)
    res = await navigate(session, ids["a1"], settings(tmp_path), ExtractiveSummarizer(), summarize=True)
    assert res.summary_entry_id is None and len(session.entries) == count and session.leaf_id == ids["a1"]


async def test_nested_branch_summary_file_lists_are_inherited(tmp_path: Path, fake: FakeOpenAI) -> None:
    session = new_session(tmp_path)
    root = add(session, user("root"), assistant("root answer"))
    session.branch_with_summary(
        root[1], "earlier detour", {"readFiles": ["old/read.py"], "modifiedFiles": ["old/mod.py"]}
    )
    for n in range(4):
        add(session, user(f"message {n} " + "w" * 600), assistant(f"reply {n}"))
    st = settings(
        tmp_path,
        fake,
        summarizer={"contextWindow": 20000},
        compaction={"reserveTokens": 1000},
        branchSummary={"reserveTokens": 19700},
    )  # budget 300: the old summary does not fit
    fake.queue(Reply.stream(BRANCH_TEXT))
    res = await navigate(session, root[1], st, build_summarizer(st, env={}), summarize=True)
    assert "earlier detour" not in prompt_of(fake.requests[0])
    assert session.by_id[res.summary_entry_id]["details"] == {
        "readFiles": ["old/read.py"],
        "modifiedFiles": ["old/mod.py"],
    }


async def test_branch_summary_without_headings_after_a_reminder_uses_the_embedded_summary(
    tmp_path: Path, fake: FakeOpenAI
) -> None:
    session, ids = tree(tmp_path)
    st = settings(tmp_path, fake)
    fake.queue(Reply.stream("Babble without structure."), Reply.stream("More babble."))
    res = await navigate(session, ids["u2"], st, build_summarizer(st, env={}), summarize=True)
    entry = session.by_id[res.summary_entry_id]
    assert len(fake.requests) == 2
    assert "babble" not in entry["summary"].lower()
    assert "## Goal" in entry["summary"] and "<modified-files>\nsrc/a.py" in entry["summary"]  # the embedded summary
    assert len(res.warnings) == 1 and "written instead" in res.warnings[0]
    assert entry["usage"]["output"] == 600  # both model answers were paid for

    strict = settings(tmp_path, fake, summarizer={"strictHeadings": True})
    session.branch(ids["a3"])
    count = len(session.entries)
    fake.queue(Reply.stream("Babble."), Reply.stream("Babble again."))
    with pytest.raises(SummarizationError) as info:
        await navigate(session, ids["u2"], strict, build_summarizer(strict, env={}), summarize=True)
    assert "strictHeadings" in str(info.value) and len(session.entries) == count
