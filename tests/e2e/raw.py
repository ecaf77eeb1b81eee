"""A minimal raw JSON-RPC client over a real `compactd serve` subprocess, for tests that need to
write bytes no well-behaved client would (bad frames, invalid JSON) or to read the server's stderr."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from typing import Any

from .helpers import SERVER_COMMAND, server_env


class RawServer:
    def __init__(self, command: list[str] | None = None, **env: str) -> None:
        self.proc = subprocess.Popen(command or SERVER_COMMAND, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=server_env(**env))
        self.messages: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.stderr_chunks: list[bytes] = []
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_stdout(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    self.messages.put(None)
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.lower() == "content-length":
                    length = int(value.strip())
            assert length is not None, "server sent a frame without Content-Length"
            self.messages.put(json.loads(out.read(length)))

    def _read_stderr(self) -> None:
        err = self.proc.stderr
        assert err is not None
        for chunk in iter(lambda: err.read1(65536), b""):
            self.stderr_chunks.append(chunk)

    @property
    def stderr(self) -> str:
        return b"".join(self.stderr_chunks).decode(errors="replace")

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message: Any) -> None:
        body = json.dumps(message).encode()
        self.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def receive(self, timeout: float = 30) -> dict[str, Any]:
        message = self.messages.get(timeout=timeout)
        assert message is not None, f"server closed its output; stderr:\n{self.stderr}"
        return message

    def response(self, msg_id: Any, timeout: float = 30) -> dict[str, Any]:
        """The response to `msg_id`, skipping notifications and other responses."""
        while True:
            message = self.receive(timeout)
            if "method" not in message and message.get("id") == msg_id:
                return message

    def request(self, msg_id: Any, method: str, params: Any = None) -> dict[str, Any]:
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return self.response(msg_id)

    def initialize(self, options: dict[str, Any] | None = None) -> dict[str, Any]:
        result = self.request("init", "initialize", {"processId": None, "capabilities": {},
                                                     "initializationOptions": options or {}})
        self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        return result

    def shutdown(self, timeout: float = 30) -> int:
        self.request("bye", "shutdown", None)
        self.send({"jsonrpc": "2.0", "method": "exit"})
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(timeout)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
