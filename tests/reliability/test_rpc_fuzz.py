"""RPC fuzz against the real daemon subprocess (`python -m compactd serve` over pipes).

- Params: for every method, hypothesis builds params with random JSON values for the method's own
  fields (wrong types, missing fields, extra fields, params that are not objects) addressed at a
  "victim" session, an unknown one or a non-string id. Every request must get exactly one answer:
  a result, or a documented JSON-RPC error; never InternalError (-32603, a bug). InvalidParams
  names the offending field.
- Envelopes: unknown methods (MethodNotFound), notification methods sent with an id, batches,
  wrong `jsonrpc`, non-string methods, bad ids (InvalidRequest).
- Framing: random garbage between frames, bad Content-Length (not a number, negative, too short,
  too long), a body without a header, non-UTF-8 and non-JSON bodies (ParseError), frames above the
  documented limit (`COMPACTD_MAX_MESSAGE_BYTES`, answered "Message too large" and skipped
  without being buffered).

After every burst a normal request still answers correctly, and a "guard" session opened before
the fuzz (never addressed by it) keeps identical file bytes; the daemon never exits.

`COMPACTD_FUZZ_EXAMPLES=<n>` (default 60) sets the hypothesis examples per test (longer mode:
e.g. 1000).
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from compactd.rpc import schema as s
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic.alias_generators import to_camel

from tests.e2e.helpers import write_session
from tests.e2e.raw import RawServer

EXAMPLES = int(os.environ.get("COMPACTD_FUZZ_EXAMPLES", "60"))
MAX_BYTES = 65536  # the daemon's COMPACTD_MAX_MESSAGE_BYTES in these tests
GUARD = "guard-session"
VICTIM = "victim-session"
DOCUMENTED = {-32700, -32600, -32601, -32602, -32002, -32800, -32010, -32011, -32012, -32013, -32014, -32015,
              -32016, -32017, -32018, -32019, -32020}
STATS = {"requests": 0, "frames": 0}

METHODS: dict[str, type[s.Params]] = {
    "session/open": s.OpenParams, "session/create": s.CreateParams, "session/list": s.ListParams,
    "session/close": s.SessionParams, "session/listFiles": s.ListFilesParams, "session/append": s.AppendParams,
    "session/context": s.ContextParams, "session/tree": s.SessionParams, "session/entry": s.EntryParams,
    "session/tokenStats": s.TokenStatsParams, "session/prepareCompaction": s.PrepareParams,
    "session/compact": s.CompactParams, "session/navigate": s.NavigateParams, "session/prune": s.PruneParams,
    "session/label": s.LabelParams, "session/fork": s.ForkParams, "session/abort": s.SessionParams,
    "session/reportOverflow": s.ReportOverflowParams,
}


def fields(model: type[s.Params]) -> list[str]:
    return [info.alias or to_camel(name) for name, info in model.model_fields.items()]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**40, 2**40) | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
entry_like = st.fixed_dictionaries({"type": st.sampled_from(
    ["message", "custom", "label", "model_change", "thinking_level_change", "session_info", "custom_message",
     "compaction", "bogus"])}, optional={"message": json_values, "customType": json_values,
                                         "targetId": json_values, "name": json_values, "data": json_values})


@st.composite
def fuzzed_call(draw: st.DrawFn) -> tuple[str, Any]:
    method = draw(st.sampled_from(sorted(METHODS)))
    names = fields(METHODS[method])
    shape = draw(st.sampled_from(["object", "object", "object", "other"]))
    if shape == "other":
        return method, draw(st.none() | st.lists(json_values, max_size=3) | st.text(max_size=10) | st.integers())
    params: dict[str, Any] = {}
    for name in draw(st.lists(st.sampled_from(names), unique=True, max_size=len(names))) if names else []:
        if name == "sessionId":
            params[name] = draw(st.sampled_from([VICTIM, "no-such-session"]) | json_values)
        elif name == "entries":
            params[name] = draw(st.lists(entry_like | json_values, max_size=3) | json_values)
        elif name == "path":
            params[name] = draw(st.sampled_from(["victim.jsonl", "new.jsonl", "dir", "missing/x.jsonl",
                                                 "nul\x00.jsonl", "x" * 300]) | json_values)
        else:
            params[name] = draw(json_values)
    if draw(st.booleans()):
        params[draw(st.text(max_size=8))] = draw(json_values)  # unknown fields are ignored
    return method, params


class Daemon:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.server = RawServer(HOME=str(tmp / "home"), COMPACTD_MAX_MESSAGE_BYTES=str(MAX_BYTES))
        self.next_id = 0
        self.server.initialize({"summarizer": {"backend": "extractive"},
                                "settings": {"compaction": {"keepRecentTokens": 300}}})
        self.guard_path = tmp / "guard.jsonl"
        write_session(self.guard_path, tmp, turns=4, session_id=GUARD, tool_output_chars=2000)
        self.guard_bytes = self.guard_path.read_bytes()
        guard = self.request("session/open", {"path": str(self.guard_path)})["result"]
        self.guard_leaf = guard["leafId"]
        self.reset_victim()

    def reset_victim(self) -> None:
        path = self.tmp / "victim.jsonl"
        self.request("session/close", {"sessionId": VICTIM})  # UnknownSession when not open
        write_session(path, self.tmp, turns=5, session_id=VICTIM, tool_output_chars=1500)
        assert "result" in self.request("session/open", {"path": str(path)})

    def request(self, method: str, params: Any, timeout: float = 60) -> dict[str, Any]:
        self.next_id += 1
        msg_id = f"f{self.next_id}"
        self.server.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        STATS["requests"] += 1
        return self.server.response(msg_id, timeout)

    def healthy(self) -> None:
        """A normal request answers correctly; the guard session is untouched."""
        assert self.server.proc.poll() is None, self.server.stderr[-3000:]
        context = self.request("session/context", {"sessionId": GUARD})
        assert context.get("result", {}).get("leafId") == self.guard_leaf, context
        assert self.guard_path.read_bytes() == self.guard_bytes

    def close(self) -> None:
        self.server.proc.kill()
        self.server.proc.wait(10)


@pytest.fixture(scope="module", autouse=True)
def report_counts() -> Iterator[None]:
    yield
    print(f"\nrpc fuzz: {STATS['requests']} requests, {STATS['frames']} raw frames/chunks")


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    tmp = tmp_path_factory.mktemp("fuzz")
    (tmp / "home").mkdir()
    (tmp / "dir").mkdir()
    cwd = os.getcwd()
    os.chdir(tmp)  # relative paths the fuzz sends resolve inside the temp dir
    try:
        d = Daemon(tmp)
    finally:
        os.chdir(cwd)
    try:
        yield d
    finally:
        d.healthy()
        d.close()


def check_answer(method: str, params: Any, answer: dict[str, Any]) -> None:
    assert ("result" in answer) != ("error" in answer), answer
    if "error" not in answer:
        return
    error = answer["error"]
    assert error["code"] in DOCUMENTED, (method, params, error)
    assert isinstance(error["message"], str) and error["message"]
    if error["code"] == -32602:
        named = fields(METHODS[method]) + ["params", "entries"]
        assert any(name in error["message"] for name in named), (method, params, error)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(calls=st.lists(fuzzed_call(), min_size=1, max_size=8))
def test_random_params_get_precise_errors(daemon: Daemon, calls: list[tuple[str, Any]]) -> None:
    for method, params in calls:
        check_answer(method, params, daemon.request(method, params))
    daemon.healthy()
    if random.random() < 0.2:
        daemon.reset_victim()


def test_wrong_types_name_the_field(daemon: Daemon) -> None:
    cases = {
        ("session/context", "sessionId"): {"sessionId": 5},
        ("session/append", "entries"): {"sessionId": VICTIM, "entries": "x"},
        ("session/prepareCompaction", "keepRecentTokens"): {"sessionId": VICTIM, "keepRecentTokens": "5"},
        ("session/navigate", "summarize"): {"sessionId": VICTIM, "targetId": "e0001", "summarize": "yes"},
        ("session/open", "path"): {"path": ["a"]},
        ("session/compact", "workDoneToken"): {"sessionId": VICTIM, "workDoneToken": [1]},
        ("session/open", "contextWindow"): {"path": "victim.jsonl", "contextWindow": -1},
    }
    for (method, field), params in cases.items():
        error = daemon.request(method, params)["error"]
        assert error["code"] == -32602 and error["message"].startswith(field), (method, error)
    daemon.healthy()


def test_nul_in_paths_is_invalid_params_and_poisons_nothing(daemon: Daemon) -> None:
    """Found by fuzzing: a session created for cwd "\x00" made every later session/open fail with
    InternalError (the registry compares the paths of all open sessions)."""
    for method, params, field in (("session/create", {"cwd": "\x00"}, "cwd"),
                                  ("session/create", {"cwd": "/tmp", "path": "a\x00b"}, "path"),
                                  ("session/open", {"path": "x\x00.jsonl"}, "path"),
                                  ("session/open", {"path": "ok.jsonl", "cwd": "\x00"}, "cwd"),
                                  ("session/listFiles", {"dir": "\x00"}, "dir"),
                                  ("session/fork", {"sessionId": VICTIM, "path": "\x00"}, "path")):
        error = daemon.request(method, params)["error"]
        assert error["code"] == -32602 and error["message"].startswith(f"{field}: "), (method, error)
    opened = daemon.request("session/open", {"path": str(daemon.tmp / "after-nul.jsonl")})
    assert opened["result"]["alreadyOpen"] is False
    daemon.healthy()


def test_envelope_errors(daemon: Daemon) -> None:
    server = daemon.server
    unknown = daemon.request("session/doesNotExist", {})
    assert unknown["error"]["code"] == -32601
    # Server-to-client notifications are unknown here; client notifications sent with an id are
    # refused (before the fix, `initialized` and `$/cancelRequest` with an id were never answered).
    assert daemon.request("session/didChange", {})["error"]["code"] == -32601
    for notification in ("initialized", "$/cancelRequest", "workspace/didChangeConfiguration",
                         "window/workDoneProgress/cancel", "$/setTrace"):
        error = daemon.request(notification, {"id": 1})["error"]
        assert error["code"] == -32600 and "is a notification" in error["message"], (notification, error)
    for bad in ([{"jsonrpc": "2.0", "id": 1, "method": "session/list"}], [], "text", 5, None,
                {"jsonrpc": "1.0", "id": "v1", "method": "session/list"},
                {"jsonrpc": "2.0", "id": "m1", "method": 7},
                {"jsonrpc": "2.0", "id": {"x": 1}, "method": "session/list"}):
        server.send(bad)
        STATS["frames"] += 1
        answer = server.receive()
        assert answer["error"]["code"] == -32600, (bad, answer)
    daemon.healthy()


def frame(body: bytes, length: int | None = None) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % (len(body) if length is None else length) + body


def ping(daemon: Daemon) -> None:
    daemon.healthy()


def test_bad_framing_is_answered_or_logged(daemon: Daemon) -> None:
    server = daemon.server
    server.write(frame(b"{not json"))
    assert server.receive()["error"]["code"] == -32700
    server.write(frame(b"\xff\xfe\x00{\"jsonrpc\": \"2.0\"}"))  # not UTF-8
    assert server.receive()["error"]["code"] == -32700
    server.write(b"Content-Length: banana\r\n\r\n{}")
    server.write(b"Content-Length: -5\r\n\r\n")
    server.write(b'{"jsonrpc": "2.0", "id": "naked", "method": "session/list"}\r\n')  # no header
    server.write(b"X-Nothing: 1\r\n\r\n")
    STATS["frames"] += 4
    ping(daemon)
    body = json.dumps({"jsonrpc": "2.0", "id": "short", "method": "session/list"}).encode()
    server.write(frame(body, len(body) - 3) + frame(body.replace(b"short", b"after")))
    assert server.response("after")["result"]["sessions"]
    server.write(frame(body.replace(b"short", b"long"), len(body) + 40) + frame(body.replace(b"short", b"next")))
    assert server.response("next")["result"]["sessions"]
    STATS["frames"] += 4
    ping(daemon)
    stderr = server.stderr
    for logged in ("invalid Content-Length", "unframed input", "header block without Content-Length"):
        assert logged in stderr, logged


def test_oversized_frames_are_refused_without_buffering(daemon: Daemon) -> None:
    server = daemon.server
    big = json.dumps({"jsonrpc": "2.0", "id": "big", "method": "session/append", "params": {
        "sessionId": GUARD, "entries": [{"type": "custom", "customType": "x", "data": "y" * (MAX_BYTES * 3)}]}})
    server.write(frame(big.encode()))
    STATS["frames"] += 1
    error = server.receive()
    assert error["id"] is None and error["error"]["code"] == -32600
    assert error["error"]["message"].startswith("Message too large")
    assert error["error"]["data"] == {"length": len(big), "maxBytes": MAX_BYTES}
    # The body was skipped as a whole: nothing of it was read as messages, and the guard is intact.
    ping(daemon)
    # A declared length far beyond the limit, sent in pieces, is skipped the same way.
    huge = MAX_BYTES * 40
    server.write(b"Content-Length: %d\r\n\r\n" % huge)
    for _ in range(40):
        server.write(b"z" * MAX_BYTES)
    STATS["frames"] += 1
    assert server.receive()["error"]["data"]["length"] == huge
    ping(daemon)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(garbage=st.lists(st.binary(max_size=300) | st.sampled_from([
    b"\r\n", b"\r\n\r\n", b"Content-Type: x\r\n", b"Content-Length: 12x\r\n\r\n", b"\xff" * 10,
    frame(b"[]"), frame(b"null"), frame(b'{"jsonrpc": "2.0", "method": "session/didChange"}'),
    frame(b'{"jsonrpc": "2.0", "id": 9999, "result": null}'), frame(b"\x00\x01"),
]), min_size=1, max_size=6))
def test_garbage_between_frames_never_stops_the_daemon(daemon: Daemon, garbage: list[bytes]) -> None:
    server = daemon.server
    for chunk in garbage:
        server.write(chunk)
        STATS["frames"] += 1
    # End any half-read header block, then the next well-formed request must be answered.
    server.write(b"\r\n\r\n")
    ping(daemon)


@settings(max_examples=EXAMPLES, deadline=None)
@given(size=st.integers(101, 5000), cut=st.integers(1, 97), seed=st.integers(0, 2**16))
def test_frame_reader_skips_oversized_bodies_without_buffering(size: int, cut: int, seed: int) -> None:
    from compactd.rpc.protocol import FrameReader

    bodies: list[bytes] = []
    refused: list[tuple[int, int]] = []
    reader = FrameReader(lambda b: bodies.append(b) or True, max_bytes=100,
                         on_oversized=lambda n, limit: refused.append((n, limit)))
    rng = random.Random(seed)
    data = frame(bytes(rng.randrange(256) for _ in range(size))) + frame(b'{"ok": 1}')
    largest = 0
    for i in range(0, len(data), cut):
        reader.feed(data[i:i + cut])
        largest = max(largest, len(reader._buffer))
    assert refused == [(size, 100)]
    assert bodies == [b'{"ok": 1}']
    assert largest <= max(cut, 100) + 32  # never more than a chunk (or one allowed frame) held


def test_max_message_bytes_setting() -> None:
    from compactd.rpc.protocol import DEFAULT_MAX_MESSAGE_BYTES, max_message_bytes

    assert max_message_bytes({}) == DEFAULT_MAX_MESSAGE_BYTES == 64 * 1024 * 1024
    assert max_message_bytes({"COMPACTD_MAX_MESSAGE_BYTES": "4096"}) == 4096
    assert max_message_bytes({"COMPACTD_MAX_MESSAGE_BYTES": "lots"}) == DEFAULT_MAX_MESSAGE_BYTES
