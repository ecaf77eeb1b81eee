"""Rewrites (pruning, migration) on real files (issue 26 items 5, 8, 9, 10).

- Lines compactd did not change keep their original bytes (big integers, -0, exponents, escapes).
- A symlinked session file: the target is rewritten, the link stays.
- A compactd killed (SIGKILL) inside a rewrite or a backup leaves `.<name>.<pid>.tmp` behind; the
  next open of that session removes it, and nothing of a live process or another session.
- A file truncated to 0 bytes by another program can be reloaded and written again.
- A batch of appends is written all or nothing.
- Backups before rewrites that drop lines are never overwritten.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from compactd.engine.pruner import prune
from compactd.engine.settings import load_settings
from compactd.session import EntryNotFoundError, Session

REPO_ROOT = Path(__file__).resolve().parents[2]


def assistant(text: str, tool_call: str | None = None) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}]
    if tool_call:
        content.append({"type": "toolCall", "id": tool_call, "name": "bash", "arguments": {"command": "ls"}})
    return {"role": "assistant", "content": content, "stopReason": "toolUse" if tool_call else "stop",
            "usage": {"input": 10, "output": 10, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 20}}


def pi_file(path: Path, turns: int = 4) -> list[bytes]:
    """A v3 file as another program wrote it: spacing, escapes and numbers Python's JSON would not
    write back the same. Returns its lines."""
    lines = [b'{"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T00:00:00.000Z", '
             b'"cwd": "/w", "big": 123456789012345678901234567890}']
    parent = "null"
    for n in range(turns):
        user, call, result = f"u{n}", f"a{n}", f"r{n}"
        lines.append(('{"type":"message","id":"%s","parentId":%s,"timestamp":"2026-01-01T00:00:0%d.000Z",'
                      '"message":{"role":"user","content":"caf\\u00e9 %d","timestamp":1E2,"neg":-0,'
                      '"n":123456789012345678901234567890}}' % (user, parent, n, n)).encode())
        lines.append(('{"type":"message","id":"%s","parentId":"%s","timestamp":"2026-01-01T00:00:0%d.100Z",'
                      '"message":{"role":"assistant","content":[{"type":"text","text":"run"},'
                      '{"type":"toolCall","id":"c%d","name":"bash","arguments":{"command":"ls"}}],'
                      '"stopReason":"toolUse","usage":{"input":1.0E1,"output":10,"cacheRead":0,"cacheWrite":0,'
                      '"totalTokens":20}}}' % (call, user, n, n)).encode())
        lines.append(('{"type":"message","id":"%s","parentId":"%s","timestamp":"2026-01-01T00:00:0%d.200Z",'
                      '"message":{"role":"toolResult","toolCallId":"c%d","toolName":"bash",'
                      '"content":[{"type":"text","text":"%s"}],"isError":false,"timestamp":-0}}'
                      % (result, call, n, n, "output line " * 400)).encode())
        parent = f'"{result}"'
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return lines


def prune_settings(tmp_path: Path) -> Any:
    return load_settings(str(tmp_path), {"pruning": {"protectTokens": 500, "minimumSavings": 100}},
                         env={}, home=str(tmp_path / "home"))


def test_a_prune_keeps_the_bytes_of_every_line_it_did_not_change(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    original = pi_file(path)
    session = Session.open(path)
    result = prune(session, prune_settings(tmp_path))
    assert result.pruned_count >= 2
    after = path.read_bytes().split(b"\n")[:-1]
    assert len(after) == len(original)
    for before, now in zip(original, after):
        entry_id = json.loads(before).get("id")
        if entry_id in result.entry_ids:
            assert json.loads(now)["message"]["prunedAt"]  # the changed lines are written anew
        else:
            assert now == before  # big integers, -0, 1E2, \u00e9 and spacing as they were
    assert Session.open(path).by_id[result.entry_ids[0]]["message"]["prunedAt"]


def test_a_rewrite_through_a_symlink_writes_the_target_and_keeps_the_link(tmp_path: Path) -> None:
    real_dir, link_dir = tmp_path / "real", tmp_path / "links"
    real_dir.mkdir()
    link_dir.mkdir()
    target, link = real_dir / "s.jsonl", link_dir / "s.jsonl"
    pi_file(target)
    link.symlink_to(target)
    session = Session.open(link)
    result = prune(session, prune_settings(tmp_path))
    assert result.pruned_count
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert Session.open(target).by_id[result.entry_ids[0]]["message"]["prunedAt"]  # Pi opening the real path
    assert not [p for p in [*real_dir.iterdir(), *link_dir.iterdir()] if p.name.endswith(".tmp")]
    mine = session.append_message(assistant("after the prune"))
    assert Session.open(target).leaf_id == mine


KILLED_IN_REWRITE = textwrap.dedent(
    """
    import os, signal, sys
    from compactd.engine.pruner import prune
    from compactd.engine.settings import load_settings
    from compactd.session import Session

    path, home, which = sys.argv[1:4]
    real_replace = os.replace

    def replace(src, dst):
        name = os.path.basename(str(src))
        if name.endswith(".tmp") and (".bak." in name) == (which == "backup"):
            print("stuck", name, flush=True)  # the temp file is whole; the parent kills us now
            signal.pause()
        real_replace(src, dst)

    os.replace = replace
    session = Session.open(path)
    if which == "prune":
        prune(session, load_settings(home, {"pruning": {"protectTokens": 500, "minimumSavings": 100}},
                                     env={}, home=home))
    else:  # a v1 file's first write migrates it: backup first, then the rewrite
        session.append_message({"role": "user", "content": "after migration", "timestamp": 1})
    print("done", flush=True)
    """
)


@pytest.mark.parametrize("which", ["prune", "backup", "migration"])
def test_temp_files_of_a_killed_rewrite_are_removed_at_the_next_open(tmp_path: Path, which: str) -> None:
    path = tmp_path / "s.jsonl"
    if which == "prune":
        pi_file(path)
    else:
        lines = [{"type": "session", "id": "v1s", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"}]
        lines += [{"type": "message", "timestamp": "2026-01-01T00:00:01.000Z",
                   "message": {"role": "user", "content": f"hello {n}", "timestamp": n}} for n in range(20)]
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    original = path.read_bytes()
    child = subprocess.Popen([sys.executable, "-c", KILLED_IN_REWRITE, str(path), str(tmp_path), which],
                             stdout=subprocess.PIPE, text=True, cwd=REPO_ROOT)
    assert child.stdout is not None
    stuck = child.stdout.readline().split()
    assert stuck[0] == "stuck", stuck
    child.send_signal(signal.SIGKILL)
    child.wait(30)
    leftover = tmp_path / stuck[1]
    assert leftover.exists() and leftover.stat().st_size > 0  # what a killed rewrite leaves behind

    # Temp files that must stay: a live process's, and one of another session.
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        theirs = tmp_path / f".s.jsonl.{live.pid}.tmp"
        theirs.write_bytes(b"in progress")
        other = tmp_path / f".t.jsonl.{child.pid}.tmp"
        other.write_bytes(b"another session")
        reopened = Session.open(path)
        assert not leftover.exists()
        assert theirs.exists() and other.exists()
    finally:
        live.kill()
        live.wait()
    assert path.read_bytes() == original  # the file is intact: the rename never happened
    assert reopened.warnings == []


def test_a_file_truncated_to_nothing_is_reloaded_and_written_again(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    session = Session.create("/w", path)
    session.append_message({"role": "user", "content": "hi", "timestamp": 1})
    session.append_message(assistant("hello"))
    os.truncate(path, 0)
    result = session.sync()
    assert result.reloaded and session.entries == [] and session.leaf_id is None
    mine = session.append_message(assistant("a new start"))
    reopened = Session.open(path)
    assert reopened.session_id == session.session_id and [e["id"] for e in reopened.entries] == [mine]
    assert session.sync().appended == () and not session.sync().reloaded


def test_a_batch_that_fails_half_way_writes_and_keeps_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    session = Session.create("/w", path)
    first = session.append_message(assistant("hello"))
    before = path.read_bytes()
    with pytest.raises(EntryNotFoundError):
        with session.batch():
            session.append_message({"role": "user", "content": "first of the batch", "timestamp": 2})
            session.append_label_change("no-such-entry", "x")
    assert path.read_bytes() == before
    assert [e["id"] for e in session.entries] == [first] and session.leaf_id == first
    with session.batch():
        one = session.append_message({"role": "user", "content": "one", "timestamp": 3})
        two = session.append_message(assistant("two"))
    assert session.by_id[two]["parentId"] == one and session.leaf_id == two
    assert [e["id"] for e in Session.open(path).entries] == [first, one, two]


def test_backups_before_rewrites_that_drop_lines_are_never_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    session = Session.create("/w", path)
    session.append_message(assistant("x"))
    with open(path, "ab") as handle:
        handle.write(b'{"first damage\n')
    first = path.read_bytes()
    damaged = Session.open(path)
    damaged.rewrite()
    with open(path, "ab") as handle:  # another program appends a line we cannot keep
        handle.write(b'{"second damage\n')
    second = path.read_bytes()
    damaged.append_message({"role": "user", "content": "typed after", "timestamp": 1})
    assert damaged.warnings[-1].message.startswith("invalid JSON appended")
    third = path.read_bytes()
    damaged.rewrite()
    assert (tmp_path / "s.jsonl.bak").read_bytes() == first
    assert (tmp_path / "s.jsonl.bak.1").read_bytes() == third and b"second damage" in second
    assert b"damage" not in path.read_bytes()


def _foreign_write_before_ours(monkeypatch: pytest.MonkeyPatch, path: Path, data: bytes) -> None:
    """Another process appends `data` in the instant between our check of the file and our write."""
    real_write = os.write
    done = []

    def write(fd: int, buffer: Any) -> int:
        if not done and os.fstat(fd).st_ino == os.stat(path).st_ino:
            done.append(True)
            other = os.open(path, os.O_WRONLY | os.O_APPEND)
            real_write(other, data)
            os.close(other)
        return real_write(fd, buffer)

    monkeypatch.setattr(os, "write", write)


def test_a_line_appended_between_our_check_and_our_write_is_adopted_in_file_order(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.jsonl"
    session = Session.create("/w", path)
    first = session.append_message(assistant("hello"))
    theirs = {"type": "message", "id": "pi000001", "parentId": first, "timestamp": "2026-01-01T00:00:00.000Z",
              "message": {"role": "user", "content": "typed in pi", "timestamp": 1}}
    _foreign_write_before_ours(monkeypatch, path, (json.dumps(theirs) + "\n").encode())
    mine = session.append_message({"role": "user", "content": "from compactd", "timestamp": 2})
    monkeypatch.undo()
    assert [e["id"] for e in session.entries] == [first, "pi000001", mine]  # file order
    assert session.leaf_id == mine and session.by_id[mine]["parentId"] == first
    assert session.external_appends[-1].entry_ids == ("pi000001",)
    assert [e["id"] for e in Session.open(path).entries] == [first, "pi000001", mine]
    assert not session.changed_on_disk()


def test_our_line_glued_to_a_half_written_foreign_line_is_written_again_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.jsonl"
    session = Session.create("/w", path)
    first = session.append_message(assistant("hello"))
    _foreign_write_before_ours(monkeypatch, path, b'{"type":"message","id":"half-wri')  # a killed writer's
    mine = session.append_message({"role": "user", "content": "from compactd", "timestamp": 2})
    monkeypatch.undo()
    assert [e["id"] for e in session.entries] == [first, mine]
    reopened = Session.open(path)
    assert [e["id"] for e in reopened.entries] == [first, mine]
    assert [w.line for w in reopened.warnings] == [3]  # the glued line, reported and skipped
    assert [w.line for w in session.warnings] == [3]
