"""Fuzzing the session loader with damaged copies of the real Pi fixture (copied into tmp_path).

Proves: `Session.open` never crashes or hangs on truncated lines, invalid UTF-8, oversized lines,
100k-deep nesting, wrong types (non-dict lines, non-string ids/types/parentIds, messages and
content of the wrong type), duplicate and dangling ids and parentId cycles; every damaged line is
reported with its exact line number; every intact line is loaded (nothing stored is lost); and the
downstream views (context, tree, info, prepare, stats, prune, branch reports) work on the result.

Short by default (hypothesis max_examples=25); `COMPACTD_RELIABILITY_LONG=1` runs 400 examples.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from compactd.compaction.reports import branch_report, prepare_report, prune_report, stats_report
from compactd.session import Session
from compactd.session import file as session_file
from compactd.session.context import build_session_context
from compactd.session.views import context_report, info_report, tree_report

from tests.conftest import PI_FIXTURE

LONG = os.environ.get("COMPACTD_RELIABILITY_LONG") == "1"
EXAMPLES = 400 if LONG else 25
BASE_LINES = 160  # header + the first entries of the fixture: enough structure, fast to reload

WEIRD: list[Any] = [None, 0, -1, 1.5, True, "", "x", [], {}, [1, [2]], {"a": None}, "\u0000", 2**62, -(2**62)]


def v3_lines(tmp_path: Path) -> list[bytes]:
    """The fixture migrated to v3 by our own loader, as raw lines."""
    source = tmp_path / "fixture.jsonl"
    shutil.copyfile(PI_FIXTURE, source)
    session = Session.open(source)
    session.rewrite()
    return source.read_bytes().splitlines()[:BASE_LINES]


def exercise_views(session: Session) -> None:
    """Everything downstream a client can ask for on a loaded session."""
    build_session_context(session.entries, session.leaf_id)
    tree_report(session)
    info_report(session)
    context_report(session)
    prepare_report(session, keep_recent_tokens=2000)
    stats_report(session, per_entry=True)
    prune_report(session)
    ids = list(session.by_id)
    if ids:
        branch_report(session, ids[0], ids[-1])
        branch_report(session, ids[-1], ids[len(ids) // 2])


def expected_entries(lines: list[bytes]) -> tuple[list[str], set[int]]:
    """Independent oracle for a v3 file: ids of lines that must load, line numbers that must warn."""
    ids: list[str] = []
    bad: set[int] = set()
    for number, raw in enumerate(lines[1:], start=2):
        if not raw.strip():
            continue
        try:
            obj = orjson.loads(raw)
        except (ValueError, RecursionError):
            bad.add(number)
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
            bad.add(number)
        elif not isinstance(obj.get("id"), str) or not obj["id"] or obj["id"] in ids:
            bad.add(number)
        else:
            if obj.get("parentId") is not None and not isinstance(obj["parentId"], str):
                bad.add(number)  # loaded, but the bad parentId is reported
            ids.append(obj["id"])
    return ids, bad


def mutate_value(obj: Any, rng: random.Random, depth: int = 0) -> None:
    if isinstance(obj, dict) and obj:
        key = rng.choice(list(obj))
        if depth > 3 or rng.random() < 0.5 or not isinstance(obj[key], (dict, list)):
            obj[key] = rng.choice(WEIRD)
        else:
            mutate_value(obj[key], rng, depth + 1)
    elif isinstance(obj, list) and obj:
        index = rng.randrange(len(obj))
        if depth > 3 or rng.random() < 0.5 or not isinstance(obj[index], (dict, list)):
            obj[index] = rng.choice(WEIRD)
        else:
            mutate_value(obj[index], rng, depth + 1)


def mutate_line(raw: bytes, kind: str, rng: random.Random, ids: list[str]) -> bytes:
    if kind == "truncate":
        return raw[: rng.randrange(1, max(2, len(raw)))]
    if kind == "utf8":
        at = rng.randrange(len(raw))
        return raw[:at] + b"\xff\xfe\xc3" + raw[at:]
    if kind == "nest":
        return b"[" * 100_000 + b"]" * 100_000
    if kind == "not_object":
        return orjson.dumps(rng.choice([[1, 2], "text", 3, None, True]))
    try:
        obj = orjson.loads(raw)
    except (ValueError, RecursionError):
        return raw  # already damaged by an earlier mutation
    if not isinstance(obj, dict):
        return raw
    if kind == "wrong_type":
        mutate_value(obj, rng)
    elif kind == "field":
        obj[rng.choice(["id", "type", "parentId", "message", "content", "summary", "firstKeptEntryId"])] = rng.choice(WEIRD)
    elif kind == "message_content":
        if isinstance(obj.get("message"), dict):
            obj["message"]["content"] = rng.choice(WEIRD + [[{"type": 5}], [{"type": "text", "text": 7}]])
    elif kind == "duplicate":
        obj["id"] = rng.choice(ids)
    elif kind == "dangling":
        obj["parentId"] = "nowhere-" + str(rng.randrange(1000))
    elif kind == "cycle":
        obj["parentId"] = obj.get("id")
    elif kind == "cycle2":
        obj["parentId"] = rng.choice(ids[-5:])  # may point at a descendant: a longer cycle
    return orjson.dumps(obj)


KINDS = ["truncate", "utf8", "nest", "not_object", "wrong_type", "field", "message_content",
         "duplicate", "dangling", "cycle", "cycle2"]


class _Lines(list):  # type: ignore[type-arg]
    def __repr__(self) -> str:  # keep hypothesis reports readable
        return f"<{len(self)} fixture lines>"


@pytest.fixture(scope="module")
def base_lines(tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    return _Lines(v3_lines(tmp_path_factory.mktemp("fuzz-base")))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 2**32 - 1),
    mutations=st.lists(st.tuples(st.integers(1, BASE_LINES - 1), st.sampled_from(KINDS)), min_size=1, max_size=8),
    torn_tail=st.booleans(),
)
def test_mutated_fixture_loads_and_reports_every_damaged_line(
    base_lines: list[bytes], tmp_path: Path, seed: int, mutations: list[tuple[int, str]], torn_tail: bool
) -> None:
    rng = random.Random(seed)
    lines = list(base_lines)
    ids = [json.loads(line)["id"] for line in base_lines[1:]]
    for index, kind in mutations:
        lines[index] = mutate_line(lines[index], kind, rng, ids)
    data = b"\n".join(lines) + b"\n"
    if torn_tail:
        data += b'{"type":"message","id":"torn0001","mess'
    path = tmp_path / f"fuzz-{seed}.jsonl"
    path.write_bytes(data)

    session = Session.open(path)

    want_ids, bad_lines = expected_entries(lines)
    assert [e["id"] for e in session.entries] == want_ids  # every intact line loaded, in order
    warned = {w.line for w in session.warnings}
    assert bad_lines <= warned, f"unreported damaged lines: {sorted(bad_lines - warned)}"
    if torn_tail:
        torn = [w for w in session.warnings if "torn" in w.message]
        assert [w.line for w in torn] == [len(lines) + 1]
    assert warned <= bad_lines | {len(lines) + 1}  # no warning for an intact line
    exercise_views(session)


def test_each_damage_kind_is_reported_precisely(base_lines: list[bytes], tmp_path: Path) -> None:
    lines = list(base_lines)
    lines[3] = lines[3][:40]  # truncated mid-line (not the last line: invalid JSON)
    lines[5] = lines[5][:10] + b"\xff\xfe" + lines[5][10:]
    lines[7] = b"[" * 100_000 + b"]" * 100_000
    lines[9] = b'"just a string"'
    entry = json.loads(lines[11])
    entry["parentId"] = [1, 2]
    lines[11] = orjson.dumps(entry)
    duplicate = json.loads(lines[13])
    duplicate["id"] = json.loads(lines[12])["id"]
    lines[13] = orjson.dumps(duplicate)
    no_id = json.loads(lines[15])
    no_id["id"] = 42
    lines[15] = orjson.dumps(no_id)
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")

    session = Session.open(path)

    by_line = {w.line: w.message for w in session.warnings}
    assert set(by_line) == {4, 6, 8, 10, 12, 14, 16}
    assert by_line[4].startswith("invalid JSON skipped")
    assert by_line[6].startswith("invalid JSON skipped")  # invalid UTF-8
    assert "recursion" in by_line[8] or "invalid JSON" in by_line[8]  # nesting: reported, no crash
    assert "not a session entry" in by_line[10]
    assert "parentId is a list" in by_line[12]
    assert "duplicate id" in by_line[14] and "first on line 13" in by_line[14]
    assert "no string 'id'" in by_line[16]
    assert len(session.entries) == len(lines) - 1 - 6  # only the six unusable lines are missing
    assert session.by_id[entry["id"]]["parentId"] is None  # the bad parent became a root
    exercise_views(session)


def test_oversized_line_is_skipped_without_being_parsed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The limit is a module constant; a small value keeps the test file small.
    monkeypatch.setattr(session_file, "MAX_LINE_BYTES", 4096)
    monkeypatch.setattr(session_file, "_SKIP_CHUNK", 100)
    session = Session.create("/w", tmp_path / "s.jsonl")
    first = session.append_message({"role": "assistant", "content": [{"type": "text", "text": "a"}], "stopReason": "stop"})
    huge = {"type": "custom", "id": "huge0001", "parentId": first, "customType": "blob", "data": "z" * 10_000}
    with open(session.path, "ab") as handle:  # type: ignore[arg-type]
        handle.write(orjson.dumps(huge) + b"\n")
    after = Session.open(session.path)  # type: ignore[arg-type]
    last = after.append_message({"role": "user", "content": "after the huge line"})

    reloaded = Session.open(session.path)  # type: ignore[arg-type]
    assert [e["id"] for e in reloaded.entries] == [first, last]
    [warning] = reloaded.warnings
    assert warning.line == 3 and "exceeds the limit of 4096 bytes" in warning.message
    assert "huge0001" in session.path.read_text()  # type: ignore[union-attr]  # still stored, untouched


def test_cycles_and_dangling_parents_do_not_hang(tmp_path: Path) -> None:
    header = {"type": "session", "version": 3, "id": "cyc", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"}
    rows = [header]
    for i in range(200):  # a 200-long ring, a self loop, a dangling parent
        rows.append({"type": "message", "id": f"r{i}", "parentId": f"r{(i + 1) % 200}", "timestamp": "t",
                     "message": {"role": "user" if i % 2 else "assistant", "content": f"m{i}"}})
    rows.append(
        {"type": "message", "id": "self", "parentId": "self", "timestamp": "t", "message": {"role": "user", "content": 5}}
    )
    rows.append({"type": "compaction", "id": "dang", "parentId": "missing", "timestamp": "t", "summary": None,
                 "firstKeptEntryId": 17, "tokensBefore": "many"})
    path = tmp_path / "cyc.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    session = Session.open(path)
    assert len(session.entries) == 202
    exercise_views(session)
    for leaf in ("r0", "r150", "self", "dang"):
        context = build_session_context(session.entries, leaf)
        assert len(context.messages) <= 201
