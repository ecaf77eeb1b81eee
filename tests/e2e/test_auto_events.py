"""Automatic compaction through the daemon: its streamed summary reaches the client as `$/progress`
on a server-created token (the engine's on_progress is wired through), overflow recovery does the
same, and pruning done by the automatic check is announced as `session/didChange` `rewritten`."""

from __future__ import annotations

from pathlib import Path

from compactd.session import Session

from tests.support.fake_openai import FakeOpenAI, Reply

from .helpers import (
    GOOD_SUMMARY,
    TestClient,
    assistant_message,
    call,
    default_settings,
    fake_summarizer,
    initialize,
    user_message,
    write_session,
)
from .test_compact import check_progress


def over_threshold_answer() -> dict:
    big = assistant_message("a long answer", 1_770_000_000_000)
    big["usage"] = {**big["usage"], "input": 120_000, "totalTokens": 120_200}  # above 128000 - 16384
    return big


async def test_auto_compaction_streams_progress_on_a_server_token(
    client: TestClient, fake: FakeOpenAI, tmp_path: Path
) -> None:
    fake.default = Reply.stream(GOOD_SUMMARY, chunk_delay=0.06)
    await initialize(client, summarizer=fake_summarizer(fake.url))
    path = tmp_path / "s.jsonl"
    write_session(path, tmp_path, turns=6)
    await call(client, "session/open", {"path": str(path)})
    await call(client, "session/append", {"sessionId": "e2e-session", "entries": [
        {"type": "message", "message": user_message("next", 1_769_999_999_999)},
        {"type": "message", "message": over_threshold_answer()}]})

    end = (await client.wait_for(lambda: client.of("session/compactionEnd")))[0]
    summary = end["result"]["summary"]
    assert len(client.created_tokens) == 1
    token = client.created_tokens[0]
    await client.wait_for(lambda: client.progress[token] and client.progress[token][-1]["kind"] == "end")
    values = client.progress[token]
    reports = check_progress(values)
    assert values[0]["title"] == "Auto-compaction"
    assert values[-1]["message"] == "Auto-compaction done"
    # The engine's streamed text arrives: growing prefixes of the stored summary.
    texts = [r["text"] for r in reports if r.get("text")]
    assert texts and texts[-1].startswith("## Goal")
    assert all(t.startswith("## Goal") for t in texts) and texts == sorted(texts, key=len)
    assert summary.startswith(texts[-1].strip())
    assert any(r["percentage"] > 0 for r in reports)


async def test_report_overflow_without_token_streams_progress(
    client: TestClient, fake: FakeOpenAI, tmp_path: Path
) -> None:
    fake.default = Reply.stream(GOOD_SUMMARY, chunk_delay=0.06)
    await initialize(client, summarizer=fake_summarizer(fake.url))
    path = tmp_path / "s.jsonl"
    write_session(path, tmp_path, turns=6)
    await call(client, "session/open", {"path": str(path)})
    result = await call(client, "session/reportOverflow", {"sessionId": "e2e-session",
                                                            "errorMessage": "prompt is too long"})
    assert result["willRetry"] is True and result["result"]["entryId"]
    assert len(client.created_tokens) == 1
    token = client.created_tokens[0]
    await client.wait_for(lambda: client.progress[token] and client.progress[token][-1]["kind"] == "end")
    reports = check_progress(client.progress[token])
    assert any(r.get("text", "").startswith("## Goal") for r in reports)


async def test_auto_compaction_without_progress_capability_sends_none(
    client: TestClient, fake: FakeOpenAI, tmp_path: Path
) -> None:
    fake.default = Reply.stream(GOOD_SUMMARY)
    await initialize(client, summarizer=fake_summarizer(fake.url), progress=False)
    path = tmp_path / "s.jsonl"
    write_session(path, tmp_path, turns=6)
    await call(client, "session/open", {"path": str(path)})
    await call(client, "session/append", {"sessionId": "e2e-session", "entries": [
        {"type": "message", "message": user_message("next", 1_769_999_999_999)},
        {"type": "message", "message": over_threshold_answer()}]})
    end = (await client.wait_for(lambda: client.of("session/compactionEnd")))[0]
    assert end["result"]["entryId"]
    assert client.created_tokens == [] and client.progress == {}


async def test_auto_check_pruning_is_announced_as_rewritten(client: TestClient, tmp_path: Path) -> None:
    settings = {**default_settings(), "pruning": {"protectTokens": 500, "minimumSavings": 100}}
    await initialize(client, settings=settings, summarizer={"backend": "extractive"})
    path = tmp_path / "s.jsonl"
    write_session(path, tmp_path, turns=4, text_chars=100, tool_output_chars=6000)
    await call(client, "session/open", {"path": str(path)})
    appended = await call(client, "session/append", {"sessionId": "e2e-session", "entries": [
        {"type": "message", "message": user_message("next", 1_769_999_999_999)},
        {"type": "message", "message": assistant_message("ok", 1_770_000_000_000)}]})

    change = (await client.wait_for(
        lambda: [c for c in client.of("session/didChange") if c["kind"] == "rewritten"]))[0]
    assert change["sessionId"] == "e2e-session" and change["leafId"] == appended["leafId"]
    assert len(change["entryIds"]) >= 2
    reopened = Session.open(path)
    for entry_id in change["entryIds"]:
        message = reopened.by_id[entry_id]["message"]
        assert message["role"] == "toolResult" and message["prunedAt"]
    assert not client.of("session/compactionStart")  # below the threshold: pruning only


async def test_client_context_window_drives_stats_and_auto_compaction(
    client: TestClient, fake: FakeOpenAI, tmp_path: Path
) -> None:
    """contextWindow in session/open replaces the name lookup (gpt-4o: 128000): an answer using
    31200 tokens is above the threshold of a 32000-token window (32000 - 1000 reserve)."""
    fake.default = Reply.stream(GOOD_SUMMARY)
    settings = {**default_settings(), "compaction": {"keepRecentTokens": 800, "reserveTokens": 1000}}
    await initialize(client, settings=settings, summarizer=fake_summarizer(fake.url))
    path = tmp_path / "s.jsonl"
    write_session(path, tmp_path, turns=6)
    await call(client, "session/open", {"path": str(path)})
    assert (await call(client, "session/tokenStats", {"sessionId": "e2e-session"}))["contextWindow"] == 128000
    again = await call(client, "session/open", {"path": str(path), "contextWindow": 32000})
    assert again["alreadyOpen"] is True
    stats = await call(client, "session/tokenStats", {"sessionId": "e2e-session"})
    assert stats["contextWindow"] == 32000 and stats["threshold"] == 31000

    answer = assistant_message("a long answer", 1_770_000_000_000)
    answer["usage"] = {**answer["usage"], "input": 31_000, "totalTokens": 31_200}  # far below 128000
    await call(client, "session/append", {"sessionId": "e2e-session", "entries": [
        {"type": "message", "message": user_message("next", 1_769_999_999_999)},
        {"type": "message", "message": answer}]})
    end = (await client.wait_for(lambda: client.of("session/compactionEnd")))[0]
    assert end["reason"] == "threshold" and end["result"]["entryId"]

    created = await call(client, "session/create", {"cwd": str(tmp_path), "inMemory": True, "contextWindow": 8000})
    small = await call(client, "session/tokenStats", {"sessionId": created["sessionId"]})
    assert small["contextWindow"] == 8000


async def test_context_window_must_be_a_positive_integer(client: TestClient, tmp_path: Path) -> None:
    from pygls.exceptions import JsonRpcException

    await initialize(client)
    for bad in (0, "32000", 1.5):
        try:
            await call(client, "session/open", {"path": str(tmp_path / "x.jsonl"), "contextWindow": bad})
        except JsonRpcException as exc:
            assert exc.code == -32602 and "contextWindow" in exc.message
        else:
            raise AssertionError(f"contextWindow={bad!r} accepted")
