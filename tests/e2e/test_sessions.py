"""Session methods end to end: open/create/list/close/listFiles/append/context/tree/entry/label/fork,
and parity of the answers with the CLI's `--json` output."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from compactd.session import Session
from compactd.session.tree import encode_cwd
from lsprotocol import types

from .helpers import (
    AGENT_DIR,
    TestClient,
    assistant_message,
    call,
    call_error,
    initialize,
    user_message,
    write_session,
)


def cli_json(*args: str) -> object:
    out = subprocess.run([sys.executable, "-m", "compactd", *args, "--json"], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout)


async def test_initialize_advertises_every_method(client: TestClient) -> None:
    result = await initialize(client)
    caps = result.capabilities.experimental["compactd"]
    assert result.server_info is not None and result.server_info.name == "compactd"
    assert caps["methods"] == [
        "session/open", "session/create", "session/list", "session/close", "session/listFiles",
        "session/append", "session/context", "session/tree", "session/entry", "session/tokenStats",
        "session/prepareCompaction", "session/compact", "session/navigate", "session/prune", "session/label",
        "session/fork", "session/abort", "session/reportOverflow",
    ]
    assert caps["notifications"] == ["session/didChange", "session/compactionStart", "session/compactionEnd"]
    assert caps["serverRequests"] == ["session/beforeCompact", "session/compacting", "session/beforeTree"]
    assert caps["errorCodes"]["SESSION_BUSY"] == -32012


async def test_open_list_close(client: TestClient, tmp_path: Path) -> None:
    await initialize(client)
    path = tmp_path / "s.jsonl"
    ids = write_session(path, tmp_path, turns=2)
    opened = await call(client, "session/open", {"path": str(path)})
    assert opened["sessionId"] == "e2e-session"
    assert opened["entryCount"] == len(ids) and opened["leafId"] == ids[-1]
    assert opened["alreadyOpen"] is False and opened["header"]["cwd"] == str(tmp_path)
    # the same shape as `compactd info --json`, plus daemon fields
    info = cli_json("info", str(path))
    assert {k: opened[k] for k in info} == info

    again = await call(client, "session/open", {"path": str(path)})
    assert again["alreadyOpen"] is True and again["sessionId"] == opened["sessionId"]

    listed = await call(client, "session/list", {})
    assert [s["sessionId"] for s in listed["sessions"]] == ["e2e-session"]
    assert listed["sessions"][0]["busy"] is False

    closed = await call(client, "session/close", {"sessionId": "e2e-session"})
    assert closed == {"sessionId": "e2e-session", "closed": True, "cancelled": 0}
    assert (await call(client, "session/list", {}))["sessions"] == []


async def test_open_migrates_pi_v1_fixture(client: TestClient, pi_fixture_copy: Path) -> None:
    await initialize(client)
    before = pi_fixture_copy.read_bytes()
    opened = await call(client, "session/open", {"path": str(pi_fixture_copy)})
    assert opened["migratedFrom"] == 1 and opened["version"] == 3
    assert opened["entryCount"] > 900
    tree = await call(client, "session/tree", {"sessionId": opened["sessionId"]})
    assert len(tree["nodes"]) == opened["entryCount"]
    assert pi_fixture_copy.read_bytes() == before  # migration stays in memory until a write


async def test_create_append_every_kind(client: TestClient, tmp_path: Path) -> None:
    await initialize(client)
    path = tmp_path / "new.jsonl"
    created = await call(client, "session/create", {"cwd": str(tmp_path), "path": str(path)})
    sid = created["sessionId"]
    assert created["entryCount"] == 0 and created["path"] == str(path)

    first = await call(client, "session/append", {"sessionId": sid, "entries": [
        {"type": "model_change", "provider": "openai", "modelId": "gpt-4o"},
        {"type": "thinking_level_change", "thinkingLevel": "high"},
        {"type": "message", "message": user_message("hello", 1_760_000_000_000)},
    ]})
    assert len(first["entryIds"]) == 3 and first["leafId"] == first["entryIds"][-1]
    assert not path.exists()  # F-17: no file before the first assistant message

    second = await call(client, "session/append", {"sessionId": sid, "entries": [
        {"type": "message", "message": assistant_message("hi there", 1_760_000_000_100)},
        {"type": "custom", "customType": "my-ext", "data": {"weird-key": 1, "class": [1, 2]}},
        {"type": "custom_message", "customType": "note", "content": "remember this", "display": False},
        {"type": "session_info", "name": "  My session\n"},
        {"type": "label", "targetId": first["entryIds"][2], "label": "start"},
    ]})
    ids = first["entryIds"] + second["entryIds"]
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line.get("id") for line in lines[1:]] == ids
    by_id = {line["id"]: line for line in lines[1:]}
    assert by_id[second["entryIds"][1]]["data"] == {"weird-key": 1, "class": [1, 2]}  # stored verbatim
    assert by_id[second["entryIds"][3]]["name"] == "My session"
    assert by_id[second["entryIds"][4]]["targetId"] == first["entryIds"][2]

    changes = client.of("session/didChange")
    assert [c["entryIds"] for c in changes] == [first["entryIds"], second["entryIds"]]
    assert all(c["kind"] == "appended" and c["sessionId"] == sid for c in changes)
    assert changes[-1]["leafId"] == ids[-1]

    context = await call(client, "session/context", {"sessionId": sid})
    assert context["model"] == {"provider": "openai", "modelId": "gpt-4o"}
    assert context["thinkingLevel"] == "high"
    assert [m["role"] for m in context["messages"]] == ["user", "assistant", "custom"]
    assert context == cli_json("context", str(path))
    full = await call(client, "session/context", {"sessionId": sid, "includeMessages": True})
    assert full["messages"][0]["message"]["content"][0]["text"] == "hello"
    empty = await call(client, "session/context", {"sessionId": sid, "leafId": None})
    assert empty["messages"] == []

    tree = await call(client, "session/tree", {"sessionId": sid})
    cli_tree = cli_json("tree", str(path))  # the CLI prints the documented subset of each node
    assert tree["leafId"] == cli_tree["leafId"]
    assert [{k: node[k] for k in cli} for node, cli in zip(tree["nodes"], cli_tree["nodes"])] == cli_tree["nodes"]
    assert len(tree["nodes"]) == len(cli_tree["nodes"])
    node = next(n for n in tree["nodes"] if n["id"] == first["entryIds"][2])
    assert node["label"] == "start" and node["kind"] == "user" and node["onLeafPath"] is True

    entry = await call(client, "session/entry", {"sessionId": sid, "entryId": first["entryIds"][2]})
    assert entry["entry"]["message"]["content"][0]["text"] == "hello" and entry["label"] == "start"


async def test_append_rejects_invalid_entries_before_writing(client: TestClient, tmp_path: Path) -> None:
    await initialize(client)
    path = tmp_path / "s.jsonl"
    write_session(path, tmp_path, turns=1)
    before = path.read_bytes()
    await call(client, "session/open", {"path": str(path)})
    bad_role = await call_error(client, "session/append", {"sessionId": "e2e-session", "entries": [
        {"type": "message", "message": {"role": "user", "content": "ok"}},
        {"type": "message", "message": {"role": "wizard", "content": "x"}},
    ]})
    assert bad_role.code == -32602 and "entries.1.message" in bad_role.message
    bad_type = await call_error(client, "session/append", {"sessionId": "e2e-session", "entries": [
        {"type": "compaction", "summary": "forged"}]})
    assert bad_type.code == -32602 and "entries.0" in bad_type.message
    missing = await call_error(client, "session/append", {"sessionId": "e2e-session", "entries": [
        {"type": "model_change", "provider": "x"}]})
    assert missing.code == -32602 and "modelId: Field required" in missing.message
    unknown_target = await call_error(client, "session/append", {"sessionId": "e2e-session", "entries": [
        {"type": "message", "message": {"role": "user", "content": "ok"}},
        {"type": "label", "targetId": "nope", "label": "x"}]})
    assert unknown_target.code == -32011
    assert path.read_bytes() == before


async def test_label_and_fork(client: TestClient, tmp_path: Path) -> None:
    await initialize(client)
    path = tmp_path / "s.jsonl"
    ids = write_session(path, tmp_path, turns=3)
    await call(client, "session/open", {"path": str(path)})
    labelled = await call(client, "session/label", {"sessionId": "e2e-session", "targetId": ids[1], "label": "here"})
    assert labelled["targetId"] == ids[1] and labelled["leafId"] == labelled["entryId"]
    assert client.of("session/didChange")[-1]["entryIds"] == [labelled["entryId"]]
    cleared = await call(client, "session/label", {"sessionId": "e2e-session", "targetId": ids[1], "label": None})
    assert cleared["label"] is None

    fork_path = tmp_path / "fork.jsonl"
    fork = await call(client, "session/fork", {"sessionId": "e2e-session", "leafId": ids[3], "path": str(fork_path)})
    assert fork["forkedFrom"] == "e2e-session" and fork["sessionId"] != "e2e-session"
    assert fork["entryCount"] == 4 and fork_path.exists()
    forked = Session.open(fork_path)
    assert [e["id"] for e in forked.entries] == ids[:4]
    assert forked.header["parentSession"] == str(path)
    listed = await call(client, "session/list", {})
    assert {s["sessionId"] for s in listed["sessions"]} == {"e2e-session", fork["sessionId"]}


async def test_list_files_in_pi_default_folder(client: TestClient, tmp_path: Path) -> None:
    await initialize(client)
    created = await call(client, "session/create", {"cwd": str(tmp_path)})
    sid = created["sessionId"]
    expected_dir = Path(AGENT_DIR) / "sessions" / encode_cwd(str(tmp_path))
    assert Path(created["path"]).parent == expected_dir
    await call(client, "session/append", {"sessionId": sid, "entries": [
        {"type": "message", "message": user_message("q", 1_760_000_000_000)},
        {"type": "message", "message": assistant_message("a", 1_760_000_000_001)}]})
    listed = await call(client, "session/listFiles", {"cwd": str(tmp_path)})
    assert listed["dir"] == str(expected_dir)
    assert [(f["sessionId"], f["open"]) for f in listed["files"]] == [(sid, True)]
    # What a picker shows (issue 27): no name yet, the first request, the entry count.
    assert [(f["name"], f["firstRequest"], f["entryCount"]) for f in listed["files"]] == [(None, "q", 2)]
    await call(client, "session/append", {"sessionId": sid, "entries": [{"type": "session_info", "name": "Fix  the\nbuild"}]})
    renamed = await call(client, "session/listFiles", {"cwd": str(tmp_path)})
    assert [(f["name"], f["entryCount"]) for f in renamed["files"]] == [("Fix the build", 3)]
    other = tmp_path / "elsewhere"
    other.mkdir()
    write_session(other / "x.jsonl", tmp_path, turns=1, session_id="another")
    (other / "notes.txt").write_text("not a session")
    in_dir = await call(client, "session/listFiles", {"dir": str(other)})
    assert [(f["sessionId"], f["open"]) for f in in_dir["files"]] == [("another", False)]


async def test_in_memory_session_never_touches_disk(client: TestClient, tmp_path: Path) -> None:
    await initialize(client)
    created = await call(client, "session/create", {"cwd": str(tmp_path), "inMemory": True})
    assert created["path"] is None and created["inMemory"] is True
    await call(client, "session/append", {"sessionId": created["sessionId"], "entries": [
        {"type": "message", "message": user_message("q", 1)},
        {"type": "message", "message": assistant_message("a", 2)}]})
    assert list(tmp_path.iterdir()) == []


async def test_did_change_configuration_applies_settings(client: TestClient, tmp_path: Path) -> None:
    await initialize(client)
    path = tmp_path / "s.jsonl"
    write_session(path, tmp_path, turns=2)
    await call(client, "session/open", {"path": str(path)})
    before = await call(client, "session/tokenStats", {"sessionId": "e2e-session"})
    assert before["reserveTokens"] == 16384
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"compactd": {"settings": {"compaction": {"reserveTokens": 4096}}}}))
    after = await call(client, "session/tokenStats", {"sessionId": "e2e-session"})
    assert after["reserveTokens"] == 4096 and after["threshold"] == after["contextWindow"] - 4096


async def test_stats_and_prepare_match_the_cli(client: TestClient, tmp_path: Path) -> None:
    await initialize(client, settings={"compaction": {"keepRecentTokens": 700, "reserveTokens": 9000}})
    path = tmp_path / "s.jsonl"
    ids = write_session(path, tmp_path, turns=5, tool_output_chars=900)
    await call(client, "session/open", {"path": str(path)})
    stats = await call(client, "session/tokenStats", {"sessionId": "e2e-session"})
    window = str(stats["contextWindow"])
    assert stats == cli_json("stats", str(path), "--context-window", window, "--reserve-tokens", "9000")
    at_leaf = await call(client, "session/tokenStats", {"sessionId": "e2e-session", "leafId": ids[5]})
    assert at_leaf == cli_json("stats", str(path), "--leaf", ids[5], "--context-window", window,
                               "--reserve-tokens", "9000")
    assert at_leaf["estimatedTokens"] < stats["estimatedTokens"]

    prepared = await call(client, "session/prepareCompaction", {"sessionId": "e2e-session"})
    assert prepared == cli_json("prepare", str(path), "--keep-recent-tokens", "700", "--reserve-tokens", "9000", "--show-text")
    assert prepared["firstKeptEntryId"] in ids and "[User]: Turn 0" in prepared["conversationText"]
    overridden = await call(client, "session/prepareCompaction", {"sessionId": "e2e-session", "keepRecentTokens": 100})
    assert overridden == cli_json("prepare", str(path), "--keep-recent-tokens", "100", "--reserve-tokens", "9000", "--show-text")
    # Without the texts: the same answer, both texts null (nothing serialized).
    figures = await call(client, "session/prepareCompaction", {"sessionId": "e2e-session", "includeText": False})
    assert figures["conversationText"] is None and figures["turnPrefixText"] is None
    assert {k: v for k, v in figures.items() if not k.endswith("Text")} == {
        k: v for k, v in prepared.items() if not k.endswith("Text")}
    # And the command line without --show-text answers the same way.
    assert figures == cli_json("prepare", str(path), "--keep-recent-tokens", "700", "--reserve-tokens", "9000")


async def test_entries_appended_by_another_process_are_announced(client: TestClient, tmp_path: Path) -> None:
    await initialize(client)
    path = tmp_path / "s.jsonl"
    ids = write_session(path, tmp_path, turns=2)
    await call(client, "session/open", {"path": str(path)})
    external = {"type": "custom", "id": "ext00001", "parentId": ids[-1], "timestamp": "2025-10-09T09:00:00.000Z",
                "customType": "other-tool", "data": {"n": 1}}
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(external) + "\n")
    ours = await call(client, "session/append", {"sessionId": "e2e-session", "entries": [
        {"type": "custom", "customType": "mine"}]})
    # the other writer's entry is announced first (by the poller or the append's own re-sync)
    announced = [i for change in client.of("session/didChange") for i in change["entryIds"]]
    assert announced == ["ext00001", *ours["entryIds"]]
    entry = await call(client, "session/entry", {"sessionId": "e2e-session", "entryId": ours["entryIds"][0]})
    assert entry["entry"]["parentId"] == "ext00001"  # the leaf followed the other writer
