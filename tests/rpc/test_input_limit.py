"""A client that writes and never reads cannot grow the daemon without bound (issue 26 §4): a real
`compactd serve` whose answers nobody reads stops reading its input at the documented limit
(COMPACTD_MAX_INPUT_BUFFER_BYTES), says so in its log, and serves everything once the client
reads again. Both ways the daemon reads stdin: on its event loop (pipes, what editors spawn it with)
and on a reader thread (stdin and stdout one socket)."""

from __future__ import annotations

import io
import json
import os
import select
import socket
import subprocess
import threading
from typing import Any

import pytest

from tests.e2e.helpers import SERVER_COMMAND, server_env

LIMIT = 8 * 1024 * 1024
GIVE_UP = 400 * 1024 * 1024  # written without the daemon stopping to read: the limit is not applied


def frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


@pytest.mark.parametrize("transport", ["pipes", "one-socket"])
def test_daemon_stops_reading_when_its_answers_are_not_read(transport: str) -> None:
    env = server_env(**{"COMPACTD_MAX_INPUT_BUFFER_BYTES": str(LIMIT)})
    ours: socket.socket | None = None
    if transport == "pipes":
        proc = subprocess.Popen(SERVER_COMMAND, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=env)
        assert proc.stdin is not None and proc.stdout is not None
        in_fd, out = proc.stdin.fileno(), proc.stdout
    else:
        ours, theirs = socket.socketpair()
        proc = subprocess.Popen(SERVER_COMMAND, stdin=theirs, stdout=theirs, stderr=subprocess.PIPE, env=env)
        theirs.close()
        in_fd, out = ours.fileno(), io.BufferedReader(socket.SocketIO(ours, "r"))
    assert proc.stderr is not None
    stderr: list[bytes] = []
    threading.Thread(target=lambda: stderr.extend(iter(lambda: proc.stderr.read1(65536), b"")),  # type: ignore[union-attr]
                     daemon=True).start()
    try:
        init = frame({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                      "params": {"processId": None, "capabilities": {}}})
        os.write(in_fd, init + frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        # Each request's answer echoes its 64 KB id: the answers fill the pipe almost at once.
        request = frame({"jsonrpc": "2.0", "id": "x" * 65536, "method": "session/list", "params": {}})
        os.set_blocking(in_fd, False)
        written, sent, rest = 0, 0, b""
        while written < GIVE_UP:
            data = rest or request
            try:
                n = os.write(in_fd, data)
            except BlockingIOError:
                # Not a timing claim: a daemon that still reads takes more within seconds.
                _, writable, _ = select.select([], [in_fd], [], 10)
                if not writable:
                    break
                continue
            written += n
            rest = data[n:]
            if not rest:
                sent += 1
        assert written < GIVE_UP, "the daemon kept reading input although no answer was read"
        rss = rss_bytes(proc.pid)
        # Its own size (interpreter, libraries) plus the limit, one chunk and one frame; without the
        # limit it held everything written.
        assert rss < 180 * 1024 * 1024 + LIMIT, rss
        log = b"".join(stderr).decode()
        assert "client is not reading its answers" in log and "COMPACTD_MAX_INPUT_BUFFER_BYTES" in log

        # The client reads again: every whole request is answered, then one more.
        if rest:  # the request cut by the full pipe, finished once the daemon reads again
            sent += 1
        answers: list[dict[str, Any]] = []
        reader = threading.Thread(target=_read_answers, args=(out, answers, sent + 2), daemon=True)
        reader.start()
        os.set_blocking(in_fd, True)
        last = frame({"jsonrpc": "2.0", "id": "last", "method": "session/list", "params": {}})
        if ours is not None:
            ours.sendall(rest + last)
        else:
            os.write(in_fd, rest + last)
        reader.join(120)
        assert len(answers) == sent + 2  # initialize, each request, the last one
        assert answers[-1]["id"] == "last" and answers[-1]["result"] == {"sessions": []}
        assert all(a.get("result") == {"sessions": []} for a in answers[1:])
    finally:
        proc.kill()
        proc.wait(10)
        if ours is not None:
            ours.close()


def _read_answers(out: Any, answers: list[dict[str, Any]], count: int) -> None:
    while len(answers) < count:
        length = None
        while True:
            line = out.readline()
            if not line:
                return
            if line == b"\r\n":
                break
            name, _, value = line.decode("ascii").partition(":")
            if name.lower() == "content-length":
                length = int(value)
        assert length is not None
        answers.append(json.loads(out.read(length)))
