"""A full disk (a small tmpfs, really full): every failed write leaves the session file and the
session in memory as they were, and nothing of ours behind — no `.<name>.<pid>.tmp`, no half
line, no half backup — so a full disk does not stay full because of compactd (issue 12 §1).

Needs to mount a tmpfs (root, or a kernel that allows it); skipped with the reason otherwise.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from compactd.engine.compactor import compact
from compactd.engine.pruner import archive_path, prune
from compactd.session import Session
from compactd.summarize.extractive import ExtractiveSummarizer

from ..conftest import REAL_PI_FILES
from ..engine.builders import add, assistant, call, result, settings, turn, user

DISK_BYTES = 8 * 1024 * 1024


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    try:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK_BYTES}", "tmpfs", str(mount_point)],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"cannot mount a tmpfs to fill up: {exc}")
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs to fill up (needs root): {done.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], capture_output=True, timeout=30)


def fill(disk: Path, leave: int) -> Path:
    """Take all free space but about `leave` bytes with a filler file."""
    filler = disk / "filler"
    free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
    with open(filler, "ab") as handle:
        handle.truncate(0)
        chunk = b"\0" * 65536
        remaining = max(0, free - leave)
        try:
            while remaining > 0:
                remaining -= handle.write(chunk[: min(len(chunk), remaining)])
                handle.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    return filler


def ours(disk: Path) -> list[str]:
    """Every file in the folder except the filler: what we left behind."""
    return sorted(p.name for p in disk.iterdir() if p.name != "filler")


def test_append_on_a_full_disk_leaves_no_half_line(disk: Path) -> None:
    path = disk / "s.jsonl"
    session = Session.create("/w", path)
    add(session, user("hello"), assistant("hi"))
    before, entries, leaf = path.read_bytes(), len(session.entries), session.leaf_id
    fill(disk, leave=8192)
    with pytest.raises(OSError) as info:
        session.append_message(user("y" * 200_000))
    assert info.value.errno == errno.ENOSPC
    assert path.read_bytes() == before  # the partial line was cut off again
    assert len(session.entries) == entries and session.leaf_id == leaf
    assert ours(disk) == ["s.jsonl"]
    (disk / "filler").unlink()
    session.append_message(user("after space came back"))
    reopened = Session.open(path)
    assert reopened.warnings == [] and len(reopened.entries) == entries + 1


@pytest.mark.parametrize("room", ["none", "backup only"])
def test_migration_rewrite_on_a_full_disk_removes_its_temp_file(disk: Path, room: str) -> None:
    source = REAL_PI_FILES["pi-mono-large-session"]
    path = disk / "s.jsonl"
    shutil.copyfile(source, path)
    original = path.read_bytes()
    session = Session.open(path)
    assert session.migrated_from == 1
    # "backup only": the .v1.bak copy fits, the rewritten file (ids added: larger) does not.
    fill(disk, leave=0 if room == "none" else len(original) + 64 * 1024)
    with pytest.raises(OSError) as info:
        session.append_message(user("first write migrates"))
    assert info.value.errno == errno.ENOSPC
    assert path.read_bytes() == original
    assert session.migrated_from == 1 and session.leaf_id == session.entries[-1]["id"]
    if room == "none":
        assert ours(disk) == ["s.jsonl"]
    else:
        assert ours(disk) == ["s.jsonl", "s.jsonl.v1.bak"]  # a whole backup, never a partial one
        assert (disk / "s.jsonl.v1.bak").read_bytes() == original
    (disk / "filler").unlink()
    session.append_message(user("first write migrates"))
    assert (disk / "s.jsonl.v1.bak").read_bytes() == original
    assert Session.open(path).warnings == []


async def test_compaction_on_a_full_disk_leaves_the_file_byte_identical(disk: Path, tmp_path: Path) -> None:
    path = disk / "s.jsonl"
    session = Session.create("/w", path)
    for n in range(6):
        turn(session, n, size=2000)
    before, entries = path.read_bytes(), len(session.entries)
    fill(disk, leave=0)
    with pytest.raises(Exception, match="No space left"):
        await compact(session, settings(tmp_path, compaction={"keepRecentTokens": 250}), ExtractiveSummarizer())
    assert path.read_bytes() == before and len(session.entries) == entries
    assert ours(disk) == ["s.jsonl"]


@pytest.mark.parametrize("room", ["none", "archive only"])
def test_pruning_on_a_full_disk_restores_memory_and_leaves_no_temp_file(disk: Path, tmp_path: Path, room: str) -> None:
    path = disk / "s.jsonl"
    session = Session.create("/w", path)
    add(session, user("run the checks"))
    results = []
    for k in range(6):
        add(session, assistant(f"step {k}", calls=[call(f"t{k}", "bash", command=f"check {k}")]))
        results += add(session, result(f"t{k}", "bash", f"output {k} " + "o" * 20_000))
    add(session, assistant("all done"))
    before = path.read_bytes()
    contents = {i: session.by_id[i]["message"] for i in results}
    pruning = settings(tmp_path, pruning={"protectTokens": 600, "minimumSavings": 300})
    planned = prune(session, pruning, dry_run=True).entry_ids
    assert len(planned) >= 4
    # "archive only": room for the archive of the originals (whole pages), not for the new file.
    archive_bytes = sum(len(str(contents[i]["content"])) + 200 for i in planned)
    fill(disk, leave=0 if room == "none" else (archive_bytes // 4096 + 2) * 4096)
    with pytest.raises(OSError) as info:
        prune(session, pruning)
    assert info.value.errno == errno.ENOSPC
    assert path.read_bytes() == before
    assert {i: session.by_id[i]["message"] for i in results} == contents
    archive = archive_path(path)
    if room == "none":  # the archive line that did not fit was cut off again
        assert ours(disk) == ["s.jsonl", archive.name] and archive.read_bytes() == b""
    else:  # the rewrite failed: its temp file is gone, the archive is complete (restore is a no-op)
        assert ours(disk) == ["s.jsonl", archive.name]
        assert [line.count(b'"entryId"') for line in archive.read_bytes().splitlines()] == [1] * len(planned)
