"""The API key never leaves a real `compactd serve` (issue 26 §6), whatever the model server sends
back, and an empty event stream ends in a clear overflow error at once (§11): the daemon speaks to
the project's fake OpenAI server over HTTP on 127.0.0.1; everything the client receives (results,
errors, progress, notifications), the session file and the daemon's log (DEBUG) are searched for
any 8-character piece of the key."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.e2e.helpers import GOOD_SUMMARY, SECRET, fake_summarizer, write_session
from tests.e2e.raw import RawServer
from tests.support.fake_openai import FakeOpenAI, Reply


def pieces_of_key(text: str) -> list[str]:
    return [SECRET[i:i + 8] for i in range(len(SECRET) - 7) if SECRET[i:i + 8] in text]


def call(server: RawServer, msg_id: Any, method: str, params: dict[str, Any],
         seen: list[dict[str, Any]]) -> dict[str, Any]:
    """A request; every message received until its answer is kept in `seen`."""
    server.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
    while True:
        message = server.receive()
        seen.append(message)
        if "method" not in message and message.get("id") == msg_id:
            return message


def start(fake: FakeOpenAI, tmp_path: Path, retry: bool = False) -> tuple[RawServer, Path]:
    path = tmp_path / "s.jsonl"
    write_session(path, tmp_path, turns=6)
    server = RawServer(COMPACTD_LOG_LEVEL="DEBUG")
    server.initialize({"summarizer": fake_summarizer(fake.url),
                       "settings": {"retry": {"enabled": retry, "baseDelayMs": 1},
                                    "compaction": {"keepRecentTokens": 800}}})
    return server, path


def test_key_echoed_by_the_server_appears_nowhere(tmp_path: Path) -> None:
    fake = FakeOpenAI(default=Reply.stream(GOOD_SUMMARY, echo_authorization=True)).start()
    server, path = start(fake, tmp_path)
    seen: list[dict[str, Any]] = []
    try:
        call(server, 1, "session/open", {"path": str(path)}, seen)
        done = call(server, 2, "session/compact", {"sessionId": "e2e-session", "workDoneToken": "tok"}, seen)
        assert fake.requests[0].headers["authorization"] == f"Bearer {SECRET}"  # the server had it
        summary = done["result"]["summary"]
        assert "Bearer ***" in summary  # it was echoed, and masked
        progress = [m for m in seen if m.get("method") == "$/progress"]
        assert progress  # the streamed text went out as progress
        # A plain-text error with the key across the 500-character cut, on the next compaction.
        fake.default = Reply(status=400, body="y" * 488 + "Bearer " + SECRET + " refused")
        other = tmp_path / "other.jsonl"
        write_session(other, tmp_path, turns=6, session_id="other-session")
        call(server, 3, "session/open", {"path": str(other)}, seen)
        before = other.read_bytes()
        failed = call(server, 4, "session/compact", {"sessionId": "other-session", "workDoneToken": "t2"}, seen)
        assert failed["error"]["code"] == -32015 and other.read_bytes() == before
        assert "Bearer *" in failed["error"]["message"]
        assert server.shutdown() == 0
        assert pieces_of_key(json.dumps(seen)) == []
        assert pieces_of_key(path.read_text()) == []
        assert pieces_of_key(server.stderr) == []
    finally:
        server.kill()
        fake.stop()


def test_redirect_to_another_port_is_not_followed(tmp_path: Path) -> None:
    elsewhere = FakeOpenAI(default=Reply.stream(GOOD_SUMMARY)).start()
    fake = FakeOpenAI(default=Reply(status=307, body="",
                                    headers={"location": f"{elsewhere.url}/chat/completions"})).start()
    server, path = start(fake, tmp_path)
    seen: list[dict[str, Any]] = []
    try:
        call(server, 1, "session/open", {"path": str(path)}, seen)
        before = path.read_bytes()
        failed = call(server, 2, "session/compact", {"sessionId": "e2e-session"}, seen)
        assert failed["error"]["code"] == -32015
        assert "redirecting to another origin" in failed["error"]["message"]
        assert elsewhere.requests == []  # before: the conversation was sent there
        assert path.read_bytes() == before
        assert server.shutdown() == 0
    finally:
        server.kill()
        fake.stop()
        elsewhere.stop()


def test_empty_event_stream_is_reported_as_an_overflow_without_retries(tmp_path: Path) -> None:
    fake = FakeOpenAI(default=Reply(no_events=True)).start()
    server, path = start(fake, tmp_path, retry=True)
    seen: list[dict[str, Any]] = []
    try:
        call(server, 1, "session/open", {"path": str(path)}, seen)
        before = path.read_bytes()
        failed = call(server, 2, "session/compact", {"sessionId": "e2e-session"}, seen)
        message = failed["error"]["message"]
        assert failed["error"]["code"] == -32015
        assert len(fake.requests) == 1  # before: 4 (retried as a cut-off stream)
        assert "closed the response stream without sending anything" in message
        assert "tokens (estimated)" in message and "set summarizer.contextWindow" in message
        assert message.count("summarizer.contextWindow") == 1
        assert path.read_bytes() == before
        assert server.shutdown() == 0
    finally:
        server.kill()
        fake.stop()
