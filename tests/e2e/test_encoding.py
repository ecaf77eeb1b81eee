"""Responses are encoded by orjson (UTF-8, byte-exact Content-Length) and fall back to pygls'
encoder for what orjson refuses: a lone surrogate a client sent must still come back intact."""

from __future__ import annotations

from pathlib import Path

from .raw import RawServer


def test_non_ascii_and_lone_surrogates_round_trip(tmp_path: Path) -> None:
    server = RawServer(PI_CODING_AGENT_DIR=str(tmp_path))
    try:
        server.initialize()
        created = server.request(1, "session/create", {"cwd": str(tmp_path), "inMemory": True})["result"]
        session_id = created["sessionId"]
        texts = ["héllo wörld 😀 — “quotes” \u2028", "half a pair: \ud83d alone"]
        ids = []
        for n, text in enumerate(texts, start=2):
            appended = server.request(n, "session/append", {"sessionId": session_id, "entries": [
                {"type": "message", "message": {"role": "user", "content": text, "timestamp": 1}}]})
            ids += appended["result"]["entryIds"]
        for n, (entry_id, text) in enumerate(zip(ids, texts), start=10):
            entry = server.request(n, "session/entry", {"sessionId": session_id, "entryId": entry_id})
            assert entry["result"]["entry"]["message"]["content"] == text
        # frames stay in sync after multi-byte bodies: one more ordinary request
        assert server.request(20, "session/list", {})["result"]["sessions"][0]["sessionId"] == session_id
        assert server.shutdown() == 0
    finally:
        server.kill()


def test_answers_encoded_in_workers_keep_what_orjson_refuses(tmp_path: Path) -> None:
    """Dry runs and contexts are encoded where they are built (rpc/answers.py); a lone surrogate
    in the history text and a request id beyond 64 bits still get their answer through pygls'
    encoder, identical to the one encoded in the worker."""
    server = RawServer(PI_CODING_AGENT_DIR=str(tmp_path))
    try:
        server.initialize()
        session_id = server.request(1, "session/create", {"cwd": str(tmp_path), "inMemory": True})["result"]["sessionId"]
        for n, text in enumerate(["half a pair: \ud83d alone", "plain ascii", "the last question"], start=2):
            server.request(n, "session/append", {"sessionId": session_id, "entries": [
                {"type": "message", "message": {"role": "user", "content": text, "timestamp": n}}]})
        params = {"sessionId": session_id, "keepRecentTokens": 1}
        prepared = server.request(10, "session/prepareCompaction", params)["result"]
        assert "half a pair: \ud83d alone" in prepared["conversationText"]
        huge = 2**70
        again = server.request(huge, "session/prepareCompaction", params)
        assert again["id"] == huge and again["result"] == prepared
        context = server.request(11, "session/context", {"sessionId": session_id})["result"]
        assert [m["role"] for m in context["messages"]] == ["user"] * 3
        # the cached context's encoding is reused, also for an id only pygls can encode
        assert server.request(huge + 1, "session/context", {"sessionId": session_id})["result"] == context
        assert server.request(12, "session/context", {"sessionId": session_id})["result"] == context
        assert server.shutdown() == 0
    finally:
        server.kill()
