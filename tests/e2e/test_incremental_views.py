"""The daemon's per-session caches (context reports, running token totals, serialized text) give,
after appends, navigation and a prune, exactly what the CLI computes from the file afresh."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from .helpers import TestClient, assistant_message, call, initialize, tool_result, user_message, write_session


def cli_json(*args: str) -> Any:
    out = subprocess.run([sys.executable, "-m", "compactd", *args, "--json"], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout)


async def _same_as_cli(client: TestClient, sid: str, path: Path, window: int) -> None:
    context = await call(client, "session/context", {"sessionId": sid})
    assert context == cli_json("context", str(path))
    stats = await call(client, "session/tokenStats", {"sessionId": sid})
    fresh = cli_json("stats", str(path), "--context-window", str(window))
    assert {k: stats[k] for k in fresh if k not in ("contextWindow", "threshold", "percent", "shouldCompact")} == \
        {k: fresh[k] for k in fresh if k not in ("contextWindow", "threshold", "percent", "shouldCompact")}
    prepared = await call(client, "session/prepareCompaction", {"sessionId": sid, "keepRecentTokens": 300})
    assert prepared == cli_json("prepare", str(path), "--keep-recent-tokens", "300", "--show-text")


async def test_views_after_appends_navigation_and_prune_match_a_fresh_computation(client: TestClient,
                                                                                 tmp_path: Path) -> None:
    await initialize(client, settings={"compaction": {"enabled": False},
                                       "pruning": {"protectTokens": 0, "minimumSavings": 0}})
    path = tmp_path / "s.jsonl"
    ids = write_session(path, tmp_path, turns=4, tool_output_chars=3000)
    sid = (await call(client, "session/open", {"path": str(path)}))["sessionId"]
    window = 200_000
    await _same_as_cli(client, sid, path, window)  # fills the caches

    ts = 1_790_000_000_000
    await call(client, "session/append", {"sessionId": sid, "entries": [
        {"type": "message", "message": user_message("and now?", ts)},
        {"type": "thinking_level_change", "thinkingLevel": "high"},
        {"type": "message", "message": assistant_message("reading", ts + 1, [
            {"type": "toolCall", "id": "c9", "name": "bash", "arguments": {"command": "cat x.py"}}])},
        {"type": "message", "message": tool_result("c9", "bash", "y" * 5000, ts + 2)}]})
    await _same_as_cli(client, sid, path, window)  # extended from the cached leaf

    await call(client, "session/navigate", {"sessionId": sid, "targetId": ids[3], "summarize": False})
    await call(client, "session/append", {"sessionId": sid, "entries": [
        {"type": "message", "message": user_message("on a branch", ts + 3)}]})
    await _same_as_cli(client, sid, path, window)

    await call(client, "session/prune", {"sessionId": sid})
    assert "prunedAt" in path.read_text()  # tool outputs were rewritten in place (here or after an append)
    await _same_as_cli(client, sid, path, window)  # the caches were dropped


async def test_views_after_another_program_rewrites_the_file_with_the_same_ids(client: TestClient,
                                                                               tmp_path: Path) -> None:
    """A reload keeps entry ids but may change what they hold: no cached figure may survive it."""
    await initialize(client, settings={"compaction": {"enabled": False}})
    path = tmp_path / "s.jsonl"
    write_session(path, tmp_path, turns=4, tool_output_chars=3000)
    sid = (await call(client, "session/open", {"path": str(path)}))["sessionId"]
    window = 200_000
    await _same_as_cli(client, sid, path, window)  # fills the caches

    lines = path.read_text().splitlines()
    last = json.loads(lines[-1])
    last["message"]["content"] = [{"type": "text", "text": "rewritten elsewhere " * 400}]
    lines[-1] = json.dumps(last, separators=(",", ":"))
    with open(path, "r+") as handle:  # in place: same inode, same ids, other content
        handle.write("\n".join(lines) + "\n")
        handle.truncate()
    await client.wait_for(lambda: [c for c in client.of("session/didChange") if c["kind"] == "reloaded"], 20)
    await _same_as_cli(client, sid, path, window)
