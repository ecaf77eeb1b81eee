"""Crash safety of whole operations: a child process (`python -c`, real compactd APIs) is killed with
SIGKILL at chosen points while it compacts (extractive summarizer on a generated v3 session and on a
copy of the real v1 fixture, and against the slow fake OpenAI server that runs in this process),
navigates with a branch summary, prunes old tool outputs, or migrates a v1 file by appending to it.

Kill points are picked from outside, never by timing assertions: when the child prints `start`
(before the operation), after a random delay inside the window the operation runs in (the window is
measured by one uncrashed calibration run per scenario), when the fake server has received the model
request / finished answering it, and after the child printed `done` (the operation returned).

After every kill the file must reload with at most one torn-final-line warning; every entry the child
acknowledged must be there; new entries are complete (old entries unchanged, then nothing or exactly
the operation's entries); pruned tool outputs are in the session or in `<file>.pruned.jsonl`; a
migrated file's original bytes are in the file or in `<file>.v1.bak`.

Default: 5 kills per scenario (well under a minute). Longer mode: `COMPACTD_CRASH_OPS_ROUNDS=<n>`
kills per scenario, e.g. `COMPACTD_CRASH_OPS_ROUNDS=40 pytest tests/reliability/test_crash_operations.py`.
"""

from __future__ import annotations

import json
import os
import random
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from compactd.engine.pruner import archive_path
from compactd.samples.generate import write_session
from compactd.session import Session

from tests.e2e.helpers import GOOD_SUMMARY
from tests.support.fake_openai import FakeOpenAI, Reply

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURE_V1 = REPO_ROOT / "tests" / "fixtures" / "pi-before-compaction.v1.jsonl"
ROUNDS = max(1, int(os.environ.get("COMPACTD_CRASH_OPS_ROUNDS", "5")))
CHILD_LIMIT_S = 60.0  # a child that never reaches a marker is a failure, not a hang
KILLS_DONE: dict[str, dict[str, int]] = {}  # scenario -> kill point -> count (for the long-run report)

CHILD = textwrap.dedent(
    """
    import asyncio, sys
    from compactd.engine.compactor import compact
    from compactd.engine.navigator import navigate
    from compactd.engine.pruner import prune
    from compactd.engine.settings import build_summarizer, load_settings
    from compactd.session import Session

    mode, path, home, url = sys.argv[1:5]

    def say(*parts):
        sys.stdout.write(" ".join(parts) + "\\n")
        sys.stdout.flush()

    overrides = {"compaction": {"keepRecentTokens": 800}, "retry": {"enabled": False},
                 "pruning": {"protectTokens": 200, "minimumSavings": 50}}
    if url == "-":
        overrides["summarizer"] = {"backend": "extractive"}
    else:
        overrides["summarizer"] = {"backend": "openai", "baseUrl": url, "model": "fake-model",
                                   "apiKeyEnv": "CRASH_KEY", "timeoutSeconds": 30}
    settings = load_settings(home + "/project", overrides, env={}, home=home)
    summarizer = build_summarizer(settings, env={"CRASH_KEY": "sk-crash-test"})
    session = Session.open(path)
    say("ready")
    if mode == "compact":
        say("start")
        result = asyncio.run(compact(session, settings, summarizer))
        say("ack", result.entry_id)  # acknowledged: compact() has returned
    elif mode == "navigate":
        users = [e for e in session.get_branch()
                 if e["type"] == "message" and e["message"].get("role") == "user"]
        before = set(session.by_id)
        say("start")
        asyncio.run(navigate(session, users[len(users) // 2]["id"], settings, summarizer, summarize=True))
        say("ack", *[e["id"] for e in session.entries if e["id"] not in before])
    elif mode == "prune":
        say("start")
        result = prune(session, settings)
        say("pruned", *result.entry_ids)
    elif mode == "migrate":
        say("start")
        say("ack", session.append_message({"role": "user", "content": "after migration", "timestamp": 1}))
    say("done")
    """
)


class Child:
    """The child process and everything it printed so far."""

    def __init__(self, mode: str, path: Path, home: Path, url: str) -> None:
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed in finish()
        self.proc = subprocess.Popen(
            [sys.executable, "-c", CHILD, mode, str(path), str(home), url],
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            cwd=REPO_ROOT,
        )
        assert self.proc.stdout is not None
        self.fd = self.proc.stdout.fileno()
        self.buffer = b""
        self.eof = False

    def lines(self) -> list[list[str]]:
        return [line.split(" ") for line in self.buffer.decode().split("\n")[:-1]]  # complete lines only

    def has(self, marker: str) -> bool:
        return any(parts[0] == marker for parts in self.lines())

    def pump(self, timeout: float) -> None:
        if self.eof:
            time.sleep(timeout)
            return
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if ready:
            chunk = os.read(self.fd, 65536)
            self.buffer += chunk
            self.eof = not chunk

    def wait_until(self, condition: Callable[[], bool], what: str) -> None:
        limit = time.monotonic() + CHILD_LIMIT_S
        while not condition():
            if self.eof and self.proc.poll() is not None and not condition():
                raise AssertionError(f"child exited before {what}: {self.errors()}")
            assert time.monotonic() < limit, f"child never reached {what}"
            self.pump(0.005)

    def wait_for(self, marker: str) -> None:
        self.wait_until(lambda: self.has(marker), marker)

    def sleep(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            self.pump(min(left, 0.005))

    def errors(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read().decode(errors="replace")[-3000:]

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.finish()

    def finish(self) -> None:
        self.proc.wait()
        while not self.eof:
            self.pump(1.0)
        assert self.proc.stdout is not None
        self.proc.stdout.close()
        self.stderr.close()

    def acknowledged(self, marker: str = "ack") -> list[str]:
        return [i for parts in self.lines() if parts[0] == marker for i in parts[1:]]


# --- checks ------------------------------------------------------------------------------------------


def _raw_lines(path: Path) -> tuple[list[bytes], bytes]:
    """Complete lines and the torn tail (b"" when the file ends with a newline)."""
    data = path.read_bytes()
    *complete, tail = data.split(b"\n")
    return complete, tail


def check_after_kill(
    scenario: str, pristine: Path, path: Path, acked: list[str], pruned_acked: list[str]
) -> str:
    """Assert the invariants; return what the kill left: "old" (file as before) or "new"."""
    baseline = Session.open(pristine)
    reloaded = Session.open(path)
    torn = [w for w in reloaded.warnings if "torn" in w.message]
    assert len(torn) <= 1, [w.message for w in reloaded.warnings]
    others = [w.message for w in reloaded.warnings if "torn" not in w.message]
    assert len(others) <= len(baseline.warnings), others

    # No half-written entry: every complete line is JSON; only a final fragment may be torn.
    complete, tail = _raw_lines(path)
    for line in complete:
        json.loads(line)
    if tail:
        assert len(torn) == 1

    # Old entries first (ids and order unchanged; pruning may only replace tool-result contents).
    old = baseline.entries
    assert [e["id"] for e in reloaded.entries[: len(old)]] == [e["id"] for e in old]
    if not scenario.startswith("prune"):
        assert reloaded.entries[: len(old)] == old
    new = reloaded.entries[len(old) :]
    present = set(reloaded.by_id)
    assert [i for i in acked if i not in present] == [], "acknowledged entries lost"

    if scenario.startswith("compact"):
        assert [e["type"] for e in new] in ([], ["compaction"])
        if new:
            entry = new[0]
            assert isinstance(entry["summary"], str) and entry["summary"]
            assert entry["firstKeptEntryId"] in baseline.by_id
            assert entry["parentId"] == baseline.leaf_id
        if acked:
            assert [e["id"] for e in new] == acked
    elif scenario == "navigate":
        assert [e["type"] for e in new] in ([], ["branch_summary"])
        if new:
            assert new[0]["summary"] and new[0]["fromId"] == baseline.leaf_id
        if acked:
            assert [e["id"] for e in new] == acked
    elif scenario == "migrate":
        assert len(new) <= 1
        if new:
            assert new[0]["message"] == {"role": "user", "content": "after migration", "timestamp": 1}
    elif scenario == "prune":
        assert new == []
        check_pruned(baseline, reloaded, path, pruned_acked)

    original = pristine.read_bytes()
    if scenario in ("compact_v1", "migrate"):
        # D-16: the v1 bytes survive in the file or in the complete backup, never in neither.
        backup = path.with_name(path.name + ".v1.bak")
        current = path.read_bytes()
        assert current == original or (backup.exists() and backup.read_bytes() == original)
        if current != original:
            assert json.loads(current.split(b"\n", 1)[0])["version"] == 3
    elif scenario != "prune":
        # Appends only: the old bytes unchanged, then complete new lines (or a torn fragment).
        assert path.read_bytes().startswith(original)
    return "new" if path.read_bytes() != original else "old"


def check_pruned(baseline: Session, reloaded: Session, path: Path, pruned_acked: list[str]) -> None:
    archived: dict[str, list[Any]] = {}
    archive = archive_path(path)
    if archive.exists():
        complete, _tail = _raw_lines(archive)  # a torn archive tail is only possible before the rewrite
        for line in complete:
            record = json.loads(line)
            archived.setdefault(record["entryId"], []).append(record["content"])
    results = {
        e["id"]: e["message"]["content"]
        for e in baseline.entries
        if e["type"] == "message" and e["message"].get("role") == "toolResult"
    }
    for entry_id, content in results.items():
        message = reloaded.by_id[entry_id]["message"]
        if message.get("prunedAt") is not None:
            assert content in archived.get(entry_id, []), f"pruned output of {entry_id} is nowhere"
        else:
            assert message["content"] == content
    for entry_id in pruned_acked:  # prune() returned: the rewrite is on disk
        assert reloaded.by_id[entry_id]["message"].get("prunedAt") is not None


# --- scenarios ---------------------------------------------------------------------------------------


def _kill_points(rng: random.Random, openai: bool) -> Iterator[str]:
    points = ["start", "during", "during", "done"] + (["model", "answered"] if openai else [])
    while True:
        rng.shuffle(points)
        yield from points


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeOpenAI]:
    slow = list(GOOD_SUMMARY)
    server = FakeOpenAI().script(lambda _request: Reply.stream(slow, chunk_delay=0.03)).start()
    try:
        yield server
    finally:
        server.stop()


def _pristine(scenario: str, folder: Path) -> Path:
    path = folder / f"pristine-{scenario}.jsonl"
    if scenario in ("compact_v1", "migrate"):
        shutil.copyfile(FIXTURE_V1, path)
    else:
        write_session(path, seed=7, turns=10, branches=False, compactions=False)
    return path


SCENARIOS = ["compact_v3", "compact_v1", "compact_openai", "navigate", "prune", "migrate"]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_sigkill_during_operation_leaves_a_consistent_session(
    scenario: str, tmp_path: Path, fake: FakeOpenAI
) -> None:
    rng = random.Random(f"crash-ops-{scenario}")
    mode = scenario.split("_")[0]
    openai = scenario == "compact_openai"
    url = fake.url if openai else "-"
    pristine = _pristine(scenario, tmp_path)
    home = tmp_path / "home"

    def fresh(name: str) -> Path:
        path = tmp_path / name / "session.jsonl"
        path.parent.mkdir()
        shutil.copyfile(pristine, path)
        return path

    # Calibration: one run to the end; it also proves the operation really writes something.
    path = fresh("calibration")
    child = Child(mode, path, home, url)
    child.wait_for("start")
    started = time.monotonic()
    child.wait_for("done")
    window = time.monotonic() - started
    child.finish()
    assert child.proc.returncode == 0, child.errors()
    if mode == "prune":
        assert child.acknowledged("pruned"), "the session has nothing to prune"
    else:
        assert child.acknowledged()
    check_after_kill(scenario, pristine, path, child.acknowledged(), child.acknowledged("pruned"))

    points = _kill_points(rng, openai)
    counts = KILLS_DONE.setdefault(scenario, {})
    for round_ in range(ROUNDS):
        point = next(points)
        path = fresh(f"round-{round_}")
        requests_before, completed_before = len(fake.requests), fake.completed
        child = Child(mode, path, home, url)
        child.wait_for("start")
        if point == "during":
            child.sleep(rng.uniform(0.0, window))
        elif point == "model":  # the request reached the model: kill while it streams
            child.wait_until(lambda n=requests_before: len(fake.requests) > n, "the model request")
            child.sleep(rng.uniform(0.0, 0.2))
        elif point == "answered":  # the model finished answering; the entry is being written
            child.wait_until(lambda n=completed_before: fake.completed > n, "the model answer")
            child.sleep(rng.uniform(0.0, 0.01))
        elif point == "done":
            child.wait_for("done")
        child.kill()
        assert child.proc.returncode == -signal.SIGKILL or child.has("done"), child.errors()
        left = check_after_kill(scenario, pristine, path, child.acknowledged(), child.acknowledged("pruned"))
        key = f"{point}->{left}"
        counts[key] = counts.get(key, 0) + 1
    if ROUNDS > 5:
        print(f"\n{scenario}: {ROUNDS} kills, calibrated window {window:.3f}s, kill point->file {counts}")
