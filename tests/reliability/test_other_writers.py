"""Nothing lost beside other writers (issue 26 item 1), on real `compactd serve` processes.

Two daemons append to the same file at once, then one prunes; and a Pi-style writer (a separate
process: open with O_APPEND, one `write` per line, close; no lock) appends while a daemon appends
tool results whose automatic check prunes and rewrites the file again and again. Every entry any
of them acknowledged must be in the file afterwards, every parent must exist, and each daemon's
view must be what a fresh load of the file gives.

Before the fix an append took the file's new size from `fstat` after its write, so a line another
process appended in between was counted as read and never adopted; the next rewrite wrote the file
from that incomplete view and deleted it.

Default sizes run in well under a minute; `COMPACTD_WRITERS_APPENDS=<n>` per writer for a longer run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

from compactd.session import Session

from tests.e2e.helpers import assistant_message, tool_result, user_message, write_session
from tests.e2e.raw import RawServer

APPENDS = max(20, int(os.environ.get("COMPACTD_WRITERS_APPENDS", "300")))
PRUNE_SETTINGS = {"compaction": {"keepRecentTokens": 800}, "retry": {"enabled": False},
                  "pruning": {"protectTokens": 500, "minimumSavings": 100}}
RESULTS: dict[str, int] = {}  # for the long-run report


def start(path: Path, options: dict[str, Any] | None = None) -> RawServer:
    server = RawServer()
    server.initialize(options or {"settings": PRUNE_SETTINGS, "summarizer": {"backend": "extractive"}})
    opened = server.request("open", "session/open", {"path": str(path)})
    assert "result" in opened, opened
    return server


def pipeline_appends(server: RawServer, prefix: str, count: int, entry: Any) -> list[str]:
    """`count` appends sent without waiting (as a busy client does); the ids acknowledged."""
    for n in range(count):
        server.send({"jsonrpc": "2.0", "id": f"{prefix}{n}", "method": "session/append",
                     "params": {"sessionId": "e2e-session", "entries": entry(n)}})
    acknowledged = []
    for n in range(count):
        answer = server.response(f"{prefix}{n}", timeout=120)
        if "result" in answer:
            acknowledged += answer["result"]["entryIds"]
        else:  # a clear refusal (a line half written at that instant) is allowed; it was not stored
            assert answer["error"]["code"] == -32016, answer
    return acknowledged


def file_entries(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()[1:]]


def assert_no_orphans(path: Path) -> None:
    entries = file_entries(path)
    ids = {e["id"] for e in entries}
    orphans = [e["id"] for e in entries if e.get("parentId") is not None and e["parentId"] not in ids]
    assert orphans == []


def entry_count(server: RawServer) -> int:
    server.request("ctx", "session/context", {"sessionId": "e2e-session"})  # re-syncs with the file first
    return server.request("list", "session/list", {})["result"]["sessions"][0]["entryCount"]


def test_two_daemons_append_at_once_then_one_prunes_and_nothing_is_lost(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write_session(path, tmp_path, turns=4, text_chars=100, tool_output_chars=6000)
    first, second = start(path), start(path)
    try:
        acknowledged: dict[str, list[str]] = {}

        def run(server: RawServer, prefix: str) -> None:
            acknowledged[prefix] = pipeline_appends(
                server, prefix, APPENDS,
                lambda n: [{"type": "custom", "customType": "writer", "data": {"who": prefix, "n": n}}])

        threads = [threading.Thread(target=run, args=(first, "a")), threading.Thread(target=run, args=(second, "b"))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        mine, theirs = acknowledged["a"], acknowledged["b"]
        assert len(mine) + len(theirs) > APPENDS  # (nearly all of them; refusals are rare)
        fresh = len(Session.open(path).entries)
        assert entry_count(first) == fresh  # the first daemon's view holds every line of the file

        pruned = first.request("prune", "session/prune", {"sessionId": "e2e-session"})["result"]
        assert pruned["prunedCount"] > 0

        on_disk = {e["id"] for e in file_entries(path)}
        lost = [i for i in mine + theirs if i not in on_disk]
        RESULTS["two daemons: acknowledged"] = len(mine) + len(theirs)
        RESULTS["two daemons: lost"] = len(lost)
        print("\nwriters:", RESULTS)  # (shown with -s: the figures of a long run)
        assert lost == []
        assert_no_orphans(path)
        reloaded = Session.open(path)
        assert reloaded.warnings == []
        assert entry_count(second) == len(reloaded.entries)  # the other daemon reloaded the rewritten file
    finally:
        first.kill()
        second.kill()


PI_STYLE_WRITER = textwrap.dedent(
    """
    import json, os, sys, time, uuid
    path, stop, parent = sys.argv[1], sys.argv[2], sys.argv[3]
    print("ready", flush=True)
    sys.stdin.readline()
    n = 0
    while not os.path.exists(stop):  # writes all the while the daemon appends and prunes
        n += 1
        entry_id = uuid.uuid4().hex[:8]
        line = {"type": "message", "id": entry_id, "parentId": parent, "timestamp": "2026-01-01T00:00:00.000Z",
                "message": {"role": "user", "content": [{"type": "text", "text": f"typed in pi {n}"}],
                            "timestamp": 1770000000000 + n}}
        # As Pi's appendFileSync: open for appending, one write of the whole line, close; no lock.
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, (json.dumps(line, separators=(",", ":")) + "\\n").encode())
        finally:
            os.close(fd)
        print(entry_id, flush=True)  # acknowledged
        parent = entry_id
        time.sleep(0.001)
    """
)


def test_pi_style_writer_beside_daemon_appends_and_automatic_prunes_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    ids = write_session(path, tmp_path, turns=4, text_chars=100, tool_output_chars=6000)
    daemon = start(path)
    stop = tmp_path / "stop"
    writer = subprocess.Popen([sys.executable, "-c", PI_STYLE_WRITER, str(path), str(stop), ids[-1]],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout is not None and writer.stdin is not None
        assert writer.stdout.readline() == "ready\n"
        rounds = max(10, APPENDS // 10)

        def turn(n: int) -> list[dict[str, Any]]:
            # A tool call and its long result: every automatic check after it finds output to prune.
            call = {"type": "toolCall", "id": f"c{n}", "name": "bash", "arguments": {"command": "cat x"}}
            return [{"type": "message", "message": assistant_message(f"step {n}", 1_770_000_000_000 + n, [call])},
                    {"type": "message", "message": tool_result(f"c{n}", "bash", "output line\n" * 500,
                                                               1_770_000_000_000 + n)},
                    {"type": "message", "message": user_message(f"go on {n}", 1_770_000_000_000 + n)}]

        writer.stdin.write("go\n")
        writer.stdin.flush()
        ours = pipeline_appends(daemon, "d", rounds, turn)
        stop.touch()
        out, _ = writer.communicate(timeout=120)
        assert writer.returncode == 0
        theirs = out.split()
        assert theirs

        # A last append whose automatic check prunes again, after the writer is done.
        ours += pipeline_appends(daemon, "z", 1, turn)
        rewritten = daemon.request("prune", "session/prune", {"sessionId": "e2e-session", "dryRun": True})
        assert "result" in rewritten
        pruned = [e for e in file_entries(path) if e.get("message", {}).get("prunedAt")]
        assert pruned, "the automatic checks must have pruned (rewritten) the file"

        on_disk = {e["id"] for e in file_entries(path)}
        lost_theirs = [i for i in theirs if i not in on_disk]
        lost_ours = [i for i in ours if i not in on_disk]
        RESULTS["pi-style writer: acknowledged"] = len(theirs) + len(ours)
        RESULTS["pi-style writer: lost"] = len(lost_theirs) + len(lost_ours)
        RESULTS["pi-style writer: pruned entries"] = len(pruned)
        print("\nwriters:", RESULTS)  # (shown with -s: the figures of a long run)
        assert lost_theirs == [] and lost_ours == []
        assert_no_orphans(path)
        reloaded = Session.open(path)
        assert reloaded.warnings == []
        assert entry_count(daemon) == len(reloaded.entries)
    finally:
        if writer.poll() is None:
            writer.kill()
        daemon.kill()


def test_a_batch_append_that_fails_half_way_leaves_file_and_daemon_as_they_were(tmp_path: Path) -> None:
    """Item 10: the second entry of a batch cannot be written (a lone surrogate in its data has no
    UTF-8 form). Before, the first entry was written and kept in memory although the request failed."""
    path = tmp_path / "s.jsonl"
    write_session(path, tmp_path, turns=2)
    before = path.read_bytes()
    daemon = start(path)
    try:
        count = entry_count(daemon)
        body = ('{"jsonrpc":"2.0","id":"batch","method":"session/append","params":{"sessionId":"e2e-session",'
                '"entries":[{"type":"message","message":{"role":"user","content":"first","timestamp":1}},'
                '{"type":"custom","customType":"x","data":"\\ud800"}]}}').encode()
        daemon.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        error = daemon.response("batch")["error"]
        assert error["code"] == -32018 and "not valid Unicode (\\ud800); nothing was written" in error["message"]
        assert path.read_bytes() == before
        assert entry_count(daemon) == count
        after = daemon.request("ok", "session/append", {"sessionId": "e2e-session", "entries": [
            {"type": "message", "message": user_message("next", 2)}]})["result"]
        assert [e["id"] for e in Session.open(path).entries][-1] == after["leafId"]
        assert entry_count(daemon) == count + 1
    finally:
        daemon.kill()
