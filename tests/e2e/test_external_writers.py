"""Another program (Pi) writing the file the daemon has open (issue 12 §1, §2), against the real
daemon over stdio: complete external appends are adopted promptly and announced; a file Pi
migrated in place is reloaded (`session/didChange` `reloaded`) and never written on a stale view;
`prepareCompaction`, `compact` and `navigate` re-sync before they prepare even with the poller off."""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest_lsp
from pytest_lsp import ClientServerConfig

from compactd.compaction.reports import prepare_report
from compactd.session import Session

from tests.conftest import REAL_PI_FILES
from tests.support.fake_openai import FakeOpenAI, Reply

from .helpers import (
    GOOD_SUMMARY,
    SERVER_COMMAND,
    TestClient,
    assistant_message,
    call,
    fake_summarizer,
    initialize,
    make_client,
    server_env,
    user_message,
    write_session,
)

TIMEOUT = 20  # seconds; the poller ticks every 200 ms, this only guards against a hang


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER_COMMAND, client_factory=make_client,
                                              server_env=server_env(COMPACTD_WATCH_INTERVAL_MS="0")))
async def unwatched(lsp_client: TestClient):
    """A daemon with the poller off: whatever it adopts, the request itself re-synced."""
    yield
    await lsp_client.shutdown_session()


def pi_appends(path: Path, message: dict[str, Any]) -> str:
    lines = path.read_text().splitlines()
    parent = json.loads(lines[-1])["id"]
    entry_id = uuid.uuid4().hex[:8]
    entry = {"type": "message", "id": entry_id, "parentId": parent, "timestamp": "2026-01-01T00:00:00.000Z",
             "message": message, "piOnly": {"kept": True}}
    with open(path, "a") as handle:
        handle.write(json.dumps(entry, separators=(",", ":")) + "\n")
    return entry_id


def pi_migrates_in_place(path: Path) -> list[str]:
    """Pi opening a v1 file: same inode, v3 header, new random ids, the file grows (malformed
    lines are dropped, as Pi's loader skips them)."""
    objs = []
    for line in path.read_text().splitlines():
        try:
            objs.append(json.loads(line))
        except ValueError:
            continue
    header = {**objs[0], "version": 3}
    previous, out = None, []
    for obj in objs[1:]:
        entry = {"type": obj["type"], "id": uuid.uuid4().hex[:8], "parentId": previous,
                 **{k: v for k, v in obj.items() if k != "type"}}
        out.append(entry)
        previous = entry["id"]
    with open(path, "r+b") as handle:
        handle.write("".join(json.dumps(o, separators=(",", ":")) + "\n" for o in [header, *out]).encode())
        handle.truncate()
    return [e["id"] for e in out]


def parents_present(path: Path) -> bool:
    objs = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    ids = {o["id"] for o in objs}
    return all(o.get("parentId") is None or o["parentId"] in ids for o in objs)


async def test_external_append_is_adopted_and_announced_without_a_request(client: TestClient, tmp_path: Path) -> None:
    await initialize(client)
    path = tmp_path / "s.jsonl"
    write_session(path, tmp_path, turns=3)
    await call(client, "session/open", {"path": str(path)})
    theirs = pi_appends(path, user_message("typed in Pi", 1_770_000_000_000))
    change = await client.wait_for(lambda: [c for c in client.of("session/didChange") if theirs in c["entryIds"]],
                                   TIMEOUT)
    nodes = change[0].pop("nodes")
    assert change[0] == {"sessionId": "e2e-session", "kind": "appended", "entryIds": [theirs], "leafId": theirs,
                         "labels": {}}
    tree = await call(client, "session/tree", {"sessionId": "e2e-session"})
    assert nodes == [n for n in tree["nodes"] if n["id"] == theirs]  # what a side panel adds
    context = await call(client, "session/context", {"sessionId": "e2e-session"})
    assert context["leafId"] == theirs and context["messages"][-1]["entryId"] == theirs
    entry = await call(client, "session/entry", {"sessionId": "e2e-session", "entryId": theirs})
    assert entry["entry"]["piOnly"] == {"kept": True}


async def test_in_place_migration_by_pi_is_reloaded_and_nothing_is_orphaned(client: TestClient, tmp_path: Path) -> None:
    await initialize(client)
    path = tmp_path / "s.jsonl"
    shutil.copyfile(REAL_PI_FILES["prompt-cache-replay-session"], path)
    original = path.read_bytes()
    opened = await call(client, "session/open", {"path": str(path)})
    assert opened["migratedFrom"] == 1
    pi_ids = pi_migrates_in_place(path)
    pi_leaf = pi_appends(path, assistant_message("Pi answered", 1_770_000_000_000))
    change = await client.wait_for(lambda: [c for c in client.of("session/didChange") if c["kind"] == "reloaded"],
                                   TIMEOUT)
    assert change[0] == {"sessionId": opened["sessionId"], "kind": "reloaded", "entryIds": [], "leafId": pi_leaf}
    info = (await call(client, "session/list"))["sessions"][0]
    assert info["migratedFrom"] is None and info["entryCount"] == len(pi_ids) + 1

    appended = await call(client, "session/append", {"sessionId": opened["sessionId"], "entries": [
        {"type": "message", "message": user_message("from the client", 1_770_000_000_001)}]})
    last = json.loads(path.read_text().splitlines()[-1])
    assert last["id"] == appended["entryIds"][0] and last["parentId"] == pi_leaf
    assert parents_present(path)
    assert not (tmp_path / "s.jsonl.v1.bak").exists()  # Pi's v3 bytes are never saved as the v1 original
    assert path.read_bytes() != original


async def test_prepare_and_compact_resync_first_with_the_poller_off(unwatched: TestClient, fake: FakeOpenAI,
                                                                    tmp_path: Path) -> None:
    client = unwatched
    fake.default = Reply.stream(GOOD_SUMMARY)
    await initialize(client, summarizer=fake_summarizer(fake.url))
    path = tmp_path / "s.jsonl"
    write_session(path, tmp_path, turns=6)
    await call(client, "session/open", {"path": str(path)})
    theirs = pi_appends(path, user_message("a long question typed in Pi " + "word " * 400, 1_770_000_000_000))

    prepared = await call(client, "session/prepareCompaction", {"sessionId": "e2e-session"})
    expected = prepare_report(Session.open(path), None, 800, 16384)
    assert prepared["tokensBefore"] == expected["tokensBefore"]  # counted with Pi's entry
    assert [c["kind"] for c in client.of("session/didChange")] == ["appended"]

    result = await call(client, "session/compact", {"sessionId": "e2e-session"})
    compaction = json.loads(path.read_text().splitlines()[-1])
    assert compaction["id"] == result["entryId"] and compaction["parentId"] == theirs
    assert result["tokensBefore"] == expected["tokensBefore"]


async def test_compact_after_an_in_place_rewrite_works_on_the_reloaded_file(unwatched: TestClient, fake: FakeOpenAI,
                                                                            tmp_path: Path) -> None:
    client = unwatched
    fake.default = Reply.stream(GOOD_SUMMARY)
    await initialize(client, summarizer=fake_summarizer(fake.url))
    path = tmp_path / "s.jsonl"
    shutil.copyfile(REAL_PI_FILES["pi-mono-large-session"], path)
    opened = await call(client, "session/open", {"path": str(path)})
    pi_ids = pi_migrates_in_place(path)
    result = await call(client, "session/compact", {"sessionId": opened["sessionId"]})
    kinds = [c["kind"] for c in client.of("session/didChange")]
    assert kinds[0] == "reloaded"
    compaction = json.loads(path.read_text().splitlines()[-1])
    assert compaction["id"] == result["entryId"] and compaction["parentId"] == pi_ids[-1]
    assert result["firstKeptEntryId"] in pi_ids
    assert parents_present(path)
    assert not (tmp_path / "s.jsonl.v1.bak").exists()


async def test_navigate_resyncs_first(unwatched: TestClient, tmp_path: Path) -> None:
    client = unwatched
    await initialize(client)
    path = tmp_path / "s.jsonl"
    ids = write_session(path, tmp_path, turns=3)
    await call(client, "session/open", {"path": str(path)})
    theirs = pi_appends(path, user_message("typed in Pi", 1_770_000_000_000))
    moved = await call(client, "session/navigate", {"sessionId": "e2e-session", "targetId": theirs})
    assert moved["leafId"] == theirs
    assert ids[-1] in [e["id"] for e in Session.open(path).entries]
