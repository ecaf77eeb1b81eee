"""A minimal LSP-framed JSON-RPC client for a real `compactd serve` subprocess (benchmarks only).

A reader thread parses `Content-Length` frames; responses wake the waiting caller, server requests
(e.g. window/workDoneProgress/create) are answered with null, notifications are kept in order.

The client's own heap is frozen when a daemon starts: a full collector pass in this process (the
harness's inputs and earlier results, 50-80 ms) would otherwise hold up the reader thread and be
timed as the daemon's latency (seen with gc callbacks in both processes, issue 14)."""

from __future__ import annotations

import contextlib
import gc
import itertools
import json

import orjson
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from collections.abc import Iterator
from typing import Any, Self

from bench.harness import REPO_ROOT


class Daemon:
    def __init__(self, env: dict[str, str] | None = None, cwd: Path | None = None) -> None:
        gc.collect()
        gc.freeze()
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
        full_env.update(env or {})
        self.proc = subprocess.Popen([sys.executable, "-m", "compactd", "serve"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=full_env,
                                     cwd=cwd or REPO_ROOT)
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._done: dict[Any, threading.Event] = {}
        self._responses: dict[Any, dict[str, Any]] = {}
        self.notifications: list[tuple[float, dict[str, Any]]] = []
        self._write_lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.lower() == "content-length":
                    length = int(value.strip())
            assert length is not None
            message = orjson.loads(out.read(length))
            now = time.perf_counter()
            if "method" in message and "id" in message:
                self._send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            elif "method" in message:
                self.notifications.append((now, message))
            else:
                with self._lock:
                    self._responses[message.get("id")] = {**message, "_at": now}
                    event = self._done.get(message.get("id"))
                if event is not None:
                    event.set()

    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message).encode()
        assert self.proc.stdin is not None
        with self._write_lock:
            self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            self.proc.stdin.flush()

    def start(self, method: str, params: Any = None) -> int:
        """Send a request without waiting; returns its id."""
        msg_id = next(self._ids)
        with self._lock:
            self._done[msg_id] = threading.Event()
        self._send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return msg_id

    def answered(self, msg_id: int) -> bool:
        """True once the response to request `msg_id` has arrived."""
        with self._lock:
            event = self._done.get(msg_id)
        return event is None or event.is_set()

    def wait(self, msg_id: int, timeout: float = 60) -> dict[str, Any]:
        """The response message (with `_at`, the perf_counter time it was read)."""
        if not self._done[msg_id].wait(timeout):
            raise TimeoutError(f"no response to request {msg_id} within {timeout}s")
        with self._lock:
            del self._done[msg_id]
            return self._responses.pop(msg_id)

    def call(self, method: str, params: Any = None, timeout: float = 60) -> Any:
        response = self.wait(self.start(method, params), timeout)
        if "error" in response:
            raise RuntimeError(f"{method}: {response['error']}")
        return response.get("result")

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
        except (OSError, TimeoutError, RuntimeError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait(10)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


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
