"""Raw bytes on stdin: bad framing, invalid JSON, wrong envelopes, unknown methods, wrong types.
Each gets a JSON-RPC error (or is logged and skipped) and the daemon keeps serving. Also the LSP
lifecycle edges (requests before initialize, exit codes) and that the API key never leaks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.fake_openai import FakeOpenAI, Reply

from .helpers import GOOD_SUMMARY, SECRET, fake_summarizer, write_session
from .raw import RawServer


def test_garbage_on_stdin_keeps_the_daemon_alive() -> None:
    server = RawServer()
    try:
        early = server.request(1, "session/list", {})
        assert early["error"]["code"] == -32002  # before initialize
        assert "capabilities" in server.initialize()["result"]

        server.write(b"Content-Length: 9\r\n\r\n{not json")
        parse = server.receive()
        assert parse["error"]["code"] == -32700 and parse["id"] is None

        server.write(b"Content-Length: 4\r\n\r\n\xff\xfe\x00\x01")
        assert server.receive()["error"]["code"] == -32700

        server.send([1, 2, 3])
        batch = server.receive()
        assert batch["error"]["code"] == -32600 and batch["id"] is None
        server.send("just a string")
        assert server.receive()["error"]["code"] == -32600

        server.send({"jsonrpc": "1.0", "id": 7, "method": "session/list"})
        assert server.response(7)["error"]["code"] == -32600
        server.send({"jsonrpc": "2.0", "id": 8, "method": 5})
        assert server.response(8)["error"]["code"] == -32600

        # framing garbage: stray lines, a header block without length, a non-numeric length
        server.write(b"hello there\r\n\r\nX-Whatever: 1\r\n\r\nContent-Length: abc\r\n\r\n")
        # notifications nobody handles, a cancel for nothing, a response to nothing
        server.send({"jsonrpc": "2.0", "method": "session/unknownNotification", "params": {}})
        server.send({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 12345}})
        server.send({"jsonrpc": "2.0", "id": "never-asked", "result": {"x": 1}})

        assert server.request(9, "session/nope", {})["error"]["code"] == -32601
        typed = server.request(10, "textDocument/hover", {"textDocument": 5, "position": "top"})
        assert typed["error"]["code"] == -32602
        wrong = server.request(11, "session/open", {"path": ["not", "a", "string"]})
        assert wrong["error"]["code"] == -32602 and wrong["error"]["message"].startswith("path:")

        alive = server.request(12, "session/list", {})
        assert alive["result"] == {"sessions": []}
        assert server.shutdown() == 0
        assert "Traceback" not in server.stderr
    finally:
        server.kill()


def test_serve_is_the_default_command() -> None:
    server = RawServer([sys.executable, "-m", "compactd"])
    try:
        assert server.initialize()["result"]["serverInfo"]["name"] == "compactd"
        assert server.shutdown() == 0
    finally:
        server.kill()


def test_exit_without_shutdown_and_eof() -> None:
    server = RawServer()
    try:
        server.initialize()
        server.send({"jsonrpc": "2.0", "method": "exit"})
        assert server.proc.wait(30) == 1  # LSP: exit without shutdown is an error exit
    finally:
        server.kill()
    closed = RawServer()
    try:
        closed.initialize()
        assert closed.proc.stdin is not None
        closed.proc.stdin.close()  # the client died
        assert closed.proc.wait(30) == 1
    finally:
        closed.kill()


def test_requests_after_shutdown_are_refused() -> None:
    server = RawServer()
    try:
        server.initialize()
        assert server.request("s", "shutdown", None)["result"] is None
        assert server.request(2, "session/list", {})["error"]["code"] == -32600
        server.send({"jsonrpc": "2.0", "method": "exit"})
        assert server.proc.wait(30) == 0
    finally:
        server.kill()


def test_api_key_never_leaves_the_process(tmp_path: Path) -> None:
    fake = FakeOpenAI(default=Reply.stream(GOOD_SUMMARY)).start()
    server = RawServer(COMPACTD_LOG_LEVEL="DEBUG")
    try:
        path = tmp_path / "s.jsonl"
        write_session(path, tmp_path, turns=6)
        server.initialize({"summarizer": fake_summarizer(fake.url), "settings": {"retry": {"enabled": False},
                                                                                 "compaction": {"keepRecentTokens": 800}}})
        seen = [server.request(2, "session/open", {"path": str(path)})]
        seen.append(server.request(3, "session/compact", {"sessionId": "e2e-session"}))
        assert seen[-1]["result"]["entryId"]
        fake.default = Reply.error(401, "Incorrect API key provided: sk-test-DO****cdef")
        seen.append(server.request(4, "session/compact", {"sessionId": "e2e-session"}))
        assert seen[-1]["error"]["code"] in (-32013, -32015)
        assert fake.requests[0].headers["authorization"] == f"Bearer {SECRET}"  # it was used
        assert server.shutdown() == 0
        assert SECRET not in server.stderr
        assert all(SECRET not in json.dumps(m) for m in seen)
    finally:
        server.kill()
        fake.stop()


def test_invalid_initialization_options_can_be_retried() -> None:
    server = RawServer()
    try:
        bad = server.request(1, "initialize", {"processId": None, "capabilities": {},
                                               "initializationOptions": {"hooks": ["nope"], "hookTimeoutMs": -1}})
        assert bad["error"]["code"] == -32602
        assert "hooks.0" in bad["error"]["message"] and "hookTimeoutMs" in bad["error"]["message"]
        assert server.request(2, "session/list", {})["error"]["code"] == -32002
        good = server.request(3, "initialize", {"processId": None, "capabilities": {},
                                                "initializationOptions": {"hooks": ["beforeTree"]}})
        assert good["result"]["serverInfo"]["name"] == "compactd"
        assert server.request(4, "session/list", {})["result"] == {"sessions": []}
        assert server.shutdown() == 0
    finally:
        server.kill()


def frame(message: dict, delta: int = 0) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % (len(body) + delta) + body


def test_wrong_content_lengths_resynchronize() -> None:
    server = RawServer()
    try:
        server.initialize()
        # too short: the body is cut, its tail is garbage glued to the next header
        server.write(frame({"jsonrpc": "2.0", "id": "short", "method": "session/list", "params": {}}, -3)
                     + frame({"jsonrpc": "2.0", "id": "after-short", "method": "session/list", "params": {}}))
        cut = server.receive()  # answered under its own id (read from the cut body)
        assert cut["error"]["code"] == -32700 and cut["id"] == "short"
        assert server.response("after-short")["result"] == {"sessions": []}
        # too long: the body swallows the start of the next frame; both messages are answered, once
        server.write(frame({"jsonrpc": "2.0", "id": "long", "method": "session/list", "params": {}}, 30)
                     + frame({"jsonrpc": "2.0", "id": "after-long", "method": "session/list", "params": {}}))
        answers = [server.receive() for _ in range(2)]
        assert [a.get("id") for a in answers] == ["long", "after-long"]
        assert all(a["result"] == {"sessions": []} for a in answers)
        assert server.request("ping", "session/list", {})["id"] == "ping"  # nothing else was queued
        assert server.shutdown() == 0
    finally:
        server.kill()


def test_initialize_with_missing_or_wrong_fields_names_them() -> None:
    server = RawServer()
    try:
        missing = server.request(1, "initialize", {"processId": None})
        assert missing["error"]["code"] == -32602
        assert missing["error"]["message"] == "Invalid params for initialize: capabilities: required field missing"
        wrong = server.request(2, "initialize", {"processId": "me", "capabilities": {}})
        assert wrong["error"]["code"] == -32602 and "processId:" in wrong["error"]["message"]
        assert "sub-exception" not in wrong["error"]["message"]
        assert "capabilities" in server.initialize()["result"]  # a correct initialize still works
        typed = server.request(3, "textDocument/hover", {"textDocument": 5, "position": "top"})
        assert typed["error"]["code"] == -32602 and "textDocument" in typed["error"]["message"]
        assert server.shutdown() == 0
    finally:
        server.kill()


def test_the_daemon_widens_its_answer_pipe() -> None:
    """Large answers (a dry run's history text) leave in one write instead of 64 KB at a time."""
    import fcntl

    from compactd.rpc.protocol import OUTPUT_BUFFER_BYTES

    server = RawServer()
    try:
        server.initialize()
        assert server.proc.stdout is not None
        allowed = min(OUTPUT_BUFFER_BYTES, int(Path("/proc/sys/fs/pipe-max-size").read_text()))
        assert fcntl.fcntl(server.proc.stdout.fileno(), fcntl.F_GETPIPE_SZ) >= allowed
        assert server.shutdown() == 0
    finally:
        server.kill()


def test_requests_from_a_regular_file_on_stdin(tmp_path: Path) -> None:
    """`compactd serve < file`: the requests in a regular file are answered, then the end of the
    file ends the daemon."""
    frames = b""
    for message in ({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}},
                    {"jsonrpc": "2.0", "method": "initialized", "params": {}},
                    {"jsonrpc": "2.0", "id": 3, "method": "shutdown", "params": None}):
        body = json.dumps(message).encode()
        frames += b"Content-Length: %d\r\n\r\n" % len(body) + body
    requests = tmp_path / "requests.bin"
    requests.write_bytes(frames)
    with open(requests, "rb") as stdin:
        done = subprocess.run([sys.executable, "-m", "compactd", "serve"], stdin=stdin, capture_output=True,
                              timeout=60, env={**os.environ, "PI_CODING_AGENT_DIR": str(tmp_path)})
    answers = {}
    out = done.stdout
    while out:
        header, _, rest = out.partition(b"\r\n\r\n")
        length = next(int(line.split(b":")[1]) for line in header.split(b"\r\n")
                      if line.lower().startswith(b"content-length"))
        message = json.loads(rest[:length])
        answers[message.get("id")] = message
        out = rest[length:]
    assert answers[1]["result"]["serverInfo"]["name"] == "compactd"
    assert answers[3]["result"] is None
    assert done.returncode == 0  # end of input after shutdown


def test_large_answers_stay_whole_while_the_daemon_is_stopped_and_continued(tmp_path: Path) -> None:
    """A debugger or profiler attaching stops and continues the daemon (SIGSTOP/SIGCONT); a large
    answer whose write that interrupts must still arrive whole. The buffered stdout lost the rest
    of such a write (answers cut at the pipe's 64 KB, the stream desynchronized)."""
    import fcntl
    import signal
    import threading
    import time

    from ..conftest import REAL_PI_FILES

    path = tmp_path / "large.jsonl"
    path.write_bytes(REAL_PI_FILES["pi-mono-large-session"].read_bytes())
    server = RawServer(PI_CODING_AGENT_DIR=str(tmp_path))
    stop = threading.Event()

    def stop_and_continue() -> None:
        while not stop.is_set():
            os.kill(server.proc.pid, signal.SIGSTOP)
            time.sleep(0.0005)
            os.kill(server.proc.pid, signal.SIGCONT)
            time.sleep(0.002)

    hammer = threading.Thread(target=stop_and_continue, daemon=True)
    try:
        server.initialize({"settings": {"compaction": {"enabled": False}}})
        # The daemon widens its answer pipe to 1 MB; back to the default 64 KB (either end can set
        # it), a dry run takes several partial writes, each of which a stop can interrupt.
        assert server.proc.stdout is not None
        fcntl.fcntl(server.proc.stdout.fileno(), fcntl.F_SETPIPE_SZ, 65536)
        sid = server.request(1, "session/open", {"path": str(path)})["result"]["sessionId"]
        leaf = server.request(2, "session/context", {"sessionId": sid})["result"]["leafId"]
        parent = server.request(3, "session/entry", {"sessionId": sid, "entryId": leaf})["result"]["entry"]["parentId"]
        asks = [{"sessionId": sid, "leafId": leaf}, {"sessionId": sid, "leafId": parent}]
        expected = [server.request(10 + n, "session/prepareCompaction", ask)["result"] for n, ask in enumerate(asks)]
        assert len(expected[0]["conversationText"]) > 200_000  # several pipe buffers per answer
        hammer.start()
        for n in range(40):  # a new leaf each time: every answer computed and written again
            answer = server.request(100 + n, "session/prepareCompaction", asks[n % 2])
            assert answer["result"] == expected[n % 2]
        stop.set()
        hammer.join()
        os.kill(server.proc.pid, signal.SIGCONT)
        assert server.shutdown() == 0
    finally:
        stop.set()
        server.kill()


def test_stdin_and_stdout_on_one_socket(tmp_path: Path) -> None:
    """A client that hands the daemon one socket for both directions (inetd style): stdin keeps a
    blocking reader thread, since making the socket non-blocking for reading would do the same to
    every write of a large answer (partial writes, BlockingIOError)."""
    import socket

    path = tmp_path / "large.jsonl"  # its context answers ~5 MB: more than the socket's buffer
    write_session(path, tmp_path, turns=12, text_chars=200_000)
    ours, theirs = socket.socketpair()
    ours.settimeout(60)  # a daemon that lost an answer fails the test instead of hanging it
    with ours:
        with theirs:
            proc = subprocess.Popen([sys.executable, "-m", "compactd", "serve"], stdin=theirs, stdout=theirs,
                                    stderr=subprocess.PIPE, env={**os.environ, "PI_CODING_AGENT_DIR": str(tmp_path)})
        stream = ours.makefile("rwb")

        def request(msg_id: int, method: str, params: object) -> dict[str, object]:
            body = json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}).encode()
            stream.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            stream.flush()
            while True:
                length = 0
                while (line := stream.readline()) not in (b"\r\n", b""):
                    if line.lower().startswith(b"content-length"):
                        length = int(line.split(b":")[1])
                assert length, proc.stderr.read().decode() if proc.poll() is not None else "no frame"  # type: ignore[union-attr]
                message = json.loads(stream.read(length))
                if message.get("id") == msg_id:
                    return message

        try:
            assert request(1, "initialize", {"capabilities": {}, "initializationOptions": {
                "settings": {"compaction": {"enabled": False}}}})["result"]
            sid = request(2, "session/open", {"path": str(path)})["result"]["sessionId"]  # type: ignore[index]
            for n in range(3):  # answers larger than the socket's buffer, each written whole
                context = request(3 + n, "session/context", {"sessionId": sid, "includeMessages": True})
                assert len(json.dumps(context)) > 4_000_000
            assert request(9, "shutdown", None)["result"] is None
            stream.close()
            ours.shutdown(socket.SHUT_WR)
            assert proc.wait(30) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait(10)
            assert proc.stderr is not None
            proc.stderr.close()


def test_requests_are_read_while_a_large_answer_waits_to_be_read(tmp_path: Path) -> None:
    """A client that writes a large request before reading the large answer it asked for: the
    daemon keeps taking requests in while its answer waits in the full pipe, so neither side ends
    up waiting for the other (the writes of both would block for good)."""
    import threading
    import time

    path = tmp_path / "large.jsonl"  # its context with messages is ~5 MB: more than the pipe holds
    write_session(path, tmp_path, turns=12, text_chars=200_000)
    proc = subprocess.Popen([sys.executable, "-m", "compactd", "serve"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env={**os.environ, "PI_CODING_AGENT_DIR": str(tmp_path)})
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout

    def frame(msg_id: int, method: str, params: object) -> bytes:
        body = json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}).encode()
        return b"Content-Length: %d\r\n\r\n" % len(body) + body

    def answer() -> dict[str, object]:
        length = 0
        while (line := stdout.readline()) not in (b"\r\n", b""):
            if line.lower().startswith(b"content-length"):
                length = int(line.split(b":")[1])
        assert length, "the daemon closed its output"
        message: dict[str, object] = json.loads(stdout.read(length))
        return message

    try:
        stdin.write(frame(1, "initialize", {"capabilities": {}, "initializationOptions": {
            "settings": {"compaction": {"enabled": False}}}}) + frame(2, "session/open", {"path": str(path)}))
        stdin.flush()
        answers = {}
        while 2 not in answers:
            message = answer()
            answers[message.get("id")] = message
        sid = answers[2]["result"]["sessionId"]  # type: ignore[index]
        stdin.write(frame(3, "session/context", {"sessionId": sid, "includeMessages": True}))
        stdin.flush()
        time.sleep(1.0)  # the answer fills the pipe; nothing reads it yet
        large = frame(4, "session/append", {"sessionId": sid, "entries": [{"type": "message", "message": {
            "role": "user", "content": "x" * 4_000_000, "timestamp": 1_770_000_000_000}}]})
        writer = threading.Thread(target=lambda: (stdin.write(large), stdin.flush()), daemon=True)
        writer.start()
        writer.join(30)
        assert not writer.is_alive(), "the daemon stopped reading requests while its answer waited"
        while 3 not in answers or 4 not in answers:
            message = answer()
            answers[message.get("id")] = message
        assert len(answers[3]["result"]["messages"]) == 24  # type: ignore[index]
        assert len(answers[4]["result"]["entryIds"]) == 1  # type: ignore[index]
    finally:
        proc.kill()
        proc.wait(10)
