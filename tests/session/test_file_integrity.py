"""The file rules of session.file against real rewrites by another program (issue 12 §1).

Pi migrates a v1/v2 file *in place* when it opens it: same inode, new random ids, a larger file.
compactd must not take that for an append: never write on the stale view, never orphan an entry,
never back up the wrong bytes. `sync()` reloads such a file instead.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path

import pytest

from compactd.session import ConcurrentModificationError, FileRewrittenError, Session
from compactd.session import file as session_file

from ..conftest import REAL_PI_FILES


def assistant(text: str) -> dict:
    return {"role": "assistant", "content": [{"type": "text", "text": text}], "stopReason": "stop"}


def pi_migrates_in_place(path: Path) -> list[dict]:
    """What Pi does on opening a v1 file: same inode, v3 header, fresh random ids chained in file
    order, written over the old bytes (the file grows). Returns the new entries."""
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    header, rest = dict(lines[0]), lines[1:]
    header["version"] = 3
    previous = None
    migrated = []
    for obj in rest:
        entry = {"type": obj["type"], "id": uuid.uuid4().hex[:8], "parentId": previous,
                 **{k: v for k, v in obj.items() if k != "type"}}
        migrated.append(entry)
        previous = entry["id"]
    data = "".join(json.dumps(o, separators=(",", ":")) + "\n" for o in [header, *migrated]).encode()
    with open(path, "r+b") as handle:  # in place: no rename, same inode
        handle.write(data)
        handle.truncate()
    return migrated


def pi_appends(path: Path, parent: str, text: str) -> str:
    entry_id = uuid.uuid4().hex[:8]
    line = {"type": "message", "id": entry_id, "parentId": parent, "timestamp": "2026-01-01T00:00:00.000Z",
            "message": assistant(text)}
    with open(path, "a") as handle:
        handle.write(json.dumps(line) + "\n")
    return entry_id


def all_parents_present(path: Path) -> bool:
    objs = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    ids = {o["id"] for o in objs}
    return all(o.get("parentId") is None or o["parentId"] in ids for o in objs)


@pytest.fixture
def v1_copy(tmp_path: Path) -> Path:
    path = tmp_path / "s.jsonl"
    shutil.copyfile(REAL_PI_FILES["prompt-cache-replay-session"], path)
    return path


def test_in_place_migration_by_another_program_is_never_taken_for_an_append(v1_copy: Path) -> None:
    original = v1_copy.read_bytes()
    ours = Session.open(v1_copy)
    assert ours.migrated_from == 1
    inode = v1_copy.stat().st_ino
    theirs = pi_migrates_in_place(v1_copy)
    pi_leaf = pi_appends(v1_copy, theirs[-1]["id"], "pi answered after migrating")
    assert v1_copy.stat().st_ino == inode and v1_copy.stat().st_size > len(original)  # same inode, grown
    on_disk = v1_copy.read_bytes()

    with pytest.raises(FileRewrittenError, match="rewritten in place.*nothing was written"):
        ours.append_message({"role": "user", "content": "stale"})
    assert v1_copy.read_bytes() == on_disk  # nothing written on the stale view
    assert not (v1_copy.parent / "s.jsonl.v1.bak").exists()  # and Pi's v3 bytes not saved as "v1"
    assert ours.migrated_from == 1 and all(e["id"] not in {t["id"] for t in theirs} for e in ours.entries)

    result = ours.sync()
    assert result.reloaded and not result.appended and ours.generation == 1
    assert [e["id"] for e in ours.entries] == [t["id"] for t in theirs] + [pi_leaf]
    assert ours.leaf_id == pi_leaf and ours.migrated_from is None
    mine = ours.append_message({"role": "user", "content": "now on the fresh view"})
    assert ours.by_id[mine]["parentId"] == pi_leaf
    assert all_parents_present(v1_copy)  # nothing orphaned
    assert v1_copy.read_bytes().startswith(on_disk)  # a plain append after Pi's bytes
    assert sorted(p.name for p in v1_copy.parent.iterdir()) == ["s.jsonl"]


def test_first_write_after_an_untouched_v1_backs_up_the_original_bytes(v1_copy: Path) -> None:
    original = v1_copy.read_bytes()
    session = Session.open(v1_copy)
    session.append_message({"role": "user", "content": "hi"})
    assert (v1_copy.parent / "s.jsonl.v1.bak").read_bytes() == original
    assert all_parents_present(v1_copy)


def test_a_rewrite_racing_the_backup_copy_is_refused_and_leaves_no_temp_file(
    v1_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = Session.open(v1_copy)
    real_copy = shutil.copyfile
    pis: list[bytes] = []

    def pi_rewrites_first(src: object, dst: object) -> object:  # the race: Pi migrates just before our copy
        pi_migrates_in_place(v1_copy)
        pis.append(v1_copy.read_bytes())
        return real_copy(src, dst)  # type: ignore[arg-type]

    monkeypatch.setattr(session_file.shutil, "copyfile", pi_rewrites_first)
    with pytest.raises(FileRewrittenError):
        session.append_message({"role": "user", "content": "x"})
    monkeypatch.setattr(session_file.shutil, "copyfile", real_copy)
    assert sorted(p.name for p in v1_copy.parent.iterdir()) == ["s.jsonl"]  # no backup of the wrong bytes, no temp
    assert v1_copy.read_bytes() == pis[0]  # Pi's bytes, untouched by us
    assert session.sync().reloaded


def test_same_size_edit_of_known_bytes_is_detected(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    session = Session.create("/w", path)
    first = session.append_message(assistant("aaaa"))
    data = path.read_bytes()
    os.utime(path, ns=(1, 1))  # mtime differs, size equal
    with open(path, "r+b") as handle:  # same size, same inode, different bytes
        handle.write(data.replace(b"aaaa", b"bbbb"))
    with pytest.raises(FileRewrittenError):
        session.append_message(assistant("c"))
    assert session.sync().reloaded
    assert session.by_id[first]["message"]["content"][0]["text"] == "bbbb"


def test_touched_but_unchanged_file_is_not_reloaded(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    session = Session.create("/w", path)
    session.append_message(assistant("a"))
    os.utime(path, ns=(1, 1))
    assert not session.sync()
    session.append_message(assistant("b"))
    assert len(Session.open(path).entries) == 2


def test_appends_far_from_the_sampled_bytes_of_a_large_file_are_adopted(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    session = Session.create("/w", path)
    for i in range(300):
        session.append_message(assistant(f"{i} " + "x" * 500))
    other = Session.open(path)
    theirs = other.append_message(assistant("from the other writer"))
    result = session.sync()
    assert result.appended == (theirs,) and not result.reloaded and session.leaf_id == theirs


def test_leaf_off_the_tip_survives_a_reload_when_it_still_exists(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    session = Session.create("/w", path)
    a = session.append_message(assistant("a"))
    session.append_message(assistant("b"))
    session.branch(a)
    other = Session.open(path)
    other.rewrite()  # another program replaces the file (same content, new inode)
    assert session.sync().reloaded
    assert session.leaf_id == a


def test_a_line_read_half_written_is_adopted_once_its_writer_finishes_it(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    session = Session.create("/w", path)
    first = session.append_message(assistant("a"))
    line = json.dumps({"type": "message", "id": "late0001", "parentId": first, "timestamp": "2026-01-01T00:00:00.000Z",
                       "message": assistant("written in two steps")}) + "\n"
    with open(path, "a") as handle:  # the other writer is half-way through its line when we load
        handle.write(line[:40])
    loaded = Session.open(path)
    assert [w.line for w in loaded.warnings] == [3] and "incomplete final line" in loaded.warnings[0].message
    with open(path, "a") as handle:
        handle.write(line[40:])
    result = loaded.sync()
    assert result.appended == ("late0001",) and loaded.leaf_id == "late0001"
    mine = loaded.append_message(assistant("after"))
    assert [e["id"] for e in Session.open(path).entries] == [first, "late0001", mine]


def test_a_file_replaced_by_another_session_is_not_reloaded_as_this_one(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    session = Session.create("/w", path, session_id="first")
    session.append_message(assistant("a"))
    other = Session.create("/w", tmp_path / "o.jsonl", session_id="second")
    other.append_message(assistant("b"))
    os.replace(tmp_path / "o.jsonl", path)
    with pytest.raises(ConcurrentModificationError, match="another session"):
        session.sync()
    assert session.session_id == "first" and len(session.entries) == 1


def _small_file_cases(tmp_path: Path) -> list[Path]:
    """Files the whole-file read must take like the streaming one: real Pi files, a title slot,
    a torn last line, an invalid line, a blank line, fingerprint spans cut at every size."""
    cases = []
    for source in REAL_PI_FILES.values():
        if source.stat().st_size <= session_file.READ_WHOLE_BYTES:
            cases.append(tmp_path / source.name)
            shutil.copyfile(source, cases[-1])
    header = json.dumps({"type": "session", "version": 3, "id": "s1", "timestamp": "t", "cwd": "/"})
    slot = json.dumps({"type": "title", "v": 1, "title": "x", "updatedAt": "t", "pad": " " * 40})
    line = json.dumps({"type": "message", "id": "a", "parentId": None, "timestamp": "t",
                       "message": {"role": "user", "content": "é" * 300, "timestamp": 1}})
    for n, body in enumerate([
        f"{slot}\n{header}\n{line}\n",
        f"{header}\n{line}\n\n not json\n{line[:-9]}",  # blank, invalid, torn
        f"{header}\n" + f"{line}\n" * 40,  # past the fingerprint's edge and spots
        f"{header}\n" + f"{line}\n" * 7,
    ]):
        path = tmp_path / f"case-{n}.jsonl"
        path.write_text(body, encoding="utf-8")
        cases.append(path)
    return cases


def test_small_files_read_whole_give_what_the_streaming_read_gives(tmp_path: Path, monkeypatch) -> None:
    cases = _small_file_cases(tmp_path)
    whole = [session_file.SessionFile(path).read() for path in cases]
    monkeypatch.setattr(session_file, "READ_WHOLE_BYTES", -1)  # every file through the buffered reader
    streamed = [session_file.SessionFile(path).read() for path in cases]
    assert len(cases) >= 7
    for path, a, b in zip(cases, whole, streamed):
        assert a == b, path.name
    # the fingerprint over bytes in memory is the one the file rules compute from the file
    for path, raw in zip(cases, whole):
        with open(path, "rb") as handle:
            assert raw.state.fingerprint == session_file.fingerprint(handle.fileno(), raw.state.prelude_len, raw.state.size)
