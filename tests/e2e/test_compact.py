"""Summarizations end to end against a real local OpenAI-compatible server: manual compaction with
work-done progress, auto-compaction after an append, navigation with a branch summary, pruning,
overflow recovery."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from compactd.session import Session

from tests.support.fake_openai import FakeOpenAI, Reply

from .helpers import (
    GOOD_SUMMARY,
    SECRET,
    TestClient,
    assistant_message,
    call,
    default_settings,
    fake_summarizer,
    initialize,
    user_message,
    write_session,
)


def check_progress(values: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """begin → report* → end, percentages never decreasing; returns the reports."""
    assert values, "no progress was reported"
    assert values[0]["kind"] == "begin" and values[0]["cancellable"] is True
    assert values[-1]["kind"] == "end"
    reports = values[1:-1]
    assert all(v["kind"] == "report" for v in reports)
    percentages = [values[0].get("percentage", 0)] + [r["percentage"] for r in reports]
    assert percentages == sorted(percentages)
    assert all(0 <= p <= 100 for p in percentages)
    return reports


async def test_compact_with_client_token(client: TestClient, fake: FakeOpenAI, tmp_path: Path) -> None:
    fake.default = Reply.stream(GOOD_SUMMARY, chunk_delay=0.03)
    await initialize(client, summarizer=fake_summarizer(fake.url))
    path = tmp_path / "s.jsonl"
    ids = write_session(path, tmp_path, turns=6)
    await call(client, "session/open", {"path": str(path)})
    client.progress["tok-1"] = []

    result = await call(client, "session/compact", {"sessionId": "e2e-session", "workDoneToken": "tok-1",
                                                     "customInstructions": "focus on modules"})
    assert result["summary"].startswith("## Goal")
    assert result["firstKeptEntryId"] in ids and result["fromHook"] is False
    assert result["tokensBefore"] > result["estimatedTokensAfter"] > 0
    assert set(result["details"]) == {"readFiles", "modifiedFiles"}

    last = json.loads(path.read_text().splitlines()[-1])
    assert last["type"] == "compaction" and last["id"] == result["entryId"]
    assert last["summary"] == result["summary"] and last["firstKeptEntryId"] == result["firstKeptEntryId"]

    reports = check_progress(client.progress["tok-1"])
    texts = [r["text"] for r in reports]
    assert texts and all(len(a) <= len(b) for a, b in itertools.pairwise(texts))
    assert "## Goal" in texts[-1]

    assert [n for n, _ in client.notifications] == ["session/compactionStart", "session/didChange",
                                                    "session/compactionEnd"]
    assert client.of("session/compactionStart")[0] == {"sessionId": "e2e-session", "reason": "manual"}
    assert client.of("session/didChange")[0]["entryIds"] == [result["entryId"]]
    end = client.of("session/compactionEnd")[0]
    assert end["result"]["entryId"] == result["entryId"] and end["aborted"] is False and end["willRetry"] is False

    request = fake.requests[0]
    assert request.headers["authorization"] == f"Bearer {SECRET}"
    assert request.body["model"] == "gpt-4o-mini" and request.body["stream"] is True
    assert "focus on modules" in request.body["messages"][-1]["content"]
    assert SECRET not in json.dumps(result)


async def test_compact_with_server_created_token(client: TestClient, fake: FakeOpenAI, tmp_path: Path) -> None:
    fake.default = Reply.stream(GOOD_SUMMARY, chunk_delay=0.02)
    await initialize(client, summarizer=fake_summarizer(fake.url))
    path = tmp_path / "s.jsonl"
    write_session(path, tmp_path, turns=6)
    await call(client, "session/open", {"path": str(path)})
    await call(client, "session/compact", {"sessionId": "e2e-session"})
    assert len(client.created_tokens) == 1
    check_progress(client.progress[client.created_tokens[0]])


async def test_no_progress_when_client_cannot_show_it(client: TestClient, fake: FakeOpenAI, tmp_path: Path) -> None:
    fake.default = Reply.stream(GOOD_SUMMARY)
    await initialize(client, summarizer=fake_summarizer(fake.url), progress=False)
    path = tmp_path / "s.jsonl"
    write_session(path, tmp_path, turns=6)
    await call(client, "session/open", {"path": str(path)})
    result = await call(client, "session/compact", {"sessionId": "e2e-session"})
    assert result["entryId"]
    assert client.created_tokens == [] and client.progress == {}


async def test_auto_compaction_after_append(client: TestClient, fake: FakeOpenAI, tmp_path: Path) -> None:
    fake.default = Reply.stream(GOOD_SUMMARY, chunk_delay=0.02)
    await initialize(client, summarizer=fake_summarizer(fake.url))
    path = tmp_path / "s.jsonl"
    write_session(path, tmp_path, turns=6)
    await call(client, "session/open", {"path": str(path)})
    await call(client, "session/append", {"sessionId": "e2e-session", "entries": [
        {"type": "model_change", "provider": "openai", "modelId": "gpt-4o"}]})
    big = assistant_message("a long answer", 1_770_000_000_000)
    big["usage"] = {**big["usage"], "input": 120_000, "totalTokens": 120_200}  # above 128000 - 16384
    appended = await call(client, "session/append", {"sessionId": "e2e-session", "entries": [
        {"type": "message", "message": user_message("next", 1_769_999_999_999)},
        {"type": "message", "message": big}]})

    end = await client.wait_for(lambda: client.of("session/compactionEnd"))
    assert client.of("session/compactionStart") == [{"sessionId": "e2e-session", "reason": "threshold"}]
    payload = end[0]
    assert payload["reason"] == "threshold" and payload["aborted"] is False
    assert payload["continuePrompt"] == "Continue if you have next steps."
    entry_id = payload["result"]["entryId"]
    changes = client.of("session/didChange")
    assert changes[-1]["entryIds"] == [entry_id] and changes[-1]["leafId"] == entry_id
    assert Session.open(path).get_leaf_entry()["type"] == "compaction"
    assert appended["leafId"] != entry_id  # the append answered before the compaction
    token = client.created_tokens[0]
    await client.wait_for(lambda: client.progress[token] and client.progress[token][-1]["kind"] == "end")
    check_progress(client.progress[token])


async def test_navigate_with_branch_summary(client: TestClient, fake: FakeOpenAI, tmp_path: Path) -> None:
    fake.default = Reply.stream(["## Goal\nExplore.\n\n", "## Progress\nTried module 2.\n"], chunk_delay=0.02)
    await initialize(client, summarizer=fake_summarizer(fake.url))
    path = tmp_path / "s.jsonl"
    ids = write_session(path, tmp_path, turns=4)
    await call(client, "session/open", {"path": str(path)})
    client.progress["nav"] = []
    result = await call(client, "session/navigate", {"sessionId": "e2e-session", "targetId": ids[2],
                                                      "summarize": True, "label": "retry", "workDoneToken": "nav"})
    assert result["cancelled"] is False and result["oldLeafId"] == ids[-1]
    assert result["editorText"].startswith("Turn 1:")  # a user message goes back to the editor
    summary = (await call(client, "session/entry", {"sessionId": "e2e-session",
                                                    "entryId": result["summaryEntryId"]}))["entry"]
    assert summary["type"] == "branch_summary" and summary["parentId"] == ids[1]
    assert summary["fromId"] == ids[-1] and "## Goal" in summary["summary"]
    change = client.of("session/didChange")[-1]
    assert change["kind"] == "leafMoved" and change["leafId"] == result["leafId"]
    assert result["summaryEntryId"] in change["entryIds"]
    check_progress(client.progress["nav"])
    assert "<conversation>" in fake.requests[0].body["messages"][-1]["content"]

    # without a summary: the leaf moves, nothing is asked from the model
    before = len(fake.requests)
    plain = await call(client, "session/navigate", {"sessionId": "e2e-session", "targetId": ids[5]})
    assert plain["summaryEntryId"] is None and plain["leafId"] == ids[5]
    assert len(fake.requests) == before
    assert client.of("session/didChange")[-1] == {"sessionId": "e2e-session", "kind": "leafMoved", "entryIds": [],
                                                  "leafId": ids[5]}


async def test_prune_dry_run_then_rewrite(client: TestClient, tmp_path: Path) -> None:
    settings = {**default_settings(), "pruning": {"protectTokens": 500, "minimumSavings": 100}}
    await initialize(client, settings=settings)
    path = tmp_path / "s.jsonl"
    write_session(path, tmp_path, turns=4, text_chars=100, tool_output_chars=6000)
    await call(client, "session/open", {"path": str(path)})
    before = path.read_bytes()
    plan = await call(client, "session/prune", {"sessionId": "e2e-session", "dryRun": True})
    assert plan["prunedCount"] >= 2 and plan["tokensSaved"] >= 100
    assert path.read_bytes() == before
    done = await call(client, "session/prune", {"sessionId": "e2e-session"})
    assert done == plan
    reopened = Session.open(path)
    for entry_id in done["entryIds"]:
        message = reopened.by_id[entry_id]["message"]
        assert message["content"][0]["text"].startswith("[Output truncated - ") and message["prunedAt"]
    archive = [json.loads(line) for line in (tmp_path / "s.jsonl.pruned.jsonl").read_text().splitlines()]
    assert sorted(a["entryId"] for a in archive) == sorted(done["entryIds"])
    change = client.of("session/didChange")[-1]
    assert change["kind"] == "rewritten" and sorted(change["entryIds"]) == sorted(done["entryIds"])


async def test_report_overflow_recovers_once(client: TestClient, fake: FakeOpenAI, tmp_path: Path) -> None:
    fake.default = Reply.stream(GOOD_SUMMARY)
    await initialize(client, summarizer=fake_summarizer(fake.url))
    path = tmp_path / "s.jsonl"
    write_session(path, tmp_path, turns=6)
    await call(client, "session/open", {"path": str(path)})
    first = await call(client, "session/reportOverflow", {"sessionId": "e2e-session",
                                                           "errorMessage": "prompt is too long"})
    assert first["reason"] == "overflow" and first["willRetry"] is True
    assert first["result"]["entryId"] and first["dropLastAssistant"] is False
    context = await call(client, "session/context", {"sessionId": "e2e-session"})
    assert context["messages"][0] == {"role": "compactionSummary", "entryId": first["result"]["entryId"]}
    assert [p["reason"] for p in client.of("session/compactionStart")] == ["overflow"]
    second = await call(client, "session/reportOverflow", {"sessionId": "e2e-session"})
    assert second["result"] is None and second["errorMessage"].startswith("Context overflow recovery failed")
    assert client.of("session/compactionEnd")[-1]["errorMessage"] == second["errorMessage"]


async def test_tree_labels_summary_nodes_with_their_figures(client: TestClient, fake: FakeOpenAI,
                                                            tmp_path: Path) -> None:
    fake.default = Reply.stream(GOOD_SUMMARY)
    await initialize(client, summarizer=fake_summarizer(fake.url))
    path = tmp_path / "s.jsonl"
    ids = write_session(path, tmp_path, turns=6)
    await call(client, "session/open", {"path": str(path)})
    compacted = await call(client, "session/compact", {"sessionId": "e2e-session"})
    context = await call(client, "session/tokenStats", {"sessionId": "e2e-session"})
    # Leave the compaction's branch with a summary: back to the 4th entry.
    nav = await call(client, "session/navigate", {"sessionId": "e2e-session", "targetId": ids[3], "summarize": True})
    tree = await call(client, "session/tree", {"sessionId": "e2e-session"})
    nodes = {n["id"]: n for n in tree["nodes"]}

    comp = nodes[compacted["entryId"]]
    assert comp["tokensBefore"] == compacted["tokensBefore"]
    # The context right after the compaction is what tokenStats estimated at that leaf.
    assert comp["tokensAfter"] == context["estimatedTokens"] > 0
    summary = nodes[nav["summaryEntryId"]]
    # The branch left: entries ids[4:] and the compaction entry.
    assert summary["summarizedEntries"] == len(ids) - 4 + 1
    assert "tokensAfter" not in nodes[ids[0]] and "summarizedEntries" not in nodes[ids[0]]
