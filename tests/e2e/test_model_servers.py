"""The real daemon against emulated local model servers: the server's own error text reaches the
JSON-RPC error, the progress and compactionEnd; usage the server does not report is estimated."""

from __future__ import annotations

from pathlib import Path

from tests.support.fake_openai import FakeOpenAI, Reply

from .helpers import GOOD_SUMMARY, TestClient, call, call_error, fake_summarizer, initialize, write_session

LLAMA_TEXT = "the request exceeds the available context size. try increasing the context size or enable context shift"


async def test_in_stream_overflow_text_reaches_error_progress_and_compaction_end(
    client: TestClient, tmp_path: Path
) -> None:
    with FakeOpenAI(context_window=200, overflow_style="llama.cpp-legacy") as fake:
        await initialize(client, summarizer=fake_summarizer(fake.url))
        path = tmp_path / "s.jsonl"
        write_session(path, tmp_path, turns=6)
        before = path.read_bytes()
        await call(client, "session/open", {"path": str(path)})
        client.progress["t"] = []
        error = await call_error(client, "session/compact", {"sessionId": "e2e-session", "workDoneToken": "t"})
        await client.wait_for(lambda: client.progress["t"] and client.progress["t"][-1]["kind"] == "end")
    assert error.code == -32015 and LLAMA_TEXT in error.message
    assert LLAMA_TEXT in client.progress["t"][-1]["message"]
    assert LLAMA_TEXT in client.of("session/compactionEnd")[-1]["errorMessage"]
    assert len(fake.requests) == 1 and path.read_bytes() == before


async def test_unreported_usage_is_estimated_on_the_entry(client: TestClient, tmp_path: Path) -> None:
    with FakeOpenAI(report_usage=False, default=Reply.stream(GOOD_SUMMARY)) as fake:
        await initialize(client, summarizer=fake_summarizer(fake.url))
        path = tmp_path / "s.jsonl"
        write_session(path, tmp_path, turns=6)
        await call(client, "session/open", {"path": str(path)})
        result = await call(client, "session/compact", {"sessionId": "e2e-session"})
    assert result["usage"]["estimated"] is True and result["usage"]["output"] > 0
    assert result["modelCalls"] == len(fake.requests) >= 1
    entry = await call(client, "session/entry", {"sessionId": "e2e-session", "entryId": result["entryId"]})
    assert entry["entry"]["type"] == "compaction" and entry["entry"]["usage"] == result["usage"]
