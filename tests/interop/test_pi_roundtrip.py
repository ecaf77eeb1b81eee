"""(b) Files the daemon compacted, navigated, pruned or forked load in the real Pi: its next
request starts with compactd's summary and its next compaction passes that summary on; Pi's own
context for them equals compactd's. (c) After the real Pi appends, compactd reopens them with
nothing lost and every line Pi wrote byte-identical after compactd writes again."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from compactd.session import Session

from .conftest import FILLER
from .daemon import Daemon
from .harness import FakeModel, PiHome, is_summary_request
from .test_pi_context import compactd_contexts, normalized

BASE_SCENARIO: list[dict[str, Any]] = [
    {"op": "prompt", "text": f"Task one: look at [[read app.py]]. {FILLER}"},
    {"op": "prompt", "text": f"Task two: run [[bash big.txt]]. {FILLER}"},
    {"op": "prompt", "text": f"Task three: record [[write notes_a.md alpha]]. {FILLER}"},
    {"op": "prompt", "text": f"Task four: think it over. {FILLER}"},
    {"op": "prompt", "text": f"Task five: run [[bash big.txt]] again. {FILLER}"},
    {"op": "prompt", "text": f"Task six: wrap up. {FILLER}"},
]
# Automatic pruning stays off except where a test prunes on purpose: it would rewrite the file.
DAEMON_SETTINGS: dict[str, Any] = {
    "compaction": {"keepRecentTokens": 300},
    "retry": {"enabled": False},
    "pruning": {"enabled": False},
}
PRUNING_SETTINGS = {**DAEMON_SETTINGS, "pruning": {"enabled": True, "protectTokens": 100, "minimumSavings": 10}}


@pytest.fixture(scope="module")
def base_file(pi_home: PiHome) -> Path:
    written = pi_home.drive(BASE_SCENARIO)
    return Path(written["sessionFile"])


@pytest.fixture
def session_copy(pi_home: PiHome, base_file: Path, request: pytest.FixtureRequest) -> Path:
    copy = pi_home.session_dir / f"{request.node.name.split('[')[0]}-{base_file.name}"
    shutil.copy2(base_file, copy)
    return copy


@pytest.fixture
def daemon(pi_home: PiHome, fake_model: FakeModel) -> Any:
    with Daemon(fake_model.fake, str(pi_home.agent_dir), DAEMON_SETTINGS) as client:
        yield client


def text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [] if isinstance(part, dict))


def pi_run(pi_home: PiHome, fake_model: FakeModel, path: Path, steps: list[dict[str, Any]]) -> list[Any]:
    """Run Pi on `path`; return the model requests it made, in order."""
    before = len(fake_model.fake.requests)
    pi_home.drive(steps, session_file=path)
    return list(fake_model.fake.requests[before:])


def chat_requests(requests: list[Any]) -> list[dict[str, Any]]:
    return [r.body for r in requests if not is_summary_request(r)]


def assert_contexts_equal(pi_home: PiHome, path: Path) -> None:
    theirs = pi_home.contexts(path)[str(path)]
    ours = compactd_contexts(path)
    assert set(ours) == set(theirs)
    for leaf, pi_ctx in theirs.items():
        assert normalized(ours[leaf]["messages"]) == normalized(pi_ctx["messages"]), f"leaf {leaf}"


def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def assert_nothing_lost_and_pi_lines_kept(path: Path, before_compactd_write: list[bytes]) -> None:
    """(c): every line is loaded as written, and compactd's later writes left Pi's bytes alone."""
    session = Session.open(path)
    assert session.warnings == []
    raw = [json.loads(line) for line in lines_of(path)]
    assert [session.header, *session.entries] == raw
    assert lines_of(path)[: len(before_compactd_write)] == before_compactd_write
    ids = {e["id"] for e in session.entries}
    assert all(e["parentId"] is None or e["parentId"] in ids for e in session.entries)


def test_compacted_by_compactd_then_pi_continues_and_compacts(
    pi_home: PiHome, fake_model: FakeModel, daemon: Daemon, session_copy: Path
) -> None:
    opened = daemon.call("session/open", {"path": str(session_copy)})
    result = daemon.call("session/compact", {"sessionId": opened["sessionId"]})
    summary = result["summary"]
    daemon.call("session/close", {"sessionId": opened["sessionId"]})
    if pi_home.package.startswith("@earendil-works"):
        entry = json.loads(lines_of(session_copy)[-1])
        # Q16-14: the checkpoint Pi 1.6 would have written, stamped with the entry's time.
        assert entry["systemMessage"]["role"] == "system" and entry["systemMessage"]["toolsAdded"]
    assert_contexts_equal(pi_home, session_copy)

    before_pi = lines_of(session_copy)
    steps = [{"op": "prompt", "text": f"Go on after compactd. {FILLER}"}, {"op": "compact"}]
    requests = pi_run(pi_home, fake_model, session_copy, steps)
    first = chat_requests(requests)[0]["messages"]
    non_system = [m for m in first if m["role"] not in ("system", "developer")]
    assert summary in text_of(non_system[0])  # the request starts with compactd's summary
    summary_requests = [r for r in requests if is_summary_request(r)]
    assert summary_requests, "Pi did not compact"
    prompt_text = " ".join(text_of(m) for m in summary_requests[0].body["messages"])
    assert summary in prompt_text  # passed on as the previous summary
    assert lines_of(session_copy)[: len(before_pi)] == before_pi  # Pi appended only

    # (c) compactd reopens Pi's appends and writes again without touching them.
    after_pi = lines_of(session_copy)
    opened = daemon.call("session/open", {"path": str(session_copy)})
    custom = {"type": "custom", "customType": "interop", "data": {"n": 1}}
    daemon.call("session/append", {"sessionId": opened["sessionId"], "entries": [custom]})
    daemon.call("session/close", {"sessionId": opened["sessionId"]})
    assert_nothing_lost_and_pi_lines_kept(session_copy, after_pi)
    assert_contexts_equal(pi_home, session_copy)


def test_navigated_by_compactd_then_pi_continues(
    pi_home: PiHome, fake_model: FakeModel, daemon: Daemon, session_copy: Path
) -> None:
    session = Session.open(session_copy)
    target = next(
        e["id"] for e in session.entries
        if e["type"] == "message" and e["message"]["role"] == "user" and "Task three" in text_of(e["message"])
    )
    opened = daemon.call("session/open", {"path": str(session_copy)})
    result = daemon.call("session/navigate", {"sessionId": opened["sessionId"], "targetId": target, "summarize": True})
    daemon.call("session/close", {"sessionId": opened["sessionId"]})
    summary_entry = json.loads(lines_of(session_copy)[-1])
    assert summary_entry["type"] == "branch_summary" and summary_entry["id"] == result["summaryEntryId"]
    assert_contexts_equal(pi_home, session_copy)

    before_pi = lines_of(session_copy)
    requests = pi_run(pi_home, fake_model, session_copy, [{"op": "prompt", "text": "Take the other road."}])
    messages = chat_requests(requests)[0]["messages"]
    texts = [text_of(m) for m in messages]
    assert any(summary_entry["summary"] in t for t in texts)
    assert not any("Task three" in t for t in texts)  # the abandoned branch is not sent
    assert texts[-1] == "Take the other road."
    appended = [json.loads(line) for line in lines_of(session_copy)[len(before_pi):]]
    assert appended[0]["parentId"] == summary_entry["id"]  # Pi continued from compactd's leaf
    assert_nothing_lost_and_pi_lines_kept(session_copy, before_pi)


def test_pruned_by_compactd_then_pi_continues(pi_home: PiHome, fake_model: FakeModel, session_copy: Path) -> None:
    with Daemon(fake_model.fake, str(pi_home.agent_dir), PRUNING_SETTINGS) as daemon:
        opened = daemon.call("session/open", {"path": str(session_copy)})
        result = daemon.call("session/prune", {"sessionId": opened["sessionId"]})
        daemon.call("session/close", {"sessionId": opened["sessionId"]})
    assert result["prunedCount"] >= 1
    pruned = {e["id"]: e for e in Session.open(session_copy).entries if e["id"] in result["entryIds"]}
    assert_contexts_equal(pi_home, session_copy)

    before_pi = lines_of(session_copy)
    requests = pi_run(pi_home, fake_model, session_copy, [{"op": "prompt", "text": "Continue after pruning."}])
    messages = chat_requests(requests)[0]["messages"]
    tool_texts = [text_of(m) for m in messages if m["role"] == "tool"]
    for entry in pruned.values():
        assert text_of(entry["message"]) in tool_texts  # Pi sends the pruned notice, not the output
    assert not any("line 149: some recorded output" in t for t in tool_texts[: len(pruned)])
    assert_nothing_lost_and_pi_lines_kept(session_copy, before_pi)


def test_forked_by_compactd_then_pi_continues(
    pi_home: PiHome, fake_model: FakeModel, daemon: Daemon, session_copy: Path
) -> None:
    session = Session.open(session_copy)
    at = next(
        e["id"] for e in session.entries
        if e["type"] == "message" and e["message"]["role"] == "assistant" and e["parentId"]
        and "Task four" in text_of(session.by_id[e["parentId"]].get("message", {}))
    )
    fork_path = pi_home.session_dir / f"fork-{session_copy.name}"
    opened = daemon.call("session/open", {"path": str(session_copy)})
    daemon.call("session/label", {"sessionId": opened["sessionId"], "targetId": at, "label": "fork-here"})
    fork = daemon.call("session/fork", {"sessionId": opened["sessionId"], "leafId": at, "path": str(fork_path)})
    assert fork["path"] == str(fork_path)
    assert_contexts_equal(pi_home, fork_path)

    before_pi = lines_of(fork_path)
    requests = pi_run(pi_home, fake_model, fork_path, [{"op": "prompt", "text": "Continue in the fork."}])
    texts = [text_of(m) for m in chat_requests(requests)[0]["messages"]]
    assert any("Task four" in t for t in texts) and not any("Task five" in t for t in texts)
    assert_nothing_lost_and_pi_lines_kept(fork_path, before_pi)
