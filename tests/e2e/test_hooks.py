"""Hooks over the wire: session/beforeCompact, session/compacting, session/beforeTree are asked from
the client when it declared them; answers are applied; errors and silence count as no answer."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from tests.support.fake_openai import FakeOpenAI, Reply

from .helpers import (
    GOOD_SUMMARY,
    HookFailure,
    TestClient,
    call,
    call_error,
    fake_summarizer,
    initialize,
    write_session,
)

ALL_HOOKS = ["beforeCompact", "compacting", "beforeTree"]


async def setup(client: TestClient, fake: FakeOpenAI, tmp_path: Path, **init: Any) -> tuple[Path, list[str]]:
    fake.default = Reply.stream(GOOD_SUMMARY)
    await initialize(client, summarizer=fake_summarizer(fake.url), **init)
    path = tmp_path / "s.jsonl"
    ids = write_session(path, tmp_path, turns=6)
    await call(client, "session/open", {"path": str(path)})
    return path, ids


async def test_before_compact_supplies_the_compaction(client: TestClient, fake: FakeOpenAI, tmp_path: Path) -> None:
    path, ids = await setup(client, fake, tmp_path, hooks=ALL_HOOKS)
    client.hook_answers["session/beforeCompact"] = lambda event: {"compaction": {
        "summary": "summary from the extension", "firstKeptEntryId": event["preparation"]["firstKeptEntryId"],
        "tokensBefore": event["preparation"]["tokensBefore"]}}
    result = await call(client, "session/compact", {"sessionId": "e2e-session", "customInstructions": "be brief"})
    assert result["fromHook"] is True and result["summary"] == "summary from the extension"
    assert fake.requests == []  # no model call
    name, event = client.hook_calls[0]
    assert name == "session/beforeCompact"
    assert event["sessionId"] == "e2e-session" and event["reason"] == "manual" and event["willRetry"] is False
    assert event["customInstructions"] == "be brief" and event["branchEntryIds"] == ids
    assert event["preparation"]["conversationText"]
    entry = json.loads(path.read_text().splitlines()[-1])
    assert entry["type"] == "compaction" and entry["fromHook"] is True
    assert [n for n, _ in client.hook_calls] == ["session/beforeCompact"]  # compacting is skipped (H-9)


async def test_before_compact_naming_an_unknown_first_kept_entry_is_refused(client: TestClient, fake: FakeOpenAI,
                                                                            tmp_path: Path) -> None:
    path, ids = await setup(client, fake, tmp_path, hooks=["beforeCompact"])
    before = path.read_bytes()
    client.hook_answers["session/beforeCompact"] = lambda event: {"compaction": {
        "summary": "summary from the extension", "firstKeptEntryId": "no-such-entry",
        "tokensBefore": event["preparation"]["tokensBefore"]}}
    error = await call_error(client, "session/compact", {"sessionId": "e2e-session"})
    assert error.code == -32015  # before: stored as given, and the context became the summary alone
    assert "'no-such-entry', which is not on the session's current branch" in error.message
    assert path.read_bytes() == before and fake.requests == []
    context = await call(client, "session/context", {"sessionId": "e2e-session"})
    assert [m["entryId"] for m in context["messages"]] == ids  # the session in memory is untouched


async def test_before_compact_cancel(client: TestClient, fake: FakeOpenAI, tmp_path: Path) -> None:
    path, _ = await setup(client, fake, tmp_path, hooks=["beforeCompact"])
    before = path.read_bytes()
    client.hook_answers["session/beforeCompact"] = {"cancel": True}
    error = await call_error(client, "session/compact", {"sessionId": "e2e-session"})
    assert error.code == -32019 and error.message == "Compaction cancelled"
    assert path.read_bytes() == before and fake.requests == []
    end = client.of("session/compactionEnd")[-1]
    assert end["aborted"] is True and "errorMessage" not in end


async def test_compacting_hook_shapes_the_prompt(client: TestClient, fake: FakeOpenAI, tmp_path: Path) -> None:
    path, _ = await setup(client, fake, tmp_path, hooks=["compacting"])
    client.hook_answers["session/compacting"] = {
        "prompt": "Summarize like a pirate (custom prompt).", "context": ["The user prefers tabs."],
        "preserveData": {"ticket": "ABC-1"}}
    await call(client, "session/compact", {"sessionId": "e2e-session"})
    name, event = client.hook_calls[0]
    assert name == "session/compacting" and event["sessionId"] == "e2e-session"
    assert event["messages"] and {"role", "entryId"} <= set(event["messages"][0])
    prompt = fake.requests[0].body["messages"][-1]["content"]
    assert "Summarize like a pirate (custom prompt)." in prompt and "The user prefers tabs." in prompt
    entry = json.loads(path.read_text().splitlines()[-1])
    assert entry["preserveData"] == {"ticket": "ABC-1"}


async def test_before_tree_supplies_the_summary(client: TestClient, fake: FakeOpenAI, tmp_path: Path) -> None:
    _, ids = await setup(client, fake, tmp_path, hooks=["beforeTree"])
    client.hook_answers["session/beforeTree"] = {"summary": {"summary": "branch summary by the extension"},
                                                 "label": "from-hook"}
    result = await call(client, "session/navigate", {"sessionId": "e2e-session", "targetId": ids[3],
                                                      "summarize": True})
    entry = (await call(client, "session/entry", {"sessionId": "e2e-session",
                                                  "entryId": result["summaryEntryId"]}))
    assert entry["entry"]["summary"] == "branch summary by the extension" and entry["entry"]["fromHook"] is True
    assert entry["label"] == "from-hook"
    assert fake.requests == []
    preparation = client.hook_calls[0][1]["preparation"]
    assert preparation["targetId"] == ids[3] and preparation["oldLeafId"] == ids[-1]
    assert preparation["userWantsSummary"] is True


async def test_before_tree_cancel(client: TestClient, fake: FakeOpenAI, tmp_path: Path) -> None:
    path, ids = await setup(client, fake, tmp_path, hooks=["beforeTree"])
    before = path.read_bytes()
    client.hook_answers["session/beforeTree"] = {"cancel": True}
    result = await call(client, "session/navigate", {"sessionId": "e2e-session", "targetId": ids[3]})
    assert result["cancelled"] is True and result["aborted"] is False and result["leafId"] == ids[-1]
    assert path.read_bytes() == before


async def test_silent_hook_times_out(client: TestClient, fake: FakeOpenAI, tmp_path: Path) -> None:
    await setup(client, fake, tmp_path, hooks=["beforeCompact"], hook_timeout_ms=300)
    cancelled: list[bool] = []

    async def never(event: Any) -> Any:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.append(True)  # the server withdrew its request with $/cancelRequest
            raise
        return {"cancel": True}

    client.hook_answers["session/beforeCompact"] = never
    result = await call(client, "session/compact", {"sessionId": "e2e-session"})
    assert result["fromHook"] is False and len(fake.requests) == 1  # default behaviour went on
    await client.wait_for(lambda: cancelled)


async def test_failing_hook_is_no_answer(client: TestClient, fake: FakeOpenAI, tmp_path: Path) -> None:
    await setup(client, fake, tmp_path, hooks=["beforeCompact"])

    def broken(event: Any) -> Any:
        raise HookFailure("extension crashed")

    client.hook_answers["session/beforeCompact"] = broken
    result = await call(client, "session/compact", {"sessionId": "e2e-session"})
    assert result["fromHook"] is False and len(fake.requests) == 1


async def test_undeclared_hooks_are_not_asked(client: TestClient, fake: FakeOpenAI, tmp_path: Path) -> None:
    await setup(client, fake, tmp_path)
    client.hook_answers["session/beforeCompact"] = {"cancel": True}
    result = await call(client, "session/compact", {"sessionId": "e2e-session"})
    assert result["entryId"] and client.hook_calls == []
