"""Atomic rewrites (pruning, migration) next to another writer, and backups before rewrites.

Proves: a line another process appends to the old file in the instant between our check and the
rename is carried over into the new file and adopted (before the fix it vanished with the old
inode); a rewrite of a file whose load skipped damaged lines first keeps the original bytes as
`<file>.bak`, so nothing stored is lost.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from compactd.session import Session
from compactd.session import store


def assistant(text: str) -> dict:
    return {"role": "assistant", "content": [{"type": "text", "text": text}], "stopReason": "stop"}


def test_append_landing_just_before_the_rename_survives_the_rewrite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.jsonl"
    ours = Session.create("/w", path)
    first = ours.append_message(assistant("x"))
    theirs = Session.open(path)
    real_replace = os.replace

    def racing_replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        if Path(dst) == path:  # the other process appends after our check, before our rename
            theirs.append_message({"role": "user", "content": "late line from pi"})
        real_replace(src, dst)

    monkeypatch.setattr(store.os, "replace", racing_replace)
    ours.rewrite()
    monkeypatch.setattr(store.os, "replace", real_replace)

    late = theirs.leaf_id
    assert late in ours.by_id and ours.external_appends[-1].entry_ids == (late,)
    on_disk = [json.loads(line)["id"] for line in path.read_text().splitlines()[1:]]
    assert on_disk == [first, late]
    mine = ours.append_message({"role": "user", "content": "after"})
    assert [e["id"] for e in Session.open(path).entries] == [first, late, mine]


def test_rewrite_of_a_damaged_file_keeps_the_original_bytes(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    session = Session.create("/w", path)
    session.append_message(assistant("x"))
    with open(path, "ab") as handle:
        handle.write(b'{"not json\n')
    original = path.read_bytes()
    reopened = Session.open(path)
    assert [w.line for w in reopened.warnings] == [3]
    reopened.rewrite()
    assert (tmp_path / "s.jsonl.bak").read_bytes() == original
    assert b"not json" not in path.read_bytes()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
