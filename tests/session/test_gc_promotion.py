"""Opening a large file hands what it parsed straight to the collector's oldest generation, and
never thaws what someone else froze (the daemon freezes long sessions)."""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from compactd.session import Session
from compactd.session.store import PROMOTE_MIN_BYTES


def _write(path: Path, size: int) -> Path:
    header = {"type": "session", "version": 3, "id": "gc", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/tmp"}
    lines = [json.dumps(header)]
    parent = None
    i = 0
    while sum(map(len, lines)) < size:
        entry = {"type": "message", "id": f"e{i}", "parentId": parent, "timestamp": "2025-01-01T00:00:01.000Z",
                 "message": {"role": "user", "content": [{"type": "text", "text": "x" * 20_000}]}}
        lines.append(json.dumps(entry))
        parent = f"e{i}"
        i += 1
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def clean_gc() -> Iterator[None]:
    # Start from a collector nobody has frozen: an earlier test in the same process may have run
    # the daemon in process, which freezes long sessions, and promotion rightly skips then.
    gc.unfreeze()
    gc.collect()
    yield
    gc.unfreeze()


def _in_generation(obj: object, generation: int) -> bool:
    return any(o is obj for o in gc.get_objects(generation))


def test_a_large_open_leaves_its_entries_in_the_oldest_generation(tmp_path: Path, clean_gc: None) -> None:
    session = Session.open(_write(tmp_path / "big.jsonl", PROMOTE_MIN_BYTES + 100_000))
    content = session.entries[-1]["message"]["content"]  # a list: always tracked
    assert _in_generation(content, 2)
    assert gc.get_count()[0] < 100  # no backlog of young objects left for the next pass
    assert gc.get_freeze_count() == 0  # promoted, not frozen: still collectable


def test_a_small_open_leaves_the_collector_alone(tmp_path: Path, clean_gc: None) -> None:
    session = Session.open(_write(tmp_path / "small.jsonl", 200_000))
    content = session.entries[-1]["message"]["content"]
    assert not _in_generation(content, 2)


def test_what_another_caller_froze_stays_frozen(tmp_path: Path, clean_gc: None) -> None:
    kept = [[1], [2]]
    gc.freeze()
    frozen = gc.get_freeze_count()
    session = Session.open(_write(tmp_path / "big.jsonl", PROMOTE_MIN_BYTES + 100_000))
    assert gc.get_freeze_count() == frozen
    assert not _in_generation(kept, 2)  # still in the permanent generation
    assert session.entries
