"""While one session is summarizing (a model that stalls), the daemon keeps answering: requests on
other sessions, statistics and views of the same session, appends, opening a big file."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from tests.support.fake_openai import FakeOpenAI, Reply

from .helpers import GOOD_SUMMARY, TestClient, call, fake_summarizer, initialize, user_message, write_session

GENEROUS = 60  # seconds; a hang (not slowness) is what this guards against


async def test_other_requests_are_answered_during_a_compaction(client: TestClient, fake: FakeOpenAI,
                                                               tmp_path: Path, pi_fixture: Path) -> None:
    fake.default = Reply.stream(GOOD_SUMMARY, hang_after_chunks=1)
    await initialize(client, summarizer=fake_summarizer(fake.url))
    a = tmp_path / "a.jsonl"
    b = tmp_path / "b.jsonl"
    write_session(a, tmp_path, turns=6, session_id="A")
    b_ids = write_session(b, tmp_path, turns=6, session_id="B")
    await call(client, "session/open", {"path": str(a)})
    await call(client, "session/open", {"path": str(b)})
    client.progress["a"] = []
    compaction = asyncio.ensure_future(call(client, "session/compact", {"sessionId": "A", "workDoneToken": "a"}))
    await client.wait_for(lambda: any(v.get("text") for v in client.progress["a"]))

    async def answered(method: str, params: dict) -> object:
        return await asyncio.wait_for(call(client, method, params), GENEROUS)

    stats_a = await answered("session/tokenStats", {"sessionId": "A"})
    assert stats_a["contextTokens"] > 0
    assert (await answered("session/context", {"sessionId": "A"}))["messages"]
    assert await answered("session/prepareCompaction", {"sessionId": "A"}) is not None
    assert (await answered("session/append", {"sessionId": "A", "entries": [
        {"type": "message", "message": user_message("queued while compacting", 1_770_000_000_000)}]}))["entryIds"]
    assert (await answered("session/tokenStats", {"sessionId": "B"}))["exactTokens"] > 0
    assert (await answered("session/tree", {"sessionId": "B"}))["nodes"]
    moved = await answered("session/navigate", {"sessionId": "B", "targetId": b_ids[3]})
    assert moved["leafId"] == b_ids[3]
    big = tmp_path / "big.jsonl"
    shutil.copyfile(pi_fixture, big)
    opened = await answered("session/open", {"path": str(big)})
    assert opened["entryCount"] > 900
    assert not compaction.done()  # the model is still stalled: all of the above ran beside it

    await call(client, "session/abort", {"sessionId": "A"})
    with pytest.raises(JsonRpcException) as info:
        await asyncio.wait_for(compaction, GENEROUS)
    assert info.value.code == -32800
    assert await fake.wait_disconnected_async(GENEROUS)
