"""Every documented error code, produced by a real daemon. (RequestCancelled: test_cancel.py;
CancelledByHook: test_hooks.py; parse/invalid request/not initialized: test_garbage.py.)"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.support.fake_openai import FakeOpenAI, Reply

from .helpers import (
    GOOD_SUMMARY,
    TestClient,
    call,
    call_error,
    fake_summarizer,
    initialize,
    user_message,
    write_session,
)


async def open_session(client: TestClient, tmp_path: Path, turns: int = 6) -> tuple[Path, list[str]]:
    path = tmp_path / "s.jsonl"
    ids = write_session(path, tmp_path, turns=turns)
    await call(client, "session/open", {"path": str(path)})
    return path, ids


async def test_invalid_params_name_the_field(client: TestClient, tmp_path: Path) -> None:
    await initialize(client)
    await open_session(client, tmp_path)
    cases = [
        ("session/open", {}, "path: Field required"),
        ("session/context", {}, "sessionId: Field required"),
        ("session/context", {"sessionId": 5}, "sessionId: Input should be a valid string"),
        ("session/navigate", {"sessionId": "e2e-session", "targetId": "x", "summarize": "yes"},
         "summarize: Input should be a valid boolean"),
        ("session/prepareCompaction", {"sessionId": "e2e-session", "keepRecentTokens": -1},
         "keepRecentTokens: Input should be greater than or equal to 0"),
        ("session/append", {"sessionId": "e2e-session"}, "entries: Field required"),
        ("session/tree", [1, 2], "params: expected an object"),
    ]
    for method, params, message in cases:
        error = await call_error(client, method, params)
        assert error.code == -32602, (method, error.message)
        assert message in error.message, (method, error.message)


async def test_method_not_found(client: TestClient) -> None:
    await initialize(client)
    error = await call_error(client, "session/doesNotExist", {})
    assert error.code == -32601


async def test_unknown_session(client: TestClient) -> None:
    await initialize(client)
    for method in ("session/context", "session/tree", "session/tokenStats", "session/compact", "session/abort",
                   "session/close"):
        error = await call_error(client, method, {"sessionId": "nope"})
        assert error.code == -32010 and "Unknown session: nope" in error.message


async def test_unknown_entry(client: TestClient, tmp_path: Path) -> None:
    await initialize(client)
    await open_session(client, tmp_path)
    sid = {"sessionId": "e2e-session"}
    for method, params in [
        ("session/entry", {**sid, "entryId": "zzz"}),
        ("session/context", {**sid, "leafId": "zzz"}),
        ("session/tokenStats", {**sid, "leafId": "zzz"}),
        ("session/prepareCompaction", {**sid, "leafId": "zzz"}),
        ("session/navigate", {**sid, "targetId": "zzz"}),
        ("session/label", {**sid, "targetId": "zzz", "label": "x"}),
        ("session/fork", {**sid, "leafId": "zzz"}),
    ]:
        error = await call_error(client, method, params)
        assert error.code == -32011 and "zzz" in error.message, (method, error.message)


async def test_busy_while_summarizing(client: TestClient, fake: FakeOpenAI, tmp_path: Path) -> None:
    fake.default = Reply.stream(GOOD_SUMMARY, hang_after_chunks=1)
    await initialize(client, summarizer=fake_summarizer(fake.url))
    _, ids = await open_session(client, tmp_path)
    client.progress["t"] = []
    task = asyncio.ensure_future(call(client, "session/compact", {"sessionId": "e2e-session", "workDoneToken": "t"}))
    await client.wait_for(lambda: any(v.get("text") for v in client.progress["t"]))
    for method, params in [
        ("session/navigate", {"sessionId": "e2e-session", "targetId": ids[2]}),
        ("session/fork", {"sessionId": "e2e-session"}),
        ("session/compact", {"sessionId": "e2e-session"}),
    ]:
        error = await call_error(client, method, params)
        assert error.code == -32012 and "busy" in error.message, (method, error.message)
    # appends are accepted meanwhile (D-20)
    appended = await call(client, "session/append", {"sessionId": "e2e-session", "entries": [
        {"type": "message", "message": user_message("while compacting", 1_770_000_000_000)}]})
    assert appended["entryIds"]
    assert (await call(client, "session/list", {}))["sessions"][0]["running"] == ["compaction"]
    await call(client, "session/abort", {"sessionId": "e2e-session"})
    with pytest.raises(JsonRpcException) as info:
        await asyncio.wait_for(task, 60)
    assert info.value.code == -32800


async def test_nothing_to_compact(client: TestClient, fake: FakeOpenAI, tmp_path: Path) -> None:
    fake.default = Reply.stream(GOOD_SUMMARY)
    await initialize(client, summarizer=fake_summarizer(fake.url))
    small = tmp_path / "small.jsonl"
    write_session(small, tmp_path, turns=1, text_chars=50, session_id="small")
    await call(client, "session/open", {"path": str(small)})
    error = await call_error(client, "session/compact", {"sessionId": "small"})
    assert error.code == -32013 and error.message == "Nothing to compact (session too small)"
    assert error.data == {"reason": "tooSmall"}
    end = client.of("session/compactionEnd")[-1]
    assert end["errorMessage"] == "Compaction failed: Nothing to compact (session too small)"
    assert end["aborted"] is False

    await open_session(client, tmp_path)
    await call(client, "session/compact", {"sessionId": "e2e-session"})
    again = await call_error(client, "session/compact", {"sessionId": "e2e-session"})
    assert again.code == -32013 and again.message == "Already compacted"
    assert again.data == {"reason": "alreadyCompacted"}
    assert await call(client, "session/prepareCompaction", {"sessionId": "e2e-session"}) is None


async def test_each_reserve_is_checked_where_it_is_used(client: TestClient, fake: FakeOpenAI, tmp_path: Path) -> None:
    """A 4096-token summarizer: compaction works with its own reserve below the window; the branch
    summary's default reserve (16384) is refused only by a branch summary (issue 26 §11). Before,
    every compaction was refused with the branch summary's reserve."""
    fake.default = Reply.stream(GOOD_SUMMARY)
    summarizer = {**fake_summarizer(fake.url), "contextWindow": 4096}
    await initialize(client, summarizer=summarizer,
                     settings={"compaction": {"reserveTokens": 1000, "keepRecentTokens": 300}})
    assert not any("reserveTokens" in m.message for m in client.messages)  # no warning at initialize
    path, ids = await open_session(client, tmp_path)
    result = await call(client, "session/compact", {"sessionId": "e2e-session"})
    assert result["entryId"] and fake.requests
    before = path.read_bytes()
    error = await call_error(client, "session/navigate", {"sessionId": "e2e-session", "targetId": ids[1],
                                                          "summarize": True})
    assert error.code == -32014 and error.data == {"key": "branchSummary.reserveTokens"}
    assert "branchSummary.reserveTokens (16384) must be smaller than the context window (4096)" in error.message
    assert path.read_bytes() == before


async def test_settings_error(client: TestClient, tmp_path: Path) -> None:
    await initialize(client, settings={"compaction": {"reserveTokens": "lots"}})
    assert any("compaction.reserveTokens" in m.message for m in client.messages)  # window/showMessage
    await open_session(client, tmp_path)
    error = await call_error(client, "session/compact", {"sessionId": "e2e-session"})
    assert error.code == -32014 and "compaction.reserveTokens" in error.message
    assert error.data == {"key": "compaction.reserveTokens"}
    # fixed without a restart
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"settings": {"compaction": {"reserveTokens": 1000}}}))
    stats = await call(client, "session/tokenStats", {"sessionId": "e2e-session"})
    assert stats["reserveTokens"] == 1000


async def test_api_key_in_settings_is_refused(client: TestClient, tmp_path: Path) -> None:
    await initialize(client, summarizer={"backend": "openai", "apiKey": "sk-should-not-be-here-123456"})
    await open_session(client, tmp_path)
    error = await call_error(client, "session/compact", {"sessionId": "e2e-session"})
    assert error.code == -32014 and "sk-should-not-be-here" not in error.message


async def test_summarization_failed(client: TestClient, fake: FakeOpenAI, tmp_path: Path) -> None:
    fake.default = Reply.error(400, "model overloaded with nonsense")
    await initialize(client, summarizer=fake_summarizer(fake.url))
    path, _ = await open_session(client, tmp_path)
    before = path.read_bytes()
    error = await call_error(client, "session/compact", {"sessionId": "e2e-session"})
    assert error.code == -32015 and error.message.startswith("Compaction failed:")
    assert path.read_bytes() == before
    end = client.of("session/compactionEnd")[-1]
    assert end["aborted"] is False and end["errorMessage"].startswith("Compaction failed:")


async def test_concurrent_modification(client: TestClient, tmp_path: Path) -> None:
    await initialize(client)
    path, _ = await open_session(client, tmp_path)
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:3]))  # another process truncated the file
    error = await call_error(client, "session/append", {"sessionId": "e2e-session", "entries": [
        {"type": "message", "message": user_message("x", 1)}]})
    assert error.code == -32016 and str(path) in error.message and "nothing was written" in error.message
    assert path.read_text() == "".join(lines[:3])
    # the daemon read the truncated file again and said so; the next append lands on that view
    assert client.of("session/didChange")[-1]["kind"] == "reloaded"
    again = await call(client, "session/append", {"sessionId": "e2e-session", "entries": [
        {"type": "message", "message": user_message("x", 1)}]})
    assert json.loads(path.read_text().splitlines()[-1])["parentId"] == json.loads(lines[2])["id"]
    assert again["leafId"] == json.loads(path.read_text().splitlines()[-1])["id"]


async def test_invalid_session_file(client: TestClient, tmp_path: Path) -> None:
    await initialize(client)
    bad = tmp_path / "notes.jsonl"
    bad.write_text('{"hello": "world"}\n')
    error = await call_error(client, "session/open", {"path": str(bad)})
    assert error.code == -32017 and str(bad) in error.message


async def test_file_errors(client: TestClient, tmp_path: Path) -> None:
    await initialize(client)
    error = await call_error(client, "session/open", {"path": str(tmp_path)})
    assert error.code == -32018 and "directory" in error.message
    path, _ = await open_session(client, tmp_path)
    exists = await call_error(client, "session/create", {"cwd": str(tmp_path), "path": str(path)})
    assert exists.code == -32018 and "already exists" in exists.message


async def test_session_conflict(client: TestClient, tmp_path: Path) -> None:
    await initialize(client)
    path, _ = await open_session(client, tmp_path)
    copy = tmp_path / "copy.jsonl"
    shutil.copyfile(path, copy)
    error = await call_error(client, "session/open", {"path": str(copy)})
    assert error.code == -32020 and "e2e-session" in error.message


async def test_open_of_a_device_or_fifo_is_refused_at_once(client: TestClient, tmp_path: Path) -> None:
    """Reading /dev/zero never ends and opening a FIFO waits for a writer: both used to leave the
    request unanswered and a worker thread lost."""
    await initialize(client)
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    for path, kind in (("/dev/zero", "device"), (str(fifo), "FIFO")):
        error = await asyncio.wait_for(call_error(client, "session/open", {"path": path}), 30)
        assert error.code == -32018 and f"{path} is a {kind}" in error.message and "not a session file" in error.message
    assert (await asyncio.wait_for(call(client, "session/list"), 30)) == {"sessions": []}
