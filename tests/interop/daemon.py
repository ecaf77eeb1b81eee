"""A small synchronous client for the real daemon (`python -m compactd serve` on stdio), enough for
the interop tests to open, compact, navigate, prune and fork the files the real Pi wrote."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from typing import Any

from tests.support.fake_openai import FakeOpenAI

KEY_ENV = "COMPACTD_INTEROP_KEY"


class DaemonError(Exception):
    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(f"{error.get('code')}: {error.get('message')}")
        self.code = error.get("code")


class Daemon:
    def __init__(self, fake: FakeOpenAI, agent_dir: str, settings: dict[str, Any] | None = None) -> None:
        env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
        env.update(PI_CODING_AGENT_DIR=agent_dir, PYTHONUNBUFFERED="1", **{KEY_ENV: "fake-key"})
        self.process = subprocess.Popen(
            [sys.executable, "-m", "compactd", "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self.notifications: list[tuple[str, Any]] = []
        self._next_id = 0
        self._lock = threading.Lock()
        options = {
            "settings": settings or {},
            "summarizer": {"backend": "openai", "baseUrl": fake.url, "model": "fake-model", "apiKeyEnv": KEY_ENV},
        }
        self.call("initialize", {"processId": os.getpid(), "capabilities": {}, "initializationOptions": options})
        self._send({"jsonrpc": "2.0", "method": "initialized", "params": {}})

    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message).encode()
        assert self.process.stdin is not None
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def _read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        length = 0
        while True:
            line = self.process.stdout.readline()
            if not line:
                raise EOFError("daemon closed its output")
            if line in (b"\r\n", b"\n"):
                break
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value.strip())
        return json.loads(self.process.stdout.read(length))

    def call(self, method: str, params: Any) -> Any:
        with self._lock:
            self._next_id += 1
            request_id = self._next_id
            self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
            while True:
                message = self._read()
                if message.get("id") == request_id and "method" not in message:
                    if "error" in message:
                        raise DaemonError(message["error"])
                    return message.get("result")
                if "method" in message and "id" in message:  # a server request: answer "nothing"
                    self._send({"jsonrpc": "2.0", "id": message["id"], "result": None})
                elif "method" in message:
                    self.notifications.append((message["method"], message.get("params")))

    def close(self) -> None:
        try:
            self.call("shutdown", None)
            self._send({"jsonrpc": "2.0", "method": "exit"})
            self.process.wait(timeout=10)
        except Exception:
            self.process.kill()
            self.process.wait()

    def __enter__(self) -> Daemon:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
