"""The three ways to cancel a summarization (D-21) against a model that streams a little and then
stalls: the request is answered with RequestCancelled, the model's HTTP stream is closed (the
server sees the disconnect) and the session file is byte-for-byte unchanged."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.support.fake_openai import FakeOpenAI, Reply

from .helpers import GOOD_SUMMARY, TestClient, call, fake_summarizer, initialize, write_session

STALLING = Reply.stream(GOOD_SUMMARY, hang_after_chunks=2)


async def start_compaction(client: TestClient, fake: FakeOpenAI, tmp_path: Path) -> tuple[Path, bytes, Any]:
    fake.default = STALLING
    await initialize(client, summarizer=fake_summarizer(fake.url))
    path = tmp_path / "s.jsonl"
    write_session(path, tmp_path, turns=6)
    await call(client, "session/open", {"path": str(path)})
    client.progress["tok"] = []
    task = asyncio.ensure_future(call(client, "session/compact", {"sessionId": "e2e-session", "workDoneToken": "tok"},
                                      msg_id="compact-1"))
    # streaming has started: the stall is now on the model's side
    await client.wait_for(lambda: any(v.get("text") for v in client.progress["tok"]))
    return path, path.read_bytes(), task


async def assert_cancelled(client: TestClient, fake: FakeOpenAI, path: Path, before: bytes, task: Any,
                           cancelled_by: str | None) -> None:
    with pytest.raises(JsonRpcException) as info:
        await asyncio.wait_for(task, 30)
    assert info.value.code == -32800
    if cancelled_by is not None:
        assert info.value.data == {"cancelledBy": cancelled_by}
    assert await fake.wait_disconnected_async(30)
    assert path.read_bytes() == before
    context = await call(client, "session/context", {"sessionId": "e2e-session"})
    assert all(m["role"] != "compactionSummary" for m in context["messages"])
    end = await client.wait_for(lambda: client.of("session/compactionEnd"))
    assert end[0]["aborted"] is True and end[0]["result"] is None
    await client.wait_for(lambda: client.progress["tok"][-1]["kind"] == "end")
    # the session is usable again: not busy, and a new compaction may start
    listed = await call(client, "session/list", {})
    assert listed["sessions"][0]["busy"] is False


async def test_cancel_request(client: TestClient, fake: FakeOpenAI, tmp_path: Path) -> None:
    path, before, task = await start_compaction(client, fake, tmp_path)
    client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="compact-1"))
    await assert_cancelled(client, fake, path, before, task, None)


async def test_cancel_progress_token(client: TestClient, fake: FakeOpenAI, tmp_path: Path) -> None:
    path, before, task = await start_compaction(client, fake, tmp_path)
    client.protocol.notify(types.WINDOW_WORK_DONE_PROGRESS_CANCEL, types.WorkDoneProgressCancelParams(token="tok"))
    await assert_cancelled(client, fake, path, before, task, "progress")


async def test_session_abort(client: TestClient, fake: FakeOpenAI, tmp_path: Path) -> None:
    path, before, task = await start_compaction(client, fake, tmp_path)
    aborted = await call(client, "session/abort", {"sessionId": "e2e-session"})
    assert aborted == {"sessionId": "e2e-session", "aborted": 1}
    await assert_cancelled(client, fake, path, before, task, "abort")


async def test_cancel_then_compact_again(client: TestClient, fake: FakeOpenAI, tmp_path: Path) -> None:
    path, before, task = await start_compaction(client, fake, tmp_path)
    client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="compact-1"))
    await assert_cancelled(client, fake, path, before, task, None)
    fake.default = Reply.stream(GOOD_SUMMARY)
    result = await call(client, "session/compact", {"sessionId": "e2e-session"})
    assert path.read_text().splitlines()[-1].startswith('{"type":"compaction"') and result["entryId"]


async def navigate_stalled(client: TestClient, fake: FakeOpenAI, tmp_path: Path) -> tuple[Path, bytes, list[str], Any]:
    fake.default = STALLING
    await initialize(client, summarizer=fake_summarizer(fake.url))
    path = tmp_path / "s.jsonl"
    ids = write_session(path, tmp_path, turns=4)
    await call(client, "session/open", {"path": str(path)})
    client.progress["nav"] = []
    task = asyncio.ensure_future(call(client, "session/navigate", {
        "sessionId": "e2e-session", "targetId": ids[1], "summarize": True, "workDoneToken": "nav"}, msg_id="nav-1"))
    await client.wait_for(lambda: any(v.get("text") for v in client.progress["nav"]))
    return path, path.read_bytes(), ids, task


async def test_navigate_cancel_request(client: TestClient, fake: FakeOpenAI, tmp_path: Path) -> None:
    path, before, ids, task = await navigate_stalled(client, fake, tmp_path)
    client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="nav-1"))
    with pytest.raises(JsonRpcException) as info:
        await asyncio.wait_for(task, 30)
    assert info.value.code == -32800
    assert await fake.wait_disconnected_async(30)
    assert path.read_bytes() == before
    tree = await call(client, "session/tree", {"sessionId": "e2e-session"})
    assert tree["leafId"] == ids[-1] and len(tree["nodes"]) == len(ids)


async def test_navigate_abort_reports_aborted(client: TestClient, fake: FakeOpenAI, tmp_path: Path) -> None:
    path, before, ids, task = await navigate_stalled(client, fake, tmp_path)
    assert (await call(client, "session/abort", {"sessionId": "e2e-session"}))["aborted"] == 1
    result = await asyncio.wait_for(task, 30)  # B-21: an aborted branch summary is a result, not an error
    assert result["cancelled"] is True and result["aborted"] is True and result["leafId"] == ids[-1]
    assert await fake.wait_disconnected_async(30)
    assert path.read_bytes() == before
