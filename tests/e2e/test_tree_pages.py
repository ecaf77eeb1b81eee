"""The paged `session/tree` through the daemon (issue 14): pages reassemble exactly into the full
answer, appends are announced with their nodes exactly as a fresh fetch shows them, and bad
cursors are InvalidParams naming the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .helpers import TestClient, call, call_error, initialize, user_message, write_session

SID = "e2e-session"


async def pages_in_tree_order(client: TestClient, limit: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []

    async def expand(branch: str | None) -> None:
        got = (await call(client, "session/tree", {"sessionId": SID, "limit": limit, "branch": branch}))["lists"][0]
        rows = list(got["rows"])
        while got["hasMoreAfter"]:
            got = (await call(client, "session/tree", {"sessionId": SID, "limit": limit, "branch": branch,
                                                       "after": rows[-1]["id"]}))["lists"][0]
            rows += got["rows"]
        for row in rows:
            branches = row.pop("branches", [])
            out.append(row)
            for item in branches:
                await expand(item["first"]["id"])

    await expand(None)
    return out


async def branched_session(client: TestClient, tmp_path: Path) -> list[str]:
    await initialize(client)
    path = tmp_path / "s.jsonl"
    ids = write_session(path, tmp_path, turns=6, text_chars=40)
    await call(client, "session/open", {"path": str(path)})
    await call(client, "session/navigate", {"sessionId": SID, "targetId": ids[3]})
    await call(client, "session/append", {"sessionId": SID, "entries": [
        {"type": "message", "message": user_message("another way", 1_760_000_100_000)}]})
    await call(client, "session/label", {"sessionId": SID, "targetId": ids[1], "label": "here"})
    return ids


async def test_pages_reassemble_into_the_full_tree(client: TestClient, tmp_path: Path) -> None:
    ids = await branched_session(client, tmp_path)
    full = await call(client, "session/tree", {"sessionId": SID})
    for limit in (1, 2, 5, 100):
        assert await pages_in_tree_order(client, limit) == full["nodes"]
    screen = await call(client, "session/tree", {"sessionId": SID, "limit": 5})
    assert screen["leafId"] == full["leafId"] and screen["entryCount"] == len(full["nodes"])
    # The leaf's screen: the top level through the branch point, then the leaf's branch.
    assert screen["leafPath"][0] == {"branch": None, "throughId": ids[3]}
    assert screen["leafPath"][-1]["throughId"] == full["leafId"]
    top = screen["lists"][0]
    # The leaf's branch holds 2 rows, so 3 of the 5 rows of the screen are left for the top level.
    assert [r["id"] for r in top["rows"]] == ids[1:4] and top["hasMoreBefore"] and not top["hasMoreAfter"]
    point = top["rows"][-1]
    assert [b["entryCount"] for b in point["branches"]] == [8, 2]
    assert point["branches"][1]["first"]["onLeafPath"] is True
    by_id = {n["id"]: n for n in full["nodes"]}
    assert {k: v for k, v in point.items() if k != "branches"} == by_id[ids[3]]
    assert top["rows"][0] == by_id[ids[1]] and top["rows"][0]["label"] == "here"
    leaf_list = screen["lists"][-1]  # the leaf's branch: up to `limit` rows ending at the leaf
    assert [r["id"] for r in leaf_list["rows"]][-1] == full["leafId"] and len(leaf_list["rows"]) <= 5


async def test_didchange_carries_the_appended_nodes(client: TestClient, tmp_path: Path) -> None:
    ids = await branched_session(client, tmp_path)
    client.notifications.clear()
    appended = await call(client, "session/append", {"sessionId": SID, "entries": [
        {"type": "message", "message": user_message("one", 1_760_000_200_000)},
        {"type": "message", "message": user_message("two", 1_760_000_200_001)}]})
    labelled = await call(client, "session/label", {"sessionId": SID, "targetId": ids[0], "label": "root"})
    changes = [p for name, p in client.notifications if name == "session/didChange"]
    fresh = {n["id"]: n for n in (await call(client, "session/tree", {"sessionId": SID}))["nodes"]}
    first, second = changes
    assert [n["id"] for n in first["nodes"]] == appended["entryIds"] and first["labels"] == {}
    # As a fresh fetch then showed them, except what the later label entry changed: the leaf.
    assert first["nodes"][0] == fresh[appended["entryIds"][0]]
    assert first["nodes"][1] == {**fresh[appended["entryIds"][1]], "isLeaf": True, "children": []}
    assert second["nodes"] == [fresh[labelled["entryId"]]] and second["labels"] == {ids[0]: "root"}
    assert fresh[ids[0]]["label"] == "root"


async def test_bad_cursors_are_invalid_params(client: TestClient, tmp_path: Path) -> None:
    ids = await branched_session(client, tmp_path)
    cases = [
        ({"limit": 2, "branch": ids[2]}, "branch: entry"),
        ({"limit": 2, "branch": "nope"}, "branch: Entry nope not found"),
        ({"limit": 2, "after": ids[6]}, "after: entry"),
        ({"branch": ids[4]}, "limit: required with branch"),
        ({"limit": 0}, "limit:"),
    ]
    for params, message in cases:
        error = await call_error(client, "session/tree", {"sessionId": SID, **params})
        assert error.code == -32602 and message in error.message, (params, error.message)
    # Fields that are each valid but not together are named one by one, like per-field errors;
    # every problem is reported, not only the first.
    exact = [
        ({"limit": 2, "after": ids[1], "before": ids[2]},
         "before: not allowed together with after (give at most one cursor)"),
        ({"after": ids[1], "before": ids[2]},
         "before: not allowed together with after (give at most one cursor); limit: required with after, before"),
        ({"branch": None}, "limit: required with branch"),
        ({"limit": 0, "after": 5}, "limit: Input should be greater than or equal to 1; after: Input should be a valid string"),
    ]
    for params, message in exact:
        error = await call_error(client, "session/tree", {"sessionId": SID, **params})
        assert (error.code, error.message) == (-32602, message), params


async def test_pages_after_another_program_rewrites_the_file(client: TestClient, tmp_path: Path) -> None:
    """A reload may change structure and content under the same ids: the index is rebuilt."""
    import json

    await initialize(client)
    path = tmp_path / "s.jsonl"
    ids = write_session(path, tmp_path, turns=4, text_chars=40)
    await call(client, "session/open", {"path": str(path)})
    assert await pages_in_tree_order(client, 3) == (await call(client, "session/tree", {"sessionId": SID}))["nodes"]
    lines = path.read_text().splitlines()
    moved = json.loads(lines[-1])
    moved["parentId"] = ids[2]  # the last entry now branches off the third
    moved["message"]["content"] = [{"type": "text", "text": "rewritten elsewhere"}]
    lines[-1] = json.dumps(moved)
    with open(path, "r+") as handle:  # in place: same inode
        handle.write("\n".join(lines) + "\n")
        handle.truncate()
    await client.wait_for(lambda: [c for c in client.of("session/didChange") if c["kind"] == "reloaded"], 20)
    full = (await call(client, "session/tree", {"sessionId": SID}))["nodes"]
    assert next(n for n in full if n["id"] == ids[2])["children"] == [ids[3], ids[-1]]
    assert await pages_in_tree_order(client, 3) == full
