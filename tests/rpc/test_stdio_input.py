"""Hostile input on a real `compactd serve` over stdio (issue 26 §3, §7, §10): raw bytes in one
write, as an LSP client pipelines them. Every request that arrives gets exactly one answer, and
nothing a client sends stalls the requests behind it or puts a traceback in the log."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.e2e.raw import RawServer


def frame(message: Any, delta: int = 0) -> bytes:
    body = message if isinstance(message, bytes) else json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % (len(body) + delta) + body


def request(msg_id: Any, method: str = "session/list", params: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params if params is not None else {}}


def answers(server: RawServer, count: int) -> list[dict[str, Any]]:
    return [server.receive() for _ in range(count)]


def no_more_answers(server: RawServer) -> None:
    """Nothing else was queued: the next answer is the one to this request."""
    assert server.request("ping", "session/list", {})["id"] == "ping"


def test_deep_request_is_answered_and_the_next_one_in_the_same_write_too() -> None:
    server = RawServer()
    try:
        server.initialize()
        deep = (b'{"jsonrpc": "2.0", "id": "deep", "method": "session/list", "params": {"x": '
                + b"[" * 1000 + b"]" * 1000 + b"}}")
        server.write(frame(deep) + frame(request("after")))
        first, second = answers(server, 2)
        assert first["id"] == "deep" and first["error"]["code"] == -32600
        assert "nested too deeply" in first["error"]["message"]
        assert second["id"] == "after" and second["result"] == {"sessions": []}
        no_more_answers(server)
        assert server.shutdown() == 0
        assert "Traceback" not in server.stderr and "RecursionError" not in server.stderr
    finally:
        server.kill()


def test_deep_session_entry_gets_an_error_answer(tmp_path: Path) -> None:
    path = tmp_path / "deep.jsonl"
    header = {"type": "session", "version": 3, "id": "deep-entry", "timestamp": "2025-01-01T00:00:00.000Z",
              "cwd": str(tmp_path)}
    nested = "[" * 1000 + "]" * 1000
    entry = ('{"type": "custom", "customType": "x", "id": "e1", "parentId": null, '
             f'"timestamp": "2025-01-01T00:00:00.000Z", "data": {nested}}}')
    path.write_text(json.dumps(header) + "\n" + entry + "\n")
    server = RawServer()
    try:
        server.initialize()
        assert server.request(1, "session/open", {"path": str(path)})["result"]["sessionId"] == "deep-entry"
        answer = server.request(2, "session/entry", {"sessionId": "deep-entry", "entryId": "e1"})
        assert answer["error"]["code"] == -32017
        assert "nested too deeply" in answer["error"]["message"]
        assert "answer to 2 not sent" in server.stderr
        no_more_answers(server)
        assert server.shutdown() == 0
    finally:
        server.kill()


def test_header_only_frame_does_not_swallow_the_requests_behind_it() -> None:
    server = RawServer()
    try:
        server.initialize()
        # a header block with no body, then two requests, all in one write
        server.write(b"Content-Length: 10\r\n\r\n" + frame(request(1)) + frame(request(2)))
        assert [a["id"] for a in answers(server, 2)] == [1, 2]
        # the same with a length longer than all that follows, the client then waiting for answers
        server.write(b"Content-Length: 4000\r\n\r\n" + frame(request(3)) + frame(request(4)))
        assert [a["id"] for a in answers(server, 2)] == [3, 4]
        no_more_answers(server)
        assert server.shutdown() == 0
    finally:
        server.kill()


def test_wrong_lengths_answer_every_request_once() -> None:
    server = RawServer()
    try:
        server.initialize()
        # slightly too long: the body takes the first bytes of the next header
        server.write(frame(request("long"), 5) + frame(request("next")) + frame(request("last")))
        got = answers(server, 3)
        assert [a["id"] for a in got] == ["long", "next", "last"]
        assert all(a["result"] == {"sessions": []} for a in got)
        # too long, alone: the client waits; the next request it sends ends the cut body
        server.write(frame(request("alone"), 7))
        server.write(frame(request("then")))
        assert [a["id"] for a in answers(server, 2)] == ["alone", "then"]
        # too short: the cut request is answered under its own id, the next one normally
        server.write(frame(request("short"), -4) + frame(request("after")))
        cut, after = answers(server, 2)
        assert cut["id"] == "short" and cut["error"]["code"] == -32700
        assert after["id"] == "after" and after["result"] == {"sessions": []}
        no_more_answers(server)
        assert server.shutdown() == 0
    finally:
        server.kill()


def test_cancels_with_wrong_kinds_of_ids_are_ignored_with_one_line() -> None:
    server = RawServer()
    try:
        server.initialize()
        server.write(frame({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": {"a": 1}}})
                     + frame({"jsonrpc": "2.0", "method": "window/workDoneProgress/cancel",
                              "params": {"token": [1, 2]}}))
        no_more_answers(server)
        assert server.shutdown() == 0
        stderr = server.stderr
        assert "Traceback" not in stderr
        assert "$/cancelRequest ignored: id must be a string or an integer, not dict" in stderr
        assert "window/workDoneProgress/cancel ignored: token must be a string or an integer, not list" in stderr
    finally:
        server.kill()
