"""The whole `session/tree` streamed as partial results (issue 29, never wait): with a
`partialResultToken` the nodes come as `$/progress` chunks that reassemble exactly into the
answer without one, and a request sent while the chunks are still coming is answered before
the stream ends (other answers are written between chunks); a cancelled stream stops. A real
daemon subprocess."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from compactd.rpc.tree_stream import CHUNK_NODES
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from .helpers import TestClient, call, call_error, initialize, user_message, write_session

SID = "e2e-session"


async def open_long(client: TestClient, tmp_path: Path, turns: int) -> list[str]:
    await initialize(client)
    path = tmp_path / "s.jsonl"
    ids = write_session(path, tmp_path, turns=turns, text_chars=30)
    await call(client, "session/open", {"path": str(path)})
    return ids


def reassembled(chunks: list[dict[str, Any]], answer: dict[str, Any]) -> dict[str, Any]:
    return {**answer, "nodes": [node for chunk in chunks for node in chunk["nodes"]] + answer["nodes"]}


async def test_chunks_reassemble_into_the_unstreamed_tree(client: TestClient, tmp_path: Path) -> None:
    ids = await open_long(client, tmp_path, turns=1300)  # 2600 entries: two chunks and the rest
    # A branch and a label, so the answer is more than one straight path.
    await call(client, "session/navigate", {"sessionId": SID, "targetId": ids[10]})
    await call(client, "session/append", {"sessionId": SID, "entries": [
        {"type": "message", "message": user_message("another way", 1_760_100_000_000)}]})
    await call(client, "session/label", {"sessionId": SID, "targetId": ids[3], "label": "here"})
    whole = await call(client, "session/tree", {"sessionId": SID})
    answer = await call(client, "session/tree", {"sessionId": SID, "partialResultToken": "tree-1"})
    chunks = client.progress["tree-1"]
    assert [len(chunk["nodes"]) for chunk in chunks] == [CHUNK_NODES, CHUNK_NODES]
    assert len(answer["nodes"]) == len(whole["nodes"]) - 2 * CHUNK_NODES == 602
    assert reassembled(chunks, answer) == whole
    assert answer["leafId"] == whole["leafId"] and answer["compat"] == "pi"
    # An integer token works the same; a tree that fits one chunk comes whole in the answer.
    small = await call(client, "session/tree", {"sessionId": SID, "partialResultToken": 7, "limit": 3})
    assert 7 not in client.progress and "lists" in small  # pages are never streamed


async def test_small_tree_streams_nothing(client: TestClient, tmp_path: Path) -> None:
    await open_long(client, tmp_path, turns=3)
    whole = await call(client, "session/tree", {"sessionId": SID})
    answer = await call(client, "session/tree", {"sessionId": SID, "partialResultToken": 5})
    assert answer == whole and client.progress.get(5, []) == []


async def test_bad_token_is_invalid_params(client: TestClient, tmp_path: Path) -> None:
    await open_long(client, tmp_path, turns=3)
    for bad in (True, 1.5, {"a": 1}, ["x"]):
        error = await call_error(client, "session/tree", {"sessionId": SID, "partialResultToken": bad})
        assert error.code == -32602 and "partialResultToken" in error.message


async def test_request_sent_mid_stream_is_answered_before_the_stream_ends(client: TestClient, tmp_path: Path) -> None:
    ids = await open_long(client, tmp_path, turns=12000)  # 24k nodes: 23 chunks and the rest
    total = 24000 // CHUNK_NODES - 1
    tree = asyncio.ensure_future(call(client, "session/tree", {"sessionId": SID, "partialResultToken": "big"}))
    await client.wait_for(lambda: client.progress.get("big"), timeout=120)
    entry = await call(client, "session/entry", {"sessionId": SID, "entryId": ids[5]})
    chunks_before_entry = len(client.progress["big"])
    assert entry["entry"]["id"] == ids[5]
    assert not tree.done() and chunks_before_entry < total
    answer = await tree
    assert len(client.progress["big"]) == total
    assert [n["id"] for n in reassembled(client.progress["big"], answer)["nodes"]] == ids


async def test_a_cancelled_stream_sends_no_further_chunks(client: TestClient, tmp_path: Path) -> None:
    await open_long(client, tmp_path, turns=12000)
    total = 24000 // CHUNK_NODES - 1
    tree = asyncio.ensure_future(call(client, "session/tree", {"sessionId": SID, "partialResultToken": "gone"},
                                      msg_id="tree-1"))
    await client.wait_for(lambda: client.progress.get("gone"), timeout=120)
    client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="tree-1"))
    with pytest.raises(JsonRpcException) as info:
        await asyncio.wait_for(tree, 60)
    assert info.value.code == -32800
    # Everything the daemon wrote before its answer has been read: no chunk comes after it.
    received = len(client.progress["gone"])
    await call(client, "session/entry", {"sessionId": SID, "entryId": "e0001"})
    assert len(client.progress["gone"]) == received < total
