"""A minimal LSP-framed JSON-RPC client for a real `compactd serve` subprocess (benchmarks only).

It reads the daemon's output in the thread that waits, as an editor's client does on its event
loop: whoever waits for an answer (`call`, `wait`, `answered`) reads the frames that have arrived,
keeps responses by id and notifications in order, and answers server requests (e.g.
window/workDoneProgress/create) with null. A reader thread handing each answer over to the
waiting thread cost as much as the daemon's whole step: a context on the 1.0 MB session took
0.57-0.61 ms through it against 0.28-0.29 ms read in place (same daemon, interleaved).

The client's own heap is frozen when a daemon starts: a full collector pass in this process (the
harness's inputs and earlier results, 50-80 ms) would otherwise be timed as the daemon's latency
(seen with gc callbacks in both processes, issue 14)."""

from __future__ import annotations

import contextlib
import gc
import itertools
import json

import orjson
import os
import select
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from collections.abc import Iterator
from typing import Any, Self

from bench.harness import REPO_ROOT

READ_BYTES = 1 << 20


def frame_span(buffer: bytearray) -> tuple[int, int] | None:
    """Where the body of the first whole frame in `buffer` starts and ends; None until one has
    arrived."""
    blank = buffer.find(b"\r\n\r\n")
    if blank < 0:
        return None
    length = next(int(line.split(b":", 1)[1]) for line in bytes(buffer[:blank]).split(b"\r\n")
                  if line.lower().startswith(b"content-length"))
    start = blank + 4
    return (start, start + length) if len(buffer) >= start + length else None


class Daemon:
    def __init__(self, env: dict[str, str] | None = None, cwd: Path | None = None,
                 command: list[str] | None = None) -> None:
        """`command`: another server speaking the same framing (bench/stdio_floor.py)."""
        gc.collect()
        gc.freeze()
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
        full_env.update(env or {})
        self.proc = subprocess.Popen(command or [sys.executable, "-m", "compactd", "serve"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=full_env,
                                     cwd=cwd or REPO_ROOT)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in = self.proc.stdin.fileno()
        self._out = self.proc.stdout.fileno()
        self._buffer = bytearray()
        self._ids = itertools.count(1)
        self._pending: set[int] = set()
        self._responses: dict[Any, dict[str, Any]] = {}
        self.notifications: list[tuple[float, dict[str, Any]]] = []
        self.keep_bodies = False  # responses then carry their bytes as `_body` (`call_body`)

    def _read(self, timeout: float | None) -> bool:
        """Take in what the daemon sent, waiting up to `timeout` seconds (None: until something
        comes) for it; False when nothing came in that time."""
        if timeout is not None and not select.select([self._out], [], [], max(0.0, timeout))[0]:
            return False
        chunk = os.read(self._out, READ_BYTES)
        if not chunk:
            raise EOFError(f"the daemon closed its output (exit code {self.proc.poll()})")
        self._buffer += chunk
        self._take_frames()
        return True

    def _take_frames(self) -> None:
        buffer = self._buffer
        while (span := frame_span(buffer)) is not None:
            start, end = span
            body = memoryview(buffer)[start:end]
            message = orjson.loads(body)
            if self.keep_bodies and "method" not in message:
                message["_body"] = bytes(body)
            body.release()
            del buffer[:end]
            now = time.perf_counter()
            if "method" in message and "id" in message:
                self._send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            elif "method" in message:
                self.notifications.append((now, message))
            else:
                self._responses[message.get("id")] = {**message, "_at": now}

    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message).encode()
        data = memoryview(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        while data:
            data = data[os.write(self._in, data):]

    def start(self, method: str, params: Any = None) -> int:
        """Send a request without waiting; returns its id."""
        msg_id = next(self._ids)
        self._pending.add(msg_id)
        self._send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return msg_id

    def answered(self, msg_id: int) -> bool:
        """True once the response to request `msg_id` has arrived."""
        while self._read(0):
            pass
        return msg_id not in self._pending or msg_id in self._responses

    def wait(self, msg_id: int, timeout: float = 60) -> dict[str, Any]:
        """The response message (with `_at`, the perf_counter time it was read)."""
        deadline = time.perf_counter() + timeout
        while msg_id not in self._responses:
            left = deadline - time.perf_counter()
            if left <= 0 or not self._read(left):
                raise TimeoutError(f"no response to request {msg_id} within {timeout}s")
        self._pending.discard(msg_id)
        return self._responses.pop(msg_id)

    def _answer(self, method: str, params: Any, timeout: float) -> dict[str, Any]:
        response = self.wait(self.start(method, params), timeout)
        if "error" in response:
            raise RuntimeError(f"{method}: {response['error']}")
        return response

    def call(self, method: str, params: Any = None, timeout: float = 60) -> Any:
        return self._answer(method, params, timeout).get("result")

    def call_body(self, method: str, params: Any = None, timeout: float = 60) -> bytes:
        """The response's bytes as the daemon sent them (what bench/stdio_floor.py replays)."""
        self.keep_bodies = True
        try:
            body: bytes = self._answer(method, params, timeout)["_body"]
        finally:
            self.keep_bodies = False
        return body

    def notify(self, method: str, params: Any = None) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def initialize(self, options: dict[str, Any]) -> Any:
        result = self.call("initialize", {"processId": os.getpid(), "rootUri": None,
                                          "capabilities": {"window": {"workDoneProgress": True}},
                                          "initializationOptions": options})
        self.notify("initialized", {})
        return result

    def settle(self, cwd: Path) -> None:
        """Wait until the daemon is past its start-up work: the tokenizer it preloads holds the GIL
        for most of a second, as it does long before a user opens a session in an editor. The
        first token count waits for it."""
        sid = self.call("session/create", {"cwd": str(cwd), "inMemory": True})["sessionId"]
        self.call("session/append", {"sessionId": sid, "entries": [
            {"type": "message", "message": {"role": "user", "content": "hi", "timestamp": 1}}]})
        self.call("session/tokenStats", {"sessionId": sid})
        self.call("session/close", {"sessionId": sid})

    def close(self) -> None:
        try:
            self.call("shutdown", None, timeout=10)
            self.notify("exit", None)
            self.proc.wait(10)
        except (OSError, EOFError, TimeoutError, RuntimeError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait(10)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def entry_requests_while(daemon: Daemon, method: str, params: dict[str, Any], session_id: str, entry_id: str,
                         timeout: float = 600) -> list[tuple[float, float]]:
    """Ask `method` and, until it is answered, one small `session/entry` request after another: the
    (start, end) of each of those, i.e. how long other requests wait behind that work."""
    windows: list[tuple[float, float]] = []
    call = daemon.start(method, params)
    while not daemon.answered(call):
        started = time.perf_counter()
        daemon.call("session/entry", {"sessionId": session_id, "entryId": entry_id})
        windows.append((started, time.perf_counter()))
    daemon.wait(call, timeout=timeout)
    return windows


@contextlib.contextmanager
def daemon_on_copy(source: Path, timeout: float = 600) -> Iterator[tuple[Daemon, str]]:
    """A daemon (automatic compaction off, agent dir in a temp folder) with a private copy of
    `source` open: yields the daemon and the session id."""
    with tempfile.TemporaryDirectory(prefix="compactd-bench-") as tmp:
        root = Path(tmp)
        (root / "agent").mkdir()
        copy = root / "long.jsonl"
        copy.write_bytes(source.read_bytes())
        with Daemon(env={"PI_CODING_AGENT_DIR": str(root / "agent")}, cwd=root) as daemon:
            daemon.initialize({"settings": {"compaction": {"enabled": False}}})
            yield daemon, daemon.call("session/open", {"path": str(copy)}, timeout=timeout)["sessionId"]
