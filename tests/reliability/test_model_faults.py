"""Model faults: every way an OpenAI-compatible summarizer endpoint can misbehave, injected with the
real local fake server (tests/support/fake_openai.py), run through `engine.compactor.compact` on real
session files and (for a few) through the daemon's `session/compact`.

Each fault must end in one of the documented outcomes, never in a hang:
- transient faults (connection refused, hangs, dropped streams, 429 without a long Retry-After,
  5xx) are retried (`retry.maxRetries`); a single bad answer followed by a good one succeeds;
- permanent faults (401, 404, malformed stream, overflow texts of several providers, length stop,
  tool call, empty answer, a Retry-After beyond `retry.maxDelayMs`) are not retried;
- with `summarizer.candidates`, a candidate that keeps failing falls back to the next one;
- when nothing works the error is `Compaction failed: <clear reason>` and the session file is
  byte-for-byte unchanged;
- hangs before the headers and in the middle of the stream are cut by `summarizer.timeoutSeconds`
  (the read timeout applies between chunks), so every compaction here finishes well within the
  generous hang-detecting timeout.

The fault matrix is fixed; `COMPACTD_FAULT_ROUNDS=<n>` (default 1) repeats the whole matrix n
times with different sessions (longer mode).
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from compactd.engine.compactor import CompactionError, compact
from compactd.engine.settings import build_summarizer, load_settings
from compactd.session import Session
from compactd.summarize.base import ContextOverflowError, RejectedResponseError, TransientError

from tests.e2e.helpers import GOOD_SUMMARY, write_session
from tests.support.fake_openai import FakeOpenAI, RecordedRequest, Reply

ROUNDS = max(1, int(os.environ.get("COMPACTD_FAULT_ROUNDS", "1")))
TIMEOUT_S = 2.0  # summarizer.timeoutSeconds in these tests
HANG_GUARD_S = 60.0  # detects hangs only; a bounded fault ends far sooner
FAULTS_INJECTED = [0]  # counted for the report of a longer run


def _tool_call() -> list[dict[str, Any]]:
    return [{"index": 0, "id": "call_1", "type": "function",
             "function": {"name": "write_file", "arguments": "{\"path\": \"x\"}"}}]


# name -> (reply factory, kind, text expected in the error)
#   kind "transient": retried, then fails with the text; "permanent": one request, fails;
#   "overflow": permanent and classified as a context overflow (M-22).
FAULTS: dict[str, tuple[Callable[[], Reply], str, str]] = {
    "hang_before_headers": (lambda: Reply.stream(GOOD_SUMMARY, hang_before_headers=3600.0), "transient",
                            f"timed out after {TIMEOUT_S:g}s"),
    "hang_mid_stream": (lambda: Reply.stream(GOOD_SUMMARY, hang_after_chunks=2), "transient",
                        f"timed out after {TIMEOUT_S:g}s"),
    "drop_mid_stream": (lambda: Reply.stream(GOOD_SUMMARY, drop_after_chunks=2), "transient", "failed"),
    "no_finish_reason": (lambda: Reply.stream(GOOD_SUMMARY, finish_reason=None, send_done=False), "transient",
                         "ended before the answer was complete"),
    "malformed_sse": (lambda: Reply.stream(GOOD_SUMMARY, malformed_after_chunks=1), "permanent",
                      "malformed streaming data"),
    "invalid_json_error_body": (lambda: Reply(status=500, body="<html>upstream exploded</html>"), "transient",
                                "500"),
    "invalid_json_200": (lambda: Reply.json('{"choices": [', status=200), "permanent",
                         "did not answer with an event stream (content-type application/json)"),
    "html_page_200": (lambda: Reply.json("<html>Sign in</html>", status=200), "permanent",
                      "did not answer with an event stream (content-type text/plain)"),
    "http_401": (lambda: Reply.error(401, "Incorrect API key provided"), "permanent", "authentication failed"),
    "http_404_model": (lambda: Reply.error(404, "The model does not exist", code="model_not_found"), "permanent",
                       "not found at"),
    "http_429": (lambda: Reply.error(429, "Rate limit reached, slow down", type="rate_limit"), "transient",
                 "429"),
    "http_429_retry_after": (lambda: Reply.error(429, "Rate limit reached", headers={"retry-after": "0"}),
                             "transient", "429"),
    "http_429_retry_after_too_long": (lambda: Reply.error(429, "Rate limit reached",
                                                          headers={"retry-after": "7200"}),
                                      "permanent", "longer than retry.maxDelayMs"),
    "http_429_quota": (lambda: Reply.error(429, "You exceeded your current quota", code="insufficient_quota"),
                       "permanent", "quota exhausted"),
    "http_500": (lambda: Reply.error(500, "The server had an error", type="server_error"), "transient", "500"),
    "http_503": (lambda: Reply.error(503, "The engine is currently overloaded"), "transient", "503"),
    "stream_error_event": (lambda: Reply.stream(GOOD_SUMMARY[:1], stream_error={"message": "bad request shape"},
                                                send_done=False), "permanent", "bad request shape"),
    "overflow_openai": (lambda: Reply.error(400, "This model's maximum context length is 8192 tokens. However, "
                                                 "your messages resulted in 9120 tokens.",
                                            code="context_length_exceeded"), "overflow", "8192"),
    "overflow_anthropic": (lambda: Reply.error(400, "prompt is too long: 213462 tokens > 200000 maximum"),
                           "overflow", "prompt is too long"),
    "overflow_gemini": (lambda: Reply.error(400, "The input token count (1196265) exceeds the maximum number "
                                                 "of tokens allowed (1048575).", type="INVALID_ARGUMENT"),
                        "overflow", "input token count"),
    "overflow_cerebras_no_body": (lambda: Reply.no_body(400), "overflow", "400 status code (no body)"),
    "overflow_cerebras_413": (lambda: Reply.no_body(413), "overflow", "413 status code (no body)"),
    "overflow_vllm": (lambda: Reply.error(400, "This model's maximum context length is 32768 tokens. However, "
                                                "you requested 40000 tokens (38000 in the messages, 2000 in "
                                                "the completion)."), "overflow", "32768"),
    "overflow_ollama": (lambda: Reply.error(500, "prompt too long; exceeded max context length by 412 tokens"),
                        "overflow", "exceeded max context length"),
    "length_stop": (lambda: Reply.stream(GOOD_SUMMARY[:2], finish_reason="length"), "permanent", "token"),
    "tool_call_reply": (lambda: Reply.stream([], tool_calls=_tool_call(), finish_reason="tool_calls"),
                        "permanent", "tool"),
    "empty_reply": (lambda: Reply.stream([""]), "permanent", "no summary text"),
    "whitespace_reply": (lambda: Reply.stream(["  ", "\n\n"]), "permanent", "no summary text"),
}
REFUSED = "connection_refused"
ALL_FAULTS = [REFUSED, *FAULTS]


def free_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Scripted:
    """Answers the first `bad` requests of each kind (history / turn prefix: a split turn asks
    both in parallel) with the fault, the rest with a good summary; `bad=None`: always the fault."""

    def __init__(self, fake: FakeOpenAI, fault: Callable[[], Reply], bad: int | None) -> None:
        self.lock = threading.Lock()
        self.counts: dict[str, int] = {}
        self.fault = fault
        self.bad = bad
        fake.script(self)

    def __call__(self, request: RecordedRequest) -> Reply:
        kind = request.headers.get("x-compactd-request-kind", "")
        with self.lock:
            self.counts[kind] = count = self.counts.get(kind, 0) + 1
            failing = self.bad is None or count <= self.bad
        if failing:
            FAULTS_INJECTED[0] += 1
            return self.fault()
        return good_reply(request)


PREFIX_SUMMARY = ["## Original Request\nRefactor.\n\n", "## Early Progress\n- Read files.\n\n",
                  "## Context for Suffix\n- (none)\n"]


def good_reply(request: RecordedRequest) -> Reply:
    """A complete summary with the headings of the request's kind (no D-23 reminder needed)."""
    prefix = request.headers.get("x-compactd-request-kind") == "turn_prefix"
    return Reply.stream(PREFIX_SUMMARY if prefix else GOOD_SUMMARY)


@pytest.fixture(scope="module", autouse=True)
def report_fault_count() -> Iterator[None]:
    yield
    print(f"\nmodel faults: {FAULTS_INJECTED[0]} faulty answers injected "
          f"({len(ALL_FAULTS)} kinds x {ROUNDS} round(s), connection refusals not counted)")


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def backup() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI().script(good_reply).start()
    try:
        yield server
    finally:
        server.stop()


def make_settings(tmp_path: Path, summarizer: dict[str, Any], retries: int = 1) -> Any:
    overrides = {
        "compaction": {"keepRecentTokens": 800},
        "retry": {"enabled": retries > 0, "maxRetries": retries, "baseDelayMs": 1, "maxDelayMs": 5000},
        "summarizer": {"backend": "openai", "timeoutSeconds": TIMEOUT_S, "apiKeyEnv": "COMPACTD_FAULT_KEY",
                       **summarizer},
    }
    return load_settings(tmp_path / "project", overrides, env={}, home=tmp_path / "home")


def session_file(tmp_path: Path, name: str, round_: int = 0) -> Path:
    path = tmp_path / f"{name}-{round_}.jsonl"
    write_session(path, tmp_path, turns=5 + round_ % 4, text_chars=1200 + 97 * round_, session_id=f"s-{name}")
    return path


def attempts_per_kind(fake: FakeOpenAI) -> set[int]:
    kinds = [r.headers.get("x-compactd-request-kind", "") for r in fake.requests]
    return {kinds.count(k) for k in set(kinds)}


def url_for(fault: str, fake: FakeOpenAI) -> str:
    return f"http://127.0.0.1:{free_port()}/v1" if fault == REFUSED else fake.url


async def run_compact(path: Path, settings: Any) -> Any:
    session = Session.open(path)
    summarizer = build_summarizer(settings, env={"COMPACTD_FAULT_KEY": "sk-fault-test"})
    return await asyncio.wait_for(compact(session, settings, summarizer), HANG_GUARD_S)


def expected(fault: str) -> tuple[str, str]:
    if fault == REFUSED:
        return "transient", "connection error"
    _, kind, text = FAULTS[fault]
    return kind, text


@pytest.mark.parametrize("round_", range(ROUNDS))
@pytest.mark.parametrize("fault", ALL_FAULTS)
async def test_persistent_fault_fails_clearly_and_leaves_the_file_unchanged(
    fault: str, round_: int, tmp_path: Path, fake: FakeOpenAI
) -> None:
    """The endpoint always fails: transient faults are retried once (maxRetries=1), the others are
    not; the error is `Compaction failed: ...` naming the cause; the file bytes never change."""
    if fault != REFUSED:
        Scripted(fake, FAULTS[fault][0], None)
    path = session_file(tmp_path, fault, round_)
    before = path.read_bytes()
    settings = make_settings(tmp_path, {"baseUrl": url_for(fault, fake), "model": "primary"})
    with pytest.raises(CompactionError) as info:
        await run_compact(path, settings)
    kind, text = expected(fault)
    message = str(info.value)
    assert message.startswith("Compaction failed: "), message
    assert text.lower() in message.lower(), message
    cause = info.value.__cause__
    if kind == "transient":
        assert isinstance(cause, TransientError) and "gave up after 2 attempts" in message, message
    else:
        assert not isinstance(cause, TransientError), message
    if kind == "overflow":
        assert isinstance(cause, ContextOverflowError), message
    if fault in ("length_stop", "tool_call_reply", "empty_reply", "whitespace_reply"):
        assert isinstance(cause, RejectedResponseError), message
    if fault != REFUSED:
        # Parallel split-turn calls: the sibling of the first failure may be cut short. A stream cut
        # off in a parallel call is not retried there but run again alone (with its retries): 1 + 2.
        attempts = {2} if kind == "transient" else {1}
        if fault in ("overflow_openai", "overflow_vllm"):
            attempts = {1, 2}  # the error names the window: the history is tried once more in chunks
        if fault == "no_finish_reason" and len(attempts_per_kind(fake)) == 2:
            attempts = {3}
        assert max(attempts_per_kind(fake)) in attempts, attempts_per_kind(fake)
    assert "sk-fault-test" not in message
    assert path.read_bytes() == before


TRANSIENT = [f for f in FAULTS if FAULTS[f][1] == "transient"]


@pytest.mark.parametrize("round_", range(ROUNDS))
@pytest.mark.parametrize("fault", TRANSIENT)
async def test_one_transient_fault_is_retried_and_the_compaction_succeeds(
    fault: str, round_: int, tmp_path: Path, fake: FakeOpenAI
) -> None:
    Scripted(fake, FAULTS[fault][0], 1)
    path = session_file(tmp_path, fault, round_)
    before = path.read_bytes()
    result = await run_compact(path, make_settings(tmp_path, {"baseUrl": fake.url, "model": "primary"}))
    assert attempts_per_kind(fake) == {2}
    assert result.summary.startswith("## Goal")
    assert path.read_bytes().startswith(before)
    reopened = Session.open(path)
    assert reopened.by_id[result.entry_id]["type"] == "compaction"


@pytest.mark.parametrize("round_", range(ROUNDS))
@pytest.mark.parametrize("fault", ALL_FAULTS)
async def test_failing_candidate_falls_back_to_the_next_one(
    fault: str, round_: int, tmp_path: Path, fake: FakeOpenAI, backup: FakeOpenAI
) -> None:
    """summarizer.candidates: the first keeps failing (retries off), the second answers."""
    if fault != REFUSED:
        Scripted(fake, FAULTS[fault][0], None)
    path = session_file(tmp_path, fault, round_)
    before = path.read_bytes()
    settings = make_settings(tmp_path, {"candidates": [
        {"baseUrl": url_for(fault, fake), "model": "primary"},
        {"baseUrl": backup.url, "model": "backup"},
    ]}, retries=0)
    result = await run_compact(path, settings)
    calls = len(backup.requests)  # 1, or 2 for a split turn (history + turn prefix)
    assert calls in (1, 2) and {r.body["model"] for r in backup.requests} == {"backup"}
    if fault != REFUSED:
        assert {r.body["model"] for r in fake.requests} == {"primary"} and len(fake.requests) <= calls
    assert result.summary.startswith("## Goal")
    assert path.read_bytes().startswith(before) and len(path.read_bytes()) > len(before)


async def test_every_candidate_failing_reports_the_last_error(tmp_path: Path, fake: FakeOpenAI) -> None:
    Scripted(fake, lambda: Reply.error(401, "bad key"), None)
    path = session_file(tmp_path, "all-fail")
    before = path.read_bytes()
    settings = make_settings(tmp_path, {"candidates": [
        {"baseUrl": fake.url, "model": "primary"},
        {"baseUrl": f"http://127.0.0.1:{free_port()}/v1", "model": "backup"},
    ]}, retries=0)
    with pytest.raises(CompactionError) as info:
        await run_compact(path, settings)
    assert "connection error" in str(info.value)
    assert path.read_bytes() == before


# --- through the daemon ----------------------------------------------------------------------------

DAEMON_FAULTS = ["hang_mid_stream", "http_401", "overflow_anthropic", "malformed_sse", "empty_reply"]


@pytest.mark.parametrize("fault", DAEMON_FAULTS)
def test_daemon_compact_fault_gives_summarization_failed_and_keeps_the_file(
    fault: str, tmp_path: Path, fake: FakeOpenAI
) -> None:
    from tests.e2e.helpers import KEY_ENV
    from tests.e2e.raw import RawServer

    Scripted(fake, FAULTS[fault][0], None)
    path = session_file(tmp_path, fault)
    before = path.read_bytes()
    server = RawServer()
    try:
        server.initialize({"settings": {"compaction": {"keepRecentTokens": 800},
                                        "retry": {"maxRetries": 1, "baseDelayMs": 1}},
                           "summarizer": {"backend": "openai", "baseUrl": fake.url, "model": "primary",
                                          "apiKeyEnv": KEY_ENV, "timeoutSeconds": TIMEOUT_S}})
        opened = server.request(1, "session/open", {"path": str(path)})["result"]
        server.send({"jsonrpc": "2.0", "id": 2, "method": "session/compact",
                     "params": {"sessionId": opened["sessionId"]}})
        answer = server.response(2, timeout=HANG_GUARD_S)
        assert answer["error"]["code"] == -32015, answer
        assert answer["error"]["message"].startswith("Compaction failed: ")
        assert FAULTS[fault][2].lower() in answer["error"]["message"].lower()
        # The daemon still works and the session is intact in memory and on disk.
        ctx = server.request(3, "session/context", {"sessionId": opened["sessionId"]})["result"]
        assert ctx["leafId"] == opened["leafId"]
        assert path.read_bytes() == before
    finally:
        server.proc.kill()
        server.proc.wait(10)

